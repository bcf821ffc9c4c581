"""The per-request usage export (`report --by request`) and reading exports back as report inputs.

An export row is one model request after the dedupe: its identity (`request_id`, the key the dedupe uses:
the reader's `dedupe_key`, else `usage_rows.row_identity`), the machine it was recorded on, and everything the
report counts. Written as Parquet (this schema, `batchcompact_table` = `usage-export` and the version in
the file's metadata), JSON lines and CSV (the columns in this order, `export_version` first); every row
also carries `export_version`, so each format says what it is: `report` recognises an export by that,
never by its name (`detect`), and reads its rows back with their `request_id` as the dedupe key, so a
request in two exports, or in an export and the transcripts it came from, counts once.

The schema's JSON form is `schemas/usage-export-v2.schema.json` (version 1: `-v1`). Columns are added,
never repurposed; a change bumps `EXPORT_SCHEMA_VERSION`, and a file of a newer version than this one
reads is an error naming both (`NewerExportError`): its rows may mean something this version cannot count.

Version 2 adds `export_rows`, the number of rows the export was written with, on every row: a JSON-lines
or CSV export cut short (a half-synced file) is told from a whole one by its rows, not only by a torn
last line, and says how many rows it lost (`Cut`). A cut export is named in a warning, its rows so far
counted, and `stats.incomplete` set: the report exits 1, incomplete (docs/cli.md). A Parquet file cannot
be read cut: that is said, and incomplete, too.
"""

from __future__ import annotations

import csv
import io
import json
import math
import struct
from collections.abc import Iterable, Iterator
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import IO, TYPE_CHECKING

from batchcompact.adapters.common.usage_rows import TOKEN_FIELDS
from batchcompact.core.times import iso_time
from batchcompact.errors import BatchCompactError, UsageError

if TYPE_CHECKING:
    import polars as pl
    import pyarrow as pa

    from batchcompact.adapters.common.lines import ExtractStats
    from batchcompact.adapters.common.usage_rows import UsageRows
    from batchcompact.core.jsontypes import JsonObject, JsonValue
    from batchcompact.report.settings import ReportSettings

EXPORT_SCHEMA_VERSION = 2  # 2: + export_rows
EXPORT_TABLE = "usage-export"
MARKER = b"batchcompact.usage_export_version"  # the Parquet metadata key (found in the footer's bytes)

# (column, type, nullable), in the order every format writes them.
FIELDS: tuple[tuple[str, str, bool], ...] = (
    ("export_version", "int64", False),
    ("request_id", "string", False),
    ("machine", "string", False),
    ("machine_id", "string", False),
    ("agent", "string", False),
    ("source", "string", False),
    ("session_id", "string", True),
    ("project", "string", True),
    ("branch", "string", True),
    ("provider", "string", True),
    ("model", "string", True),
    ("kind", "string", False),
    ("timestamp", "timestamp", True),
    *TOKEN_FIELDS,
    ("recorded_cost_usd", "float64", True),
    ("cost_usd", "float64", True),
    ("dedupe_rank", "int64", False),
    ("export_rows", "int64", True),  # version 2: the rows the export was written with (null in version 1)
)
COLUMNS = tuple(name for name, _, _ in FIELDS)
TYPES = {name: kind for name, kind, _ in FIELDS}
REQUIRED = tuple(name for name, _, nullable in FIELDS if not nullable)
FORMATS = ("jsonl", "csv", "parquet")
CSV_HEAD = ",".join(COLUMNS[:2]).encode()  # a CSV export's first line starts so


class NewerExportError(UsageError):
    """An export written by a newer batchcompact, whose schema this one does not know: the report stops
    (`fatal`), since it would be wrong without that machine's requests."""

    fatal = True


class ExportUnreadable(BatchCompactError):
    """A whole export file that cannot be read: the report names it and goes on without it. `incomplete`:
    the file is an export cut short (a Parquet file without its footer), so the report lacks its rows."""

    def __init__(self, message: str, *, incomplete: bool = False) -> None:
        super().__init__(message)
        self.incomplete = incomplete


