"""What batchcompact appends to a Copilot CLI events.jsonl to compact it: the events Copilot records for a
background compaction of its own, so `copilot --resume` rebuilds its history from our summary.

1. `session.compaction_start` (`compactionAttemptId`, `currentTokens` = tokens before, `trigger: manual`);
2. a copy of every event behind the kept tail's messages (`user.message`, `assistant.message`,
   `tool.execution_complete` of the active path from the first kept entry on), in order, with fresh ids,
   the new chain and our time: Copilot keeps the messages recorded between a compaction's start and its
   completion and replaces everything before the start by the summary. A copied `user.message` gets
   `source: "batchcompact-kept"` when it had none, so Copilot's summary message, which lists the user's
   prompts, lists the original once and not its copy;
3. `session.compaction_complete` (`success`, `outcome: applied`, the counts Copilot records, the summary
   in `summaryContent`, our summary calls' usage in `compactionTokensUsed`, which `report` leaves to the
   run report: our attempt id is name-based (UUID version 5, Copilot's are random) and our usage names
   no model (`adapters/copilot/report.py: ours`); Copilot's own compaction call is counted from it).

Every event is valid under the JSON Schema Copilot ships (`schemas/session-events.schema.json`), whose
event data admit no other keys: there is no marker object, and the file lists carried to the next
compaction are the `<read-files>`/`<modified-files>` tags at the end of our summary (as for Codex).

Old events are never touched and no usage record is copied, so `report` counts the same usage.
No checkpoint file is written (`checkpointPath` is left out; Copilot's resume does not read it), and the
session's `workspace.yaml` (`summary_count`) is left as it is: the writer writes the log alone.
"""

from __future__ import annotations

import uuid as uuidlib

from batchcompact.adapters.common.verify import verify_written
from batchcompact.adapters.copilot.extra import CopilotSessionExtra
from batchcompact.adapters.copilot.read import kept_events
from batchcompact.core.context import build_session_context
from batchcompact.core.jsontypes import JsonObject
from batchcompact.core.planner import CompactionPlan
from batchcompact.core.session import Session

NAMESPACE = uuidlib.UUID("5d0c8e1a-3f47-4b6e-9a21-c7e4f2b80d93")
KEPT_SOURCE = "batchcompact-kept"
COPIED = frozenset({"type", "data"})  # an event's own keys a copy keeps (id, time and chain are new)


def compaction_tokens_used(usage: JsonObject | None, calls: int) -> JsonObject | None:
    """Our summary calls' usage as Copilot records its compaction call's (input includes cache reads)."""
    if usage is None:
        return None
    return {"requestCount": calls, "inputTokens": usage.get("input", 0) + usage.get("cacheRead", 0),
            "outputTokens": usage.get("output", 0), "cacheReadTokens": usage.get("cacheRead", 0),
            "cacheWriteTokens": usage.get("cacheWrite", 0)}


def build_compaction(session: Session, plan: CompactionPlan, summary: str, *, usage: JsonObject | None = None,
                     now_iso: str, from_hook: bool = False) -> list[JsonObject]:
    """The events to append to the log (pure)."""
    kept = kept_events(session, plan.first_kept_entry_id)
    seed = f"{session.session_id}|{plan.leaf_id}|{plan.first_kept_entry_id}"
    attempt = str(uuidlib.uuid5(NAMESPACE, seed + "|attempt"))
    # Copilot's counts: the messages of the context now (an earlier summary is one), and after (ours + kept)
    messages = len(build_session_context(session.path_entries()).messages)
    events: list[JsonObject] = [{"type": "session.compaction_start", "data": {
        "compactionAttemptId": attempt,
        "currentTokens": plan.tokens_before,
        "trigger": "manual",
    }}]
    for event in kept:
        copy = {key: event[key] for key in COPIED}
        if event["type"] == "user.message" and "source" not in copy["data"]:
            copy["data"] = {**copy["data"], "source": KEPT_SOURCE}
        events.append(copy)
    data: JsonObject = {
        "success": True,
        "outcome": "applied",
        "compactionAttemptId": attempt,
        "preCompactionTokens": plan.tokens_before,
        "postCompactionTokens": plan.tokens_after_est,
        "tokensRemoved": max(plan.tokens_before - plan.tokens_after_est, 0),
        "preCompactionMessagesLength": messages,
        "messagesRemoved": max(messages - len(kept) - 1, 0),  # a count only: the start event places the cut
        "summaryContent": summary,
        "trigger": "manual",
    }
    used = compaction_tokens_used(usage, len(plan.calls))
    if used is not None:
        data["compactionTokensUsed"] = used
    events.append({"type": "session.compaction_complete", "data": data})
    parent = CopilotSessionExtra.of(session).last_event_id
    out = []
    for index, event in enumerate(events):
        event_id = str(uuidlib.uuid5(NAMESPACE, f"{seed}|{index}"))
        out.append({"type": event["type"], "data": event["data"], "id": event_id, "timestamp": now_iso,
                    "parentId": parent})
        parent = event_id
    return out


def verify(original: Session, written: Session, plan: CompactionPlan) -> list[str]:
    """Problems with a written log (empty when it is good)."""
    out = verify_written(original, written, plan.first_kept_entry_id)
    refused = written.not_writable
    if refused:
        out.append(f"{written.path}: {refused}")
    return out
