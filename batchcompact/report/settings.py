"""What a report is asked for (stdlib only: the CLI and the warm path build it without polars)."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import date, datetime, timedelta

GROUPINGS = ("day", "week", "month", "session", "project", "model", "agent", "block")
PERIODS = ("day", "week", "month")
# The columns each grouping's rows are keyed by (both aggregation paths: aggregate.py and fast.py).
GROUP_KEYS = {
    "day": ["date"],
    "week": ["week"],
    "month": ["month"],
    "session": ["session_id", "agent", "project"],
    "project": ["project"],
    "model": ["model"],
    "agent": ["agent"],
    "block": ["block_start"],
}
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


def week_start_index(start_of_week: str) -> int:
    """polars weekday number (Monday = 1 ... Sunday = 7) of the first day of a week."""
    try:
        return WEEKDAYS.index(start_of_week.lower()) + 1
    except ValueError:
        raise ValueError(f"unknown first day of the week {start_of_week!r}; use one of {', '.join(WEEKDAYS)}") from None


def sort_order(settings: ReportSettings, keys: list[str]) -> list[tuple[str, bool]]:
    """The report's row order as (column, descending) pairs, first key first (nulls go last)."""
    if settings.by in PERIODS:
        return [(k, settings.order == "desc") for k in keys]
    if settings.by == "session" and settings.order:
        return [(k, settings.order == "desc") for k in ["last_timestamp", *keys]]
    return [("cost_usd", settings.order != "asc"), *((k, False) for k in keys)]


def last_periods_since(settings: ReportSettings) -> date | None:
    """The first local day of the last `settings.last` periods (1 = today, this week, this month)."""
    if not settings.last or settings.by not in PERIODS:
        return None
    from zoneinfo import ZoneInfo

    now = settings.now or datetime.now(ZoneInfo("UTC"))
    today = now.astimezone(ZoneInfo(settings.timezone)).date()
    back = settings.last - 1
    if settings.by == "day":
        return today - timedelta(days=back)
    if settings.by == "week":
        offset = (today.isoweekday() - week_start_index(settings.start_of_week)) % 7
        return today - timedelta(days=offset + 7 * back)
    month_index = today.year * 12 + today.month - 1 - back
    return date(month_index // 12, month_index % 12 + 1, 1)
