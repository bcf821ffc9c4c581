"""Gemini CLI's own compression threshold: `model.compressionThreshold` (a fraction of the model's window,
0 < x <= 1) in the user's `~/.gemini/settings.json`, as the compression threshold (`threshold_percent`). A
missing or unreadable file is ignored: these settings are a convenience, never a reason to fail."""

from __future__ import annotations

import dataclasses
from pathlib import Path
from typing import TYPE_CHECKING

from batchcompact.adapters.common.settings_files import json_settings
from batchcompact.core.jsontypes import JsonObject

if TYPE_CHECKING:
    from batchcompact.core.planner import CompactionSettings
    from batchcompact.core.session import Session


def gemini_settings_path() -> Path:
    return Path.home() / ".gemini" / "settings.json"


def gemini_threshold(path: Path) -> float | None:
    """`model.compressionThreshold` of the settings file at `path`, when it is a fraction in (0, 1]."""
    model = json_settings(path).get("model")
    value = model.get("compressionThreshold") if isinstance(model, dict) else None
    if isinstance(value, (int, float)) and not isinstance(value, bool) and 0 < value <= 1:
        return float(value)
    return None


def gemini_overrides(fields: tuple[str, ...]) -> tuple[JsonObject, str | None]:
    """`threshold_percent` from Gemini CLI's `model.compressionThreshold` when it is among `fields`;
    (values, the file that set it)."""
    if "threshold_percent" not in fields:
        return {}, None
    path = gemini_settings_path()
    value = gemini_threshold(path)
    return ({"threshold_percent": value * 100}, str(path)) if value is not None else ({}, None)


def with_gemini_settings(session: Session, settings: CompactionSettings,
                         fields: tuple[str, ...]) -> tuple[CompactionSettings, str | None]:
    """`model.compressionThreshold` from the user's Gemini CLI settings as `threshold_percent`, when nobody
    set a threshold; Gemini CLI has no switch that turns compression off, so never a skip reason."""
    if settings.threshold_tokens is not None:
        return settings, None
    values, _ = gemini_overrides(fields)
    return (dataclasses.replace(settings, **values) if values else settings), None
