"""What batchcompact appends to a Codex rollout to compact it (reference transcripts.md 2.3, 6.5).

`build_compaction` is pure and returns two lines, the shape Codex itself writes:
1. `{"timestamp", "type": "compacted", "payload": {"message": <summary>, "replacement_history": [...]}}`
   where the replacement history is what Codex's local compaction builds (codex-rs/core/src/compact.rs
   `build_compacted_history`), plus our kept tail:
   - the initial context: the developer/user message items Codex recorded before the session's first
     prompt (instructions, AGENTS.md, environment context), verbatim, unless the kept tail has them;
   - earlier user messages: the real prompts before the cut (and those an earlier compaction carried),
     newest first within 20,000 tokens (bytes / 4, Codex's count; the kept tail's prompts count first,
     being the newest), the last one that does not fit truncated to what is left, in their order;
   - the summary as a user message (Codex's summary prefix + "\\n" + summary);
   - the kept tail: the raw response items of every entry on the active path from the plan's first kept
     entry on (messages, calls, outputs, reasoning, ghost snapshots, encrypted `compaction` items; items
     from an earlier `replacement_history` included), verbatim.
2. `{"timestamp", "type": "event_msg", "payload": {"type": "context_compacted"}}`.
Codex rebuilds its history from `replacement_history` when present, so the resumed context is
summary + kept tail. Old lines are never touched.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from batchcompact.adapters.codex.extra import CodexSessionExtra
from batchcompact.adapters.codex.items import (
    SUMMARY_PREFIX,
    USER_MESSAGE_BUDGET_TOKENS,
    approx_tokens,
    is_context_text,
    item_text,
)
from batchcompact.adapters.common.verify import verify_written
from batchcompact.core.jsontypes import JsonObject
from batchcompact.core.planner import CompactionPlan
from batchcompact.core.session import Session

if TYPE_CHECKING:
    from batchcompact.core.entries import Entry


def _first_kept_index(path: list[Entry], plan: CompactionPlan) -> int:
    index = next((i for i, e in enumerate(path) if e.id == plan.first_kept_entry_id), -1)
    if index < 0:
        raise ValueError(f"first kept entry {plan.first_kept_entry_id!r} is not on the active path")
    return index


def _is_prefix(entry: Entry) -> bool:
    return entry.type == "codex_meta" and entry.data.get("lineType") == "replacement_prefix"


def kept_items(session: Session, plan: CompactionPlan) -> list[JsonObject]:
    """The raw response items of the kept tail, in order (an earlier compaction's prefix items excluded:
    the new prefix is rebuilt)."""
    path = session.path_entries()
    entry_items = CodexSessionExtra.of(session).entry_items
    out: list[JsonObject] = []
    for entry in path[_first_kept_index(path, plan) :]:
        if not _is_prefix(entry) and entry.id is not None:
            out.extend(entry_items.get(entry.id, ()))  # messages, and ghost snapshots / encrypted items
    return out


def _user_text(entry: Entry, session: Session) -> str | None:
    """The text of a real user prompt entry, or None."""
    message = entry.message if entry.type == "message" else None
    if not message or message.get("role") != "user" or message.get("agentRole"):
        return None
    extra = CodexSessionExtra.of(session)
    if entry.id in extra.initial_ids:
        return None
    items = (extra.entry_items.get(entry.id) if entry.id is not None else None) or ()
    if not items or items[0].get("type") != "message":
        return None
    text = item_text(items[0])
    if entry.id in extra.real_users:
        return text
    return None if is_context_text(text) or not text else text


def earlier_user_messages(session: Session, plan: CompactionPlan) -> list[str]:
    """Codex's selection of earlier user messages for the new history (see the module docstring)."""
    path = session.path_entries()
    first_kept = _first_kept_index(path, plan)
    start = plan.boundary_start
    candidates: list[str] = []
    previous = next((e for e in reversed(path[:first_kept]) if e.type == "compaction"), None)
    if previous is not None:
        candidates.extend(t for t in previous.data.get("prefixUserMessages") or () if isinstance(t, str))
    candidates.extend(t for t in (_user_text(e, session) for e in path[start:first_kept]) if t)
    remaining = USER_MESSAGE_BUDGET_TOKENS
    remaining -= sum(approx_tokens(t) for t in (_user_text(e, session) for e in path[first_kept:]) if t)
    selected: list[str] = []
    for text in reversed(candidates):
        if remaining <= 0:
            break
        tokens = approx_tokens(text)
        if tokens <= remaining:
            selected.append(text)
            remaining -= tokens
        else:
            selected.append(truncate_to_tokens(text, remaining))
            break
    return selected[::-1]


def truncate_to_tokens(text: str, tokens: int) -> str:
    """Keep the start and the end of `text` within about `tokens` tokens, with a marker in between (the
    shape of Codex's `truncate_text`)."""
    budget = max(tokens, 0) * 4
    removed = approx_tokens(text) - tokens
    head, tail = text[: budget // 2], text[len(text) - budget // 2 :] if budget >= 2 else ""
    return f"{head}…{removed} tokens truncated…{tail}"


def _message(text: str) -> JsonObject:
    return {"type": "message", "role": "user", "content": [{"type": "input_text", "text": text}]}


def build_compaction(
    session: Session,
    plan: CompactionPlan,
    summary: str,
    *,
    usage: JsonObject | None = None,
    now_iso: str,
    from_hook: bool = False,
) -> list[JsonObject]:
    """The JSON objects to append to the rollout (pure). `usage` and `from_hook` have no place in Codex's
    shape and are not written (the run report records them)."""
    kept = kept_items(session, plan)
    initial = [item for item in CodexSessionExtra.of(session).initial_context if item not in kept]
    users = [_message(text) for text in earlier_user_messages(session, plan)]
    history = [*initial, *users, _message(SUMMARY_PREFIX + "\n" + summary), *kept]
    compacted = {
        "timestamp": now_iso,
        "type": "compacted",
        "payload": {"message": summary, "replacement_history": history},
    }
    event = {"timestamp": now_iso, "type": "event_msg", "payload": {"type": "context_compacted"}}
    return [compacted, event]


def verify(original: Session, written: Session, plan: CompactionPlan) -> list[str]:
    """Problems with a written rollout (empty when it is good)."""
    return verify_written(original, written, plan.first_kept_entry_id)