def export_schema() -> pa.Schema:
    """The Parquet schema (pyarrow imported here)."""
    import pyarrow as pa

    types = {"string": pa.string(), "int64": pa.int64(), "float64": pa.float64(),
             "timestamp": pa.timestamp("us", tz="UTC")}
    return pa.schema([pa.field(name, types[kind], nullable=nullable) for name, kind, nullable in FIELDS],
                     metadata={"batchcompact_table": EXPORT_TABLE, MARKER.decode(): str(EXPORT_SCHEMA_VERSION)})


# ---- writing ----

def export_frame(lf: pl.LazyFrame, settings: ReportSettings) -> pl.DataFrame:
    """The requests of a report's counted rows (polars), in a stable order: time, then identity."""
    import polars as pl

    return (lf.select(
        pl.lit(EXPORT_SCHEMA_VERSION, dtype=pl.Int64).alias("export_version"),
        pl.col("dedupe_key").alias("request_id"),
        *[pl.col(c) for c in COLUMNS[2:] if c not in ("project", "session_id", "export_rows")],
        pl.col("project"), pl.col("session_id"),
        pl.lit(None, dtype=pl.Int64).alias("export_rows"),
    ).select(COLUMNS).sort(["timestamp", "request_id"], nulls_last=True).collect()
     .with_columns(pl.len().cast(pl.Int64).alias("export_rows")))


def write_export(frame: pl.DataFrame, fmt: str, output: str | Path | None) -> str | None:
    """The export in `fmt`; its text when there is no output file (JSON lines and CSV)."""
    if fmt not in FORMATS:
        raise UsageError(f"--by request writes {', '.join(FORMATS)}, not {fmt} (pick one with --format)")
    if fmt == "parquet":
        if not output:
            raise UsageError("--format parquet needs --output FILE")
        import pyarrow.parquet as pq

        from batchcompact.outfile import replacing

        table = frame.to_arrow().cast(export_schema())
        with replacing(output) as where, open(where, "wb") as sink:  # not the path: pyarrow removes a path
            pq.write_table(table, sink)  # it failed to write, and `where` may be a device (/dev/full)
        return None
    records = frame.to_dicts()
    if fmt == "jsonl":
        text = "".join(json.dumps({k: _plain(v) for k, v in r.items()}, separators=(",", ":"),
                                  allow_nan=False) + "\n" for r in records)
    else:
        buffer = io.StringIO()
        writer = csv.writer(buffer, lineterminator="\n")
        writer.writerow(COLUMNS)
        for r in records:
            writer.writerow(["" if r[c] is None else _cell(r[c]) for c in COLUMNS])
        text = buffer.getvalue()
    if output:
        from batchcompact.outfile import write_text

        write_text(output, text)
        return None
    return text


def _plain(value: JsonValue) -> JsonValue:
    """A value as JSON holds it: a time in ISO 8601 UTC, a cost that is not a finite number null."""
    if isinstance(value, datetime):
        return iso_time(value)
    if isinstance(value, float) and not math.isfinite(value):
        return None
    return value


def _cell(value: JsonValue) -> str:
    """A CSV cell: floats as their shortest repr (read back exactly)."""
    value = _plain(value)
    return "" if value is None else repr(value) if isinstance(value, float) else str(value)


# ---- recognising ----

def detect(path: str | Path) -> str | None:
    """`usage-export` when the file is an export by its content: a Parquet file whose footer holds the
    export's metadata key (a Parquet file whose footer cannot be read, a truncated one, too: reading it
    says so), a CSV whose header starts with the export's columns, JSON lines whose first object has
    `export_version` and `request_id`; else None."""
    name = str(path)
    try:
        with open(path, "rb") as fh:
            if name.endswith(".parquet"):
                return EXPORT_TABLE if _parquet_marked(fh) in (True, None) else None
            head = fh.read(4096)
    except OSError:
        return None
    first = head.split(b"\n", 1)[0].strip()
    if first.startswith(CSV_HEAD + b","):
        return EXPORT_TABLE
    if first.startswith(b"{") and b'"export_version"' in first:
        try:
            obj = json.loads(first)
        except ValueError:
            return None
        if isinstance(obj, dict) and "request_id" in obj and "export_version" in obj:
            return EXPORT_TABLE
    return None


def _parquet_marked(fh: IO[bytes]) -> bool | None:
    """Whether a Parquet file's footer holds the export's metadata key; None when it has no readable footer."""
    try:
        fh.seek(-8, 2)
        tail = fh.read(8)
        if len(tail) != 8 or tail[4:] != b"PAR1":
            return None
        (length,) = struct.unpack("<i", tail[:4])
        fh.seek(-8 - length, 2)
        return MARKER in fh.read(length)
    except (OSError, ValueError, struct.error):
        return None


