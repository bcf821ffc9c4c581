"""OpenCode (sst/opencode): `opencode.db` and channel databases `opencode-<channel>.db` in
`$OPENCODE_DATA_DIR` or `$XDG_DATA_HOME/opencode` (`~/.local/share/opencode`), and the legacy
`storage/message/<session>/<message>.json` files. Report only (report.py)."""

from __future__ import annotations

from batchcompact.agents.spec import Agent, Files, Place

AGENT = Agent(
    name="opencode",
    display_name="OpenCode",
    places=(Place(defaults=("$XDG_DATA_HOME/opencode", "~/.local/share/opencode"), env="OPENCODE_DATA_DIR",
                  env_list=True, sessions=("storage/message",), files=("opencode.db", "opencode-*.db")),),
    suffixes=(),
    files=(Files(("opencode.db", "opencode-*.db"), sqlite=True), Files(("*.json",), under=("storage/message",))),
    usage="batchcompact.agents.opencode.report:extract_opencode",
)
