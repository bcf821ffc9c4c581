"""`report --html FILE`: one self-contained page of the archive's spend (docs/report.md, "The HTML page").

The page's numbers are the report's own: every dimension's groups come from `aggregate.build_reports`
(`aggregate.build_report`'s figures, the function `--format json` renders, for several groupings of the
requests at once) with the local day added to the group key, so a
dimension's rows summed over the days are `report --by DIM --format json`'s rows, and the headline's
totals are that report's `totals` as they are. The page embeds these aggregates (not the requests): a
dimension's groups per day, the sessions' groups per day; the browser sums them for the range, the
bucket and the dimension the reader picks (report/page/page.js).

Embedded as JSON in a `<script type="application/json">` with `<`, `>` and `&` written as `\\u003c`... (no
name can end the script or open a comment), and rendered with `textContent` only. The charting library
(Chart.js, vendored at a pinned version with its licence: report/page/) is inlined, so the page makes no
request and opens from `file://`, a mail attachment or a share.
"""

from __future__ import annotations

import json
import math
from dataclasses import replace
from datetime import date
from html import escape
from importlib import resources
from typing import TYPE_CHECKING, cast

from batchcompact.report.dimensions import PAGE, keys_of, page_labels_js
from batchcompact.report.rules import first_day
from batchcompact.report.settings import PERIODS, ReportSettings

if TYPE_CHECKING:
    from collections.abc import Sequence
    from datetime import datetime

    import polars as pl

    from batchcompact.core.jsontypes import JsonObject, JsonValue
    from batchcompact.pricing import PriceTable
    from batchcompact.report.result import Report

# The dimensions the reader stacks the chart by and lists in a table, in the switch's order: the table's
# (dimensions.PAGE), with their names on the page written into its script (LABELS_SLOT, `render_page`).
DIMENSIONS = tuple(d.name for d in PAGE)
# Where page/page.js's `DIM_LABELS` gets the dimensions' names (`page_script`):
LABELS_SLOT = "/* the dimensions' names: report/html.py writes them here from report/dimensions.py */"
MAX_KEYS = 250  # a dimension's groups embedded one by one; the rest summed per day as one "other" group
MAX_SESSIONS = 2000  # the costliest sessions embedded with their days (the page says how many there are)
OTHER = "(other)"
NUMBERS = ("requests", "input_tokens", "output_tokens", "cache_read_tokens", "cache_write_tokens",
           "reasoning_tokens", "total_tokens", "cost_usd", "unpriced_requests")
LIBRARY = "chart.umd.min.js"  # Chart.js 4.6.1 from npm (report/page/chart.js-LICENSE.md), as published


def page_settings(settings: ReportSettings) -> ReportSettings:
    """The filters of `settings` as the page applies them: every filter (`--since/--until`, `--agent`,
    `--project`, `--source`, `--session`, the time zone, cost mode, prices, project table); `--last N` of a
    period as its first day; `--by`, `--breakdown`, `--order` and other `--last` only shape a table."""
    return replace(settings, by="day", breakdown=False, last=None, order=None, since=first_day(settings))


LONG_PERIOD = 92  # days: a longer period is first shown by week


def initial_view(settings: ReportSettings, days: list[date]) -> dict[str, str]:
    """What the page shows first: `--by week/month` picks the chart's bucket (`--by day`, the default, is
    read as week over more than LONG_PERIOD days, where daily bars are a few pixels wide), a dimension its
    stack (model otherwise)."""
    bucket = settings.by if settings.by in PERIODS else "day"
    if bucket == "day" and days and (days[-1] - days[0]).days > LONG_PERIOD:
        bucket = "week"
    return {"bucket": bucket, "dimension": settings.by if settings.by in DIMENSIONS else "model"}


