"""What batchcompact appends to a Codex rollout to compact it (reference transcripts.md 2.3, 6.5).

`build_compaction` is pure and returns two lines, the shape Codex itself writes:
1. `{"timestamp", "type": "compacted", "payload": {"message": <summary>, "replacement_history": [...]}}`
   where the replacement history is the summary as a user message (Codex's own summary prefix + "\\n" +
   summary, as local compaction writes it) followed by the kept tail: the raw response items of every
   entry on the active path from the plan's first kept entry on (messages, calls, outputs, reasoning,
   ghost snapshots, encrypted `compaction` items; items from an earlier `replacement_history` included),
   verbatim.
2. `{"timestamp", "type": "event_msg", "payload": {"type": "context_compacted"}}`.
Codex rebuilds its history from `replacement_history` when present, so the resumed context is
summary + kept tail. Old lines are never touched.
"""

from __future__ import annotations

from typing import Any

from batchcompact.core.planner import CompactionPlan
from batchcompact.core.session import Session
from batchcompact.formats.claude_codex_verify import verify_written
from batchcompact.formats.codex_items import SUMMARY_PREFIX


def kept_items(session: Session, plan: CompactionPlan) -> list[dict[str, Any]]:
    """The raw response items of the kept tail, in order."""
    path = session.path_entries()
    index = next((i for i, e in enumerate(path) if e.id == plan.first_kept_entry_id), -1)
    if index < 0:
        raise ValueError(f"first kept entry {plan.first_kept_entry_id!r} is not on the active path")
    entry_items = session.extra.get("entry_items", {})
    out: list[dict[str, Any]] = []
    for entry in path[index:]:
        out.extend(entry_items.get(entry.id, ()))  # messages, and ghost snapshots / encrypted items
    return out


def build_compaction(
    session: Session,
    plan: CompactionPlan,
    summary: str,
    *,
    usage: dict[str, Any] | None = None,
    now_iso: str,
    from_hook: bool = False,
) -> list[dict[str, Any]]:
    """The JSON objects to append to the rollout (pure). `usage` and `from_hook` have no place in Codex's
    shape and are not written (the run report records them)."""
    summary_item = {
        "type": "message",
        "role": "user",
        "content": [{"type": "input_text", "text": SUMMARY_PREFIX + "\n" + summary}],
    }
    compacted = {
        "timestamp": now_iso,
        "type": "compacted",
        "payload": {"message": summary, "replacement_history": [summary_item, *kept_items(session, plan)]},
    }
    event = {"timestamp": now_iso, "type": "event_msg", "payload": {"type": "context_compacted"}}
    return [compacted, event]


def verify(original: Session, written: Session, plan: CompactionPlan) -> list[str]:
    """Problems with a written rollout (empty when it is good)."""
    return verify_written(original, written, plan.first_kept_entry_id)
