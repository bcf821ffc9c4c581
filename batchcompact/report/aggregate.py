"""Usage parts -> report rows, with polars.

Steps (all lazy until the final collect):
1. scan the per-file parts; keep one row per `dedupe_key` across files (the highest `dedupe_rank`, then
   the largest usage), so a Claude request copied into a resumed or forked session, a sub-agent request
   seen both in an `agent_progress` line and in its `subagents/` file, or an OpenCode message in its
   database and in a legacy JSON file (the database row wins), is counted once; a side conversation of an
   agent that replays (`Agent.sidechain_replays`) replaying a parent message under a new request id
   collapses into the parent's row;
2. add `computed_cost_usd` from the price table (tiered rates where the map has them; null when the
   model is unpriced) and `cost_usd` by cost mode: `auto` = recorded where the file has a cost, else
   computed; `calculate` = computed; `recorded` = recorded only;
3. drop requests with no tokens at all (a trimmed or rate-limit-only record; `dropped_zero` counts
   them), filter by source, agent, project (the working directory, or its last component), session (id or
   id prefix) and local date (`since`/`until` inclusive, in `timezone`; `last` N periods back from today);
4. group by the period (`day`, `week` = 7 days from `start_of_week`, Monday by default, `month`), by
   `session`, `project`, `model`, `agent`, or into 5-hour billing blocks (`block`, see blocks.py);
   `breakdown` adds the model to the group key.
Order: periods and blocks oldest first, sessions/projects/models by cost (largest first); `order`
asc|desc sorts periods and blocks by time, sessions by last activity, projects and models by cost.
`last` N on a non-period grouping keeps the N groups with the latest activity; totals always cover
exactly the rows shown.
Cost sums skip nulls; `unpriced_requests` counts the requests whose cost is unknown, so an unpriced
model is reported, never silently free.
Every rule above is written once in rules.py (and pricing.py: tiers, the cost's float expression), which
fast.py applies too; this module turns them into polars expressions.
Determinism: a report is the same bytes whatever order the files were read in (`--jobs`, executor,
cache hits). Each request's cost is rounded once to whole picodollars and the groups add integers
(batchcompact/money.py), so no sum depends on the order of its terms; the dedupe keeps one row per key
by a total order (ties broken by every column), and rows are sorted by their keys.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Sequence
from dataclasses import replace
from typing import cast

import polars as pl

from batchcompact import money
from batchcompact.model_price import prompt_tokens, tier_rate, token_cost
from batchcompact.money import from_pico
from batchcompact.pricing import PriceTable
from batchcompact.report import dimensions, rules
from batchcompact.report.result import Report
from batchcompact.report.settings import PERIODS, ReportSettings, week_start_index

# The counting rules are report/rules.py's (one definition for this module and fast.py); here they are
# turned into polars expressions.
REPORT_COLUMNS = rules.REPORT_COLUMNS
SUM_COLUMNS = rules.SUM_COLUMNS


def _sort_args(order: Sequence[tuple[str, bool]]) -> dict:
    """A rules order ((column, descending) pairs) as polars' sort arguments, nulls last."""
    return {"by": [c for c, _ in order], "descending": [d for _, d in order], "nulls_last": True}