def page_data(parts: list[str], settings: ReportSettings, table: PriceTable | None = None,
              usage: tuple[pl.DataFrame, list[str]] | None = None) -> JsonObject:
    """Everything the page shows, as plain JSON-able data (see the module's doc). `usage`:
    `aggregate.priced_usage(parts, settings, table)` already made (the report beside the page made it)."""
    from batchcompact.pricing import PriceTable
    from batchcompact.report.aggregate import build_reports, priced_usage
    from batchcompact.report.render import totals_record

    table = table or PriceTable.load(settings.pricing_file)
    base = page_settings(settings)
    if usage is None:  # deduplicated and priced once, grouped per dimension below
        usage = priced_usage(parts, base, table)
    # every dimension's report per day, and the sessions' per day and branch: grouped together (build_reports)
    *reports, sessions = build_reports(parts, base, [*((dim, ("local_date",)) for dim in DIMENSIONS),
                                                     ("session", ("local_date", "branch"))], table, usage)
    days: set[date] = set()
    dims: JsonObject = {}
    head = reports[0]
    for dim, report in zip(DIMENSIONS, reports, strict=True):
        keys = keys_of(dim)
        frame = _capped(cast("pl.DataFrame", report.rows), keys)  # (build_reports: polars rows)
        frame = frame.filter(frame["local_date"].is_not_null())  # a request with no time has no day on the chart
        days.update(frame["local_date"].to_list())
        dims[dim] = frame
    totals = totals_record(head)
    day_list = sorted(days)
    day_index = {d: i for i, d in enumerate(day_list)}
    data: JsonObject = {
        "version": 1,
        "days": [d.isoformat() for d in day_list],
        "totals": dict(zip(totals, _finite(list(totals.values())), strict=True)),
        "unpriced_models": head.unpriced_models,
        "dropped_zero_token_requests": head.dropped_zero,
        "pricing": head.pricing_source,
        "filters": _filters(settings),
        "view": initial_view(settings, day_list),
        "start_of_week": settings.start_of_week,
        "dimensions": {dim: _encode(frame, keys_of(dim), day_index) for dim, frame in dims.items()},
    }
    data["sessions"] = _sessions(sessions, day_index)
    return data


def _capped(rows: pl.DataFrame, keys: list[str]) -> pl.DataFrame:
    """A dimension's (keys, day) rows, its MAX_KEYS costliest groups as they are and the rest as one
    `OTHER` group per day (summed: its cost a float sum of exact group costs)."""
    import polars as pl

    rows = rows.select([*keys, "local_date", *NUMBERS]).with_columns(pl.col(keys).fill_null("(unknown)"))
    ranked = rows.group_by(keys).agg(pl.col("cost_usd").sum().alias("_cost"), pl.col("total_tokens").sum().alias("_tok"))
    if ranked.height <= MAX_KEYS:
        return rows
    ranked = ranked.sort(["_cost", "_tok", *keys], descending=[True, True, *[False] * len(keys)])
    kept = ranked.head(MAX_KEYS - 1).select(keys)
    rest = rows.join(kept, on=keys, how="anti")
    other = rest.group_by("local_date").agg(pl.col(list(NUMBERS)).sum()).with_columns(
        [pl.lit(OTHER).alias(k) for k in keys])
    return pl.concat([rows.join(kept, on=keys, how="semi"), other.select(rows.columns)])


def _encode(frame: pl.DataFrame, keys: list[str], day_index: dict[date, int]) -> JsonObject:
    """Columns, not records: the groups' names once (`names`), then per row its group and day indexes."""
    frame = frame.sort([*keys, "local_date"])
    names: dict[tuple, int] = {}
    group = []
    for key in frame.select(keys).iter_rows():
        group.append(names.setdefault(key, len(names)))
    out: JsonObject = {
        "keys": keys,
        "names": [list(k) for k in names],
        "group": group,
        "day": [day_index[d] for d in frame["local_date"].to_list()],
    }
    for column in NUMBERS:
        out[column] = _numbers(frame[column])
    return out


def _sessions(report: Report, day_index: dict[date, int]) -> JsonObject:
    """The MAX_SESSIONS costliest sessions (`--by session`'s groups: id, agent, project) with each day's
    numbers, models and branch, from `report`: `--by session`'s groups per local day and branch."""
    import polars as pl

    from batchcompact.report.rules import branch_name

    keys = keys_of("session")
    frame = cast(pl.DataFrame, report.rows)  # (build_reports: polars rows)
    rows = frame.with_columns(
        pl.Series("branch", [branch_name(b) for b in frame["branch"].to_list()], dtype=pl.String))
    per_day = rows.group_by([*keys, "local_date"]).agg(
        *[pl.col(c).sum() for c in NUMBERS],
        pl.col("models").alias("models"),  # a list per branch: joined below
        pl.col("branch").unique().sort().alias("branches"),
        pl.col("first_timestamp").min(), pl.col("last_timestamp").max(),
    )
    ranked = per_day.group_by(keys).agg(pl.col("cost_usd").sum().alias("_cost"),
                                        pl.col("last_timestamp").max().alias("_last"))
    count = ranked.height
    kept = ranked.sort(["_cost", "_last", *keys], descending=[True, True, False, False, False],
                       nulls_last=True).head(MAX_SESSIONS).select(keys)
    per_day = per_day.join(kept, on=keys, how="semi", nulls_equal=True).sort([*keys, "local_date"])
    names: dict[tuple, int] = {}
    group = [names.setdefault(k, len(names)) for k in per_day.select(keys).iter_rows()]
    out: JsonObject = {
        "count": count,
        "keys": keys,
        "names": [list(k) for k in names],
        "group": group,
        "day": [day_index.get(d, -1) for d in per_day["local_date"].to_list()],
        "models": [sorted({m for ms in lists for m in ms}) for lists in per_day["models"].to_list()],
        "branches": per_day["branches"].to_list(),
        "first": [_iso(t) for t in per_day["first_timestamp"].to_list()],
        "last": [_iso(t) for t in per_day["last_timestamp"].to_list()],
    }
    for column in NUMBERS:
        out[column] = _numbers(per_day[column])
    return out


