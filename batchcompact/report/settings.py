"""What a report is asked for (stdlib only: the CLI and the warm path build it without polars)."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import date, datetime

# The dimensions a report groups by are report/dimensions.py's table (`--by`'s choices: `GROUPINGS` there);
# the periods among them (a local day's label, `rules.period_label`; `--last N` periods, the page's buckets):
PERIODS = ("day", "week", "month")
WEEKDAYS = ("monday", "tuesday", "wednesday", "thursday", "friday", "saturday", "sunday")
COST_MODES = ("auto", "calculate", "recorded")
# Provider names agents spell differently for the same company (lower case first), for `rules.provider_name`:
# kept here, as data, because some are also an agent's name, which rules.py and the engines never spell.
PROVIDER_ALIASES = {
    "claude": "anthropic", "gemini": "google", "google_ai": "google", "google-vertex": "google",
    "vertex": "google", "vertex_ai": "google", "google-gemini-cli": "google", "google-antigravity": "google",
    "x_ai": "xai", "grok": "xai", "openai_codex": "openai", "openai-codex": "openai",
    "alibaba": "qwen", "dashscope": "qwen", "moonshotai": "moonshot",
}


@dataclass(frozen=True)
class ReportSettings:
    by: str = "day"
    breakdown: bool = False
    since: date | None = None
    until: date | None = None
    agents: tuple[str, ...] = ()  # `--agent` (or `--source`): rows whose agent is one of these (a place label: its agent's)
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