def scan_usage(parts: list[str], settings: ReportSettings | None = None) -> pl.LazyFrame:
    """The columns reports need, one row per dedupe_key (the highest rank, then the largest usage wins;
    ties: first session id). A row read from this machine's own files is this machine's (`settings`)."""
    from batchcompact.adapters.common.usage_rows import USAGE_SCHEMA
    from batchcompact.report.export import ExportPart, scan_export

    if not parts:
        empty = cast(pl.DataFrame, pl.from_arrow(USAGE_SCHEMA.empty_table()))  # (a Table gives a DataFrame)
        return empty.lazy().select(REPORT_COLUMNS)
    written = [part for part in parts if not isinstance(part, ExportPart)]
    exports = [scan_export(part, REPORT_COLUMNS) for part in parts if isinstance(part, ExportPart)]
    lf = pl.concat([*([pl.scan_parquet(written).select(REPORT_COLUMNS)] if written else []), *exports])
    if settings is not None:  # before the dedupe: the machine breaks its ties, as in fast.py
        lf = lf.with_columns(pl.col("machine").fill_null(settings.machine),
                             pl.col("machine_id").fill_null(settings.machine_id))
    # Read once; then each step touches only the rows it can change, and copies nothing when there are
    # none (a team's exports: a million requests whose ids are unique, none of an agent that replays). A
    # group_by of one row per key cost half a minute there; a unique key's row is its own first.
    rows = lf.collect()
    key = rows.get_column("dedupe_key")
    copied = key.is_duplicated() & key.is_not_null()  # a null key is never merged
    if copied.any():
        rows = pl.concat([
            rows.filter(~copied),
            rows.filter(copied).group_by("dedupe_key")
            .agg(pl.all().sort_by(**_sort_args(rules.DEDUPE_ORDER)).first()).select(REPORT_COLUMNS),
        ])
    del key, copied
    replays = pl.col("agent").is_in(list(rules.replay_agents())) & pl.col("dedupe_key").is_not_null()
    sides = rows.select((replays & (pl.col("kind") != rules.MAIN_KIND)).any()).item()
    if not sides:  # no side conversation of an agent that replays: no copy to collapse
        return rows.lazy()
    return pl.concat([rows.lazy().filter(~replays), *collapse_sidechain_replays(rows.lazy().filter(replays))])


def collapse_sidechain_replays(replaying: pl.LazyFrame) -> list[pl.LazyFrame]:
    """The sidechain replay collapse (`rules.REPLAY_ORDER`) of the keyed rows of the agents that replay: of the
    rows that share a message with a side-conversation copy, the first by that order is kept; the other
    rows are untouched."""
    rows = replaying.with_columns(
        pl.col("dedupe_key").str.extract(f"^(.*?){re.escape(rules.MESSAGE_END)}", 1).alias("_message"),
        (pl.col("kind") != rules.MAIN_KIND).alias(rules.SIDE))
    side_ids = rows.filter(pl.col(rules.SIDE)).select("_message").unique()
    involved = rows.join(side_ids, on="_message", how="semi")  # rows sharing an id with a sidechain row
    merged = (
        involved.sort(**_sort_args(rules.REPLAY_ORDER))
        .unique(subset="_message", keep="first", maintain_order=True)
    )
    return [
        rows.join(side_ids, on="_message", how="anti").select(REPORT_COLUMNS),
        merged.select(REPORT_COLUMNS),
    ]


PRICE_SUFFIXES = ("in", "out", "cr", "cw", "cw1h")  # price_frame's columns, in `PriceTier.prices()` order


def price_frame(
    table: PriceTable, pairs: list[tuple[str | None, str | None]]
) -> tuple[pl.DataFrame, int, list]:
    """Rates per (model, provider) as columns r<i>_above/_in/_out/_cr/_cw; also tier count and unpriced models."""
    records = []
    unpriced = set()
    width = 1
    for model, provider in pairs:
        info = table.lookup(model, provider) if model else None
        rates = info.rates() if info else ()
        if not rates:
            unpriced.add(rules.model_name(model))
        width = max(width, len(rates))
        records.append((model or "", provider or "", rates))
    data: dict[str, list] = {"_model": [r[0] for r in records], "_provider": [r[1] for r in records]}
    for i in range(width):
        data[f"r{i}_above"] = [float(r[2][i].above_tokens) if len(r[2]) > i else None for r in records]
        for at, suffix in enumerate(PRICE_SUFFIXES):
            data[f"r{i}_{suffix}"] = [float(r[2][i].prices()[at]) if len(r[2]) > i else None for r in records]
    schema = {"_model": pl.String, "_provider": pl.String} | {
        k: pl.Float64 for k in data if k.startswith("r")
    }
    return pl.DataFrame(data, schema=schema), width, sorted(unpriced)


