"""OpenClaw's own settings for a session read by read.py: the window and the compaction settings come from
the user's OpenClaw config, `openclaw.json` in the state folder the session lives under
(`<state>/agents/<agent>/...`; `$OPENCLAW_CONFIG_PATH` when set): the session model's `contextTokens`
(OpenClaw's active-input cap) or `contextWindow` in `models.providers.<provider>.models[]`, and
`agents.defaults.compaction.{enabled, keepRecentTokens, reserveTokens}`.
"""

from __future__ import annotations

import dataclasses
import os
from pathlib import Path
from typing import TYPE_CHECKING, Any

from batchcompact.adapters.common.lines import object_at
from batchcompact.adapters.common.settings_files import json_settings, positive
from batchcompact.core.jsontypes import JsonObject
from batchcompact.core.session import Session

if TYPE_CHECKING:
    from batchcompact.core.planner import CompactionSettings

CONFIG = "openclaw.json"


def state_folder(path: str | os.PathLike) -> Path | None:
    """The OpenClaw state folder above a session (`<state>/agents/<agent>/{agent,sessions}/...`)."""
    parts = Path(str(path).rpartition("#")[0] or str(path)).parts
    if "agents" not in parts:
        return None
    index = len(parts) - 1 - parts[::-1].index("agents")
    return Path(*parts[:index]) if index > 0 else None


def config_path(path: str | os.PathLike) -> Path | None:
    named = os.environ.get("OPENCLAW_CONFIG_PATH", "").strip()
    if named:
        return Path(os.path.expanduser(named))
    state = state_folder(path)
    return state / CONFIG if state is not None else None


def load_config(path: str | os.PathLike) -> tuple[JsonObject, Path | None]:
    """The config as a dict and its file; {} when missing or not plain JSON (OpenClaw also reads JSON5:
    comments and trailing commas are not understood here, and the price table's window is used instead)."""
    where = config_path(path)
    if where is None:
        return {}, None
    return json_settings(where), where


def config_window(path: str | os.PathLike, session: Session) -> int | None:
    """The session model's window from openclaw.json (`contextTokens`, else `contextWindow`), or None."""
    from batchcompact.core.planner import session_model

    config, _ = load_config(path)
    providers = (config.get("models") or {}).get("providers") if isinstance(config.get("models"), dict) else None
    if not isinstance(providers, dict) or session.tree is None:
        return None
    provider, model = session_model(session.path_entries())
    entry = providers.get(provider) if provider else None
    models = entry.get("models") if isinstance(entry, dict) else None
    for item in models if isinstance(models, list) else ():
        if isinstance(item, dict) and item.get("id") == model:
            return positive(item.get("contextTokens")) or positive(item.get("contextWindow"))
    return None


def compaction_settings(path: str | os.PathLike) -> tuple[JsonObject, Path | None]:
    """`agents.defaults.compaction` of the session's openclaw.json."""
    config, where = load_config(path)
    agents = object_at(config, "agents")
    defaults = object_at(agents, "defaults")
    compaction = defaults.get("compaction")
    return (compaction if isinstance(compaction, dict) else {}), where


def with_openclaw_settings(session: Session, settings: CompactionSettings,
                           fields: tuple[str, ...]) -> tuple[CompactionSettings, str | None]:
    """OpenClaw's own compaction settings for the settings nobody set; the skip reason when they turn
    threshold compaction off (`enabled: false`; --force compacts anyway, as `/compact` still does)."""
    values, where = compaction_settings(session.path)
    if values.get("enabled") is False and not settings.force:
        return settings, f"compaction disabled in OpenClaw settings ({where}; --force compacts anyway)"
    changes: dict[str, Any] = {}  # Any: CompactionSettings fields by name (dataclasses.replace checks them)
    for key, field in (("keepRecentTokens", "keep_recent_tokens"), ("reserveTokens", "reserve_tokens")):
        value = positive(values.get(key))
        if value is not None and field in fields:
            changes[field] = value
    return (dataclasses.replace(settings, **changes) if changes else settings), None
