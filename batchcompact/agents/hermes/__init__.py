"""Hermes Agent (NousResearch): `$HERMES_HOME` or `~/.hermes`, its `state.db` (the `sessions/*.json`
transcripts carry no usage). Report only (report.py)."""

from __future__ import annotations

from batchcompact.agents.spec import Agent, Files, Place

AGENT = Agent(
    name="hermes",
    display_name="Hermes Agent",
    places=(Place(defaults=("~/.hermes",), env="HERMES_HOME", env_list=True, sessions=(), files=("state.db",)),),
    suffixes=(),
    files=(Files(("state.db",), sqlite=True),),
    usage="batchcompact.agents.hermes.report:extract_hermes",
)