def add_costs(lf: pl.LazyFrame, table: PriceTable, cost_mode: str) -> tuple[pl.LazyFrame, list[str]]:
    """Add `computed_cost_usd` and `cost_usd`; returns the frame and the unpriced models."""
    pairs_df = lf.select("model", "provider").unique().collect()
    pairs = list(zip(pairs_df["model"].to_list(), pairs_df["provider"].to_list(), strict=True))
    prices, width, unpriced = price_frame(table, pairs)
    # Each row's rates: only the two key columns are joined, in the rows' order, and set beside the rows
    # (a join of the whole frame made a copy of every column: a team's year, ~200 MB more at the peak).
    keys = lf.select(pl.col("model").fill_null("").alias("_model"), pl.col("provider").fill_null("").alias("_provider"))
    rates = keys.join(prices.lazy(), on=["_model", "_provider"], how="left", maintain_order="left")
    lf = pl.concat([lf, rates], how="horizontal")
    tokens = [pl.col(c) for c in ("input_tokens", "output_tokens", "cache_read_tokens", "cache_write_tokens",
                                   "cache_write_1h_tokens")]
    prompt = prompt_tokens(tokens[0], tokens[2], tokens[3])
    tiers = [(pl.col(f"r{i}_above"), tuple(pl.col(f"r{i}_{p}") for p in PRICE_SUFFIXES)) for i in range(width)]

    def pick(condition: pl.Expr, then: Sequence[pl.Expr], otherwise: Sequence[pl.Expr]) -> Sequence[pl.Expr]:
        return tuple(pl.when(condition).then(t).otherwise(o) for t, o in zip(then, otherwise, strict=True))

    computed = token_cost(tokens[0], tokens[1], tokens[2], tokens[3], tokens[4], tier_rate(tiers, prompt, pick))
    lf = lf.with_columns(computed.alias("computed_cost_usd"))
    cost = rules.cost_usd(cost_mode, pl.col("recorded_cost_usd"), pl.col("computed_cost_usd"), pl.coalesce)
    lf = lf.with_columns(cost.alias("cost_usd"), pico_usd(cost).alias("_cost_pico")).drop(
        [c for c in prices.columns]
    )
    if cost_mode == "recorded":
        unpriced = []
    return lf, unpriced


def with_periods(lf: pl.LazyFrame, timezone: str, by: str, start_of_week: str = "monday") -> pl.LazyFrame:
    """Add `local_date` and the period column `by` needs (only that one: strings cost memory): the label of
    each distinct local day (`rules.period_label`; a report spans few days), joined to the rows."""
    return with_period(lf.with_columns(local_date(timezone)), by, start_of_week)


def local_date(timezone: str) -> pl.Expr:
    """Each request's day where the report is read (`local_date`)."""
    return pl.col("timestamp").dt.convert_time_zone(timezone).dt.date().alias("local_date")


def with_period(lf: pl.LazyFrame, by: str, start_of_week: str = "monday") -> pl.LazyFrame:
    """The period column `by` needs (if it is a period) from `local_date`."""
    if by not in dimensions.PERIOD_COLUMNS:
        return lf
    first = week_start_index(start_of_week)
    return _mapped(lf, ["local_date"], lambda day: rules.period_label(day, by, first),
                   dimensions.PERIOD_COLUMNS[by], pl.String)


def with_names(lf: pl.LazyFrame, settings: ReportSettings) -> pl.LazyFrame:
    """The columns `--by` groups by that its dimensions' naming rules make (dimensions.py: `group`,
    `provider`, `branch`), each mapped over the distinct recorded values by the function fast.py calls per
    row; and those every report shows by name (`Dimension.every_row`): the model, the project as shown
    (`[report.projects]` aliases), the session and project "unknown" (in `build_report`)."""
    names = rules.ProjectNames(settings)
    if settings.by == "request":  # an export keeps what the files recorded: aliases apply where it is read
        return lf
    # a request whose file names no model is shown as such (after pricing, which reads the recorded model)
    lf = lf.with_columns(pl.when(pl.col("model").is_null() | (pl.col("model") == "")).then(pl.lit(rules.UNKNOWN_MODEL))
                         .otherwise(pl.col("model")).alias("model"))
    for column in dimensions.keys_of(settings.by):
        made = dimensions.BY_COLUMN[column]
        if made.shown is None or made.every_row or made.period:
            continue
        # from the recorded values: after pricing (which reads the recorded provider), before the project is
        # renamed (a group may list its path)
        lf = _mapped(lf, list(made.reads), made.shown(names), column, pl.String, replace=column in made.reads)
    if names.active:
        lf = _mapped(lf, ["project"], names.name, "project", pl.String, replace=True)
    return lf


