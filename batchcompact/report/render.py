"""Report -> text table, JSON, CSV or Parquet. Output goes to stdout or `--output FILE`."""

from __future__ import annotations

import json
from datetime import datetime
from pathlib import Path

import polars as pl

from batchcompact.errors import UsageError
from batchcompact.report.aggregate import Report

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
    "first_timestamp",
    "last_timestamp",
)


def report_records(report: Report) -> list[dict]:
    """Rows as plain dicts: the group keys, then JSON_FIELDS (timestamps as ISO strings)."""
    out = []
    for row in report.rows.iter_rows(named=True):
        out.append({k: _plain(row[k]) for k in [*report.keys, *JSON_FIELDS]})
    return out


def totals_record(report: Report) -> dict:
    return {k: _plain(report.totals.get(k)) for k in JSON_FIELDS if k in report.totals}


def render_json(report: Report) -> str:
    s = report.settings
    doc = {
        "by": s.by,
        "breakdown": s.breakdown,
        "timezone": s.timezone,
        "cost_mode": s.cost_mode,
        "since": s.since.isoformat() if s.since else None,
        "until": s.until.isoformat() if s.until else None,
        "keys": report.keys,
        "rows": report_records(report),
        "totals": totals_record(report),
        "unpriced_models": report.unpriced_models,
        "pricing": report.pricing_source,
    }
    return json.dumps(doc, indent=2)


def flat_frame(report: Report) -> pl.DataFrame:
    """Rows with `models` joined by ';' (for CSV)."""
    return report.rows.select([*report.keys, *JSON_FIELDS]).with_columns(pl.col("models").list.join(";"))


def render_table(report: Report) -> str:
    headers = [*report.keys, "requests", "input", "output", "cache read", "cache write", "total", "cost USD"]
    if not report.settings.breakdown and "model" not in report.keys:
        headers.append("models")
    lines: list[list[str]] = []
    for rec in [*report_records(report), {**dict.fromkeys(report.keys, ""), **totals_record(report)}]:
        cells = [str(rec.get(k) if rec.get(k) is not None else "") for k in report.keys]
        cells += [
            _n(rec.get(f))
            for f in (
                "requests",
                "input_tokens",
                "output_tokens",
                "cache_read_tokens",
                "cache_write_tokens",
                "total_tokens",
            )
        ]
        cells.append(_cost(rec.get("cost_usd"), rec.get("unpriced_requests")))
        if len(headers) > len(cells):
            cells.append(_models_cell(rec.get("models") or []))
        lines.append(cells)
    if lines:
        lines[-1][0] = "TOTAL"
    widths = [max(len(h), *(len(r[i]) for r in lines)) for i, h in enumerate(headers)]
    numeric = set(range(len(report.keys), len(report.keys) + 7))

    def fmt(cells: list[str]) -> str:
        return "  ".join(
            c.rjust(w) if i in numeric else c.ljust(w)
            for i, (c, w) in enumerate(zip(cells, widths, strict=True))
        ).rstrip()

    rule = "  ".join("-" * w for w in widths)
    body = [fmt(headers), rule, *(fmt(r) for r in lines[:-1]), rule, fmt(lines[-1])]
    return "\n".join(body) + "\n"


def write_report(report: Report, fmt: str, output: str | Path | None) -> str | None:
    """Write the report; returns text for stdout when there is no output file."""
    if fmt == "parquet":
        if not output:
            raise UsageError("--format parquet needs --output FILE")
        report.rows.write_parquet(output)
        return None
    if fmt == "json":
        text = render_json(report) + "\n"
    elif fmt == "csv":
        text = flat_frame(report).write_csv()
    elif fmt == "table":
        text = render_table(report)
    else:
        raise UsageError(f"unknown format {fmt!r}; choose one of {', '.join(FORMATS)}")
    if output:
        Path(output).write_text(text, encoding="utf-8")
        return None
    return text


def _plain(value):
    if isinstance(value, datetime):
        return value.isoformat()
    if isinstance(value, pl.Series):
        return value.to_list()
    return value


def _models_cell(models: list[str], limit: int = 60) -> str:
    text = ", ".join(models)
    return text if len(text) <= limit else f"{len(models)} models"


def _n(value) -> str:
    return f"{value:,}" if isinstance(value, int) else ""


def _cost(value, unpriced) -> str:
    text = f"${value:,.2f}" if isinstance(value, (int, float)) else "?"
    return text + ("*" if unpriced else "")