def parquet_export_rows(path: str | Path) -> int:
    """The rows of a Parquet usage export by its footer; 0 for any other file or one whose footer cannot be read."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    try:
        with open(path, "rb") as fh:
            if not _parquet_marked(fh):
                return 0
        return pq.read_metadata(path).num_rows
    except (OSError, pa.ArrowException):
        return 0


def is_export_name(name: str) -> bool:
    """A file a folder walk looks into for an export (by content, `detect`): Parquet or CSV."""
    return name.endswith((".parquet", ".csv"))


# ---- machines ----

def machine_warnings(stats: list[dict], settings: ReportSettings) -> list[str]:
    """One warning for each machine name that two machines use (two ids): their requests are reported
    under one name. The exports name their machines (`ExtractStats.machines`); the files of this machine's
    own agents are `settings.machine`."""
    ids: dict[str, dict[str, str]] = {}  # name -> id -> where first seen
    for stat in stats:
        machines = stat.get("machines") or {}
        if stat.get("format") == EXPORT_TABLE:
            for name, found in machines.items():
                for machine_id in found:
                    ids.setdefault(name, {}).setdefault(machine_id, stat["path"])
        elif stat.get("rows"):
            ids.setdefault(settings.machine, {}).setdefault(settings.machine_id, "this machine's own files")
    out = []
    for name, seen in sorted(ids.items()):
        if len(seen) > 1:
            where = "; ".join(f"id {machine_id} in {place}" for machine_id, place in sorted(seen.items()))
            out.append(f"two machines are named {name!r} ({where}): their requests are reported together; "
                       f"give each its own name with --machine (or `machine` in the config file)")
    return out


# ---- reading back ----

def extract_export(path: str | Path, rows: UsageRows, stats: ExtractStats) -> None:
    """An export's rows as usage rows: `request_id` as the dedupe key, the machine kept; the machines it
    names go into `stats.machines` (name -> ids) for the duplicate-name check."""
    path = Path(path)
    name = str(path)
    if name.endswith(".parquet"):
        table = _parquet_table(path)
        if _add_clean_table(table, name, rows, stats):
            return
        records = _parquet_records(table)
    elif name.endswith(".csv"):
        records = _csv_records(path, stats)
    else:
        records = _jsonl_records(path, stats)
    machines: dict[str, set[str]] = {}
    cut = Cut()
    for line, record in records:
        cut.saw(record)  # (a row present but bad is named below, not lost)
        version = record.get("export_version")
        if isinstance(version, int) and version > EXPORT_SCHEMA_VERSION:
            raise NewerExportError(
                f"{path}: a usage export of schema version {version}; this batchcompact reads version "
                f"{EXPORT_SCHEMA_VERSION} and older: upgrade batchcompact here to read it")
        problem = _check(record)
        if problem:
            stats.warn(line, f"not a usage export row: {problem}; skipped")
            stats.malformed += 1
            continue
        machines.setdefault(record["machine"], set()).add(record["machine_id"])
        rows.add(
            source=record["source"], agent=record["agent"], file=name, line=line,
            session_id=record.get("session_id"), project=record.get("project"),
            timestamp=record.get("timestamp"), provider=record.get("provider"), model=record.get("model"),
            kind=record["kind"], input_tokens=record["input_tokens"], output_tokens=record["output_tokens"],
            cache_read_tokens=record["cache_read_tokens"], cache_write_tokens=record["cache_write_tokens"],
            cache_write_1h_tokens=record["cache_write_1h_tokens"], reasoning_tokens=record["reasoning_tokens"],
            recorded_cost_usd=record.get("recorded_cost_usd"), dedupe_key=record["request_id"],
            dedupe_rank=record["dedupe_rank"], branch=record.get("branch"), machine=record["machine"],
            machine_id=record["machine_id"],
        )
    stats.machines = {machine: sorted(ids) for machine, ids in sorted(machines.items())}
    if not name.endswith(".parquet"):
        cut.check(path, stats)


class Cut:
    """Whether a JSON-lines or CSV export was cut short: its last line torn (no line end), or fewer rows
    read than the `export_rows` every row of a version-2 export carries. Said in one warning naming the
    file, with the rows lost where the export says how many it had; `stats.incomplete` set."""

    def __init__(self) -> None:
        self.read = 0  # rows present (a row whose values are wrong too: it is named on its own)
        self.expected: set[int] = set()  # the export_rows values seen (one, in an export as written)

    def saw(self, record: dict) -> None:
        self.read += 1
        rows = record.get("export_rows")
        if type(rows) is int and rows >= 0:
            self.expected.add(rows)
        elif isinstance(rows, str) and rows.isdigit():
            self.expected.add(int(rows))

    def check(self, path: Path, stats: ExtractStats) -> None:
        torn = _torn(path)
        expected = next(iter(self.expected)) if len(self.expected) == 1 else None
        short = expected is not None and self.read < expected
        if not (torn or short):
            return
        stats.incomplete = 1
        how = "it ends mid-line" if torn else "it ends early"
        if expected is not None:
            lost = expected - self.read
            what = f"{lost:,} of its {expected:,} rows are missing ({how})"
        else:
            what = f"{how}; how many rows it lost is not known (an export of version 1 does not say)"
        stats.warn(None, f"a usage export cut short (half-synced?): {what}; the report is incomplete")


def _check(record: dict) -> str | None:
    """What is wrong with a record read back (types already converted), or None."""
    for name in REQUIRED:
        if record.get(name) is None:
            return f"no {name}"
    for name, kind in TYPES.items():
        value = record.get(name)
        if value is None:
            continue
        if kind == "int64" and (type(value) is not int or (name != "export_version" and value < 0)):
            return f"{name} is not a count"
        if kind == "string" and not isinstance(value, str):
            return f"{name} is not text"
        if kind == "float64" and not isinstance(value, float):
            return f"{name} is not a number"
        if kind == "timestamp" and not isinstance(value, datetime):
            return f"{name} is not a time"
    total = sum(record[n] for n in ("input_tokens", "output_tokens", "cache_read_tokens", "cache_write_tokens"))
    if total != record["total_tokens"]:
        return "total_tokens is not input + output + cache read + cache write"
    return None


def _clean(kinds: dict[str, str | None], nulls: dict[str, int], low: dict, high: dict, totals_match: bool,
           costs_ok: bool) -> bool:
    """Whether every row of a Parquet export passes `_check` and needs none of `extract_rows`' fixes, from a
    summary of its columns (pyarrow's, `_is_clean`, or polars', `direct_part`; the one decision for both):
    `kinds` each present column's type (our name; None: another), `nulls` each column's nulls, `low`/`high`
    each count column's least and greatest value (None: no value), whether `total_tokens` is the sum in every
    row (`totals_match`) and every recorded cost a finite number under MAX_RECORDED_USD (`costs_ok`)."""
    from batchcompact.adapters.common.usage_rows import COUNT_FIELDS, MAX_REQUEST_TOKENS

    if any(kinds[field] != TYPES[field] for field in kinds):
        return False
    if any(nulls.get(field) for field in REQUIRED):
        return False
    for field, least in low.items():
        if least is None:
            continue
        if field == "export_version":
            if high[field] > EXPORT_SCHEMA_VERSION:
                return False
        elif least < 0 or (field in COUNT_FIELDS and high[field] > MAX_REQUEST_TOKENS):
            return False
    return totals_match and costs_ok


def _is_clean(table: pa.Table) -> bool:
    """`_clean` of a Parquet export's table (pyarrow: checked column by column)."""
    import pyarrow as pa
    import pyarrow.compute as pc

    from batchcompact.adapters.common.usage_rows import MAX_RECORDED_USD

    types = {pa.string(): "string", pa.int64(): "int64", pa.float64(): "float64",
             pa.timestamp("us", tz="UTC"): "timestamp"}
    present = [field for field in TYPES if field in set(table.column_names)]
    kinds = {field: types.get(table.column(field).type) for field in present}
    if any(kinds[field] != TYPES[field] for field in present):
        return False
    nulls = {field: table.column(field).null_count for field in present}
    low, high = {}, {}
    for field in present:
        if TYPES[field] == "int64":
            low[field], high[field] = (v.as_py() for v in pc.min_max(table.column(field)).values())
    try:
        total = table.column("input_tokens")
        for field in ("output_tokens", "cache_read_tokens", "cache_write_tokens"):
            total = pc.add_checked(total, table.column(field))
        totals_match = pc.all(pc.equal(total, table.column("total_tokens"))).as_py() or not len(total)
    except pa.ArrowInvalid:  # an overflow: Python's sum would not; `_check` names the row
        totals_match = False
    costs_ok = True
    if "recorded_cost_usd" in present:
        costs = table.column("recorded_cost_usd")
        costs_ok = costs.null_count == len(costs) or pc.all(
            pc.and_(pc.is_finite(costs), pc.less(pc.abs(costs), MAX_RECORDED_USD))).as_py()
    return _clean(kinds, nulls, low, high, totals_match, costs_ok)


