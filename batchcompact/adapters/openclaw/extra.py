"""What OpenClaw's database reader records beyond the entries (`Session.extra`; core/session.py)."""

from __future__ import annotations

from dataclasses import dataclass

from batchcompact.core.session import SessionExtra


@dataclass
class OpenClawStoreExtra(SessionExtra):
    """Where a session of `openclaw-agent.sqlite` is and how far it was read (adapters/openclaw/store.py).
    A session of a `.jsonl` file is read by pi's reader and carries pi's record."""

    database: str = ""  # the database file
    session_id: str = ""  # the session's id in `transcript_events`
    last_seq: int = 0  # the last event's `seq` read: the written events follow it
