"""A pi session starts with its header: the first object has `type: "session"`."""

from __future__ import annotations


def detect_line(obj: dict, first: bool) -> bool:
    return first and obj.get("type") == "session"


def detect_prefix(raw: bytes, kind: str | None, first: bool) -> bool:
    return first and kind == "session"
