"""What Gemini CLI's reader records beyond the entries, for its writer (`Session.extra`; core/session.py)."""

from __future__ import annotations

from dataclasses import dataclass, field

from batchcompact.core.jsontypes import JsonObject
from batchcompact.core.session import SessionExtra


@dataclass
class GeminiSessionExtra(SessionExtra):
    """The message records the writer copies (adapters/gemini/write.py)."""

    records: dict[str, JsonObject] = field(default_factory=dict)  # entry id -> the raw message record
    state_ids: list[str] = field(default_factory=list)  # the chat's message ids after its rewinds, in order
