"""What Copilot CLI's reader records beyond the entries, for its writer (`Session.extra`; core/session.py)."""

from __future__ import annotations

from dataclasses import dataclass, field

from batchcompact.core.jsontypes import JsonObject
from batchcompact.core.session import SessionExtra


@dataclass
class CopilotSessionExtra(SessionExtra):
    """The events the writer copies and chains onto (adapters/copilot/write.py)."""

    events: dict[str, JsonObject] = field(default_factory=dict)  # entry id -> the event it came from
    last_event_id: str | None = None  # the written events' first parent
