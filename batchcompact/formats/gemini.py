"""Gemini CLI chats: the format module the pipeline loads (`batchcompact.formats.<format>`); the code is
in `batchcompact/agents/gemini/`."""

from __future__ import annotations

from typing import Any

from batchcompact.agents.gemini.chat import FORMAT, read
from batchcompact.agents.gemini.write import build_compaction, legacy_document, verify
from batchcompact.core.context import build_session_context, convert_to_llm
from batchcompact.core.session import Session


def context_messages(session: Session) -> list[dict[str, Any]]:
    """The LLM messages Gemini CLI would resume with, in pi's shape (for `show --context`)."""
    context = build_session_context(session.path_entries())
    return convert_to_llm([m.message for m in context.messages])


__all__ = ["FORMAT", "read", "build_compaction", "legacy_document", "verify", "context_messages"]
