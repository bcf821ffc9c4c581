"""Buzz (Block's Nostr agent platform): the desktop app's local archive, `archive/archive.db` in its nest
(`~/.buzz`, the dev build's `~/.buzz-dev`; ccusage's `$BUZZ_PATH_ROOT` replaces them, `$BUZZ_ARCHIVE_PATH`
names the file). Report only (report.py)."""

from __future__ import annotations

from batchcompact.agents.spec import Agent, Files, Place

AGENT = Agent(
    name="buzz",
    display_name="Buzz",
    places=(
        Place(defaults=("~/.buzz", "~/.buzz-dev"), env="BUZZ_PATH_ROOT", env_list=True, sessions=("archive",)),
        Place(env="BUZZ_ARCHIVE_PATH", env_list=True, sessions=("",)),
    ),
    suffixes=(),
    files=(Files(("archive.db",), under=("archive",), sqlite=True),),
    usage="batchcompact.adapters.buzz.report:extract_buzz",
)
