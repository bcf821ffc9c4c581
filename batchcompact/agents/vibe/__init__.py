"""Mistral Vibe: `$VIBE_HOME` or `~/.vibe`, its `logs/session/` (one folder per session with a `meta.json`;
the Unified Harness's under `unified/`). Report only (report.py)."""

from __future__ import annotations

from batchcompact.agents.spec import Agent, Files, Place

AGENT = Agent(
    name="vibe",
    display_name="Mistral Vibe",
    places=(Place(defaults=("~/.vibe",), env="VIBE_HOME", sessions=("logs/session",)),),
    suffixes=(),
    # meta.json holds the usage; the transcripts (messages.jsonl) and the Unified Harness's recovery journal
    # (journal/<16-digit sequence>.jsonl) beside it are claimed so that the walk does not offer them to other
    # agents, and add nothing (the names are narrow: another agent's `<id>.jsonl` is never taken)
    files=(Files(("meta.json", "messages.jsonl"), under=("logs/session",)),
           Files(("[0-9]" * 16 + ".jsonl",), under=("logs/session", "journal"))),
    usage="batchcompact.adapters.vibe.report:extract_vibe",
)
