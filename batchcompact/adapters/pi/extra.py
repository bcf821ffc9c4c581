"""What pi's reader records beyond the entries, for its own modules (`Session.extra`; core/session.py)."""

from __future__ import annotations

from dataclasses import dataclass

from batchcompact.core.session import SessionExtra


@dataclass
class PiSessionExtra(SessionExtra):
    """Read by its schema check (adapters/pi/schema.py)."""

    header_line: int = 1  # the header's line: 2 below oh-my-pi's title slot
