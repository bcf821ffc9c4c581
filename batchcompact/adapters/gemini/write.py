"""What batchcompact appends to a Gemini CLI chat to compact it: one checkpoint, as Gemini CLI records
its own compression.

Gemini CLI's compression (packages/core/src/context/chatCompressionService.ts) replaces the history by
[summary as a user message, the model's "Got it. Thanks for the additional context!", kept turns] and the
recorder stores that as `{"$set": {"messages": [...]}}` (`updateMessagesFromHistory`), which the loader
takes as a checkpoint. `build_compaction` (pure) returns that one record:
- the context messages the chat starts with (`<session_context>`: Gemini regenerates them on resume);
- the summary: a user message `<state_snapshot>…</state_snapshot>` (the tag Gemini's next compression
  looks for to merge a previous snapshot), with a `batchcompact` marker (tokens before, file lists, the
  first kept id) that Gemini keeps and ignores;
- the acknowledgement, unless the kept tail starts with a model reply (then the summary alone keeps the
  roles alternating);
- the kept tail: the raw records of the active path from the first kept entry on, verbatim (same ids, so
  a reply's recorded `tokens` stay one reply for usage readers that take the last record of an id).
A legacy JSON chat (before 0.40) is not compacted: it could only be rewritten whole, which would drop
the usage its summarized replies recorded; Gemini CLI 0.40+ migrates it to JSONL on its next resume.
"""

from __future__ import annotations

import uuid as uuidlib

from batchcompact.adapters.common.verify import verify_written
from batchcompact.adapters.gemini.extra import GeminiSessionExtra
from batchcompact.adapters.gemini.read import ACK_TEXT, META_TYPE, is_ignored_user
from batchcompact.core.apply import batchcompact_marker
from batchcompact.core.jsontypes import JsonObject
from batchcompact.core.planner import CompactionPlan
from batchcompact.core.session import Session

NAMESPACE = uuidlib.UUID("6f1d2c43-5a0e-4e5b-9b61-0c2f4a8e7d15")
SNAPSHOT_OPEN = "<state_snapshot>\n"
SNAPSHOT_CLOSE = "\n</state_snapshot>"


def kept_records(session: Session, plan: CompactionPlan) -> list[JsonObject]:
    """The raw message records of the kept tail in order (leading metadata left out: context blocks and
    repeated results whose call is summarized)."""
    path = session.path_entries()
    index = next((i for i, e in enumerate(path) if e.id == plan.first_kept_entry_id), -1)
    if index < 0:
        raise ValueError(f"first kept entry {plan.first_kept_entry_id!r} is not on the active path")
    while index < len(path) and path[index].type == META_TYPE:
        index += 1
    records = GeminiSessionExtra.of(session).records
    out: list[JsonObject] = []
    seen: set[str] = set()
    for entry in path[index:]:
        record = records.get(entry.id) if entry.id is not None else None
        if record is not None and record["id"] not in seen:
            seen.add(record["id"])
            out.append(record)
    return out


def _ids(session: Session, plan: CompactionPlan) -> tuple[str, str]:
    seed = f"{session.session_id}|{plan.leaf_id}|{plan.first_kept_entry_id}"
    return str(uuidlib.uuid5(NAMESPACE, seed + "|summary")), str(uuidlib.uuid5(NAMESPACE, seed + "|ack"))


def compacted_messages(session: Session, plan: CompactionPlan, summary: str, *, now_iso: str,
                       usage: JsonObject | None = None, from_hook: bool = False) -> list[JsonObject]:
    """The conversation after the compaction: context, summary, acknowledgement, kept tail."""
    kept = kept_records(session, plan)
    extra = GeminiSessionExtra.of(session)
    records = extra.records
    context = [records[i] for i in extra.state_ids if i in records
               and records[i].get("type") == "user" and is_ignored_user(records[i])
               and str(records[i].get("content")).find("<session_context>") >= 0]
    context = [r for r in context[:1] if r not in kept]
    summary_id, ack_id = _ids(session, plan)
    marker = batchcompact_marker(plan, from_hook, usage)
    out = [*context, {"id": summary_id, "timestamp": now_iso, "type": "user",
                      "content": [{"text": SNAPSHOT_OPEN + summary + SNAPSHOT_CLOSE}], "batchcompact": marker}]
    if not kept or kept[0].get("type") != "gemini":
        out.append({"id": ack_id, "timestamp": now_iso, "type": "gemini", "content": [{"text": ACK_TEXT}]})
    return out + kept


def build_compaction(session: Session, plan: CompactionPlan, summary: str, *, usage: JsonObject | None = None,
                     now_iso: str, from_hook: bool = False) -> list[JsonObject]:
    """The records to append to the chat (pure): one `$set` checkpoint."""
    messages = compacted_messages(session, plan, summary, now_iso=now_iso, usage=usage, from_hook=from_hook)
    return [{"$set": {"messages": messages, "lastUpdated": now_iso}}]


def verify(original: Session, written: Session, plan: CompactionPlan) -> list[str]:
    """Problems with a written chat (empty when it is good)."""
    return verify_written(original, written, plan.first_kept_entry_id)
