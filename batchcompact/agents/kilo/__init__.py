"""Kilo (Kilo-Org/kilocode, an OpenCode fork): `kilo.db` and channel databases `kilo-<channel>.db` in
`$KILO_DATA_DIR` or `$XDG_DATA_HOME/kilo` (`~/.local/share/kilo`). The same storage, loader and
compaction as OpenCode's: every part is OpenCode's (agents/opencode/), each session `<kilo.db>#<id>`."""

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
    reader="batchcompact.agents.opencode.read:read",
    writer="batchcompact.agents.opencode.write",
    # OpenCode's tools (its arguments: filePath, oldString/newString, command, todos, description);
    # glob, grep, list and webfetch have no shape: they are searches
    file_tools={"read": ("read", ("filePath",)), "write": ("write", ("filePath",)), "edit": ("edit", ("filePath",))},
    tools={"read": "read", "write": "write", "edit": "edit", "bash": "command", "todowrite": "todos",
           "task": "delegate"},
    trigger="batchcompact.agents.opencode.trigger:opencode_trigger",
    trigger_max_output=True,
    settings="batchcompact.agents.opencode.read:with_opencode_settings",
    store="batchcompact.agents.opencode.store",
    store_names=("kilo.db",),
)
