"""Gemini CLI (google-gemini/gemini-cli): `$GEMINI_DATA_DIR` or `~/.gemini/tmp`, chats in
`<project>/chats/session-*.jsonl` (0.40 on) and `session-*.json` (legacy, one JSON document). Reader
`read.py`, writer `write.py`, line rules `detect.py`, usage `report.py`, the user's compression threshold
`settings.py`; the trigger is `trigger.py`."""

from __future__ import annotations

from batchcompact.agents.spec import Agent, Files, Place

AGENT = Agent(
    name="gemini",
    display_name="Gemini CLI",
    places=(Place(defaults=("~/.gemini/tmp",), env="GEMINI_DATA_DIR", env_list=True, sessions=("",)),),
    detect_line="batchcompact.agents.gemini.detect:detect_line",
    detect_prefix="batchcompact.agents.gemini.detect:detect_prefix",
    detect_file="batchcompact.agents.gemini.detect:detect_file",
    files=(Files(("session-*.json", "session-*.jsonl"), under=("chats",)),),
    reader="batchcompact.adapters.gemini.read:read",
    writer="batchcompact.adapters.gemini.write",
    usage="batchcompact.adapters.gemini.report:extract_gemini",
    file_tools={"read_file": ("read", ("file_path", "absolute_path")), "write_file": ("write", ("file_path", "absolute_path")),
                "replace": ("edit", ("file_path", "absolute_path"))},
    tools={
        "read_file": "read",
        "write_file": "write",
        "replace": "edit",
        "run_shell_command": "command",
        "write_todos": "todos",
        "invoke_agent": "delegate",
    },
    trigger="batchcompact.adapters.gemini.trigger:gemini_trigger",
    trigger_table_window=False,
    settings="batchcompact.adapters.gemini.settings:with_gemini_settings",
    settings_fields=("threshold_percent",),
    presets={
        # Gemini CLI chatCompressionService: compress at 50% of tokenLimit, keep the last 30% of the
        # history (at the threshold of a 1,048,576-token window: 30% of 524,288 tokens).
        "gemini-cli": {"threshold_percent": 50.0, "keep_recent_tokens": 157286},
    },
)
