"""Hermes Agent: `$HERMES_HOME` (comma-separated) or `~/.hermes`, its `state.db`. Report only (report.py)."""

from __future__ import annotations

from batchcompact.agents.spec import Agent, Files, Place

AGENT = Agent(
    name="hermes",
    display_name="Hermes Agent",
    places=(Place(defaults=("~/.hermes",), env="HERMES_HOME", env_list=True, sessions=(), files=("state.db",)),),
    suffixes=(),
    files=(Files(("state.db",), under=(".hermes", "hermes"), sqlite=True),),
    usage="batchcompact.adapters.hermes.report:extract_hermes",
)
