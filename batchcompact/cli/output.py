"""Writing rows as a table, JSON, CSV or Parquet. stdout carries results; stderr carries the rest."""

from __future__ import annotations

import csv
import io
import json
import sys
from collections.abc import Iterable, Iterator, Sequence
from contextlib import contextmanager
from typing import Any, TextIO

import click


def _cell(value: Any) -> str:
    if value is None:
        return "-"
    if isinstance(value, bool):
        return "yes" if value else "no"
    if isinstance(value, float):
        return f"{value:.4f}" if value < 100 else f"{value:,.2f}"
    if isinstance(value, int):
        return f"{value:,}"
    if isinstance(value, list):
        return str(len(value))
    text = str(value)
    return text if len(text) <= 60 else text[:59] + "…"


LEFT_ALIGNED = frozenset({"status", "model", "reason", "format", "source"})


def short_path(text: str, width: int = 56) -> str:
    """The tail of a long path, so a table stays readable; the full path is in json/csv/parquet."""
    return text if len(text) <= width else "…" + text[-(width - 1):]


def format_table(rows: Sequence[dict[str, Any]], columns: Sequence[tuple[str, str]]) -> str:
    """A plain aligned text table; `columns` are (key, heading) pairs; path-like columns are shortened."""
    cells = [[heading for _, heading in columns]]
    cells += [
        [short_path(str(row.get(key))) if "path" in key and row.get(key) else _cell(row.get(key)) for key, _ in columns]
        for row in rows
    ]
    widths = [max(len(r[i]) for r in cells) for i in range(len(columns))]
    left = [i == 0 or key in LEFT_ALIGNED for i, (key, _) in enumerate(columns)]
    lines = []
    for index, row in enumerate(cells):
        lines.append(
            "  ".join(c.ljust(w) if left[i] else c.rjust(w) for i, (c, w) in enumerate(zip(row, widths, strict=True))).rstrip()
        )
        if index == 0:
            lines.append("  ".join("-" * w for w in widths))
    return "\n".join(lines)


@contextmanager
def open_output(path: str | None) -> Iterator[TextIO]:
    """FILE opened for writing (closed afterwards), or stdout (left open)."""
    if not path:
        yield sys.stdout
        return
    with open(path, "w", encoding="utf-8", newline="") as handle:
        yield handle


def write_json_rows(rows: Iterable[dict[str, Any]], out: TextIO) -> int:
    """Stream a JSON list, one object per line; returns the number of rows."""
    count = 0
    out.write("[")
    for row in rows:
        out.write(",\n" if count else "\n")
        out.write(json.dumps(row, ensure_ascii=False, default=str))
        count += 1
    out.write("\n]\n" if count else "]\n")
    return count


def write_csv_rows(rows: Iterable[dict[str, Any]], columns: Sequence[str], out: TextIO) -> int:
    writer = csv.DictWriter(out, fieldnames=list(columns), extrasaction="ignore")
    writer.writeheader()
    count = 0
    for row in rows:
        writer.writerow({k: (";".join(v) if isinstance(v, list) else v) for k, v in row.items()})
        count += 1
    return count


def require_output(fmt: str, output: str | None) -> None:
    if fmt == "parquet" and not output:
        raise click.UsageError("--format parquet needs --output FILE")


def echo_err(text: str) -> None:
    click.echo(text, err=True)


def to_text(rows: Sequence[dict[str, Any]], columns: Sequence[tuple[str, str]]) -> str:
    buffer = io.StringIO()
    buffer.write(format_table(rows, columns))
    return buffer.getvalue()
