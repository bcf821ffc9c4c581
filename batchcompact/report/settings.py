"""What a report is asked for (stdlib only: the CLI and the warm path build it without polars)."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import date, datetime

GROUPINGS = ("day", "week", "month", "session", "project", "model", "agent", "block")
PERIODS = ("day", "week", "month")
WEEKDAYS = ("monday", "tuesday", "wednesday", "thursday", "friday", "saturday", "sunday")
COST_MODES = ("auto", "calculate", "recorded")


@dataclass(frozen=True)
class ReportSettings:
    by: str = "day"
    breakdown: bool = False
    since: date | None = None
    until: date | None = None
    sources: tuple[str, ...] = ()
    agents: tuple[str, ...] = ()  # `--agent`: rows whose agent is one of these (a pi descendant: pi's rows)
    timezone: str = "UTC"
    cost_mode: str = "auto"
    pricing_file: str | None = None
    projects: tuple[str, ...] = ()
    sessions: tuple[str, ...] = ()
    start_of_week: str = "monday"
    last: int | None = None
    order: str | None = None  # None: the grouping's natural order; "asc" | "desc"
    token_limit: str | None = None  # blocks: a token count, or "max" (the largest past block)
    session_hours: float = 5.0  # blocks: length of a billing window
    now: datetime | None = None  # blocks and --last: "now" (tests pin it); None = the clock
