"""An agent's own settings files as the adapters read them (`settings.py` of OpenCode, OpenClaw, Gemini CLI):
a plain JSON object, read again only when the file's modification time changes, and `{}` when the file is
missing, unreadable, not plain JSON (comments, JSON5) or not an object: an agent's settings are a
convenience, never a reason to fail. Numbers in them: `positive`."""

from __future__ import annotations

import json
from functools import lru_cache
from pathlib import Path

from batchcompact.core.jsontypes import JsonObject, JsonValue
from batchcompact.folders import mtime_ns


def json_settings(path: str | Path) -> JsonObject:
    """The settings file at `path` as a dict (shared between calls: do not change it)."""
    return _document(str(path), mtime_ns(path))


@lru_cache(maxsize=64)
def _document(path: str, stamp: int | None) -> JsonObject:
    if stamp is None:
        return {}
    try:
        with open(path, encoding="utf-8") as handle:
            data = json.load(handle)
    except (OSError, ValueError):
        return {}
    return data if isinstance(data, dict) else {}


def positive(value: JsonValue) -> int | None:
    """A count or limit from a settings file: a positive number as an int, anything else None."""
    return int(value) if isinstance(value, (int, float)) and not isinstance(value, bool) and value > 0 else None
