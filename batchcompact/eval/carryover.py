"""Carry-over: the share of the previous summary's rules and next steps that a new summary still carries.

Written from docs/eval.md ("Carry-over"), never from a summarizer's code (nothing under batchcompact/eval/
imports batchcompact/summarize/). The previous summary's sections are cut at its headings; the rules
sections (Constraints & Preferences, Claude Code's "All user messages"…) and next-steps sections (Next
Steps, Pending Tasks, Optional Next Step…) give items, one a line; an item is carried when the new summary's
text keeps it by the probes' kept rule (key stems and near stem pairs, `scoring.ContextIndex`), anywhere in
it: said under Done, it is marked done, and carried.

Pure and deterministic: text in, counts out.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from batchcompact.eval.probes import RULE, Probe, key_terms
from batchcompact.eval.scoring import ContextIndex

RULES, STEPS = "rules", "next steps"
# docs/eval.md: the headings of each agent's summaries that hold rules, and those that hold next steps.
_RULE_HEADING = re.compile(r"constraint|preference|\brules?\b|instruction|user'?s? messages?", re.IGNORECASE)
_STEP_HEADING = re.compile(r"next steps?|pending|remain|\btodo|\bto do\b|open requests?", re.IGNORECASE)
_MARKDOWN = re.compile(r"^(#{1,6})\s+(.+?)\s*#*\s*$")
_NUMBERED = re.compile(r"^\d{1,2}[.)]\s+([A-Z][^:]{1,60}):\s*$")
_BOLD = re.compile(r"^\*\*([^*]{1,60}?):?\*\*:?\s*$")
_LABEL = re.compile(r"^([A-Z][\w'&/ -]{1,40}):\s*$")
_MARKER = re.compile(r"^(?:[-*•+>]\s+|\d{1,3}[.)]\s+|\[[ xX]\]\s*)+")
# What Claude Code appends after its summary, in the harness's words (the end of any section): no item.
_HARNESS = re.compile(r"^(?:If you need specific details from before compaction|Continue the conversation from where "
                      r"it left off|Please continue the conversation)", re.IGNORECASE)
MIN_TERMS = 2  # an item has at least this many distinct key terms ("(none)" has none)


@dataclass(frozen=True)
class CarryOver:
    """How many of the previous summary's items the new summary carries."""

    items: int
    carried: int
    missed: tuple[str, ...] = ()

    @property
    def share(self) -> float | None:
        return round(self.carried / self.items, 4) if self.items else None


def _heading(line: str) -> tuple[int, str] | None:
    """(level, text) of a heading line (markdown levels 1-6; other headings level 0: they end any
    section), or None."""
    markdown = _MARKDOWN.match(line)
    if markdown:
        return len(markdown.group(1)), markdown.group(2).strip("*: ")
    for pattern in (_NUMBERED, _BOLD, _LABEL):
        found = pattern.match(line)
        if found:
            return 0, found.group(1).strip()
    return None


def _kind(heading: str) -> str | None:
    if _RULE_HEADING.search(heading):
        return RULES
    if _STEP_HEADING.search(heading):
        return STEPS
    return None


def carried_items(summary: str) -> list[tuple[str, str]]:
    """The (kind, text) items of `summary`'s rules and next-steps sections, in order, one per distinct set
    of key terms."""
    items: dict[tuple[str, ...], tuple[str, str]] = {}
    kind: str | None = None
    level = 0  # the carried section's markdown level (0: not a markdown heading)
    for raw in summary.splitlines():
        line = raw.strip()
        if not line:
            continue
        if _HARNESS.match(line):
            kind = None
            continue
        heading = _heading(line)
        if heading is not None:
            depth, text = heading
            if kind is not None and level and depth > level:
                continue  # a sub-heading inside a carried section keeps it
            kind, level = _kind(text), depth
            continue
        if kind is None:
            continue
        text = _MARKER.sub("", line).strip()
        terms = key_terms(text)
        if len(terms) >= MIN_TERMS and not text.endswith(":"):
            items.setdefault(terms, (kind, text))
    return list(items.values())


def measure_carryover(previous: str | None, summary: str | None) -> CarryOver | None:
    """What `summary` carries of `previous`'s items (None when there is no previous summary or no new one)."""
    if not previous or summary is None:
        return None
    items = carried_items(previous)
    index = ContextIndex([{"role": "user", "content": summary}])
    missed = []
    carried = 0
    for kind, text in items:
        if index.keeps(Probe(RULE, text, key_terms(text))):
            carried += 1
        else:
            missed.append(f"{kind}: {text[:300]}")
    return CarryOver(len(items), carried, tuple(missed))
