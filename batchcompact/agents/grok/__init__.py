"""Grok Build CLI: `$GROK_HOME` or `~/.grok`, its `sessions/<session>/updates.jsonl`. Report only (report.py; its line rule in detect.py)."""

from __future__ import annotations

from batchcompact.agents.spec import Agent, Files, Place

AGENT = Agent(
    name="grok",
    display_name="Grok Build CLI",
    places=(Place(defaults=("~/.grok",), env="GROK_HOME", env_list=True),),
    detect_line="batchcompact.agents.grok.detect:sniff_grok",
    files=(Files(("updates.jsonl",), under=(".grok", "sessions")),),
    usage="batchcompact.adapters.grok.report:extract_grok",
)
