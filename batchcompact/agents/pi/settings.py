"""pi's own compaction settings applied to a pi session (`batchcompact.agent_settings` reads them)."""

from __future__ import annotations

import dataclasses
from typing import Any


def with_pi_settings(session: Any, settings: Any, fields: tuple[str, ...]) -> tuple[Any, str | None]:
    """pi's own compaction settings (global, then the project's under the session's cwd) for the settings
    nobody set; returns the settings and, when pi's settings disable compaction, the skip reason."""
    from batchcompact.agent_settings import pi_overrides

    values, files = pi_overrides((session.header or {}).get("cwd"), fields)
    if values.pop("enabled", True) is False and not settings.force:
        return settings, f"compaction disabled in pi settings ({files[-1]}; --force compacts anyway)"
    return (dataclasses.replace(settings, **values) if values else settings), None
