"""Goose: `$GOOSE_PATH_ROOT/data/sessions`, else the first of `<data>/goose/sessions`,
`~/Library/Application Support/goose/sessions`, `~/.local/share/Block/goose/sessions`: `sessions.db`.
Report only (report.py)."""

from __future__ import annotations

from batchcompact.agents.spec import Agent, Files, Place

AGENT = Agent(
    name="goose",
    display_name="Goose",
    places=(Place(defaults=("$XDG_DATA_HOME/goose", "~/.local/share/goose", "~/Library/Application Support/goose",
                            "~/.local/share/Block/goose"),
                  env="GOOSE_PATH_ROOT", env_sessions=("data/sessions",), first=True),),
    suffixes=(),
    files=(Files(("sessions.db",), under=("sessions",), sqlite=True),),
    usage="batchcompact.adapters.goose.report:extract_goose",
)
