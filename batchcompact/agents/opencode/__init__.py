"""OpenCode (sst/opencode): `opencode.db` and channel databases `opencode-<channel>.db` in
`$OPENCODE_DATA_DIR` or `$XDG_DATA_HOME/opencode` (`~/.local/share/opencode`), and the legacy
`storage/message/<session>/<message>.json` files (reported only). Each session of `opencode.db` is
`<opencode.db>#<session id>`, read with OpenCode's loader rules (read.py) and
compacted as OpenCode records its own compaction (write.py, store.py); usage report.py. The trigger is
`trigger.py`, the limits and settings from the user's opencode.json (settings.py)."""

from __future__ import annotations

from batchcompact.agents.spec import Agent, Files, Place

AGENT = Agent(
    name="opencode",
    display_name="OpenCode",
    places=(Place(defaults=("$XDG_DATA_HOME/opencode", "~/.local/share/opencode"), env="OPENCODE_DATA_DIR",
                  env_list=True, sessions=("storage/message",), files=("opencode.db", "opencode-*.db")),),
    suffixes=(),
    files=(Files(("opencode.db", "opencode-*.db"), sqlite=True), Files(("*.json",), under=("storage/message",))),
    usage="batchcompact.adapters.opencode.report:extract_opencode",
    reader="batchcompact.adapters.opencode.read:read",
    writer="batchcompact.adapters.opencode.write",
    # OpenCode's tools (its arguments: filePath, oldString/newString, command, todos, description);
    # glob, grep, list and webfetch have no shape: they are searches
    file_tools={"read": ("read", ("filePath",)), "write": ("write", ("filePath",)), "edit": ("edit", ("filePath",))},
    tools={"read": "read", "write": "write", "edit": "edit", "bash": "command", "todowrite": "todos",
           "task": "delegate"},
    trigger="batchcompact.adapters.opencode.trigger:opencode_trigger",
    trigger_max_output=True,
    settings="batchcompact.adapters.opencode.settings:with_opencode_settings",
    store="batchcompact.adapters.opencode.store",
    store_names=("opencode.db",),
    presets={
        # OpenCode's kept tail for a usable window of 60,000 tokens or more (compaction.preserve_recent_tokens)
        "opencode": {"keep_recent_tokens": 15000},
    },
)
