"""Where to cut a session (reference 3.3), with the false-split fix documented in docs/compaction.md.

Invariants: the first kept entry is never a tool result; the kept region holds at least
`keep_recent_tokens` of messages unless everything in range is kept.
"""

from __future__ import annotations

from dataclasses import dataclass

from batchcompact.core.entries import Entry
from batchcompact.core.tokens import estimate_tokens

CUT_ROLES = frozenset({"user", "assistant", "bashExecution", "custom", "branchSummary", "compactionSummary"})


def is_cut_point(entry: Entry) -> bool:
    if entry.type == "message":
        return entry.role in CUT_ROLES
    return entry.type in ("branch_summary", "custom_message")


def is_turn_start(entry: Entry) -> bool:
    if entry.type in ("branch_summary", "custom_message"):
        return True
    return entry.type == "message" and entry.role in ("user", "bashExecution")


def find_valid_cut_points(entries: list[Entry], start: int, end: int) -> list[int]:
    return [i for i in range(start, end) if is_cut_point(entries[i])]


def find_turn_start_index(entries: list[Entry], index: int, start: int) -> int:
    for i in range(index, start - 1, -1):
        if is_turn_start(entries[i]):
            return i
    return -1


@dataclass(frozen=True)
class CutPoint:
    first_kept_index: int
    turn_start_index: int  # -1 when the kept region starts a turn
    is_split_turn: bool


def find_cut_point(
    entries: list[Entry], start: int, end: int, keep_recent_tokens: int, *, fix_false_split: bool = True
) -> CutPoint:
    """pi's findCutPoint. With `fix_false_split`, metadata pulled in front of a user message does not
    turn the cut into a split turn (pi would then send whole earlier turns through the prefix prompt)."""
    cut_points = find_valid_cut_points(entries, start, end)
    if not cut_points:
        return CutPoint(start, -1, False)
    cut_index = cut_points[0]
    total = 0
    for i in range(end - 1, start - 1, -1):
        entry = entries[i]
        if entry.type != "message":
            continue
        message = entry.message
        total += estimate_tokens(message) if message is not None else 0
        if total >= keep_recent_tokens:
            for point in cut_points:
                if point >= i:
                    cut_index = point
                    break
            break
    real_cut = cut_index
    while cut_index > start and entries[cut_index - 1].type not in ("message", "compaction"):
        cut_index -= 1
    anchor = entries[real_cut] if fix_false_split else entries[cut_index]
    if anchor.type == "message" and anchor.role == "user":
        return CutPoint(cut_index, -1, False)
    turn_start = find_turn_start_index(entries, cut_index, start)
    return CutPoint(cut_index, turn_start, turn_start != -1)
