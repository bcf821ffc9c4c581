"""Tool-output pruning, planned as a pure list of replacements (oh-my-pi's pruning, reference 8).

Walking the kept context newest to oldest, the first `protect_tokens` of tool output are protected; an
older tool result of at least `MIN_PRUNE_TOKENS` whose tool is not protected (`read`, skills) is replaced
with a marker. The prune is committed only when it saves at least `minimum_savings` tokens: small
savings are not worth changing a file for. Superseded/useless pruning (oh-my-pi's idle-time pass) is not
done here.
"""

from __future__ import annotations

from dataclasses import dataclass

from batchcompact.core.entries import Entry
from batchcompact.core.tokens import estimate_tokens

PROTECT_TOKENS = 40_000
MINIMUM_SAVINGS = 20_000
MIN_PRUNE_TOKENS = 50
PROTECTED_TOOLS = frozenset({"read", "skill", "read_skill", "skill_read"})


@dataclass(frozen=True)
class PruneAction:
    entry_id: str
    line: int | None
    tokens: int
    replacement: str


def marker(tokens: int) -> str:
    return f"[Output truncated - {tokens} tokens]"


def plan_pruning(
    entries: list[Entry],
    start: int = 0,
    protect_tokens: int = PROTECT_TOKENS,
    minimum_savings: int = MINIMUM_SAVINGS,
) -> list[PruneAction]:
    """Replacements for tool results in `entries[start:]` (empty when the savings are too small)."""
    protected = 0
    actions: list[PruneAction] = []
    for entry in reversed(entries[start:]):
        message = entry.message
        if message is None or message.get("role") != "toolResult" or entry.id is None:
            continue
        if message.get("prunedAt") is not None:
            continue
        tokens = estimate_tokens(message)
        if protected < protect_tokens:
            protected += tokens
            continue
        if tokens < MIN_PRUNE_TOKENS or str(message.get("toolName", "")).lower() in PROTECTED_TOOLS:
            continue
        actions.append(PruneAction(entry.id, entry.line, tokens, marker(tokens)))
    if sum(a.tokens for a in actions) < minimum_savings:
        return []
    actions.reverse()
    return actions


def apply_pruning(data: dict, action: PruneAction, timestamp_ms: int) -> dict:
    """A copy of the entry with its tool output replaced by the marker and `prunedAt` set."""
    message = dict(data["message"])
    message["content"] = [{"type": "text", "text": action.replacement}]
    message["prunedAt"] = timestamp_ms
    return {**data, "message": message}
