"""Goose (block/goose): `sessions.db` under `$GOOSE_PATH_ROOT` (its `data/sessions/`), else the first of
`<data>/goose/sessions`, `~/Library/Application Support/goose/sessions`, `~/.local/share/Block/goose/sessions`.
Report only (report.py)."""

from __future__ import annotations

from batchcompact.agents.spec import Agent, Files, Place

AGENT = Agent(
    name="goose",
    display_name="Goose",
    places=(Place(defaults=("$XDG_DATA_HOME/goose/sessions", "~/.local/share/goose/sessions",
                            "~/Library/Application Support/goose/sessions", "~/.local/share/Block/goose/sessions"),
                  env="GOOSE_PATH_ROOT", sessions=("",), first=True),),
    suffixes=(),
    files=(Files(("sessions.db",), under=("sessions",), sqlite=True),),
    usage="batchcompact.agents.goose.report:extract_goose",
)
