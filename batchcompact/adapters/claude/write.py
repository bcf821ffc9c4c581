"""What batchcompact appends to a Claude Code transcript to compact it (reference transcripts.md 1.4, 6.4).

`build_compaction` is pure. It returns, in order:
1. a `system`/`compact_boundary` line: `parentUuid: null` (a new root), `logicalParentUuid` = the uuid of
   the last conversational line, `compactMetadata: {trigger: "manual", preTokens, batchcompact: {...}}`.
   The trigger is "manual" (a value Claude Code knows: the user asked for it); batchcompact is marked by
   the extra `compactMetadata.batchcompact` object {tool, keptHeadUuid, keptTailUuid, keptLines,
   firstKeptUuid, fromHook, readFiles, modifiedFiles, usage?} that the reader uses to rebuild pi's shape
   (the file lists carry over to the next compaction, as pi's `details`).
2. the summary `user` line (`isCompactSummary`, `isVisibleInTranscriptOnly`, content = Claude's preamble
   + our summary), child of the boundary;
3. the kept tail: every user/assistant line of the active path from the plan's first kept entry on (all
   lines of a streamed response; progress/system lines are not copied), re-appended verbatim except
   `uuid`, `parentUuid` (re-chained after the summary), `timestamp` (= now, so the copy is the newest
   leaf), `isSidechain: false` (true in a sub-agent's own file, whose every line is one), a remapped `sourceToolAssistantUUID`, a fresh `message.id` per original
   reply (Claude Code merges every line sharing a `message.id`: with the original ids it would send each
   kept reply twice and chain the next prompt to the pre-boundary original, undoing the compaction) and a
   `batchcompact: {copyOf: <original uuid>}` marker, and no `message.usage`: Claude Code measures its
   context by the last reply's usage, and a copy's usage (measured on the old, full context) makes it
   auto-compact again at once on resume (seen with Claude Code 2.1.328); without it Claude Code
   estimates the context. Usage tools (ours, ccusage) skip lines without usage, and ours skips marked
   lines too, so the copies never count twice. `requestId` stays.
Uuids are uuid5 of (session id, leaf, first kept entry, counter): stable across reruns of the same plan,
and re-salted if one is already used in the file; a copy's message id is `msg_` + 24 hex digits of
uuid5(session id, first kept entry, original message id). Old lines are never touched.
"""

from __future__ import annotations

import uuid as uuidlib

from batchcompact.adapters.claude.extra import ClaudeSessionExtra
from batchcompact.adapters.claude.messages import SUMMARY_PREAMBLE
from batchcompact.adapters.common.verify import verify_written
from batchcompact.core.jsontypes import JsonObject
from batchcompact.core.planner import CompactionPlan
from batchcompact.core.session import Session

NAMESPACE = uuidlib.UUID("6c1f4a52-2b0e-4f57-9d8e-8f0b5d2c7a11")
TRIGGER = "manual"
COPY_MARKER = "batchcompact"  # top-level key of a kept-tail copy: {"copyOf": <original uuid>}


def copy_message_id(session: Session, plan: CompactionPlan, original: str) -> str:
    """The fresh, deterministic `message.id` of the copies of one original reply."""
    seed = f"{session.session_id}|{plan.first_kept_entry_id}|{original}"
    return "msg_" + uuidlib.uuid5(NAMESPACE, seed).hex[:24]


def _uuid_maker(session: Session, plan: CompactionPlan, count: int) -> list[str]:
    used = ClaudeSessionExtra.of(session).uuids
    seed = f"{session.session_id}|{plan.leaf_id}|{plan.first_kept_entry_id}"
    for salt in range(1000):
        ids = [str(uuidlib.uuid5(NAMESPACE, f"{seed}|{salt}|{n}")) for n in range(count)]
        if not any(i in used for i in ids):
            return ids
    raise ValueError("cannot find unused uuids")  # pragma: no cover


