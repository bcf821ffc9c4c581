"""What Codex's reader records beyond the entries, for its writer (`Session.extra`; core/session.py)."""

from __future__ import annotations

from dataclasses import dataclass, field

from batchcompact.core.jsontypes import JsonObject
from batchcompact.core.session import SessionExtra


@dataclass
class CodexSessionExtra(SessionExtra):
    """The rollout's response items the writer rebuilds the history from (adapters/codex/write.py)."""

    initial_context: list[JsonObject] = field(default_factory=list)  # the leading developer/context items
    initial_ids: set[str] = field(default_factory=set)  # their entries' ids
    real_users: set[str] = field(default_factory=set)  # entries of prompts a `user_message` event confirmed
    entry_items: dict[str, list[JsonObject]] = field(default_factory=dict)  # message entry id -> its raw items
