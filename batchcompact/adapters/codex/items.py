"""Codex texts shared by the rollout reader (`read.py`) and writer (`write.py`), so neither
imports the other's module at load time."""

from __future__ import annotations

from batchcompact.core.jsontypes import JsonObject

# Texts Codex injects as user-role messages (instructions, environment, shell commands run by the user,
# aborted-turn notes): context, not a request. codex-rs `is_session_prefix` and friends.
CONTEXT_PREFIXES = (
    "<environment_context",
    "<user_instructions",
    "# AGENTS.md instructions",
    "<INSTRUCTIONS",
    "<permissions",
    "<collaboration_mode",
    "<user_shell_command",
    "<turn_aborted",
    "<skill",
)
# codex-rs/core/src/compact.rs COMPACT_USER_MESSAGE_MAX_TOKENS: earlier user messages kept by a compaction.
USER_MESSAGE_BUDGET_TOKENS = 20_000

# codex-rs/core/templates/compact/summary_prefix.md: the summary user message of a local compaction is
# this prefix, a newline, then the summary.
SUMMARY_PREFIX = (
    "Another language model started to solve this problem and produced a summary of its thinking process. "
    "You also have access to the state of the tools that were used by that language model. Use this to build "
    "on the work that has already been done and avoid duplicating work. Here is the summary produced by the "
    "other language model, use the information in this summary to assist with your own analysis:"
)


def item_text(item: JsonObject) -> str:
    """The text of a message response item (its text parts joined with newlines, as Codex joins them)."""
    content = item.get("content")
    if isinstance(content, str):
        return content
    parts = [c.get("text") for c in content if isinstance(c, dict) and isinstance(c.get("text"), str)] \
        if isinstance(content, list) else []
    return "\n".join(p for p in parts if p)


def is_context_text(text: str) -> bool:
    return text.lstrip().startswith(CONTEXT_PREFIXES)


def approx_tokens(text: str) -> int:
    """Codex's `approx_token_count`: UTF-8 bytes / 4, rounded up."""
    return (len(text.encode("utf-8")) + 3) // 4
