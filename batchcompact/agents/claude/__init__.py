"""Claude Code: `~/.claude/projects/<project>/<session>.jsonl` (and the XDG folder), uuid-chained lines."""

from __future__ import annotations

from batchcompact.agents.spec import Agent, Place

AGENT = Agent(
    name="claude",
    display_name="Claude Code",
    places=(
        # $CLAUDE_CONFIG_DIR (comma-separated; a config folder holding projects/, or projects/ itself)
        # replaces both defaults.
        Place(
            defaults=("$XDG_CONFIG_HOME/claude", "~/.claude"),
            env="CLAUDE_CONFIG_DIR",
            sessions=("projects",),
            env_list=True,
            env_may_be_sessions=True,
        ),
    ),
    detect_line="batchcompact.agents.claude.detect:detect_line",
    detect_prefix="batchcompact.agents.claude.detect:detect_prefix",
    reader="batchcompact.adapters.claude.read:read",
    writer="batchcompact.adapters.claude.write",
    usage="batchcompact.adapters.claude.report:extract_claude",
    file_tools={"Read": ("read", ("file_path",)), "Write": ("write", ("file_path",)), "Edit": ("edit", ("file_path",)),
                "MultiEdit": ("edit", ("file_path",)), "NotebookEdit": ("edit", ("notebook_path",))},
    tools={
        "read": "read",
        "notebookread": "read",
        "write": "write",
        "edit": "edit",
        "multiedit": "multiedit",
        "notebookedit": "notebookedit",
        "bash": "command",
        "todowrite": "todos",
        "task": "delegate",
        "agent": "delegate",
    },
    trigger="batchcompact.adapters.claude.trigger:claude_trigger",
    trigger_table_window=False,
    trigger_max_output=True,
    sidechain_replays=True, billing_blocks=True,
    presets={
        # Claude Code autoCompact: window - min(max output, 20000) - 13000 buffer.
        "claude-code": {"reserve_tokens": 33000},
    },
)
