"""What Qwen Code's reader records beyond the entries, for its writer (`Session.extra`; core/session.py)."""

from __future__ import annotations

from dataclasses import dataclass, field

from batchcompact.core.jsontypes import JsonObject
from batchcompact.core.session import SessionExtra


@dataclass
class QwenSessionExtra(SessionExtra):
    """The Contents the writer copies and the record it chains onto (adapters/qwen/write.py)."""

    contents: dict[str, JsonObject] = field(default_factory=dict)  # entry id -> the Content it holds
    leaf_uuid: str | None = None  # the active leaf's record: the written record's `parentUuid`
    envelope: JsonObject = field(default_factory=dict)  # the last record's envelope keys, which it repeats
