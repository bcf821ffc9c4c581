"""Report -> text table, JSON, CSV or Parquet. Output goes to stdout or `--output FILE`."""

from __future__ import annotations

from datetime import datetime
from pathlib import Path
from typing import TYPE_CHECKING, cast

from batchcompact.core.times import iso_time
from batchcompact.errors import UsageError
from batchcompact.report.dimensions import PERIOD_COLUMNS
from batchcompact.report.result import Report
from batchcompact.report.rules import UNKNOWN

if TYPE_CHECKING:
    import polars as pl

FORMATS = ("table", "json", "csv", "parquet")
JSON_FIELDS = (
    "requests",
    "input_tokens",
    "output_tokens",
    "cache_read_tokens",
    "cache_write_tokens",
    "reasoning_tokens",
    "total_tokens",
    "cost_usd",
    "unpriced_requests",
    "models",
    "agents",
    "first_timestamp",
    "last_timestamp",
)


def report_records(report: Report) -> list[dict]:
    """Rows as plain dicts: the group keys, JSON_FIELDS, then grouping-specific columns (timestamps ISO)."""
    out = []
    for row in report.rows.iter_rows(named=True):
        out.append({k: _plain(row[k]) for k in [*report.keys, *JSON_FIELDS, *report.extra_columns]})
    return out


def totals_record(report: Report) -> dict:
    return {k: _plain(report.totals.get(k)) for k in JSON_FIELDS if k in report.totals}


def render_json(report: Report, sources: list[dict] | None = None) -> str:
    s = report.settings
    doc = {
        "by": s.by,
        "breakdown": s.breakdown,
        "timezone": s.timezone,
        "cost_mode": s.cost_mode,
        "since": s.since.isoformat() if s.since else None,
        "until": s.until.isoformat() if s.until else None,
        "sources": list(sources or []),
        "keys": report.keys,
        "rows": report_records(report),
        "totals": totals_record(report),
        "unpriced_models": report.unpriced_models,
        "dropped_zero_token_requests": report.dropped_zero,
        "pricing": report.pricing_source,
    }
    from batchcompact.json_rows import rows_object_text

    return rows_object_text(doc).rstrip("\n")  # every command's shape: the rows first, one per line (docs/cli.md)


def flat_frame(report: Report) -> pl.DataFrame:
    """Rows with `models` and `agents` joined by ';' (for CSV)."""
    import polars as pl

    columns = [*report.keys, *JSON_FIELDS, *report.extra_columns]
    rows = cast("pl.DataFrame", report.rows)  # (polars' rows: `write_report` writes a RowList's CSV itself)
    return rows.select(columns).with_columns(pl.col("models").list.join(";"), pl.col("agents").list.join(";"))


COMPACT_WIDTH = 120  # below this many columns a terminal gets the compact table
TOKEN_CELLS = (
    ("requests", "requests"),
    ("input", "input_tokens"),
    ("output", "output_tokens"),
    ("cache read", "cache_read_tokens"),
    ("cache write", "cache_write_tokens"),
    ("total", "total_tokens"),
)
COMPACT_CELLS = (("input", "input_tokens"), ("output", "output_tokens"), ("total", "total_tokens"))


def render_table(report: Report, compact: bool = False) -> str:
    """A text table. `compact` keeps the key, input, output, total and cost (narrow terminals)."""
    by = report.settings.by
    key_cells = [(k, k) for k in report.keys]
    if by == "block":
        key_cells = [("block start", "block_start"), ("end", "block_end"), ("status", "status")]
    extra: list[tuple[str, str]] = []
    if by == "session" and not compact:
        extra = [("first", "first_timestamp"), ("last", "last_timestamp")]
    cells = COMPACT_CELLS if compact else TOKEN_CELLS
    limit = by == "block" and report.rows.height and cast(  # (blocks are polars' rows)
        "pl.DataFrame", report.rows)["token_limit"].drop_nulls().len()
    headers = [h for h, _ in key_cells] + [h for h, _ in extra] + [h for h, _ in cells] + ["cost USD"]
    if limit:
        headers.append("% limit")
    with_models = not compact and not report.settings.breakdown and "model" not in report.keys
    if with_models:
        headers.append("models")
    records = report_records(report)
    lines: list[list[str]] = []
    for rec in [*records, {**dict.fromkeys(report.keys, ""), **totals_record(report)}]:
        tz = report.settings.timezone
        row = [_cell(rec.get(field), tz) for _, field in key_cells]
        row += [_cell(rec.get(field), tz) for _, field in extra]
        row += [_n(rec.get(field)) for _, field in cells]
        row.append("" if rec.get("gap") else _cost(rec.get("cost_usd"), rec.get("unpriced_requests")))
        if limit:
            percent = rec.get("limit_percent")
            row.append(f"{percent:.1f}%" if isinstance(percent, float) else "")
        if with_models:
            row.append(_models_cell(rec.get("models") or []))
        lines.append(row)
    lines[-1][0] = "TOTAL"
    widths = [max(len(h), *(len(r[i]) for r in lines)) for i, h in enumerate(headers)]
    first_number = len(key_cells) + len(extra)
    numeric = set(range(first_number, first_number + len(cells) + 1 + (1 if limit else 0)))

    def line_of(row: list[str]) -> str:
        return "  ".join(
            c.rjust(w) if i in numeric else c.ljust(w) for i, (c, w) in enumerate(zip(row, widths, strict=True))
        ).rstrip()

    rule = "  ".join("-" * w for w in widths)
    body = [line_of(headers), rule, *(line_of(r) for r in lines[:-1]), rule, line_of(lines[-1])]
    body += _active_block_lines(report)
    return "\n".join(body) + "\n"


