"""What a report is asked for (stdlib only: the CLI and the warm path build it without polars)."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import date, datetime, timedelta

from batchcompact.agents import find

GROUPINGS = ("day", "week", "month", "session", "project", "branch", "group", "model", "provider", "agent",
             "machine", "block", "request")
PERIODS = ("day", "week", "month")
# The columns each grouping's rows are keyed by (both aggregation paths: aggregate.py and fast.py).
GROUP_KEYS = {
    "day": ["date"],
    "week": ["week"],
    "month": ["month"],
    "session": ["session_id", "agent", "project"],
    "project": ["project"],
    "branch": ["project", "branch"],
    "group": ["group"],
    "model": ["model"],
    "provider": ["provider"],
    "agent": ["agent"],
    "machine": ["machine"],
    "block": ["block_start"],
    "request": ["request_id"],
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
    # The config file's [report.projects]: (recorded project or its folder name, name shown) pairs, and
    # (group, its projects) pairs (`ProjectNames`).
    project_aliases: tuple[tuple[str, str], ...] = ()
    project_groups: tuple[tuple[str, tuple[str, ...]], ...] = ()
    # This machine: the name and id of the rows read from its own files (an export's rows keep theirs).
    machine: str = "unknown"
    machine_id: str = ""


def week_start_index(start_of_week: str) -> int:
    """polars weekday number (Monday = 1 ... Sunday = 7) of the first day of a week."""
    try:
        return WEEKDAYS.index(start_of_week.lower()) + 1
    except ValueError:
        raise ValueError(f"unknown first day of the week {start_of_week!r}; use one of {', '.join(WEEKDAYS)}") from None


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


# ---- the columns some groupings add (both engines call these: the rules are written once) ----

UNKNOWN = "unknown"
# A request whose file names no model (null or empty): its name in `--by model`, the `models` lists, the
# chart, the blocks and the unpriced warning.
UNKNOWN_MODEL = "(unknown model)"


def model_name(model: str | None) -> str:
    """The model as the report shows it: UNKNOWN_MODEL where the file names none."""
    return model or UNKNOWN_MODEL


# Provider names agents spell differently for the same company (lower case first).
PROVIDER_ALIASES = {
    "claude": "anthropic", "gemini": "google", "google_ai": "google", "google-vertex": "google",
    "vertex": "google", "vertex_ai": "google", "google-gemini-cli": "google", "google-antigravity": "google",
    "x_ai": "xai", "grok": "xai", "openai_codex": "openai", "openai-codex": "openai",
    "alibaba": "qwen", "dashscope": "qwen", "moonshotai": "moonshot",
}


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
        found = self.names.get(project, self)
        if found is self:
            found = self.aliases.get(project)
            if found is None:
                found = self.aliases.get(project_tail(project), project)
            self.names[project] = found
        return found

    def group(self, project: str | None) -> str:
        """The project's group: the first of its alias, its path, the alias's and the path's folder names
        that a group lists; else its name."""
        found = self.groups_of.get(project)
        if found is None:
            shown = self.name(project)
            found = next((self.members[c] for c in (shown, project, project_tail(shown), project_tail(project))
                          if c in self.members), shown)
            self.groups_of[project] = found
        return found


def project_config(table: object, where: str) -> tuple[tuple[tuple[str, str], ...], tuple[tuple[str, tuple[str, ...]], ...]]:
    """`[report.projects]` read from the config file: `aliases` (project -> name) and `groups` (group ->
    list of projects); ValueError naming what is wrong."""
    if table is None:
        return (), ()
    if not isinstance(table, dict):
        raise ValueError(f"{where}: [report.projects] must be a table with `aliases` and `groups`")
    unknown = sorted(set(table) - {"aliases", "groups"})
    if unknown:
        raise ValueError(f"{where}: [report.projects] has no key {unknown[0]!r} (use `aliases` and `groups`)")
    aliases = table.get("aliases", {})
    groups = table.get("groups", {})
    if not isinstance(aliases, dict) or not all(isinstance(v, str) and v for v in aliases.values()):
        raise ValueError(f"{where}: [report.projects.aliases] maps a project to a name: "
                         f'"/home/me/src/shop" = "shop"')
    if not isinstance(groups, dict) or not all(
            isinstance(v, list) and all(isinstance(m, str) and m for m in v) for v in groups.values()):
        raise ValueError(f"{where}: [report.projects.groups] maps a group to a list of projects: "
                         f'storefront = ["shop", "shop-api"]')
    return (tuple(sorted(aliases.items())),
            tuple(sorted((name, tuple(members)) for name, members in groups.items())))
