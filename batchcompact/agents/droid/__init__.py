"""Droid (Factory): `$DROID_SESSIONS_DIR` or `~/.factory/sessions`, the `*.settings.json` files (per-session
running totals). Report only (report.py); its `<session>.jsonl` transcripts are known (detect.py) and left
alone: no usage in them for `report`, "reported, not compacted" in `plan` and `run`."""

from __future__ import annotations

from batchcompact.agents.spec import Agent, Files, Place

AGENT = Agent(
    name="droid",
    display_name="Droid",
    places=(Place(defaults=("~/.factory/sessions",), env="DROID_SESSIONS_DIR", env_list=True, sessions=("",)),),
    suffixes=(),
    detect_file="batchcompact.agents.droid.detect:detect_file",
    files=(Files(("*.settings.json",), under=("sessions",)),),
    usage="batchcompact.adapters.droid.report:extract_droid",
)