def table_width(report: Report) -> int:
    """How wide the full table is (to decide on the compact one)."""
    return max((len(line) for line in render_table(report).splitlines()), default=0)


def _active_block_lines(report: Report) -> list[str]:
    if report.settings.by != "block" or not report.rows.height:
        return []
    out: list[str] = []
    for rec in report_records(report):
        if not rec.get("active"):
            continue
        out.append("")
        since = _cell(rec["block_start"], report.settings.timezone)
        out.append(f"Active block since {since}: {rec.get('remaining_minutes')} min left")
        if rec.get("burn_tokens_per_minute") is not None:
            out.append(
                f"  burn rate   {rec['burn_tokens_per_minute']:,.0f} tokens/min, ${rec['burn_cost_per_hour']:,.2f}/hour"
            )
            out.append(
                f"  projected   {_n(rec['projected_total_tokens'])} tokens, ${rec['projected_cost_usd']:,.2f} at block end"
            )
        if rec.get("token_limit"):
            status = rec.get("limit_status") or "ok"
            out.append(
                f"  limit       {_n(rec['token_limit'])} tokens: {rec['limit_percent']:.1f}% used, projected {status}"
            )
    return out


def _cell(value: object, timezone: str = "UTC") -> str:
    """A table cell; ISO timestamps are shown to the minute in the report's time zone."""
    if value is None:
        return ""
    if isinstance(value, str) and len(value) >= 19 and value[10] == "T":
        from zoneinfo import ZoneInfo

        try:
            return datetime.fromisoformat(value).astimezone(ZoneInfo(timezone)).strftime("%Y-%m-%d %H:%M")
        except ValueError:
            return value
    return str(value)


def write_report(
    report: Report,
    fmt: str,
    output: str | Path | None,
    *,
    compact: bool = False,
    sources: list[dict] | None = None,
) -> str | None:
    """Write the report; returns text for stdout when there is no output file."""
    if fmt == "parquet":
        if not output:
            raise UsageError("--format parquet needs --output FILE")
        from batchcompact.outfile import replacing

        with replacing(output) as where:
            write_parquet_report(report, where)
        return None
    if fmt == "json":
        text = render_json(report, sources) + "\n"
    elif fmt == "csv":
        from batchcompact.report.row_list import RowList

        if isinstance(report.rows, RowList):  # the cold report without polars (fast.py)
            text = report.rows.csv([*report.keys, *JSON_FIELDS, *report.extra_columns])
        else:
            from batchcompact.report.row_list import CSV_DATETIME

            text = flat_frame(report).write_csv(datetime_format=CSV_DATETIME)
    elif fmt == "table":
        text = render_table(report, compact=compact)
    else:
        raise UsageError(f"unknown format {fmt!r}; choose one of {', '.join(FORMATS)}")
    if output:
        from batchcompact.outfile import write_text

        write_text(output, text)
        return None
    return text


# The Parquet report (`--format parquet` of a grouped report; the per-request export is export.py's):
# its footer names the table and this version. 1 (unmarked): the period keys were strings; 2: `date` and
# `week` are dates (the week's first day), `month` the month's first day, null for "unknown" (no time).
REPORT_TABLE = "report"
REPORT_SCHEMA_VERSION = 2


def parquet_frame(report: Report) -> pl.DataFrame:
    """The report's rows as the Parquet report holds them: the period keys as dates."""
    import polars as pl

    rows = report.rows
    if not isinstance(rows, pl.DataFrame):  # the cold report's rows (row_list.RowList)
        rows = pl.DataFrame(report_records(report))
    periods = []
    for name in PERIOD_COLUMNS.values():
        if name in rows.columns and rows.schema[name] == pl.String:
            label = pl.when(pl.col(name) == UNKNOWN).then(None).otherwise(pl.col(name))
            if name == "month":
                label = label + "-01"
            periods.append(label.str.to_date("%Y-%m-%d").alias(name))
    return rows.with_columns(periods) if periods else rows


def write_parquet_report(report: Report, where: str | Path) -> None:
    """The Parquet report (pyarrow writes it; its metadata names the table and REPORT_SCHEMA_VERSION)."""
    import pyarrow.parquet as pq

    table = parquet_frame(report).to_arrow()
    metadata = {**(table.schema.metadata or {}), b"batchcompact_table": REPORT_TABLE.encode(),
                b"schema_version": str(REPORT_SCHEMA_VERSION).encode()}
    # an open file, never the path: pyarrow removes a path it failed to write, and `where` may be a device
    # (`-o /dev/full` as root would lose /dev/full)
    with open(where, "wb") as sink:
        pq.write_table(table.replace_schema_metadata(metadata), sink)


def _plain(value: object) -> object:
    if isinstance(value, datetime):
        return iso_time(value)
    if type(value).__module__.startswith("polars"):  # a list cell of a polars row (pl.Series)
        return cast("pl.Series", value).to_list()
    return value


def _models_cell(models: list[str], limit: int = 60) -> str:
    text = ", ".join(models)
    return text if len(text) <= limit else f"{len(models)} models"


def _n(value: object) -> str:
    return f"{value:,}" if isinstance(value, int) else ""


def _cost(value: object, unpriced: object) -> str:
    text = f"${value:,.2f}" if isinstance(value, (int, float)) else "?"
    return text + ("*" if unpriced else "")
