"""pi's own compaction settings: the global `settings.json` in the agent dir (`$PI_CODING_AGENT_DIR`, default
`~/.pi/agent`) deep-merged with the project's `.pi/settings.json` under the session's cwd (the project wins, as in
pi). Only the `compaction` keys batchcompact shares with pi are read: `reserveTokens`, `keepRecentTokens`,
`enabled`. Missing or unreadable files are ignored: these settings are a convenience, never a reason to fail."""

from __future__ import annotations

import dataclasses
import json
import os
from functools import lru_cache
from pathlib import Path
from typing import TYPE_CHECKING

from batchcompact.core.jsontypes import JsonObject, JsonValue
from batchcompact.folders import mtime_ns

if TYPE_CHECKING:
    from batchcompact.core.planner import CompactionSettings
    from batchcompact.core.session import Session

# pi's settings.json compaction keys -> planner setting names.
PI_SETTINGS_KEYS = {"reserveTokens": "reserve_tokens", "keepRecentTokens": "keep_recent_tokens"}


def pi_agent_dir() -> Path:
    explicit = os.environ.get("PI_CODING_AGENT_DIR")
    return Path(os.path.expanduser(explicit)) if explicit else Path.home() / ".pi" / "agent"


def read_pi_compaction(path: Path) -> JsonObject:
    """The `compaction` object of one pi settings.json, or {}."""
    try:
        with open(path, encoding="utf-8") as handle:
            data = json.load(handle)
    except (OSError, ValueError):
        return {}
    compaction = data.get("compaction") if isinstance(data, dict) else None
    return compaction if isinstance(compaction, dict) else {}


def pi_settings(cwd: str | None = None) -> tuple[JsonObject, list[str]]:
    """pi's compaction settings for a session started in `cwd`: (planner values, files that set any)."""
    values: JsonObject = {}
    used: list[str] = []
    candidates = [pi_agent_dir() / "settings.json"]
    if cwd:
        candidates.append(Path(cwd) / ".pi" / "settings.json")
    for path in candidates:
        compaction = read_pi_compaction(path)
        found = False
        for key, name in PI_SETTINGS_KEYS.items():
            value = compaction.get(key)
            if isinstance(value, int) and not isinstance(value, bool) and value >= 0:
                values[name] = value
                found = True
        if isinstance(compaction.get("enabled"), bool):
            values["enabled"] = compaction["enabled"]
            found = True
        if found:
            used.append(str(path))
    return values, used


@lru_cache(maxsize=1024)
def _pi_settings_cached(cwd: str | None, agent_dir: str,
                        stamps: tuple[int | None, ...]) -> tuple[tuple[tuple[str, JsonValue], ...], tuple[str, ...]]:
    values, used = pi_settings(cwd)
    return tuple(sorted(values.items())), tuple(used)


def pi_overrides(cwd: str | None, fields: tuple[str, ...]) -> tuple[JsonObject, list[str]]:
    """The values pi's settings give the `fields` still at their defaults, for a session started in `cwd`
    (read once per project and file version, so an archive of many sessions costs a stat or two each)."""
    agent_dir = pi_agent_dir()
    if not isinstance(cwd, str):  # a header whose cwd is a list or an object names no project
        cwd = None
    stamps = (mtime_ns(agent_dir / "settings.json"), mtime_ns(Path(cwd) / ".pi" / "settings.json") if cwd else None)
    values, used = _pi_settings_cached(cwd, str(agent_dir), stamps)
    return {k: v for k, v in values if k in fields}, list(used)


def with_pi_settings(session: Session, settings: CompactionSettings,
                     fields: tuple[str, ...]) -> tuple[CompactionSettings, str | None]:
    """pi's own compaction settings (global, then the project's under the session's cwd) for the settings
    nobody set; returns the settings and, when pi's settings disable compaction, the skip reason. An
    oh-my-pi session takes oh-my-pi's settings instead (adapters/pi/omp.py)."""
    from batchcompact.adapters.pi.omp import is_omp, omp_settings

    cwd = (session.header or {}).get("cwd")
    cwd = cwd if isinstance(cwd, str) else None  # a damaged header's cwd names no project
    if is_omp(session):
        found, files, reserve_set = omp_settings(session.path, cwd)
        values = {k: v for k, v in found.items() if k in fields}
        if session.agent_limits is None:
            session.agent_limits = {}
        limits = session.agent_limits  # the trigger reads them (planning.session_trigger)
        limits["reserve_set"] = limits.get("reserve_set", False) or (reserve_set and "reserve_tokens" in fields)
        if values.pop("enabled", True) is False and not settings.force:
            return settings, f"compaction disabled in oh-my-pi settings ({files[-1]}; --force compacts anyway)"
        return (dataclasses.replace(settings, **values) if values else settings), None
    values, files = pi_overrides(cwd, fields)
    if values.pop("enabled", True) is False and not settings.force:
        return settings, f"compaction disabled in pi settings ({files[-1]}; --force compacts anyway)"
    return (dataclasses.replace(settings, **values) if values else settings), None