def _add_clean_table(table: pa.Table, name: str, rows: UsageRows, stats: ExtractStats) -> bool:
    """A Parquet export every row of which `_check` would pass, added column by column (a team's year is a
    million rows: one dict per row and its checks took most of a cold report); False, adding nothing,
    when any row might not pass: the rows are then read one by one, each bad one named."""
    import pyarrow as pa

    if not _is_clean(table):
        return False
    names = set(table.column_names)

    def values(field: str) -> list:
        return table.column(field).to_pylist() if field in names else [None] * table.num_rows

    count = table.num_rows
    sources, agents = values("source"), values("agent")
    machines, machine_ids = values("machine"), values("machine_id")
    stamps: list = [None] * count
    if "timestamp" in names:  # from microseconds: pyarrow's own datetimes are five times slower to make
        epoch, micros = datetime(1970, 1, 1, tzinfo=UTC), timedelta
        stamps = [None if at is None else epoch + micros(microseconds=at)
                  for at in table.column("timestamp").cast(pa.int64()).to_pylist()]
    rows.rows.extend(zip(
        sources, [agent or source for agent, source in zip(agents, sources, strict=True)], [name] * count,
        range(1, count + 1), values("session_id"), values("project"), stamps, values("provider"),
        values("model"), values("kind"), values("request_id"), values("dedupe_rank"),
        *(values(field) for field, _, _ in TOKEN_FIELDS), values("recorded_cost_usd"), values("branch"),
        machines, machine_ids, strict=True))
    stats.machines = _machines(zip(machines, machine_ids, strict=True))
    return True


