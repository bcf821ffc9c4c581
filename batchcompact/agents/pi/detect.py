"""A pi session starts with its header: the first object has `type: "session"`. oh-my-pi puts a fixed-width
title slot (`type: "title"`, `v: 1`) before its header."""

from __future__ import annotations


def detect_line(obj: dict, first: bool) -> bool:
    return first and (obj.get("type") == "session" or (obj.get("type") == "title" and obj.get("v") == 1))


def detect_prefix(raw: bytes, kind: str | None, first: bool) -> bool:
    return first and (kind == "session" or (kind == "title" and b'"v":1' in raw))
