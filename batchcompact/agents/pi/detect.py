"""A pi session starts with its header: the first object has `type: "session"`. oh-my-pi puts a fixed-width
title slot (`type: "title"`, `v: 1`) before its header. A file whose first line is a pi entry (a pi entry
type with a string `id`, a `parentId` and a `timestamp`) is a pi session that lost its header (a tail cut
from one): the reader says so (batchcompact/adapters/pi/README.md, "What we accept of pi's files")."""

from __future__ import annotations

# pi's tree entry types (core/entries.py KNOWN_ENTRY_TYPES; this module imports nothing of the package)
ENTRY_TYPES = ("message", "model_change", "thinking_level_change", "compaction", "branch_summary", "custom",
               "custom_message", "label", "session_info")


def detect_line(obj: dict, first: bool) -> bool:
    kind = obj.get("type")
    if not first:
        return False
    if kind == "session" or (kind == "title" and obj.get("v") == 1):
        return True
    return (kind in ENTRY_TYPES and isinstance(obj.get("id"), str) and "parentId" in obj
            and isinstance(obj.get("timestamp"), str) and "uuid" not in obj)


def detect_prefix(raw: bytes, kind: str | None, first: bool) -> bool:
    return first and (kind == "session" or (kind == "title" and b'"v":1' in raw))
