"""A Qwen Code chat line: `{uuid, parentUuid, sessionId, timestamp, type: user|assistant|tool_result|
system, ...}` whose `message` is Gemini-shaped (`{role, parts}`), or a `system` record with a
`systemPayload`. Claude Code lines share the envelope but carry `message.content`, never `parts`."""

from __future__ import annotations

TYPES = frozenset({"user", "assistant", "tool_result", "system"})


def detect_line(obj: dict, first: bool) -> bool:
    if obj.get("type") in TYPES and isinstance(obj.get("usageMetadata"), dict):
        return True  # Gemini's usage names: never in a Claude Code line
    if obj.get("type") not in TYPES or not isinstance(obj.get("uuid"), str) or "sessionId" not in obj:
        return False
    message = obj.get("message")
    if isinstance(message, dict):
        return isinstance(message.get("parts"), list)
    return obj.get("type") == "tool_result" or "systemPayload" in obj


def detect_prefix(raw: bytes, kind: str | None, first: bool) -> bool:
    head = raw[:4096]
    return kind in TYPES and b'"uuid"' in head and (b'"parts"' in head or b'"systemPayload"' in head)
