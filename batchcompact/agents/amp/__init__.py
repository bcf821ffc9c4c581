"""Amp: `$AMP_DATA_DIR` or `<data>/amp` (`~/.local/share/amp`), its `threads/T-*.json`. Report only (report.py)."""

from __future__ import annotations

from batchcompact.agents.spec import Agent, Files, Place

AGENT = Agent(
    name="amp",
    display_name="Amp",
    provider="amp",
    places=(Place(defaults=("$XDG_DATA_HOME/amp", "~/.local/share/amp"), env="AMP_DATA_DIR", env_list=True,
                  sessions=("threads",)),),
    suffixes=(),
    files=(Files(("T-*.json",), under=("threads",)),),
    usage="batchcompact.adapters.amp.report:extract_amp",
)
