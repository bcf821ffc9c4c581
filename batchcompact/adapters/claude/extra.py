"""What Claude Code's reader records beyond the entries, for its writer (`Session.extra`; core/session.py)."""

from __future__ import annotations

from dataclasses import dataclass, field

from batchcompact.core.jsontypes import JsonObject
from batchcompact.core.session import SessionExtra


@dataclass
class ClaudeSessionExtra(SessionExtra):
    """The transcript's lines the writer copies and the ids it must not reuse (adapters/claude/write.py)."""

    # message entry id -> the (line number, line) pairs it was read from: a kept entry's lines are re-appended
    entry_lines: dict[str, list[tuple[int, JsonObject]]] = field(default_factory=dict)
    uuids: set[str] = field(default_factory=set)  # every uuid in the file: the written lines take fresh ones
    leaf_uuid: str | None = None  # the active leaf's line: the boundary's `logicalParentUuid`
    envelope: JsonObject = field(default_factory=dict)  # the last line's envelope keys, which written lines repeat