def _mapped(lf: pl.LazyFrame, columns: list[str], func: Callable[..., object], name: str,
            dtype: pl.DataType | type[pl.DataType], replace: bool = False) -> pl.LazyFrame:
    """`name` = func(*columns) for each distinct value (a Python rule, computed once per value)."""
    values = lf.select(columns).unique().collect()
    table = values.with_columns(
        pl.Series("_mapped", [func(*row) for row in values.iter_rows()], dtype=dtype))
    lf = lf.join(table.lazy(), on=columns, how="left", nulls_equal=True, maintain_order="left")
    if replace:
        return lf.drop(name).rename({"_mapped": name})
    return lf.rename({"_mapped": name})


def _project_filter(wanted: tuple[str, ...]) -> pl.Expr:
    """A project matches by its whole path or by its last path component (`rules.RowFilters.projects`)."""
    project = pl.col("project").fill_null("")
    tail = project.str.replace(rules.PROJECT_DIR, "")
    return project.is_in(wanted) | tail.is_in(wanted)


def _session_filter(prefixes: tuple[str, ...]) -> pl.Expr:
    session = pl.col("session_id").fill_null("")
    expr = pl.lit(False)
    for prefix in prefixes:
        expr = expr | session.str.starts_with(prefix)
    return expr


def filter_usage(lf: pl.LazyFrame, settings: ReportSettings) -> pl.LazyFrame:
    """`rules.row_filters` as polars expressions (fast.py's `row_filter` tests the same values per row)."""
    wanted = rules.row_filters(settings)
    if wanted.agents:
        lf = lf.filter(pl.col("agent").is_in(list(wanted.agents)))
    if wanted.projects:
        lf = lf.filter(_project_filter(wanted.projects))
    if wanted.sessions:
        lf = lf.filter(_session_filter(wanted.sessions))
    if wanted.since:
        lf = lf.filter(pl.col("local_date") >= wanted.since)
    if wanted.until:
        lf = lf.filter(pl.col("local_date") <= wanted.until)
    return lf


def nonzero() -> pl.Expr:
    """Rows worth reporting: some tokens, or a recorded cost."""
    return rules.has_usage(pl.col("total_tokens"), pl.col("recorded_cost_usd").fill_null(0))


def pico_usd(usd: pl.Expr) -> pl.Expr:
    """A cost as whole picodollars (Int64): `money.pico`, the rounding the fast engine uses."""
    return money.pico(usd, floor=pl.Expr.floor).cast(pl.Int64)


def usd_from_pico(frame: pl.DataFrame) -> pl.DataFrame:
    """`cost_usd` summed as exact picodollars (Decimal) -> USD floats, each the nearest to its sum."""
    values = [from_pico(int(v)) if v is not None else 0.0 for v in frame["cost_usd"].to_list()]
    return frame.with_columns(pl.Series("cost_usd", values, dtype=pl.Float64))


def _aggs(total: bool = False, summed: bool = False) -> list[pl.Expr]:
    """What every group (and the totals) sums; `cost_usd` comes out in picodollars (see usd_from_pico).
    `summed`: the same figures from rows that are already groups of requests summed by these rules
    (`build_reports`' fine groups, where `model` and `agent` are keys): the counts and sums add, the first
    and last times are the least and the greatest, the lists are the same expressions."""
    models = pl.col("model").drop_nulls().unique().sort()
    agents = pl.col("agent").unique().sort()
    if summed:
        counts = [pl.col(c).sum() for c in ("requests", *SUM_COLUMNS, "cost_usd", "unpriced_requests")]
    else:
        counts = [
            pl.len().alias("requests"),
            *[pl.col(c).sum() for c in SUM_COLUMNS],
            # integers add up the same in any order; Decimal(38) does not overflow where Int64 would (~$9M)
            pl.col("_cost_pico").cast(pl.Decimal(38, 0)).sum().alias("cost_usd"),
            pl.col("cost_usd").is_null().sum().alias("unpriced_requests"),
        ]
    first, last = ("first_timestamp", "last_timestamp") if summed else ("timestamp", "timestamp")
    return [
        *counts,
        (models.implode() if total else models).alias("models"),
        (agents.implode() if total else agents).alias("agents"),
        pl.col(first).min().alias("first_timestamp"),
        pl.col(last).max().alias("last_timestamp"),
    ]


