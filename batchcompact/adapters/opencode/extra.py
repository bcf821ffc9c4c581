"""What the OpenCode (and Kilo) reader records beyond the entries (`Session.extra`; core/session.py)."""

from __future__ import annotations

from dataclasses import dataclass, field

from batchcompact.core.jsontypes import JsonObject
from batchcompact.core.session import SessionExtra


@dataclass
class OpenCodeSessionExtra(SessionExtra):
    """Where the session is and what it holds, for the store, the writer and the settings
    (adapters/opencode/{store,write,settings}.py)."""

    database: str = ""  # the database file
    session_id: str = ""  # the session's id in it
    messages: list[JsonObject] = field(default_factory=list)  # oldest first: {"info": message, "parts": [...]}
    last_message: str | None = None  # the newest message's id: the store checks it unchanged before writing
    model: JsonObject | None = None  # the last reply's {"providerID", "modelID"}: its config's limits