def kept_lines(session: Session, plan: CompactionPlan) -> list[JsonObject]:
    """The raw user/assistant lines of the kept tail, in path order."""
    path = session.path_entries()
    index = next((i for i, e in enumerate(path) if e.id == plan.first_kept_entry_id), -1)
    if index < 0:
        raise ValueError(f"first kept entry {plan.first_kept_entry_id!r} is not on the active path")
    entry_lines = ClaudeSessionExtra.of(session).entry_lines
    out: list[JsonObject] = []
    for entry in path[index:]:
        if entry.type == "message" and entry.id is not None:
            out.extend(obj for _, obj in entry_lines.get(entry.id, ()))
    return out


def build_compaction(
    session: Session,
    plan: CompactionPlan,
    summary: str,
    *,
    usage: JsonObject | None = None,
    now_iso: str,
    from_hook: bool = False,
) -> list[JsonObject]:
    """The JSON objects to append to the transcript (pure)."""
    kept = kept_lines(session, plan)
    ids = _uuid_maker(session, plan, len(kept) + 2)
    boundary_id, summary_id, copy_ids = ids[0], ids[1], ids[2:]
    side = session.subagent  # a sub-agent's own file: its lines are sidechain lines
    extra = ClaudeSessionExtra.of(session)
    env = extra.envelope
    remap = {obj.get("uuid"): new for obj, new in zip(kept, copy_ids, strict=True)}
    marker: JsonObject = {
        "tool": "batchcompact",
        "keptHeadUuid": copy_ids[0] if copy_ids else None,
        "keptTailUuid": copy_ids[-1] if copy_ids else None,
        "keptLines": len(copy_ids),
        "firstKeptUuid": plan.first_kept_entry_id,
        "fromHook": from_hook,
        "readFiles": list(plan.read_files),
        "modifiedFiles": list(plan.modified_files),
    }
    if usage is not None:
        marker["usage"] = usage
    boundary = {
        "parentUuid": None,
        "logicalParentUuid": extra.leaf_uuid,
        "isSidechain": side,
        **env,
        "type": "system",
        "subtype": "compact_boundary",
        "content": "Conversation compacted",
        "isMeta": False,
        "timestamp": now_iso,
        "uuid": boundary_id,
        "level": "info",
        "compactMetadata": {"trigger": TRIGGER, "preTokens": plan.tokens_before, "batchcompact": marker},
    }
    summary_line = {
        "parentUuid": boundary_id,
        "isSidechain": side,
        **env,
        "type": "user",
        "message": {"role": "user", "content": SUMMARY_PREAMBLE + summary},
        "isVisibleInTranscriptOnly": True,
        "isCompactSummary": True,
        "uuid": summary_id,
        "timestamp": now_iso,
    }
    out = [boundary, summary_line]
    parent = summary_id
    for obj, new in zip(kept, copy_ids, strict=True):
        copy = dict(obj)
        copy.pop(COPY_MARKER, None)
        message = copy.get("message")
        if copy.get("type") == "assistant" and isinstance(message, dict) and isinstance(message.get("id"), str):
            copy["message"] = {k: v for k, v in message.items() if k != "usage"}
            copy["message"]["id"] = copy_message_id(session, plan, message["id"])
        copy[COPY_MARKER] = {"copyOf": obj.get("uuid")}
        copy["parentUuid"] = parent
        copy["isSidechain"] = side
        copy["timestamp"] = now_iso
        copy["uuid"] = new
        source = copy.get("sourceToolAssistantUUID")
        if isinstance(source, str) and source in remap:
            copy["sourceToolAssistantUUID"] = remap[source]
        out.append(copy)
        parent = new
    return out


def verify(original: Session, written: Session, plan: CompactionPlan) -> list[str]:
    """Problems with a written transcript (empty when it is good)."""
    return verify_written(original, written, plan.first_kept_entry_id)
