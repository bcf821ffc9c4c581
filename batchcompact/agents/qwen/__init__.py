"""Qwen Code (QwenLM/qwen-code): `$QWEN_DATA_DIR` or `~/.qwen`, chats in `projects/<project>/chats/<session>.jsonl`.
Reader `read.py`, writer `write.py`, line rules `detect.py`, usage `report.py`; the trigger is
`trigger.py`. Its records look like Claude Code's lines (uuid, parentUuid, sessionId,
type), so its line rule is asked before Claude Code's."""

from __future__ import annotations

from batchcompact.agents.spec import Agent, Place

AGENT = Agent(
    name="qwen",
    display_name="Qwen Code",
    places=(Place(defaults=("~/.qwen",), env="QWEN_DATA_DIR", env_list=True, sessions=("projects",)),),
    detect_line="batchcompact.agents.qwen.detect:detect_line",
    detect_prefix="batchcompact.agents.qwen.detect:detect_prefix",
    reader="batchcompact.adapters.qwen.read:read",
    writer="batchcompact.adapters.qwen.write",
    usage="batchcompact.adapters.qwen.report:extract_qwen",
    file_tools={"read_file": ("read", ("file_path", "absolute_path")), "write_file": ("write", ("file_path", "absolute_path")),
                "edit": ("edit", ("file_path", "absolute_path"))},
    tools={
        "read_file": "read",
        "write_file": "write",
        "edit": "edit",
        "run_shell_command": "command",
        "todo_write": "todos",
        "agent": "delegate",
    },
    trigger="batchcompact.adapters.qwen.trigger:qwen_trigger",
    presets={
        # Qwen Code 0.24 computeThresholds: min(85% of the window, window - 33,000) is the agent's own
        # rule (the default); it summarizes the whole history, so the kept tail is batchcompact's default.
        "qwen-code": {"keep_recent_tokens": 20000},
    },
)
