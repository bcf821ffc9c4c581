"""The report's counting rules, each written once: both engines build their code from these.

`fast.py` (plain Python, the cold `--no-cache` report) and `aggregate.py` (polars: cached parts, blocks,
Parquet/JSONL, Ray) must print the same bytes. So that a rule cannot change in one and not the other,
each rule is here, as data or as one function:

- the columns the report reads (`REPORT_COLUMNS`) and sums (`SUM_COLUMNS`);
- the dedupe: one row per `dedupe_key`, the first by `DEDUPE_ORDER`, a total order, nulls last (fast.py
  compares rows with `first_wins`; aggregate.py hands the same pairs to `sort_by`);
- the sidechain replay collapse (an agent property, `Agent.sidechain_replays`: `replay_agents`): the
  message is the dedupe key up to `MESSAGE_END`, and of the copies of a message one of which is a side
  conversation (its kind is not `MAIN_KIND`), the first by `REPLAY_ORDER` is kept;
- the cost of a request: the tier and the float expression are `model_price.tier_rate` and
  `model_price.token_cost` (numbers in fast.py, polars expressions in aggregate.py: one expression, the same
  float operations in the same order); `cost_usd` the cost mode; `has_usage` the zero-token drop;
- the period of a local day (`period_label`: day, week from the first weekday, month; polars maps it over
  the few distinct local days);
- the agents `--by block` shows by default (`block_agents`, `Agent.billing_blocks`);
- the row filters (`row_filters`: `--agent` (alias `--source`), `--project`, `--session`, the local days from
  `--since`/`--until`/`--last`), which fast.py applies as a predicate on a row and aggregate.py as polars
  expressions, both from the values and constants `RowFilters` holds;
- the names the dimensions show (`model_name`, `provider_name`, `branch_name`, `session_name`,
  `ProjectNames`; a dimension's group keys and the rule it shows them by are its entry in dimensions.py),
  the row order (`sort_order`, and `breakdown_groups`/`group_values`, the derived columns `--breakdown`
  orders by) and which groups `--last N` keeps (`last_groups_order`,
  `last_periods_since`).

Standard library only (the cold path must not import polars); no agent is named here: the agents a rule
applies to come from the registry.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from datetime import date, datetime, timedelta
from typing import TYPE_CHECKING, TypeVar, cast, overload

from batchcompact.agents import find
from batchcompact.report.settings import PERIODS, PROVIDER_ALIASES, ReportSettings, week_start_index

if TYPE_CHECKING:
    import polars as pl

Cost = TypeVar("Cost")  # a float (fast.py) or a polars expression (aggregate.py)

# ---- the names some groupings show ----

UNKNOWN = "unknown"
# A request whose file names no model (null or empty): its name in `--by model`, the `models` lists, the
# chart, the blocks and the unpriced warning.
UNKNOWN_MODEL = "(unknown model)"


def model_name(model: str | None) -> str:
    """The model as the report shows it: UNKNOWN_MODEL where the file names none."""
    return model or UNKNOWN_MODEL


def provider_name(agent: str | None, provider: str | None) -> str:
    """Who served a request (`--by provider`): the provider the agent recorded, lower case, one name per
    company (`PROVIDER_ALIASES`); where it records none, the agent's own service (`Agent.provider`), else
    "unknown"."""
    if provider:
        name = provider.strip().lower()
        if name:
            return PROVIDER_ALIASES.get(name, name)
    found = find(agent)
    return found.provider if found is not None and found.provider else UNKNOWN


def branch_name(branch: str | None) -> str:
    """`--by branch`: the recorded git branch, "unknown" where the agent records none."""
    return branch or UNKNOWN


def session_name(session_id: str | None) -> str:
    """`--by session`: the recorded session id, "unknown" where the file gives none."""
    return UNKNOWN if session_id is None else session_id


def project_tail(project: str) -> str:
    """A project path's last component (`/a/b` -> `b`; a name without a separator is itself)."""
    return project.rstrip("/\\").replace("\\", "/").rsplit("/", 1)[-1] or project


