"""Muse Code (Meta): `$XDG_DATA_HOME/muse/sessions` (`~/.local/share`; macOS also `~/Library/Application
Support/muse/sessions`), one event-sourced `session.jsonl` per session. Report only (report.py; its line rule in detect.py)."""

from __future__ import annotations

from batchcompact.agents.spec import Agent, Files, Place

AGENT = Agent(
    name="muse",
    display_name="Muse Code",
    places=(Place(defaults=("$XDG_DATA_HOME/muse", "~/Library/Application Support/muse")),),
    detect_line="batchcompact.agents.muse.detect:sniff_muse",
    files=(Files(("session.jsonl",), under=("muse/sessions",)),),
    usage="batchcompact.adapters.muse.report:extract_muse",
)
