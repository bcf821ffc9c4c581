"""Kilo (Kilo-Org/kilocode, an OpenCode fork): `kilo.db` and channel databases `kilo-<channel>.db` in
`$KILO_DATA_DIR` or `$XDG_DATA_HOME/kilo` (`~/.local/share/kilo`). Report only; the reader is
OpenCode's (agents/opencode/report.py): the same message JSON."""

from __future__ import annotations

from batchcompact.agents.spec import Agent, Files, Place

AGENT = Agent(
    name="kilo",
    display_name="Kilo",
    places=(Place(defaults=("$XDG_DATA_HOME/kilo", "~/.local/share/kilo"), env="KILO_DATA_DIR", env_list=True,
                  sessions=(), files=("kilo.db", "kilo-*.db")),),
    suffixes=(),
    files=(Files(("kilo.db", "kilo-*.db"), sqlite=True),),
    usage="batchcompact.agents.opencode.report:extract_kilo",
)
