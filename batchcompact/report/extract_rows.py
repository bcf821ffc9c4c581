"""Extract one file's usage rows: dispatch by detected format to its agent's `usage` reader.

No pyarrow or polars here: the Parquet cache (part_cache.py) turns the rows into a table, the cold
`--no-cache` report (fast.py) aggregates them as they are.
"""

from __future__ import annotations

import math
import sys
from pathlib import Path

from batchcompact.adapters.common.lines import ExtractStats
from batchcompact.adapters.common.usage_rows import (
    COLUMNS,
    COUNT_FIELDS,
    MAX_RECORDED_USD,
    MAX_REQUEST_TOKENS,
    UsageRows,
    row_identity,
)
from batchcompact.errors import BatchCompactError, InternalError, internal_error_reason
from batchcompact.formats.compressed import is_decompress_error
from batchcompact.formats.scan import PARQUET_NOT_SESSION, printable, unreadable_reason
from batchcompact.report.detect import detect_usage_source

NOT_A_SESSION = "not a session file of any agent batchcompact reports on"
# A Parquet file named to `report` that holds neither kind of batchcompact table it reads (docs/report.md).
NOT_AN_EXPORT = "a Parquet file, but not a usage export (`report --by request`) nor a run report of batchcompact's"


def extract_rows(path: str | Path, source: str | None = None) -> tuple[UsageRows, ExtractStats]:
    """All usage rows of one file (column lists), and what extraction saw. Never raises for bad content."""
    from batchcompact.adapters.common.usage_reader import usage_reader
    from batchcompact.agents import find

    stats = ExtractStats(path=str(path))
    rows = UsageRows()
    try:
        source = source or detect_usage_source(path)
        stats.format = source
        agent = find(source)
        if source == "batchcompact":  # our run reports (Parquet: pyarrow only for these)
            from batchcompact.report.run_usage import extract_runs

            extract_runs(path, rows, stats)
        elif source == "usage-export":  # report --by request's files, read back (report/export.py)
            from batchcompact.report.export import extract_export

            extract_export(path, rows, stats)
        elif agent is not None and agent.usage:
            usage_reader(agent)(path, rows, stats)
        elif source is None:  # empty, compressed, binary, or JSON lines of no agent: said, as validate says it
            reason = unreadable_reason(str(path), ValueError(NOT_A_SESSION))
            stats.refuse(NOT_AN_EXPORT if reason == PARQUET_NOT_SESSION else reason)
    except BatchCompactError as exc:  # e.g. zstandard missing: say so, keep going
        if getattr(exc, "fatal", False):  # the report would be wrong without this file (a newer export)
            raise
        stats.refuse(str(exc))
        if getattr(exc, "incomplete", False):  # an export cut short, a .zst without zstandard: rows missing
            stats.incomplete = 1
    except OSError as exc:  # a transcript not read: the report lacks its rows
        stats.refuse(f"cannot read: {exc.strerror or exc}")
        stats.incomplete = 1
    except Exception as exc:
        if _is_sqlite_error(exc):  # a database that is locked, damaged or not one of ours
            stats.refuse(f"cannot read the database: {exc}")
        elif is_decompress_error(exc):  # rows so far are kept
            stats.warn(None, f"zstd data damaged, the rest of the file is not read: {exc}")
        else:  # a bug: the report would be wrong without this file, so it stops
            raise InternalError(f"{path}: {internal_error_reason(exc)}") from exc
    if stats.unclean or printable(stats.path) is not stats.path:
        rows.rows = [tuple(printable(v) if type(v) is str else v for v in row) for row in rows.rows]
    _sane_costs(rows, stats)
    _sane_values(rows, stats)
    _identify(rows)
    stats.rows = len(rows)
    return rows, stats


_KEY = COLUMNS.index("dedupe_key")
_RECORDED = COLUMNS.index("recorded_cost_usd")
_LINE = COLUMNS.index("line")


def _sane_costs(rows: UsageRows, stats: ExtractStats) -> None:
    """A recorded cost that is not a finite number (a file's NaN or 1e400) or is past any request's is
    dropped, named by its line: the request is priced from its tokens as if the file recorded no cost
    (every reader, both engines: the report never fails on it)."""
    at, bad = _RECORDED, []
    for index, row in enumerate(rows.rows):
        cost = row[at]
        if cost is not None and not (math.isfinite(cost) and abs(cost) < MAX_RECORDED_USD):
            bad.append(index)
    for index in bad:
        row = rows.rows[index]
        stats.warn(row[_LINE], f"recorded cost {row[at]!r} is not a cost (not a finite number under "
                               f"${MAX_RECORDED_USD:,.0f}); priced from its tokens instead")
        rows.rows[index] = (*row[:at], None, *row[at + 1:])


_COUNTS = tuple(COLUMNS.index(n) for n in COUNT_FIELDS)
_TOTAL = COLUMNS.index("total_tokens")
_TEXTS = tuple(COLUMNS.index(n) for n in ("session_id", "project", "provider", "model", "branch"))


def _sane_values(rows: UsageRows, stats: ExtractStats) -> None:
    """What a reader took from the file as it was is checked once here, for every reader and both engines:
    a token count that is not a whole number under MAX_REQUEST_TOKENS counts 0, and a session, project,
    provider, model or branch that is not text (a number, a list, an object) is left empty; each named by
    its line. The report never fails on them (a huge count overflowed the Int64 columns: an internal error)."""
    for index, row in enumerate(rows.rows):
        bad_counts = [i for i in _COUNTS if type(row[i]) is not int or not -MAX_REQUEST_TOKENS <= row[i] <= MAX_REQUEST_TOKENS]
        bad_texts = [i for i in _TEXTS if row[i] is not None and type(row[i]) is not str]
        if not bad_counts and not bad_texts:
            continue
        fixed = list(row)
        for i in bad_counts:
            stats.warn(row[_LINE], f"{COLUMNS[i]} {_shown(row[i])} is not a token count (a whole number under "
                                   f"{MAX_REQUEST_TOKENS:,}); counted as 0")
            fixed[i] = 0
        for i in bad_texts:
            stats.warn(row[_LINE], f"{COLUMNS[i]} {_shown(row[i])} is not text; left empty")
            fixed[i] = None
        fixed[_TOTAL] = sum(fixed[i] for i in _COUNTS[:4])
        rows.rows[index] = tuple(fixed)


def _shown(value: object) -> str:
    text = repr(value)
    return text if len(text) <= 40 else text[:37] + "..."


def _identify(rows: UsageRows) -> None:
    """Every row gets an identity: a row its reader gave no `dedupe_key` gets `row_identity`, so that a copy
    of its file elsewhere (a synced archive, an export of it) counts once, as keyed rows do."""
    key = _KEY
    if any(row[key] is None for row in rows.rows):
        rows.rows = [row if row[key] is not None else (*row[:key], row_identity(row), *row[key + 1:])
                     for row in rows.rows]


def _is_sqlite_error(exc: Exception) -> bool:
    """An sqlite3 error (only the agents that read databases import sqlite3: no error of it otherwise, and
    no import of it here, which every extraction worker would pay)."""
    sqlite3 = sys.modules.get("sqlite3")
    return sqlite3 is not None and isinstance(exc, sqlite3.Error)