def _usage(parts: list[str], settings: ReportSettings) -> pl.LazyFrame:
    """Deduplicated once: the price lookup, the groups and the totals all read it (one row per request,
    far smaller than the transcripts; the dedupe's group_by holds it in memory anyway).
    In no particular order: nothing after depends on it (the sums are exact integers, see pico_usd; the
    groups, the blocks and the export sort what they show), so a million requests are not sorted for
    nothing (test_report_determinism: the same bytes whatever order the files are read in)."""
    return scan_usage(parts, settings).collect().lazy()


def priced_usage(parts: list[str], settings: ReportSettings, table: PriceTable) -> tuple[pl.DataFrame, list[str]]:
    """The deduplicated, priced requests `build_report` starts from (and the unpriced models), for several
    reports of one archive under one cost mode and machine (`build_report(..., usage=)`)."""
    lf, unpriced = add_costs(_usage(parts, settings), table, settings.cost_mode)
    return lf.collect(), unpriced


def build_report(parts: list[str], settings: ReportSettings, table: PriceTable | None = None,
                 also: tuple[str, ...] = (), usage: tuple[pl.DataFrame, list[str]] | None = None) -> Report:
    """The report for the given usage parts. `also`: columns added to the group key after `--by`'s
    (`local_date`, `branch`: the HTML page's groups per day, report/html.py), summed by the same rules;
    `usage`: `priced_usage(parts, settings, table)` already made (same cost mode and machine)."""
    table = table or PriceTable.load(settings.pricing_file)
    if usage is not None:  # priced_usage's, shared by several reports of one archive (the HTML page)
        lf, unpriced = usage[0].lazy(), list(usage[1])
    else:
        lf, unpriced = add_costs(_usage(parts, settings), table, settings.cost_mode)
    lf = with_names(lf, settings)
    lf = filter_usage(with_periods(lf, settings.timezone, settings.by, settings.start_of_week), settings)
    if settings.by == "request":  # the per-request export (report/export.py): every request, those with no
        # tokens too, so that a report made from the export is the one made from the files
        from batchcompact.report.export import export_frame

        rows = export_frame(lf, settings)
        used = set(rows["model"].drop_nulls().unique().to_list())
        return Report(settings=settings, keys=["request_id"], rows=rows, totals={"requests": rows.height},
                      unpriced_models=[m for m in unpriced if m in used], pricing_source=table.source)
    keep = nonzero()
    zero_frame = lf.select((~keep).sum().alias("zero"))
    lf = lf.filter(keep)
    lf = lf.with_columns(pl.col("project").fill_null(rules.UNKNOWN), pl.col("session_id").fill_null(rules.UNKNOWN))
    if settings.by == "block":
        from batchcompact.report.blocks import build_blocks

        report = build_blocks(lf, settings)
        report.dropped_zero = int(zero_frame.collect().item())
        report.unpriced_models = [m for m in unpriced if m in set(report.totals.get("models") or [])]
        report.pricing_source = table.source
        return report
    return _grouped(lf, settings, also, zero_frame, unpriced, table, summed=False)


