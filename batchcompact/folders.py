"""batchcompact's own folders under the XDG base directories, each read when asked (tests and users move
them with the environment): configuration, state (the run database and lock) and the cache (the usage
cache, the token counts, the price map's index)."""

from __future__ import annotations

import os
from pathlib import Path


def _base(variable: str, default: str) -> Path:
    """`$variable`, or `~/default` when it is unset or empty, with our folder in it."""
    return Path(os.environ.get(variable) or os.path.join(os.path.expanduser("~"), default)) / "batchcompact"


def config_folder() -> Path:
    return _base("XDG_CONFIG_HOME", ".config")


def state_folder() -> Path:
    return _base("XDG_STATE_HOME", os.path.join(".local", "state"))


def cache_folder() -> Path:
    return _base("XDG_CACHE_HOME", ".cache")


def mtime_ns(path: str | Path) -> int | None:
    """A file's modification time in nanoseconds, or None when it cannot be stat'ed (a cache stamp)."""
    try:
        return os.stat(path).st_mtime_ns
    except OSError:
        return None
