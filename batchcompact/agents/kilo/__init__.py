"""Kilo (Kilo-Org/kilocode, an OpenCode fork): `kilo.db` and channel databases `kilo-<channel>.db` in
`$KILO_DATA_DIR` or `$XDG_DATA_HOME/kilo` (`~/.local/share/kilo`). The same storage, loader and
compaction as OpenCode's: every part is OpenCode's (agents/opencode/), each session `<kilo.db>#<id>`, so its
declaration is OpenCode's with its own name, places, databases and usage reader (and no preset)."""

from __future__ import annotations

import dataclasses

from batchcompact.agents import opencode
from batchcompact.agents.spec import Files, Place

AGENT = dataclasses.replace(
    opencode.AGENT,
    name="kilo",
    display_name="Kilo",
    places=(Place(defaults=("$XDG_DATA_HOME/kilo", "~/.local/share/kilo"), env="KILO_DATA_DIR", env_list=True,
                  sessions=(), files=("kilo.db", "kilo-*.db")),),
    files=(Files(("kilo.db", "kilo-*.db"), sqlite=True),),
    usage="batchcompact.adapters.opencode.report:extract_kilo",
    store_names=("kilo.db",),
    presets={},
)
