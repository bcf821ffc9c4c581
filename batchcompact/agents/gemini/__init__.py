"""Gemini CLI (google-gemini/gemini-cli): chats under `~/.gemini/tmp/<project>/chats/` (JSONL since 0.40,
one JSON document before). Reader `chat.py`, writer `write.py`, detection `detect.py`; the trigger is
`core/triggers.py:gemini_trigger`."""

from __future__ import annotations

from batchcompact.agents.spec import Agent, Place

AGENT = Agent(
    name="gemini",
    display_name="Gemini CLI",
    places=(Place(defaults=("~/.gemini/tmp",), env="GEMINI_DATA_DIR", sessions=("",), env_list=True),),
    detect_line="batchcompact.agents.gemini.detect:detect_line",
    detect_prefix="batchcompact.agents.gemini.detect:detect_prefix",
    detect_file="batchcompact.agents.gemini.detect:detect_file",
    # Folder walks look for JSONL only: a legacy `session-*.json` chat is read when it is named (a `.json`
    # suffix would take in every JSON file of a walked folder).
    reader="batchcompact.agents.gemini.chat:read",
    writer="batchcompact.agents.gemini.write",
    tools={
        "read_file": "read",
        "write_file": "write",
        "replace": "edit",
        "run_shell_command": "command",
        "write_todos": "todos",
        "invoke_agent": "delegate",
    },
    trigger="batchcompact.core.triggers:gemini_trigger",
    settings="batchcompact.agents.gemini.settings:with_gemini_settings",
    trigger_table_window=False,
    presets={
        # Gemini CLI chatCompressionService: compress at 50% of tokenLimit, keep the last 30% of the
        # history (at the threshold of a 1,048,576-token window: 30% of 524,288 tokens).
        "gemini-cli": {"threshold_percent": 50.0, "keep_recent_tokens": 157286},
    },
)