def _machines(pairs: Iterable[tuple[str, str]]) -> dict[str, list[str]]:
    """`stats.machines` of an export's (machine, machine_id) pairs: name -> its ids, sorted."""
    seen: dict[str, set[str]] = {}
    for machine, machine_id in set(pairs):
        seen.setdefault(machine, set()).add(machine_id)
    return {machine: sorted(ids) for machine, ids in sorted(seen.items())}


def usage_table(path: str | Path) -> tuple[pa.Table, ExtractStats] | None:
    """A clean Parquet export (`_is_clean`) as the usage table itself, `(table, stats)`, made column by column
    in Arrow with no Python object per row: the rows and stats `extract_rows` gives, as `UsageRows.to_table`
    would store them (a team's year: a million rows, ~0.5 s instead of ~6 s through tuples). None when the file
    is not such an export, cannot be read, or a row would not pass a check of `_check` or of `extract_rows`
    (a cost or count out of range, a file name that is not UTF-8): the caller reads it row by row, which
    names each such row."""
    import pyarrow as pa
    import pyarrow.compute as pc

    from batchcompact.adapters.common.lines import ExtractStats
    from batchcompact.adapters.common.usage_rows import FIELDS as USAGE_FIELDS
    from batchcompact.adapters.common.usage_rows import usage_schema
    from batchcompact.formats.scan import printable

    name = str(Path(path))
    if printable(name) is not name:
        return None
    try:
        table = _parquet_table(Path(path))
    except (BatchCompactError, OSError, pa.ArrowException):
        return None
    if not _is_clean(table):
        return None
    count = table.num_rows
    have = set(table.column_names)

    def column(field: str) -> pa.ChunkedArray:
        return table.column(field) if field in have else pa.nulls(count, pa.string())

    costs = column("recorded_cost_usd") if "recorded_cost_usd" in have else pa.nulls(count, pa.float64())
    source, agent = table.column("source"), table.column("agent")
    made = {
        "source": source, "agent": pc.if_else(pc.equal(agent, ""), source, agent),  # `agent or source`
        "file": pa.repeat(name, count), "line": pa.arange(1, count + 1),
        "timestamp": column("timestamp") if "timestamp" in have else pa.nulls(count, pa.timestamp("us", tz="UTC")),
        "dedupe_key": table.column("request_id"), "recorded_cost_usd": costs,
    }
    schema = usage_schema()
    arrays = [made[field] if field in made else column(field) for field, _, _ in USAGE_FIELDS]
    out = pa.Table.from_arrays(arrays, schema=schema)
    stats = ExtractStats(path=name, format=EXPORT_TABLE, rows=count)
    pairs = table.select(["machine", "machine_id"]).group_by(["machine", "machine_id"]).aggregate([])
    stats.machines = _machines(zip(pairs.column("machine").to_pylist(), pairs.column("machine_id").to_pylist(),
                                   strict=True))
    return out, stats


