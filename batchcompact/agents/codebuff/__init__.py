"""Codebuff: `$CODEBUFF_DATA_DIR` or `$XDG_CONFIG_HOME`/`~/.config` `manicode`, `manicode-dev`,
`manicode-staging`, their `projects/<project>/chats/<chat>/chat-messages.json`. Report only (report.py)."""

from __future__ import annotations

from batchcompact.agents.spec import Agent, Files, Place

CHANNELS = ("manicode", "manicode-dev", "manicode-staging")

AGENT = Agent(
    name="codebuff",
    display_name="Codebuff",
    provider="codebuff",
    places=(Place(defaults=tuple(f"{base}/{name}" for base in ("$XDG_CONFIG_HOME", "~/.config") for name in CHANNELS),
                  env="CODEBUFF_DATA_DIR", env_list=True, sessions=("projects",)),),
    suffixes=(),
    files=(Files(("chat-messages.json",), under=("chats",)),),
    usage="batchcompact.adapters.codebuff.report:extract_codebuff",
)
