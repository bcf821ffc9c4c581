"""Codex (openai/codex): rollouts under `~/.codex/sessions/YYYY/MM/DD/` and `archived_sessions/`."""

from __future__ import annotations

from batchcompact.agents.spec import Agent, Place

AGENT = Agent(
    name="codex",
    display_name="Codex",
    places=(Place(defaults=("~/.codex",), env="CODEX_HOME", sessions=("sessions", "archived_sessions"),
                  env_list=True),),
    detect_line="batchcompact.agents.codex.detect:detect_line",
    detect_prefix="batchcompact.agents.codex.detect:detect_prefix",
    reader="batchcompact.adapters.codex.read:read",
    writer="batchcompact.adapters.codex.write",
    usage="batchcompact.adapters.codex.report:extract_codex",
    file_tools={"apply_patch": ("patch", ("input", "patch")), **dict.fromkeys(
        ("shell", "local_shell", "exec_command", "shell_command", "container.exec"), ("shell", ("command", "cmd")))},
    tools={
        "apply_patch": "patch",
        "shell": "shell",
        "local_shell": "shell",
        "exec_command": "command",
        "shell_command": "command",
        "container.exec": "command",
        "update_plan": "plan",
        "view_image": "read",
    },
    trigger="batchcompact.adapters.codex.trigger:codex_trigger",
    presets={
        # Codex ModelInfo::auto_compact_token_limit: 90% of the window; keeps 20000 tokens of user messages.
        "codex": {"threshold_percent": 90.0, "keep_recent_tokens": 20000},
    },
)
