"""Qwen Code (QwenLM/qwen-code): `$QWEN_DATA_DIR` or `~/.qwen`, chats in `projects/<project>/chats/<session>.jsonl`.
Report only (report.py). Its records look like Claude Code's lines (uuid, parentUuid, sessionId, type), so its
line rule is asked before Claude Code's."""

from __future__ import annotations

from batchcompact.agents.spec import Agent, Place

AGENT = Agent(
    name="qwen",
    display_name="Qwen Code",
    places=(Place(defaults=("~/.qwen",), env="QWEN_DATA_DIR", env_list=True, sessions=("projects",)),),
    detect_line="batchcompact.agents.qwen.report:sniff",
    usage="batchcompact.agents.qwen.report:extract_qwen",
)