class ExportPart(str):
    """A clean Parquet usage export that is its own usage part (`direct_part`): polars reads the report's
    columns from it (`scan_export`) where a part written from it would be read. Only for a report that keeps
    no parts (`--no-cache`, an archive under `--cache-above`): nothing is written, nothing read twice."""


def direct_part(path: str | Path) -> tuple[ExportPart, ExtractStats] | None:
    """`(ExportPart, stats)` for a clean Parquet usage export (the decision of `_clean`, from polars' summary of
    its columns) whose rows `extract_rows` would give as they are; None otherwise (the caller extracts it, which
    names each bad row, or says why the file cannot be read)."""
    import polars as pl

    from batchcompact.adapters.common.lines import ExtractStats
    from batchcompact.adapters.common.usage_rows import MAX_RECORDED_USD
    from batchcompact.formats.scan import printable

    name = str(Path(path))
    if not name.endswith(".parquet") or printable(name) is not name or detect(name) != EXPORT_TABLE:
        return None
    types = {pl.String: "string", pl.Int64: "int64", pl.Float64: "float64", pl.Datetime("us", "UTC"): "timestamp"}
    try:
        version = _parquet_version({k.encode(): v.encode() for k, v in pl.read_parquet_metadata(name).items()})
        frame = pl.scan_parquet(name)
        schema = frame.collect_schema()
        if version is None or version > EXPORT_SCHEMA_VERSION or any(c not in schema for c in REQUIRED):
            return None
        kinds = {field: types.get(schema[field]) for field in TYPES if field in schema}
        if any(kinds[field] != TYPES[field] for field in kinds):
            return None
        ints = [field for field in kinds if kinds[field] == "int64"]
        total = pl.sum_horizontal("input_tokens", "output_tokens", "cache_read_tokens", "cache_write_tokens")
        cost = pl.col("recorded_cost_usd") if "recorded_cost_usd" in schema else pl.lit(None, pl.Float64)
        summary = frame.select(
            *[pl.col(field).null_count().alias(f"nulls {field}") for field in kinds],
            *[pl.col(field).min().alias(f"low {field}") for field in ints],
            *[pl.col(field).max().alias(f"high {field}") for field in ints],
            (total == pl.col("total_tokens")).all().alias("totals"),
            (cost.is_null() | (cost.is_finite() & (cost.abs() < MAX_RECORDED_USD))).all().alias("costs"),
            pl.len().alias("rows"),
        ).collect().row(0, named=True)
        if not _clean(kinds, {f: summary[f"nulls {f}"] for f in kinds}, {f: summary[f"low {f}"] for f in ints},
                      {f: summary[f"high {f}"] for f in ints}, summary["totals"], summary["costs"]):
            return None
        pairs = frame.select("machine", "machine_id").unique().collect()
    except (pl.exceptions.PolarsError, OSError):
        return None
    stats = ExtractStats(path=name, format=EXPORT_TABLE, rows=summary["rows"])
    stats.machines = _machines(zip(pairs["machine"].to_list(), pairs["machine_id"].to_list(), strict=True))
    return ExportPart(name), stats


