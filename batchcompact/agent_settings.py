"""The agents' own compaction settings, read where the agent keeps them.

pi: the global `settings.json` in the agent dir (`$PI_CODING_AGENT_DIR`, default `~/.pi/agent`) deep-merged
with the project's `.pi/settings.json` under the session's cwd (the project wins, as in pi). Only the
`compaction` keys batchcompact shares with pi are read: `reserveTokens`, `keepRecentTokens`, `enabled`.
Gemini CLI: `model.compressionThreshold` (a fraction of the model's window, 0 < x <= 1) in the user's
`~/.gemini/settings.json`, as the compression threshold (`threshold_percent`).
Missing or unreadable files are ignored: these settings are a convenience, never a reason to fail.
"""

from __future__ import annotations

import json
import os
from functools import lru_cache
from pathlib import Path
from typing import Any

# pi's settings.json compaction keys -> planner setting names.
PI_SETTINGS_KEYS = {"reserveTokens": "reserve_tokens", "keepRecentTokens": "keep_recent_tokens"}
# Planner settings pi's files may set (plus "enabled": False, which skips the session unless --force).
PI_FIELDS = ("reserve_tokens", "keep_recent_tokens", "enabled")
# Every planner setting an agent's own files may set (those nobody set on the command line or elsewhere).
AGENT_FIELDS = (*PI_FIELDS, "threshold_percent")


def pi_agent_dir() -> Path:
    explicit = os.environ.get("PI_CODING_AGENT_DIR")
    return Path(os.path.expanduser(explicit)) if explicit else Path.home() / ".pi" / "agent"


def read_pi_compaction(path: Path) -> dict[str, Any]:
    """The `compaction` object of one pi settings.json, or {}."""
    try:
        with open(path, encoding="utf-8") as handle:
            data = json.load(handle)
    except (OSError, ValueError):
        return {}
    compaction = data.get("compaction") if isinstance(data, dict) else None
    return compaction if isinstance(compaction, dict) else {}


def pi_settings(cwd: str | None = None) -> tuple[dict[str, Any], list[str]]:
    """pi's compaction settings for a session started in `cwd`: (planner values, files that set any)."""
    values: dict[str, Any] = {}
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


def _stamp(path: Path) -> int | None:
    try:
        return os.stat(path).st_mtime_ns
    except OSError:
        return None


@lru_cache(maxsize=1024)
def _pi_settings_cached(cwd: str | None, agent_dir: str, stamps: tuple[int | None, ...]) -> tuple[Any, ...]:
    values, used = pi_settings(cwd)
    return tuple(sorted(values.items())), tuple(used)


def pi_overrides(cwd: str | None, fields: tuple[str, ...]) -> tuple[dict[str, Any], list[str]]:
    """The values pi's settings give the `fields` still at their defaults, for a session started in `cwd`
    (read once per project and file version, so an archive of many sessions costs a stat or two each)."""
    agent_dir = pi_agent_dir()
    stamps = (_stamp(agent_dir / "settings.json"), _stamp(Path(cwd) / ".pi" / "settings.json") if cwd else None)
    values, used = _pi_settings_cached(cwd, str(agent_dir), stamps)
    return {k: v for k, v in values if k in fields}, list(used)


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
    value = _gemini_threshold_cached(str(path), _stamp(path))
    return ({"threshold_percent": value * 100}, str(path)) if value is not None else ({}, None)
