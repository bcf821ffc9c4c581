"""Times as every text format writes them: ISO 8601 in UTC with the offset `+00:00` and six decimals
(`2025-06-10T12:36:26.585000+00:00`), in JSON, JSON lines and CSV alike (docs/cli.md), never `Z`, `+0000`
or a space before the time."""

from __future__ import annotations

from datetime import UTC, date, datetime


def iso_time(moment: datetime) -> str:
    """`moment` in UTC, `YYYY-MM-DDTHH:MM:SS.ffffff+00:00`; a time without a zone is taken as UTC (the
    readers store UTC)."""
    moment = moment.replace(tzinfo=UTC) if moment.tzinfo is None else moment.astimezone(UTC)
    return moment.isoformat(timespec="microseconds")


def iso_text(value: date) -> str:
    """A time as `iso_time` writes it, a calendar day as `YYYY-MM-DD`."""
    return iso_time(value) if isinstance(value, datetime) else value.isoformat()
