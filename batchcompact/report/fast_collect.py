"""The cold report's rows, extracted without polars or pyarrow: every file under the PATHS read by its
agent's reader (`extract_rows`, the same readers as the parts path) in worker processes when worth it,
handed back as tuples in `fast.COLUMNS` order, in the order found.

A worker started here (`_start_worker`) reads the price map once and returns its rows already priced and
keyed by a `fast.Builder` for the report's settings, so the parent only keeps them (its collector paused).
With a cache folder, each file's usage part is written as the parts path writes it (`writes_parts`: the
first report of a large archive), so the next report with other options reads the parts.
"""

from __future__ import annotations

import operator
import os
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import TYPE_CHECKING

from batchcompact.adapters.common.usage_rows import COLUMNS as USAGE_COLUMNS
from batchcompact.formats.jsonl import paused_gc
from batchcompact.lifecycle import map_in_processes, worker_init
from batchcompact.pricing import PriceTable
from batchcompact.report.detect import is_run_report_name
from batchcompact.report.fast import COLUMNS, TIME, Builder, Unsupported
from batchcompact.report.files import (
    FileKey,
    Tally,
    Walk,
    extract_workers,
    folder_note,
    part_file,
    part_name,
    parts_folder_problem,
)
from batchcompact.report.settings import ReportSettings

if TYPE_CHECKING:
    from batchcompact.adapters.common.lines import ExtractStats
    from batchcompact.adapters.common.usage_rows import UsageRows

# Requests in Parquet usage exports above which the polars path makes the report faster than this one: a
# team's year of exports (953,693 requests) 7.7 s here, 2.2 s there; equal at 10,000-20,000 (docs/performance.md).
MAX_EXPORT_ROWS = 20_000
_PICK = operator.itemgetter(*(USAGE_COLUMNS.index(name) for name in COLUMNS))  # a usage row -> these


@dataclass
class Collected(Tally):
    """Every file's rows (tuples in `COLUMNS` order) and stats, like `CollectResult` without parts."""

    rows: list[tuple] = field(default_factory=list)
    on_rows: Callable[[list[tuple], frozenset | None], object] | None = field(default=None, repr=False)


# A worker process's Builder (`_start_worker`): its rows come back priced and keyed (`Builder.prepare`).
_WORKER_BUILDER: Builder | None = None


def _start_worker(parent: int, settings: ReportSettings) -> None:
    """A pool worker's initializer: `lifecycle.worker_init`, then the price map read once, so the worker
    prices its own rows."""
    global _WORKER_BUILDER
    worker_init(parent)
    _WORKER_BUILDER = Builder(settings, PriceTable.load(settings.pricing_file))


def file_rows(path: str, cache_dir: str | None = None) -> tuple[list[tuple], dict, frozenset | None]:
    """One file's usage rows as tuples, its stats, and None; in a worker started by `_start_worker`, the
    rows priced and keyed and the models without a price so far (a top-level function for the pool).
    With `cache_dir`, the file's usage part is written there too, as the parts path writes it
    (`extract.extract_to_part`): the report is made here, the next one with other options reads the parts."""
    from batchcompact.report.extract_rows import extract_rows

    key = FileKey.of(path) if cache_dir is not None else None
    rows, stats = extract_rows(path)
    if key is not None and cache_dir is not None:  # (a key only with a cache_dir)
        _store_part(cache_dir, key, rows, stats)
    pick = _PICK
    out = [pick(row) for row in rows.rows]
    if not all(row[TIME] is None or (type(row[TIME]) is datetime and row[TIME].tzinfo is UTC) for row in out):
        out = [(*row[:TIME], _utc(row[TIME]), *row[TIME + 1:]) for row in out]
    builder = _WORKER_BUILDER
    if builder is None:
        return out, stats.to_dict(), None
    return builder.prepare(out), stats.to_dict(), frozenset(builder.pricer.unpriced)


def _store_part(cache_dir: str, key: FileKey, rows: UsageRows, stats: ExtractStats) -> None:
    """The usage part of one file, written as `UsageCache.store` writes it (pyarrow imported here); a cache
    that cannot be written is a warning: the report does not need it."""
    from batchcompact.report.part_cache import UsageCache

    try:
        UsageCache(cache_dir).store(key, rows.to_table(), stats)
    except OSError as exc:
        stats.warn(None, f"usage cache part not written: {exc.strerror or exc}")


def _utc(value: object) -> datetime | None:
    """A timestamp as the usage table stores it: UTC, whole microseconds (naive means UTC)."""
    if value is None:
        return None
    if not isinstance(value, datetime):
        raise Unsupported(f"timestamp of type {type(value).__name__}")
    if value.tzinfo is None:
        return value.replace(tzinfo=UTC)
    return value if value.tzinfo is UTC else value.astimezone(UTC)


