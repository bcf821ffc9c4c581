"""Checks the appending writers share in their `verify` (pi-shaped planning views on both sides)."""

from __future__ import annotations

from batchcompact.core.context import written_context
from batchcompact.core.jsontypes import JsonObject
from batchcompact.core.session import Session
from batchcompact.formats.compressed import is_zstd, open_session

CHUNK = 1 << 20


def check_byte_prefix(original_path: str, written_path: str, size: int | None = None) -> list[str]:
    """Every original byte (the first `size` ones: what was read and planned) is still at the start of the
    written file: old lines stay, as the agents do."""
    if is_zstd(original_path):  # compare what the agent reads: the whole decompressed text
        size = None
    try:
        with open_session(original_path) as old, open_session(written_path) as new:
            offset = 0
            while True:
                want = CHUNK if size is None else min(CHUNK, size - offset)
                a = old.read(want) if want > 0 else b""
                if not a:
                    return []
                b = new.read(len(a))
                if a != b:
                    return [f"{written_path}: original bytes changed near byte {offset}"]
                offset += len(a)
    except OSError as exc:
        return [f"cannot compare {original_path} and {written_path}: {exc.strerror or exc}"]


# Not compared: copies get a new timestamp; Codex keeps no usage (or model) inside replacement_history.
IGNORED_KEYS = frozenset({"timestamp", "usage", "model"})


def _comparable(message: JsonObject) -> JsonObject:
    return {k: v for k, v in message.items() if k not in IGNORED_KEYS}


def kept_messages(session: Session, first_kept_entry_id: str) -> list[JsonObject] | None:
    """The messages of the active path from `first_kept_entry_id` on, as the new context must keep them."""
    path = session.path_entries()
    index = next((i for i, e in enumerate(path) if e.id == first_kept_entry_id), -1)
    if index < 0:
        return None
    return [e.message for e in path[index:] if e.type == "message" and e.message is not None]


def orphan_tool_results(messages: list[JsonObject]) -> list[str]:
    """Tool results whose call is not in an earlier assistant message of `messages`."""
    calls: set[str | None] = set()  # a call without an id answers a result without one
    orphans: list[str] = []
    for message in messages:
        if message.get("role") == "assistant":
            for block in message.get("content") or ():
                if isinstance(block, dict) and block.get("type") == "toolCall":
                    calls.add(block.get("id"))
        elif message.get("role") == "toolResult":
            ids = message.get("toolCallIds") or [message.get("toolCallId")]
            orphans.extend(i for i in ids if i not in calls)
    return orphans


def verify_written(original: Session, written: Session, first_kept_entry_id: str) -> list[str]:
    """Problems of a written file: errors on re-read, lost bytes, context != summary + kept tail, orphans."""
    out = [str(p) for p in written.errors]
    last_line = original.last_line
    out.extend(
        str(p)
        for p in written.problems
        if p.severity != "error" and p.line is not None and p.line > last_line
    )
    out.extend(check_byte_prefix(original.path, written.path, original.size))
    path = written.path_entries()
    if not path or path[-1].type != "compaction":
        out.append(f"{written.path}: the written file does not end in a compaction on its active path")
        return out
    context = written_context(written)
    messages = [m.message for m in context.messages]
    if not messages or messages[0].get("role") != "compactionSummary":
        out.append(f"{written.path}: the rebuilt context does not start with the summary")
        return out
    expected = kept_messages(original, first_kept_entry_id)
    if expected is None:
        out.append(f"first kept entry {first_kept_entry_id!r} is not on the original's active path")
    elif [_comparable(m) for m in messages[1:]] != [_comparable(m) for m in expected]:
        out.append(
            f"{written.path}: the rebuilt context is not summary + kept tail "
            f"({len(messages) - 1} messages after the summary, {len(expected)} expected)"
        )
    orphans = orphan_tool_results(messages[1:])
    if orphans:
        out.append(
            f"{written.path}: tool results separated from their calls: {', '.join(map(str, orphans[:5]))}"
        )
    return out
