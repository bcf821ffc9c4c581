"""Devin CLI (Cognition): `$DEVIN_TRANSCRIPTS_DIR` or `<data>/devin/cli/transcripts` (`~/.local/share`; the
pre-rename `cognition/cli/transcripts` too), one ATIF `*.json` transcript per session. Report only (report.py)."""

from __future__ import annotations

from batchcompact.agents.spec import Agent, Files, Place

AGENT = Agent(
    name="devin",
    display_name="Devin CLI",
    places=(Place(defaults=("$XDG_DATA_HOME/devin/cli", "$XDG_DATA_HOME/cognition/cli"), env="DEVIN_TRANSCRIPTS_DIR",
                  env_list=True, sessions=("transcripts",), env_sessions=("",)),),
    suffixes=(),
    files=(Files(("*.json",), under=("transcripts",)),),
    usage="batchcompact.adapters.devin.report:extract_devin",
)