class ProjectNames:
    """The config file's `[report.projects]`: aliases (a recorded project, by its path or its folder name,
    shown under another name: one name for the same repository checked out at different paths) and groups
    (`--by group`: several projects, named as shown or recorded, as one). A project in no group is a group
    of its own, under its name; no project at all is "unknown"."""

    def __init__(self, settings: ReportSettings) -> None:
        self.aliases = {key.rstrip("/\\") or key: value for key, value in settings.project_aliases}
        self.members: dict[str, str] = {}
        for group, members in settings.project_groups:
            for member in members:
                self.members.setdefault(member.rstrip("/\\") or member, group)
        self.names: dict[str | None, str | None] = {None: None}
        self.groups_of: dict[str | None, str] = {None: UNKNOWN}

    @property
    def active(self) -> bool:
        return bool(self.aliases or self.members)

    def name(self, project: str | None) -> str | None:
        """The project as reports show it: its alias (by whole path first, then folder name), else itself."""
        try:  # (once per row: a hit costs no more than a lookup)
            return self.names[project]
        except KeyError:
            pass
        path = cast(str, project)  # a str: None is in `names` from the start
        found = self.aliases.get(path)
        if found is None:
            found = self.aliases.get(project_tail(path), path)
        self.names[project] = found
        return found

    def shown(self, project: str | None) -> str:
        """The project as a report's rows show it: its `name`, "unknown" where there is none."""
        found = self.name(project)
        return UNKNOWN if found is None else found

    def group(self, project: str | None) -> str:
        """The project's group: the first of its alias, its path, the alias's and the path's folder names
        that a group lists; else its name."""
        found = self.groups_of.get(project)
        if found is None:
            path = cast(str, project)  # a str: None is in `groups_of` from the start
            shown = cast(str, self.name(path))  # a path's name is a str (its alias, else itself)
            found = next((self.members[c] for c in (shown, path, project_tail(shown), project_tail(path))
                          if c in self.members), shown)
            self.groups_of[project] = found
        return found



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


def replay_agents() -> tuple[str, ...]:
    """The agents whose side conversations replay messages (`Agent.sidechain_replays`)."""
    from batchcompact.agents import AGENTS

    return tuple(agent.name for agent in AGENTS if agent.sidechain_replays)


def block_agents() -> tuple[str, ...]:
    """The agents `report --by block` shows unless `--agent` says (`Agent.billing_blocks`)."""
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

def cost_usd(cost_mode: str, recorded: Cost, computed: Cost, coalesce: Callable[[Cost, Cost], Cost]) -> Cost:
    """A request's cost by `--cost-mode`: `calculate` the computed cost, `recorded` the recorded one, `auto`
    the recorded one where the file has it, else the computed one (`coalesce(recorded, computed)`)."""
    if cost_mode == "calculate":
        return computed
    if cost_mode == "recorded":
        return recorded
    return coalesce(recorded, computed)


@overload
def has_usage(total_tokens: pl.Expr, recorded_or_zero: pl.Expr) -> pl.Expr: ...
@overload
def has_usage(total_tokens: float, recorded_or_zero: float) -> bool: ...
def has_usage(total_tokens: float | pl.Expr, recorded_or_zero: float | pl.Expr) -> bool | pl.Expr:
    """Whether a request is counted: some tokens, or a recorded cost above zero (no cost counts as zero);
    the others are dropped and reported as `dropped_zero`. Numbers or polars expressions."""
    return (total_tokens > 0) | (recorded_or_zero > 0)


# ---- filters ----

# `--project`: a value matches a project by its whole path or by its last path component (a trailing separator
# of the value ignored); PROJECT_DIR is a project's path up to its last separator, removed to leave that component.
PROJECT_DIR = r"^.*[/\\]"


def wanted_projects(values: Sequence[str]) -> list[str]:
    """The `--project` values as they are compared (a trailing separator dropped)."""
    return [v.rstrip("/\\") or v for v in values]


