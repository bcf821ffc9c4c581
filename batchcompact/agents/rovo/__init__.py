"""Rovo Dev CLI (Atlassian): `$ROVO_DATA_DIR` or `~/.rovodev`, its `sessions/<session>/session_context.json`.
Report only (report.py)."""

from __future__ import annotations

from batchcompact.agents.spec import Agent, Files, Place

AGENT = Agent(
    name="rovo",
    display_name="Rovo Dev",
    # ~/.rovodev/sessions; a folder ROVO_DATA_DIR names is searched whole, as ccusage does
    places=(Place(defaults=("~/.rovodev",), env="ROVO_DATA_DIR", env_list=True, env_sessions=("",)),),
    suffixes=(),
    files=(Files(("session_context.json",)),),
    usage="batchcompact.agents.rovo.report:extract_rovo",
)
