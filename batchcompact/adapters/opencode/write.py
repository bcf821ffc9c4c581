"""What batchcompact records in an OpenCode (or Kilo) session: OpenCode's own compaction, a user message
with a `compaction` part naming the kept tail (`tail_start_id`) and the summary as an assistant message
(`mode: "compaction"`, `summary: true`), written by store.py in one transaction. `build_compaction` gives
the one line the store turns into those rows (pure); `verify` checks the session re-read inside that
transaction: OpenCode's loader (read.py `filter_compacted`) starts from our summary exactly once, then
the kept tail in order."""

from __future__ import annotations

import json
from datetime import datetime
from typing import TYPE_CHECKING

from batchcompact.adapters.opencode.extra import OpenCodeSessionExtra
from batchcompact.adapters.opencode.read import compaction_part, filter_compacted
from batchcompact.adapters.opencode.store import build_rows, tail_message_id
from batchcompact.core.jsontypes import JsonObject

if TYPE_CHECKING:
    from batchcompact.core.planner import CompactionPlan
    from batchcompact.core.session import Session


def _ms(now_iso: str) -> int:
    return int(datetime.fromisoformat(now_iso.replace("Z", "+00:00")).timestamp() * 1000)


def build_compaction(session: Session, plan: CompactionPlan, summary: str, *, usage: JsonObject | None, now_iso: str,
                     from_hook: bool = False) -> list[JsonObject]:
    """The compaction to record (pure): its summary, the first kept entry, the time and our marker (tokens
    before, file lists); `id` is the summary message's id the store will give it."""
    marker = {"tokensBefore": plan.tokens_before, "readFiles": list(plan.read_files),
              "modifiedFiles": list(plan.modified_files)}
    now_ms = _ms(now_iso)
    _, _, written = build_rows(session, summary=summary, first_kept_entry_id=plan.first_kept_entry_id,
                               now_ms=now_ms, marker=marker)
    line = {"type": "compaction", "id": written.summary_id, "timestamp": now_iso, "summary": summary,
            "firstKeptEntryId": plan.first_kept_entry_id, "tokensBefore": plan.tokens_before, "now_ms": now_ms,
            "batchcompact": marker}
    if usage is not None:
        line["usage"] = usage  # for our run report; the summary message records no usage (the call was ours)
    return [line]


def verify(original: Session, written: Session, plan: CompactionPlan) -> list[str]:
    """What is wrong with the session as written (empty when it is good)."""
    from batchcompact.core.context import written_context

    problems = [str(p) for p in written.errors]
    if problems:
        return problems
    count = len(original.entries)
    if len(written.entries) != count + 1:
        return [f"expected one new compaction, found {len(written.entries) - count} new entries"]
    for before, after in zip(original.entries, written.entries[:count], strict=True):
        if before.data != after.data:
            return [f"an original message changed ({before.id})"]
    path = written.path_entries()
    last = path[-1] if path else None
    if last is None or last.type != "compaction":
        return ["the session's latest message is not the new compaction"]
    tail = tail_message_id(original, plan.first_kept_entry_id)
    if tail is None or last.data.get("firstKeptEntryId") != tail:
        return [f"the compaction does not keep the planned tail (from {plan.first_kept_entry_id})"]
    context = written_context(written).messages
    if not context or context[0].message.get("role") != "compactionSummary":
        return ["the rebuilt context does not start with the summary"]
    quoted = json.dumps(last.data["summary"], ensure_ascii=False)[1:-1]
    if json.dumps([m.message for m in context], ensure_ascii=False).count(quoted) != 1:
        return ["the summary is not in the rebuilt context exactly once"]
    loaded = filter_compacted(OpenCodeSessionExtra.of(written).messages)
    if len(loaded) < 3 or compaction_part(loaded[0]) is None or loaded[1]["info"]["id"] != last.id \
            or loaded[2]["info"]["id"] != tail:
        return ["OpenCode's loader would not start from the summary, then the kept tail"]
    return []