def _numbers(series: pl.Series) -> list:
    """A column of numbers as JSON may hold it (`_finite`: only a float can be no finite number)."""
    values = series.to_list()
    return _finite(values) if series.dtype.is_float() else values


def _finite(values: list) -> list:
    """A column as JSON may hold it: a cost that is no finite number (a file recorded NaN) as null,
    which the page adds as 0 and the JSON report would print as NaN, which no JSON reader accepts."""
    return [None if isinstance(v, float) and not math.isfinite(v) else v for v in values]


def _iso(value: datetime | None) -> str | None:
    return value.isoformat() if value is not None else None


def _filters(settings: ReportSettings) -> JsonObject:
    s = settings
    since = page_settings(s).since
    return {"since": since.isoformat() if since else None, "until": s.until.isoformat() if s.until else None,
            "agents": list(s.agents), "projects": list(s.projects),
            "sessions": list(s.sessions), "timezone": s.timezone, "cost_mode": s.cost_mode}


def _asset(name: str) -> str:
    return resources.files("batchcompact.report").joinpath("page", name).read_text(encoding="utf-8")


def embedded_json(data: JsonValue) -> str:
    """`data` as JSON safe inside a <script> element: `<`, `>`, `&` as \\u escapes (JSON reads them back
    as themselves), so no name ends the element or opens a comment."""
    text = json.dumps(data, ensure_ascii=False, separators=(",", ":"), allow_nan=False)
    return text.replace("<", "\\u003c").replace(">", "\\u003e").replace("&", "\\u0026")


def library_source() -> str:
    """Chart.js as published, without its source map comment (the map is not shipped: no request for it)."""
    text = _asset(LIBRARY)
    text = "\n".join(line for line in text.splitlines() if not line.startswith("//# sourceMappingURL="))
    if "</script" in text.lower() or "<!--" in text:  # would end the inline element early
        raise ValueError(f"{LIBRARY} cannot be inlined as it is")
    return text


def page_script() -> str:
    """page/page.js with the dimensions' names on the page (`dimensions.page_labels_js`) in its slot."""
    script = _asset("page.js")
    at = script.index(LABELS_SLOT)
    if script.count(LABELS_SLOT) != 1:
        raise ValueError(f"page.js must name {LABELS_SLOT} once")
    indent = at - (script.rfind("\n", 0, at) + 1)
    return script[:at] + page_labels_js(indent) + script[at + len(LABELS_SLOT):]


def render_page(data: JsonObject, title: str = "AI spend") -> str:
    """The page: styles, the data, Chart.js and the page's script, in one file."""
    script = page_script()
    return (
        "<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8\">"
        "<meta name=\"viewport\" content=\"width=device-width, initial-scale=1\">"
        # No request of any kind: scripts and styles inline only, nothing else from anywhere.
        "<meta http-equiv=\"Content-Security-Policy\" content=\"default-src 'none'; "
        "script-src 'unsafe-inline'; style-src 'unsafe-inline'; img-src data:\">"
        f"<title>{escape(title)} · batchcompact</title><style>{_asset('page.css')}</style></head>\n<body>\n"
        f"{_asset('page.html')}\n"
        f"<script type=\"application/json\" id=\"report-data\">{embedded_json(data)}</script>\n"
        f"<script>{library_source()}</script>\n<script>{script}</script>\n</body></html>\n"
    )


