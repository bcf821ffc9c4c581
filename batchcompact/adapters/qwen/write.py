"""What batchcompact appends to a Qwen Code chat to compact it: one `system`/`chat_compression` record,
as Qwen Code records its own compression (`recordChatCompression`).

Its `systemPayload.compressedHistory` is the model history Qwen Code resumes from (the chain's records
after it are appended to it): the summary as a user message (`<state_snapshot>…</state_snapshot>`), the
acknowledgement Qwen Code writes ("Got it. Thanks for the additional context!", left out when the kept
tail starts with a model turn, so the roles keep alternating), then the kept tail: the `message` of every
record of the active path from the first kept entry on (items of an earlier compressed history
included), verbatim. `info` carries the token counts Qwen Code reads back on resume (`newTokenCount`
estimated); `batchcompact` our marker (tokens before, file lists). The record's parent is the chain's
last record, so it is the new leaf; old records are never touched and no usage is copied.
"""

from __future__ import annotations

import uuid as uuidlib

from batchcompact.adapters.common.verify import verify_written
from batchcompact.adapters.qwen.extra import QwenSessionExtra
from batchcompact.adapters.qwen.read import ACK_TEXT, kept_contents
from batchcompact.core.apply import batchcompact_marker
from batchcompact.core.jsontypes import JsonObject
from batchcompact.core.planner import CompactionPlan
from batchcompact.core.session import Session

NAMESPACE = uuidlib.UUID("0b9f6c52-7d0e-4f8a-a3c4-5e2d1b6f9a70")


def build_compaction(session: Session, plan: CompactionPlan, summary: str, *, usage: JsonObject | None = None,
                     now_iso: str, from_hook: bool = False) -> list[JsonObject]:
    """The record to append to the chat (pure)."""
    kept = kept_contents(session, plan.first_kept_entry_id)
    history: list[JsonObject] = [{"role": "user", "parts": [{"text": f"<state_snapshot>\n{summary}\n</state_snapshot>"}]}]
    if not kept or kept[0].get("role") != "model":
        history.append({"role": "model", "parts": [{"text": ACK_TEXT}]})
    history += kept
    marker = batchcompact_marker(plan, from_hook, usage)
    seed = f"{session.session_id}|{plan.leaf_id}|{plan.first_kept_entry_id}"
    extra = QwenSessionExtra.of(session)
    record = {
        "uuid": str(uuidlib.uuid5(NAMESPACE, seed)),
        "parentUuid": extra.leaf_uuid,
        **extra.envelope,
        "timestamp": now_iso,
        "type": "system",
        "provenance": "system",
        "subtype": "chat_compression",
        "systemPayload": {
            "info": {
                "originalTokenCount": plan.tokens_before,
                "newTokenCount": plan.tokens_after_est,
                "newTokenCountIsEstimated": True,
                "compressionStatus": 1,
                "triggerReason": "manual",
            },
            "compressedHistory": history,
            "completedToolCallIds": [],
            "batchcompact": marker,
        },
    }
    return [record]


def verify(original: Session, written: Session, plan: CompactionPlan) -> list[str]:
    """Problems with a written chat (empty when it is good)."""
    return verify_written(original, written, plan.first_kept_entry_id)