def collect_rows(paths: Iterable[str | Path], jobs: int | None = None,
                 on_rows: Callable[[list[tuple], frozenset | None], object] | None = None,
                 settings: ReportSettings | None = None, max_bytes: int | None = None,
                 cache_dir: str | Path | None = None, empty_ok: bool = False,
                 max_export_rows: int | None = None) -> Collected:
    """Extract every file under `paths` (in worker processes when worth it), in the order found.

    `on_rows(rows, unpriced)` hears each file's rows as they come, in the order found (then
    `Collected.rows` stays empty). With `settings` (and `on_rows`), the worker processes price and key
    their rows for those settings (`Builder.prepare`) and `unpriced` is the models they found no price
    for; rows extracted here come with `unpriced` None. Files of more than `max_bytes` in all:
    Unsupported, before any is read (the caller takes the cached path), unless `cache_dir` is given and
    holds no usage part for most of their bytes (`writes_parts`): then each file's part is written there
    as it is read (the first report of an archive: no polars). `empty_ok`: no file at all is no error.
    Parquet usage exports of more than `max_export_rows` requests in all: Unsupported, before any is read
    (polars reads them as Arrow columns, `export.usage_table`; this engine makes a Python tuple of each)."""
    if settings is not None and on_rows is None:
        raise ValueError("rows priced by the workers need on_rows")
    result = Collected(on_rows=on_rows)
    found = result.stat_files(paths, empty_ok=empty_ok)
    todo = [path for path, _ in found]
    store = None
    if max_export_rows is not None and (rows := parquet_export_rows(todo, max_export_rows)) > max_export_rows:
        refused = Unsupported(f"{rows:,}+ requests in Parquet usage exports: polars reads them faster")
        refused.walk = Walk(found, result.files, result.bytes, list(result.stats))
        raise refused
    if max_bytes is not None and result.bytes > max_bytes:
        if cache_dir is None or not writes_parts(cache_dir, found):
            refused = Unsupported(f"{result.bytes:,} bytes: more than {max_bytes:,}, the cached path is faster")
            refused.walk = Walk(found, result.files, result.bytes, list(result.stats))  # not stat'ed twice
            raise refused
        store = str(cache_dir)
        if (problem := parts_folder_problem(store)) is not None:  # one warning, not one a file
            result.stats.insert(0, folder_note(store, problem))
            store = None
    workers = extract_workers(jobs, len(todo), result.bytes)
    done = _extract_parallel(result, todo, workers, settings, store) if workers > 1 else 0
    for path in todo[done:]:
        _add(result, file_rows(path, store))
    return result


def parquet_export_rows(paths: list[str], enough: int) -> int:
    """The requests of the Parquet usage exports among `paths`, by their footers, counted until more than
    `enough` (pyarrow is imported only when there is such a file, which its read would import anyway)."""
    total = 0
    for path in paths:
        if path.endswith(".parquet") and not is_run_report_name(os.path.basename(path)):
            from batchcompact.report.export import parquet_export_rows as rows_of

            total += rows_of(path)
            if total > enough:
                break
    return total


def writes_parts(cache_dir: str | Path, found: list[tuple[str, FileKey]]) -> bool:
    """Whether `cache_dir` lacks a usage part for more than half of these files' bytes: reading them all
    (and writing their parts) is then cheaper than the parts path (the first report of an archive). One
    listing of the parts folder, not a stat per file (10,000 files: ~20 ms instead of ~150)."""
    folder = part_file(cache_dir, "").parent
    try:
        present = set(os.listdir(folder))
    except OSError:  # no parts folder yet
        return True
    total = sum(key.size for _, key in found)
    missing = sum(key.size for _, key in found if part_name(key.path) not in present)
    return missing * 2 > total


def _add(result: Collected, outcome: tuple[list[tuple], dict, frozenset | None]) -> None:
    if result.on_rows is not None:
        result.on_rows(outcome[0], outcome[2])
    else:
        result.rows.extend(outcome[0])
    result.stats.append(outcome[1])
    result.extracted += not outcome[1].get("unread")  # parsed: a file the report could not read is not


def _extract_parallel(result: Collected, todo: list[str], workers: int, settings: ReportSettings | None = None,
                      cache_dir: str | None = None) -> int:
    """`collect._extract_parallel` for rows: returns how many files finished (the rest go serial).
    With `settings` each worker prices its rows (`_start_worker`); with `cache_dir` it writes their parts."""
    priced = settings is not None
    # This process only unpickles the workers' rows and keeps every one until the report: rows hold no
    # cycles, and a collection would scan the growing list again and again for nothing (~0.7 µs a row).
    # The forked workers switch the collector back on for themselves (`lifecycle._Child.fork`).
    with paused_gc():
        return map_in_processes(file_rows, todo, workers, lambda outcome: _add(result, outcome),
                                more=([cache_dir] * len(todo),), initializer=_start_worker if priced else None,
                                initargs=(settings,) if priced else ())