def scan_export(part: ExportPart, columns: tuple[str, ...]) -> pl.LazyFrame:
    """A clean export's rows as a usage part holds them (`usage_table`: `request_id` as the dedupe key, an
    empty agent as its source), the given usage `columns` (polars)."""
    import polars as pl

    from batchcompact.adapters.common.usage_rows import FIELDS as USAGE_FIELDS

    frame = pl.scan_parquet(str(part))
    have = frame.collect_schema()
    types: dict[str, pl.DataType | type[pl.DataType]] = {
        "string": pl.String, "int64": pl.Int64, "float64": pl.Float64, "timestamp": pl.Datetime("us", "UTC")}
    kinds = {name: kind for name, kind, _ in USAGE_FIELDS}
    made = {"agent": pl.when(pl.col("agent") == "").then(pl.col("source")).otherwise(pl.col("agent")),
            "dedupe_key": pl.col("request_id")}
    return frame.select([made[c].alias(c) if c in made else pl.col(c) if c in have
                         else pl.lit(None, types[kinds[c]]).alias(c) for c in columns])


def _parquet_table(path: Path) -> pa.Table:
    """A Parquet export's table; a file pyarrow cannot read is one error naming it."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    try:
        table = pq.read_table(path)
    except (OSError, pa.ArrowException) as exc:
        raise ExportUnreadable(f"not a complete Parquet file ({_first_line(exc)}): skipped; the report is "
                               "incomplete without its rows", incomplete=True) from None
    version = _parquet_version(table.schema.metadata or {})
    if version is not None and version > EXPORT_SCHEMA_VERSION:
        raise NewerExportError(
            f"{path}: a usage export of schema version {version}; this batchcompact reads version "
            f"{EXPORT_SCHEMA_VERSION} and older: upgrade batchcompact here to read it")
    missing = [c for c in REQUIRED if c not in table.column_names]
    if missing:
        raise ExportUnreadable(f"a usage export without the column {missing[0]!r}: skipped")
    return table


def _parquet_records(table: pa.Table) -> Iterator[tuple[int, JsonObject]]:
    """(row number, record) of a Parquet export's table."""
    for number, record in enumerate(table.to_pylist(), start=1):
        when = record.get("timestamp")
        if isinstance(when, datetime):
            record["timestamp"] = when.astimezone(UTC)
        yield number, record


def _torn(path: Path) -> bool:
    """The file's last byte is not a line end (a file cut mid-line)."""
    try:
        with open(path, "rb") as fh:
            fh.seek(0, 2)
            if fh.tell() == 0:
                return False
            fh.seek(-1, 2)
            return fh.read(1) != b"\n"
    except OSError:
        return False


def _parquet_version(metadata: dict) -> int | None:
    raw = metadata.get(MARKER)
    try:
        return int(raw) if raw is not None else None
    except ValueError:
        return None


def _first_line(exc: BaseException) -> str:
    return (str(exc).strip().splitlines() or [type(exc).__name__])[0]


def _jsonl_records(path: Path, stats: ExtractStats) -> Iterator[tuple[int, JsonObject]]:
    from batchcompact.adapters.common.lines import iter_json_lines

    for number, obj in iter_json_lines(path, stats):
        if not isinstance(obj, dict):
            stats.warn(number, "not a usage export row: not an object; skipped")
            continue
        yield number, _typed(obj, number, stats)


def _csv_records(path: Path, stats: ExtractStats) -> Iterator[tuple[int, JsonObject]]:
    with open(path, encoding="utf-8", newline="") as fh:
        reader = csv.reader(fh)
        header = next(reader, None) or []
        for number, cells in enumerate(reader, start=2):
            if len(cells) != len(header):
                stats.warn(number, f"not a usage export row: {len(cells)} cells, the header has {len(header)}; skipped")
                stats.malformed += 1
                continue
            record: JsonObject = {}
            for name, cell in zip(header, cells, strict=True):
                record[name] = None if cell == "" else cell
            yield number, _typed(record, number, stats, text=True)


def _typed(record: JsonObject, line: int, stats: ExtractStats, text: bool = False) -> JsonObject:
    """A JSON or CSV record with its values as the Parquet columns hold them (a bad value: left as it is,
    `_check` names it)."""
    for name, kind in TYPES.items():
        value = record.get(name)
        if value is None:
            continue
        try:
            if kind == "int64" and text:
                record[name] = int(value)
            elif kind == "float64" and (text or type(value) is int):
                record[name] = float(value)
            elif kind == "timestamp" and isinstance(value, str):
                record[name] = datetime.fromisoformat(value.replace("Z", "+00:00")).astimezone(UTC)
        except ValueError:
            pass
    return record
