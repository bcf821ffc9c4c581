"""Gemini CLI (google-gemini/gemini-cli): `$GEMINI_DATA_DIR` or `~/.gemini/tmp`, chats in
`<project>/chats/session-*.json` (legacy, one JSON document) and `session-*.jsonl` (0.40 on). Report
only (report.py)."""

from __future__ import annotations

from batchcompact.agents.spec import Agent, Files, Place

AGENT = Agent(
    name="gemini",
    display_name="Gemini CLI",
    places=(Place(defaults=("~/.gemini/tmp",), env="GEMINI_DATA_DIR", env_list=True, sessions=("",)),),
    detect_line="batchcompact.agents.gemini.report:sniff",
    files=(Files(("session-*.json", "session-*.jsonl"), under=("chats",)),),
    usage="batchcompact.agents.gemini.report:extract_gemini",
)
