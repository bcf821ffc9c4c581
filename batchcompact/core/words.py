"""Counts and figures in the words every message uses: `1 file`, `2 files`, `183,616 tokens`."""

from __future__ import annotations

IRREGULAR = {"entry": "entries", "batch": "batches", "process": "processes", "summary": "summaries", "batch submission": "batch submissions"}
# The nouns messages count. A reason's kind (cli/output.py `reason_kind`) turns `1 attempt` into
# `N attempts`, so one kind holds the sessions whatever their count.
COUNTED_NOUNS = ("attempt", "batch submission", "file", "session", "call", "error", "warning", "request", "line",
                 "entry", "message", "token", "compaction", "row", "problem")


def plural(noun: str) -> str:
    return IRREGULAR.get(noun, noun + "s")


def counted(n: int, noun: str) -> str:
    """`1 file`, `2 files`, `12,345 tokens`."""
    return f"{n:,} {noun if n == 1 else plural(noun)}"
