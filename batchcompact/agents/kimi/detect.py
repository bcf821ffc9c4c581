"""A Kimi line (the rule `detect_line` names), importing nothing of the package."""

from __future__ import annotations


def sniff_kimi(obj: dict, first: bool) -> bool:
    """A wire file's first line (`metadata` with a protocol version) or a kimi-cli `StatusUpdate`."""
    if obj.get("type") == "metadata" and "protocol_version" in obj:
        return True
    message = obj.get("message")
    return isinstance(message, dict) and message.get("type") in ("StatusUpdate", "TurnBegin")
