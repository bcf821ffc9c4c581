"""Gemini CLI's own compression threshold: `model.compressionThreshold` (a fraction of the model's window,
0 < x <= 1) in the user's `~/.gemini/settings.json`, as the compression threshold (`threshold_percent`). A
missing or unreadable file is ignored: these settings are a convenience, never a reason to fail."""

from __future__ import annotations

import dataclasses
import json
from functools import lru_cache
from pathlib import Path
from typing import Any

from batchcompact.folders import mtime_ns


def gemini_settings_path() -> Path:
    return Path.home() / ".gemini" / "settings.json"


@lru_cache(maxsize=64)
def _gemini_threshold_cached(path: str, stamp: int | None) -> float | None:
    try:
        with open(path, encoding="utf-8") as handle:
            data = json.load(handle)
    except (OSError, ValueError):
        return None
    model = data.get("model") if isinstance(data, dict) else None
    value = model.get("compressionThreshold") if isinstance(model, dict) else None
    if isinstance(value, (int, float)) and not isinstance(value, bool) and 0 < value <= 1:
        return float(value)
    return None


def gemini_overrides(fields: tuple[str, ...]) -> tuple[dict[str, Any], str | None]:
    """`threshold_percent` from Gemini CLI's `model.compressionThreshold` when it is among `fields`;
    (values, the file that set it)."""
    if "threshold_percent" not in fields:
        return {}, None
    path = gemini_settings_path()
    value = _gemini_threshold_cached(str(path), mtime_ns(path))
    return ({"threshold_percent": value * 100}, str(path)) if value is not None else ({}, None)


def with_gemini_settings(session: Any, settings: Any, fields: tuple[str, ...]) -> tuple[Any, str | None]:
    """`model.compressionThreshold` from the user's Gemini CLI settings as `threshold_percent`, when nobody
    set a threshold; Gemini CLI has no switch that turns compression off, so never a skip reason."""
    if settings.threshold_tokens is not None:
        return settings, None
    values, _ = gemini_overrides(fields)
    return (dataclasses.replace(settings, **values) if values else settings), None
