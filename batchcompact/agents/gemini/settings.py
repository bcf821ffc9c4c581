"""Gemini CLI's own compression threshold applied to a Gemini CLI chat (`batchcompact.agent_settings`
reads it)."""

from __future__ import annotations

import dataclasses
from typing import Any


def with_gemini_settings(session: Any, settings: Any, fields: tuple[str, ...]) -> tuple[Any, str | None]:
    """`model.compressionThreshold` from the user's Gemini CLI settings as `threshold_percent`, when nobody
    set a threshold; Gemini CLI has no switch that turns compression off, so never a skip reason."""
    from batchcompact.agent_settings import gemini_overrides

    if settings.threshold_tokens is not None:
        return settings, None
    values, _ = gemini_overrides(fields)
    return (dataclasses.replace(settings, **values) if values else settings), None