@dataclass(frozen=True)
class RowFilters:
    """The rows a report counts, decided before the zero-token drop; an empty value filters nothing. fast.py
    tests each row against these values and aggregate.py turns them into polars expressions: two forms of
    one set of values, made once (`row_filters`)."""

    agents: tuple[str, ...] = ()  # row `agent` values: `--agent` (a place label: its agent); `--by block`
    # without it: `block_agents()`
    projects: tuple[str, ...] = ()  # `wanted_projects`: the project as shown, or its path after PROJECT_DIR
    sessions: tuple[str, ...] = ()  # session id prefixes
    since: date | None = None  # first and last local day (`first_day`); a row without a time is outside
    until: date | None = None


def row_filters(settings: ReportSettings) -> RowFilters:
    """The filters `settings` asks for, as both engines apply them."""
    from batchcompact.report.readers import row_agents

    if settings.agents:
        agents = row_agents(settings.agents)
    else:  # `--by block`: the agents that bill in 5-hour windows
        agents = block_agents() if settings.by == "block" else ()
    return RowFilters(agents=agents,
                      projects=tuple(wanted_projects(settings.projects)), sessions=tuple(settings.sessions),
                      since=first_day(settings), until=settings.until)


def first_day(settings: ReportSettings) -> date | None:
    """The first local day a report counts: `--since`, or the first day of the `--last` periods, the later."""
    return max(filter(None, (settings.since, last_periods_since(settings))), default=None)


# ---- periods ----

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


# `--breakdown` on a grouping that is not a period: each group's rows (one per model) stay together, the
# groups ordered as the report without `--breakdown` orders them (by these two derived columns: the
# group's cost, in picodollars, and its last activity), the models within a group by cost.
GROUP_COST, GROUP_LAST = "_group_cost", "_group_last"


def breakdown_groups(settings: ReportSettings, keys: list[str]) -> list[str] | None:
    """The keys of the groups `--breakdown` splits by model (`keys` without `model`), where the rows
    need the derived columns GROUP_COST and GROUP_LAST to be ordered; None otherwise."""
    if not settings.breakdown or settings.by in PERIODS or settings.by == "model" or "model" not in keys:
        return None
    return [k for k in keys if k != "model"]


def group_values(groups: list[tuple], costs: list[float | None], lasts: list) -> tuple[list[int], list]:
    """Each row's GROUP_COST and GROUP_LAST, given each row's group (its `breakdown_groups` values), cost
    and last activity: the group's cost as the sum of its rows' whole picodollars (an integer: the same in
    any order, in both engines) and its latest activity."""
    from batchcompact.money import to_pico

    cost: dict[tuple, int] = {}
    last: dict[tuple, object] = {}
    for group, usd, when in zip(groups, costs, lasts, strict=True):
        cost[group] = cost.get(group, 0) + (to_pico(usd) if usd is not None else 0)
        if when is not None and (last.get(group) is None or when > last[group]):
            last[group] = when
    return [cost[g] for g in groups], [last.get(g) for g in groups]


def sort_order(settings: ReportSettings, keys: list[str]) -> list[tuple[str, bool]]:
    """The report's row order as (column, descending) pairs, first key first (nulls go last)."""
    if settings.by in PERIODS:
        if settings.breakdown and "model" in keys:  # a period's models by cost, as every other breakdown's
            periods = [(k, settings.order == "desc") for k in keys if k != "model"]
            return [*periods, ("cost_usd", settings.order != "asc"), ("model", False)]
        return [(k, settings.order == "desc") for k in keys]
    base = breakdown_groups(settings, keys)
    if base is not None:
        if settings.by == "session" and settings.order:
            desc = settings.order == "desc"
            return [(GROUP_LAST, desc), *((k, desc) for k in base), ("last_timestamp", desc), ("model", False)]
        desc = settings.order != "asc"
        return [(GROUP_COST, desc), *((k, False) for k in base), ("cost_usd", desc), ("model", False)]
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
