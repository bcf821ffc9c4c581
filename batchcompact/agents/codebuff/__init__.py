"""Codebuff: `$CODEBUFF_DATA_DIR` or `~/.config/manicode` (and `manicode-dev`, `manicode-staging`), its
`projects/<project>/chats/<chat>/chat-messages.json`. Report only (report.py)."""

from __future__ import annotations

from batchcompact.agents.spec import Agent, Files, Place

AGENT = Agent(
    name="codebuff",
    display_name="Codebuff",
    places=(Place(defaults=("~/.config/manicode", "~/.config/manicode-dev", "~/.config/manicode-staging"),
                  env="CODEBUFF_DATA_DIR", env_list=True, sessions=("projects",), env_may_be_sessions=True),),
    suffixes=(),
    files=(Files(("chat-messages.json",), under=("chats",)),),
    usage="batchcompact.agents.codebuff.report:extract_codebuff",
)
