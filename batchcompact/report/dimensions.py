"""The report's dimensions, one table (`DIMENSIONS`): every route reads it, none keeps its own list.

A dimension is what `report --by NAME` groups by. Its entry says everything the routes ask of it:
- the columns its rows are keyed by (`keys`), the one it defines (`column`), the usage columns that one is
  made from (`reads`) and the naming rule from rules.py that turns them into the value shown (`shown`);
- whether the polars engine rewrites its column in every report, not only when grouping by it
  (`every_row`: a model's name in every row's `models`, the project as `--project` matches it);
- whether the plain-Python engine (fast.py) computes it (`fast`; else only the polars route does);
- its part of `--by`'s help (`help`) and of the HTML page (`page_label`, `page_rank`: its name and place
  in the page's switch; the page's script reads the names from here, html.py writes them in);
- a period (day, week, month: `settings.PERIODS`, a local day's label by `rules.period_label`).

Read by: the CLI (`GROUPINGS`, `by_help`: `--by`'s choices and help; `batchcompact.report.GROUPINGS`),
fast.py (`supported`, `Builder`'s keys and key getters), aggregate.py (`build_report`'s keys, `with_names`,
`with_periods`), html.py and page/page.js (`PAGE`, `page_labels_js`), render.py (the period columns), and
docs/report.md's lists (held equal by tests/test_report_dimensions.py). docs/architecture.md, "Adding a
dimension", says how to add one.

Standard library and rules.py only (the CLI reads it for `--help`).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

from batchcompact.report import rules
from batchcompact.report.settings import PERIODS

# A naming rule: given the report's `rules.ProjectNames`, the function of a dimension's `reads` values
# that gives its key (a rules.py function: written once, both engines call it).
Shown = Callable[[rules.ProjectNames], Callable[..., object]]


@dataclass(frozen=True)
class Dimension:
    """One `--by` grouping (see the module's doc)."""

    name: str  # `--by NAME`
    keys: tuple[str, ...]  # the columns its rows are keyed by, in order (each some dimension's `column`)
    column: str = ""  # the key column it defines (default: `name`)
    reads: tuple[str, ...] = ()  # the usage columns (rules.REPORT_COLUMNS) `column` is made from
    shown: Shown | None = None  # the naming rule; None: the recorded value as it is
    every_row: bool = False  # the polars engine rewrites `column` in every report (aggregate.with_names)
    fast: bool = True  # computed by the plain-Python engine too (fast.py), held equal by the equivalence tests
    help: str = ""  # what `--by`'s help says of it ("" : its name says it)
    page_label: str | None = None  # its name on the HTML page; None: not a dimension of the page
    page_rank: int = 0  # its place in the page's switch (first: the one the page opens on)

    def __post_init__(self) -> None:
        if not self.column:
            object.__setattr__(self, "column", self.name)

    @property
    def period(self) -> bool:
        """A period of local days (`settings.PERIODS`): its column is `rules.period_label` of the local day."""
        return self.name in PERIODS


DIMENSIONS: tuple[Dimension, ...] = (
    Dimension("day", ("date",), column="date", reads=("timestamp",)),
    Dimension("week", ("week",), reads=("timestamp",)),
    Dimension("month", ("month",), reads=("timestamp",)),
    Dimension("session", ("session_id", "agent", "project"), column="session_id", reads=("session_id",),
              shown=lambda names: rules.session_name, every_row=True),
    Dimension("project", ("project",), reads=("project",), shown=lambda names: names.shown, every_row=True,
              page_label="project", page_rank=4),
    Dimension("branch", ("project", "branch"), reads=("branch",), shown=lambda names: rules.branch_name,
              help="project and git branch", page_label="branch", page_rank=6),
    Dimension("group", ("group",), reads=("project",), shown=lambda names: names.group,
              help="the project groups of the config file's [report.projects]", page_label="project group",
              page_rank=5),
    Dimension("model", ("model",), reads=("model",), shown=lambda names: rules.model_name, every_row=True,
              page_label="model", page_rank=1),
    Dimension("provider", ("provider",), reads=("agent", "provider"), shown=lambda names: rules.provider_name,
              help="who served the request", page_label="provider", page_rank=3),
    Dimension("agent", ("agent",), reads=("agent",), help="the agent that wrote the file", page_label="agent",
              page_rank=2),
    Dimension("machine", ("machine",), reads=("machine",), help="where it was recorded", page_label="machine",
              page_rank=7),
    Dimension("block", ("block_start",), column="block_start", reads=("timestamp",), fast=False,
              help="Claude's 5-hour billing windows"),
    Dimension("request", ("request_id",), column="request_id", reads=("dedupe_key",), fast=False,
              help="one row per model request, the export other machines' reports read: --format jsonl, csv or "
              "parquet"),
)
BY_NAME = {d.name: d for d in DIMENSIONS}
BY_COLUMN = {d.column: d for d in DIMENSIONS}
GROUPINGS = tuple(BY_NAME)  # `--by`'s choices, in the table's order
FAST_GROUPINGS = tuple(d.name for d in DIMENSIONS if d.fast)  # what both engines compute
PAGE = tuple(sorted((d for d in DIMENSIONS if d.page_label), key=lambda d: d.page_rank))  # the page's switch
PERIOD_COLUMNS = {d.name: d.column for d in DIMENSIONS if d.period}


def keys_of(by: str) -> list[str]:
    """The columns `--by by`'s rows are keyed by (a new list)."""
    return list(BY_NAME[by].keys)


def by_help() -> str:
    """`--by`'s help: what each dimension whose name does not say it is."""
    said = "; ".join(f"{d.name}: {d.help}" for d in DIMENSIONS if d.help)
    return f"Group rows by this key ({said})."


LINE = 110  # the page's script's line width (ruff's for the Python), where `page_labels_js` wraps


def page_labels_js(indent: int) -> str:
    """The page's names of its dimensions as a JavaScript object literal, in the page's order (page.js's
    `DIM_LABELS`, written in by html.py), wrapped at LINE as the script's own lines are: `indent` is how far
    into its line the literal starts; the next lines are indented by four."""
    line, lines = "{", []
    for d in PAGE:
        entry = f'{d.name}: "{d.page_label}"'
        if line != "{" and indent + len(line) + len(entry) + 3 > LINE:  # ", " before it, "," or "};" after
            lines.append(line + ",")
            line, indent = "    " + entry, 0
        else:
            line += entry if line == "{" else ", " + entry
    return "\n".join([*lines, line + "}"])