RUN_COLUMNS = ("status", "ended_at", "started_at", "tokens_before", "tokens_after_est", "cost_usd", "batch", "model",
               "prompt_tokens", "completion_tokens", "cache_read_tokens", "cache_write_tokens", "latency_s", "calls")


def run_reports(paths: list[str]) -> list[str]:
    """The `compactions*.parquet` files among `paths` (a file, or found in a folder), sorted."""
    from pathlib import Path

    found: set[str] = set()
    for given in paths:
        path = Path(given)
        if path.is_file() and path.name.startswith("compactions") and path.suffix == ".parquet":
            found.add(str(path))
        elif path.is_dir():
            found.update(str(p) for p in path.rglob("compactions*.parquet") if p.is_file())
    return sorted(found)


def run_savings(paths: list[str], settings: ReportSettings, table: PriceTable, day_index: dict[date, int] | None = None
                ) -> JsonObject | None:
    """What batchcompact's runs did, per local day, from the run reports among `paths` (report/run_usage.py
    reads the same files for their spend): sessions compacted, context tokens before -> after, what they
    cost, what the batch API saved (the on-demand price of the same tokens minus the batch price paid),
    failed sessions and the summary calls' latency and output tokens. None where there is no run report.
    A file `report/run_usage.py` refuses (another table, torn) is left out here too (the report names it)."""
    from zoneinfo import ZoneInfo

    import pyarrow.parquet as pq

    from batchcompact.pipeline.runreport.schema import not_a_run_report
    from batchcompact.pipeline.statuses import COMPACTED, FAILED

    zone = ZoneInfo(settings.timezone)
    since = page_settings(settings).since
    per_day: dict[str, dict[str, float]] = {}
    files = 0
    for name in run_reports(paths):
        try:
            parquet = pq.ParquetFile(name)
            if not_a_run_report(parquet.schema_arrow) is not None:
                continue
            rows = parquet.read(columns=[c for c in RUN_COLUMNS if c in parquet.schema_arrow.names]).to_pylist()
        except Exception:  # noqa: BLE001  (named by the report's own reading of the file)
            continue
        files += 1
        for row in rows:
            when = row.get("ended_at") or row.get("started_at")
            if when is None:
                continue
            day = when.astimezone(zone).date()
            if (since and day < since) or (settings.until and day > settings.until):
                continue
            acc = per_day.setdefault(day.isoformat(), dict.fromkeys(
                ("compacted", "failed", "tokens_before", "tokens_after", "cost_usd", "batch_saved_usd", "calls",
                 "latency_s", "output_tokens"), 0))
            status = row.get("status")
            acc["failed"] += status == FAILED
            if status != COMPACTED:
                continue
            acc["compacted"] += 1
            acc["tokens_before"] += row.get("tokens_before") or 0
            acc["tokens_after"] += row.get("tokens_after_est") or 0
            acc["cost_usd"] += row.get("cost_usd") or 0.0
            acc["calls"] += row.get("calls") or 0
            acc["latency_s"] += row.get("latency_s") or 0.0
            acc["output_tokens"] += row.get("completion_tokens") or 0
            if row.get("batch") and row.get("model") and row.get("cost_usd") is not None:
                prompt, cached = row.get("prompt_tokens") or 0, row.get("cache_read_tokens") or 0
                written = row.get("cache_write_tokens") or 0
                on_demand = table.cost(row["model"], input_tokens=max(prompt - cached - written, 0),
                                       output_tokens=row.get("completion_tokens") or 0, cache_read_tokens=cached,
                                       cache_write_tokens=written)
                if on_demand is not None:
                    acc["batch_saved_usd"] += max(on_demand - row["cost_usd"], 0.0)
    if not files:
        return None
    return {"files": files, "days": sorted(per_day), "by_day": [per_day[d] for d in sorted(per_day)]}


def write_page(parts: list[str], settings: ReportSettings, path: str, paths: Sequence[str] = (),
               usage: tuple[pl.DataFrame, list[str]] | None = None) -> int:
    """Build the page and write it whole (outfile: a temp file beside it, renamed); returns its bytes.
    `paths`: the report's PATHS, where run reports are looked for (`run_savings`); `usage`: as `page_data`'s
    (the same prices as `settings.pricing_file`'s)."""
    from batchcompact.outfile import write_text
    from batchcompact.pricing import PriceTable

    data = page_data(parts, settings, usage=usage)
    data["runs"] = run_savings(list(paths), settings, PriceTable.load(settings.pricing_file))
    text = render_page(data)
    write_text(path, text)
    return len(text.encode("utf-8"))
