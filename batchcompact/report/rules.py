"""The report's counting rules, each written once: both engines build their code from these.

`fast.py` (plain Python, the cold `--no-cache` report) and `aggregate.py` (polars: cached parts, blocks,
Parquet/JSONL, Ray) must print the same bytes. So that a rule cannot change in one and not the other,
each rule is here, as data or as one function:

- the columns the report reads (`REPORT_COLUMNS`) and sums (`SUM_COLUMNS`);
- the dedupe: one row per `dedupe_key`, the first by `DEDUPE_ORDER`, a total order, nulls last (fast.py
  compares rows with `first_wins`; aggregate.py hands the same pairs to `sort_by`);
- the sidechain replay collapse (an agent property, `Agent.sidechain_replays`: `replay_sources`): the
  message is the dedupe key up to `MESSAGE_END`, and of the copies of a message one of which is a side
  conversation (its kind is not `MAIN_KIND`), the first by `REPLAY_ORDER` is kept;
- the cost of a request: the tier and the float expression are `pricing.tier_rate` and
  `pricing.token_cost` (numbers in fast.py, polars expressions in aggregate.py: one expression, the same
  float operations in the same order); `cost_usd` the cost mode; `counted` the zero-token drop;
- the period of a local day (`period_label`: day, week from the first weekday, month; polars maps it over
  the few distinct local days);
- the sources `--by block` shows by default (`block_sources`, `Agent.billing_blocks`);
- which groups `--last N` keeps (`last_groups_order`); the group keys, the names some groupings show and
  the row order are `settings.GROUP_KEYS`, `provider_name`, `branch_name`, `ProjectNames` and `sort_order`.

Standard library only (the cold path must not import polars); no agent is named here: the agents a rule
applies to come from the registry.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from datetime import date, timedelta

from batchcompact.report.settings import UNKNOWN

# The columns of a usage row the report reads, in this order (fast.py's row tuples, aggregate's frame).
REPORT_COLUMNS = (
    "source", "agent", "session_id", "project", "timestamp", "provider", "model", "kind", "dedupe_key",
    "dedupe_rank", "input_tokens", "output_tokens", "cache_read_tokens", "cache_write_tokens",
    "cache_write_1h_tokens", "reasoning_tokens", "total_tokens", "recorded_cost_usd", "branch",
    "machine", "machine_id",
)
# The token counts every group (and the totals) adds up, in the report's column order.
SUM_COLUMNS = ("input_tokens", "output_tokens", "cache_read_tokens", "cache_write_tokens", "reasoning_tokens",
               "total_tokens")

# Which copy of a request the dedupe keeps: the highest `dedupe_rank` (a database row over a legacy JSON
# copy), the largest usage, then the first session id; every other column only breaks ties, so the choice
# never depends on the order the files were read in. (column, descending); nulls last throughout.
_LEAD = (("dedupe_rank", True), ("output_tokens", True), ("total_tokens", True), ("session_id", False))
DEDUPE_ORDER: tuple[tuple[str, bool], ...] = (
    *_LEAD,
    *((c, False) for c in REPORT_COLUMNS if c not in {name for name, _ in _LEAD} | {"dedupe_key"}),
)

# The sidechain replay collapse. A side conversation (Claude Code's `/btw`) replays parent messages under a
# new request id: among the rows of a replaying agent that share a message, where at least one copy is a
# side conversation, one row is kept: the main-line copy if there is one, else the largest (ccusage's
# rule), the other columns breaking ties. Distinct side answers have their own messages and stay.
MAIN_KIND = "main"  # the kind of a main-line request; any other kind is a side conversation
MESSAGE_END = ":"  # the message is the dedupe key up to its first ":" (no ":": never merged)
SIDE = "_side"  # a derived column: kind != MAIN_KIND (a side conversation's copy sorts after the main line's)
REPLAY_ORDER: tuple[tuple[str, bool], ...] = (
    (SIDE, False), ("total_tokens", True), ("output_tokens", True), *((c, False) for c in REPORT_COLUMNS),
)


def replay_sources() -> tuple[str, ...]:
    """The sources (agents' formats) whose side conversations replay messages (`Agent.sidechain_replays`)."""
    from batchcompact.agents import AGENTS

    return tuple(agent.name for agent in AGENTS if agent.sidechain_replays)


def block_sources() -> tuple[str, ...]:
    """The sources `report --by block` shows unless `--agent`/`--source` say (`Agent.billing_blocks`)."""
    from batchcompact.agents import AGENTS

    return tuple(agent.name for agent in AGENTS if agent.billing_blocks)


def first_wins(order: Sequence[tuple[int, bool]]) -> Callable[[tuple, tuple], bool]:
    """`better(row, other)`: `row` comes before `other` by `order` ((index in the row, descending) pairs,
    nulls last), as polars' `sort(..., nulls_last=True)` puts them. Decided by the first field that
    differs, so rows that differ early (nearly all) are compared in a step or two."""
    order = tuple(order)

    def better(row: tuple, other: tuple) -> bool:
        for index, descending in order:
            mine, theirs = row[index], other[index]
            if mine != theirs:
                if mine is None:
                    return False
                if theirs is None:
                    return True
                return mine > theirs if descending else mine < theirs
        return False

    return better


# ---- costs ----

def cost_usd(cost_mode: str, recorded, computed, coalesce: Callable):
    """A request's cost by `--cost-mode`: `calculate` the computed cost, `recorded` the recorded one, `auto`
    the recorded one where the file has it, else the computed one (`coalesce(recorded, computed)`)."""
    if cost_mode == "calculate":
        return computed
    if cost_mode == "recorded":
        return recorded
    return coalesce(recorded, computed)


def counted(total_tokens, recorded_or_zero):
    """Whether a request is counted: some tokens, or a recorded cost above zero (no cost counts as zero);
    the others are dropped and reported as `dropped_zero`. Numbers or polars expressions."""
    return (total_tokens > 0) | (recorded_or_zero > 0)


# ---- periods ----

# `--project`: a value matches a project by its whole path or by its last path component (a trailing separator
# of the value ignored); PROJECT_DIR is a project's path up to its last separator, removed to leave that component.
PROJECT_DIR = r"^.*[/\\]"


def wanted_projects(values: Sequence[str]) -> list[str]:
    """The `--project` values as they are compared (a trailing separator dropped)."""
    return [v.rstrip("/\\") or v for v in values]


PERIOD_COLUMNS = {"day": "date", "week": "week", "month": "month"}


def period_label(day: date | None, by: str, first_weekday: int) -> str:
    """The period a local day falls in: `YYYY-MM-DD` (day), the week's first day (weeks start on
    `first_weekday`, Monday = 1 ... Sunday = 7), `YYYY-MM` (month); "unknown" with no date."""
    if day is None:
        return UNKNOWN
    if by == "month":
        return day.isoformat()[:7]  # isoformat pads the year to four digits
    if by == "week":
        day -= timedelta(days=(day.isoweekday() - first_weekday + 7) % 7)
    return day.isoformat()


# ---- groups ----

def last_groups_order(keys: Sequence[str]) -> list[tuple[str, bool]]:
    """`--last N` on a grouping that is not a period keeps the first N groups by this order: the latest
    activity first, then the keys descending."""
    return [("last_timestamp", True), *((k, True) for k in keys)]
