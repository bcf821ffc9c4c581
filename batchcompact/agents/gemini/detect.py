"""A Gemini CLI chat line: the header `{sessionId, projectHash, ...}` (no `type`), a message record
`{id, timestamp, type: user|gemini|info|error|warning, content}`, a `$set` patch or a `$rewindTo`; a
legacy chat is one JSON document with `sessionId`, `projectHash` and `messages` (judged from its head)."""

from __future__ import annotations

from pathlib import Path

MESSAGE_TYPES = frozenset({"user", "gemini", "info", "error", "warning"})


def detect_line(obj: dict, first: bool) -> bool:
    if isinstance(obj.get("sessionId"), str) and isinstance(obj.get("projectHash"), str) and "type" not in obj:
        return True
    if isinstance(obj.get("$set"), dict) or isinstance(obj.get("$rewindTo"), str):
        return True
    return (isinstance(obj.get("id"), str) and obj.get("type") in MESSAGE_TYPES and "content" in obj
            and "timestamp" in obj and "uuid" not in obj)


def detect_prefix(raw: bytes, kind: str | None, first: bool) -> bool:
    head = raw[:4096]
    return kind is None and b'"sessionId"' in head and b'"projectHash"' in head


def detect_file(path: Path, head: bytes) -> bool:
    """A legacy chat: a JSON document (not one object per line) naming sessionId and projectHash."""
    text = head.lstrip()
    return text.startswith(b"{") and b'"projectHash"' in head and b'"sessionId"' in head and b'"messages"' in head