def _grouped(lf: pl.LazyFrame, settings: ReportSettings, also: tuple[str, ...], zero_frame: pl.LazyFrame,
             unpriced: list[str], table: PriceTable, summed: bool) -> Report:
    """`settings.by`'s groups of the requests (or of build_reports' fine groups: `summed`) in `lf`, their
    order, `--last N`'s groups and the totals of what is shown."""
    keys = dimensions.keys_of(settings.by)
    if settings.breakdown and "model" not in keys:
        keys.append("model")
    keys += [k for k in also if k not in keys]
    rows, zero, totals_frame = pl.collect_all(
        [lf.group_by(keys).agg(_aggs(summed=summed)), zero_frame, lf.select(_aggs(total=True, summed=summed))]
    )
    if settings.last and settings.by not in PERIODS:  # the N groups with the latest activity
        rows = rows.sort(**_sort_args(rules.last_groups_order(keys))).head(settings.last)
        kept = lf.join(rows.lazy().select(keys), on=keys, how="semi", nulls_equal=True)
        totals_frame = kept.select(_aggs(total=True, summed=summed)).collect()
    rows = sort_rows(usd_from_pico(rows), keys, settings)
    totals_frame = usd_from_pico(totals_frame)
    totals = totals_frame.row(0, named=True) if totals_frame.height else {}
    used = set(totals.get("models") or [])
    unpriced = [m for m in unpriced if m in used]
    return Report(
        settings=settings,
        keys=keys,
        rows=rows,
        totals=totals,
        unpriced_models=unpriced,
        pricing_source=table.source,
        dropped_zero=int(zero.item() or 0),
    )


# What `build_reports` groups the requests by first: every column a grouping's key, naming rule or filter
# reads (dimensions.py's `reads`, rules.row_filters' columns), the local day and whether the request counts.
COUNTS = "_counts"
FINE_KEYS = tuple(dict.fromkeys(
    [*(c for d in dimensions.DIMENSIONS if d.fast and not d.period for c in d.reads), "agent", "project",
     "session_id", "local_date", COUNTS]))


def build_reports(parts: list[str], settings: ReportSettings, groupings: list[tuple[str, tuple[str, ...]]],
                  table: PriceTable | None = None, usage: tuple[pl.DataFrame, list[str]] | None = None
                  ) -> list[Report]:
    """`build_report(parts, replace(settings, by=by), table, also, usage)` for each (by, also) of `groupings`
    (none of them `block` or `request`; `also` among FINE_KEYS), the same figures, for several reports of one archive (the HTML
    page: a grouping per dimension and day, and the sessions). The requests are grouped once, by FINE_KEYS
    (a team's year: 954k requests in 77k groups); each report then groups those groups (`_aggs(summed=True)`:
    exact integer sums, least and greatest times, the lists over keys), its names and filters applied to
    them as `build_report` applies them to the requests (they read only FINE_KEYS)."""
    table = table or PriceTable.load(settings.pricing_file)
    if usage is not None:
        lf, unpriced = usage[0].lazy(), list(usage[1])
    else:
        lf, unpriced = add_costs(_usage(parts, settings), table, settings.cost_mode)
    lf = lf.with_columns(local_date(settings.timezone), nonzero().alias(COUNTS))
    fine = lf.group_by(list(FINE_KEYS)).agg(
        [e for e in _aggs() if e.meta.output_name() not in ("models", "agents")]).collect()
    reports = []
    for by, also in groupings:
        if not dimensions.BY_NAME[by].fast:
            raise ValueError(f"build_reports: --by {by} is made from the requests (build_report)")
        shown = replace(settings, by=by)
        groups = filter_usage(with_period(with_names(fine.lazy(), shown), by, shown.start_of_week), shown)
        zero_frame = groups.filter(~pl.col(COUNTS)).select(pl.col("requests").sum())
        groups = groups.filter(pl.col(COUNTS)).with_columns(
            pl.col("project").fill_null(rules.UNKNOWN), pl.col("session_id").fill_null(rules.UNKNOWN))
        reports.append(_grouped(groups, shown, also, zero_frame, unpriced, table, summed=True))
    return reports


def sort_rows(rows: pl.DataFrame, keys: list[str], settings: ReportSettings) -> pl.DataFrame:
    base = rules.breakdown_groups(settings, keys)
    if base is None:
        return rows.sort(**_sort_args(rules.sort_order(settings, keys)))
    costs, lasts = rules.group_values(list(rows.select(base).iter_rows()), rows["cost_usd"].to_list(),
                                rows["last_timestamp"].to_list())
    derived = rows.with_columns(pl.Series(rules.GROUP_COST, costs, dtype=pl.Int64),
                                pl.Series(rules.GROUP_LAST, lasts, dtype=rows.schema["last_timestamp"]))
    return derived.sort(**_sort_args(rules.sort_order(settings, keys))).drop(rules.GROUP_COST, rules.GROUP_LAST)
