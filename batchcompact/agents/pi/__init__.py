"""pi (badlogic/pi-mono's coding agent) and the agents that write its session format: Atomic, indusagi,
oh-my-pi, GJC (Gajae Code, an oh-my-pi fork). They are one format, so one `Agent`; each descendant is a
`Place` with its own label (the report and `discover` name it) and oh-my-pi/flue are presets."""

from __future__ import annotations

from batchcompact.agents.spec import Agent, Place

AGENT = Agent(
    name="pi",
    display_name="pi",
    places=(
        Place(defaults=("~/.pi/agent",), env="PI_CODING_AGENT_DIR"),
        Place(defaults=("~/.atomic/agent",), env="ATOMIC_CODING_AGENT_DIR", label="atomic"),
        Place(defaults=("~/.indusagi/agent",), env="INDUSAGI_CODING_AGENT_DIR", label="indusagi"),
        Place(defaults=("~/.omp/agent",), label="oh-my-pi"),
        Place(defaults=("~/.gjc/agent", "$XDG_DATA_HOME/gjc"), env="GJC_CODING_AGENT_DIR", label="gjc"),
        # ccusage's variable: comma-separated sessions folders
        Place(env="PI_AGENT_DIR", env_list=True, sessions=("",)),
    ),
    detect_line="batchcompact.agents.pi.detect:detect_line",
    detect_prefix="batchcompact.agents.pi.detect:detect_prefix",
    reader="batchcompact.adapters.pi.read:read_pi_session",
    writer="batchcompact.adapters.pi.write",
    usage="batchcompact.adapters.pi.report:extract_pi",
    file_tools={"read": ("read", ("path",)), "write": ("write", ("path",)), "edit": ("edit", ("path",))},
    tools={"read": "read", "write": "write", "edit": "edit", "bash": "command"},
    trigger="batchcompact.adapters.pi.trigger:pi_trigger",  # pi's rule; oh-my-pi's for its sessions
    presets={
        # pi-mono settings-manager.ts / docs/settings.md: reserveTokens 16384, keepRecentTokens 20000.
        "pi": {"reserve_tokens": 16384, "keep_recent_tokens": 20000},
        # oh-my-pi compaction.ts: effective reserve max(15% of the window, 16384) -> about 85% of the window.
        "oh-my-pi": {"reserve_tokens": 16384, "keep_recent_tokens": 20000, "threshold_percent": 85.0},
        # withastro/flue packages/runtime/src/compaction.ts: reserveTokens 20000, keepRecentTokens 8000.
        "flue": {"reserve_tokens": 20000, "keep_recent_tokens": 8000},
    },
    branch_summaries=True,
    prune=True,
    settings="batchcompact.adapters.pi.settings:with_pi_settings",
    # "enabled": False in pi's settings skips the session unless --force; the thresholds: oh-my-pi's settings
    settings_fields=("reserve_tokens", "keep_recent_tokens", "threshold_percent", "threshold_tokens", "enabled"),
    settings_shown="batchcompact.adapters.pi.settings:pi_settings",
    read_appended="batchcompact.adapters.pi.read:read_pi_appended",
    migrate_on_write=True,
    validate="batchcompact.adapters.pi.schema:validate_session",
)
