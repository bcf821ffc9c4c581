"""OpenClaw: `$OPENCLAW_DIR` (ccusage's) or its own `$OPENCLAW_STATE_DIR`, else `~/.openclaw`, `~/.clawdbot`,
`~/.moltbot`, `~/.moldbot`. Sessions are pi's session lines, kept in `agents/<agent>/agent/openclaw-agent.sqlite`
(2026.9+; each session is `<database>#<session id>`: store.py) or, in older releases, in
`agents/<agent>/sessions/<id>.jsonl` (archived `.reset.`/`.deleted.` copies are read, never compacted).
Reader `read.py`, writer pi's (`adapters/pi/write.py`: pi's compaction entry), database store `store.py`, usage
`report.py`;
the trigger is `trigger.py`, the window and settings from the user's openclaw.json (`settings.py`)."""

from __future__ import annotations

from batchcompact.agents.spec import Agent, Files, Place

HOMES = (".openclaw", ".clawdbot", ".moltbot", ".moldbot")

AGENT = Agent(
    name="openclaw",
    display_name="OpenClaw",
    places=(Place(defaults=tuple(f"~/{name}" for name in HOMES), env="OPENCLAW_DIR",
                  env_fallback="OPENCLAW_STATE_DIR", env_list=True, sessions=("",)),),
    files=(Files(("*.jsonl.reset.*", "*.jsonl.deleted.*"), under=HOMES),
           Files(("openclaw-agent.sqlite",), sqlite=True)),
    homes=HOMES,
    reader="batchcompact.adapters.openclaw.read:read",
    # pi's compaction entry, the one OpenClaw's own `appendCompaction` writes (`summary`, `firstKeptEntryId`,
    # `tokensBefore`, `details`, `fromHook`; parent = the active leaf), and pi's verify: OpenClaw rebuilds the
    # context from it as pi does. In a database it is one more event row (store.py), in a JSONL one more line.
    writer="batchcompact.adapters.pi.write",
    usage="batchcompact.adapters.openclaw.report:extract_openclaw",
    # OpenClaw's coding tools (pi's read/write/edit with `path`, exec's `command`, apply_patch's envelope)
    file_tools={"read": ("read", ("path",)), "write": ("write", ("path",)), "edit": ("edit", ("path",)),
                "apply_patch": ("patch", ("input", "patch"))},
    tools={"read": "read", "write": "write", "edit": "edit", "exec": "command", "apply_patch": "patch"},
    trigger="batchcompact.adapters.openclaw.trigger:openclaw_trigger",
    presets={
        # OpenClaw's agents.defaults.compaction: keepRecentTokens 20000, a reserve of 20000 (at most a
        # quarter of the window).
        "openclaw": {"reserve_tokens": 20000, "keep_recent_tokens": 20000},
    },
    settings="batchcompact.adapters.openclaw.settings:with_openclaw_settings",
    store="batchcompact.adapters.openclaw.store",
    store_names=("openclaw-agent.sqlite",),
)
