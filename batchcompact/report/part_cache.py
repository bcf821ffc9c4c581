"""One file's usage rows as an Arrow table (`extract_file`; the rows from `extract_rows.py`) and the per-file
Parquet cache.

Cache invariant: a part file holds exactly the rows extracted from one source (a file, or a SQLite
database with its WAL, see `FileKey`) whose
(absolute path, size, mtime_ns) and the usage schema version are stored in the part's Parquet
metadata; a part is reused only when all four match, so a changed file is always re-extracted.
Parts live in `<cache_dir>/usage-v<version>/<sha1 of path>.parquet` and are replaced atomically.

Each part is verified before it is trusted: beside it, `<part>.sum` records the part's byte size,
its SHA-256 and the row count written. A part whose size, hash, footer or row count disagrees (a
torn write, a flipped byte, a copy from elsewhere) is a miss: the source file is parsed again and the
part rewritten, and `UsageCache.rejected` counts it. Under `--no-cache` the cache folder is neither
read nor written.
"""

from __future__ import annotations

import hashlib
import json
import os
import tempfile
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq

from batchcompact.adapters.common.lines import ExtractStats
from batchcompact.adapters.common.usage_rows import USAGE_SCHEMA_VERSION, usage_schema
from batchcompact.report.detect import detect_usage_source
from batchcompact.report.export import EXPORT_TABLE, usage_table
from batchcompact.report.extract_rows import extract_rows
from batchcompact.report.files import EXTRACT_RULES_VERSION, FileKey, part_file

META_KEY = b"batchcompact.usage_cache"


def extract_file(path: str | Path, source: str | None = None) -> tuple[pa.Table, ExtractStats]:
    """All usage rows of one file as an Arrow table, and what extraction saw. Never raises for bad content.
    A clean Parquet usage export becomes the table column by column (`export.usage_table`), never rows."""
    if source in (None, EXPORT_TABLE) and str(path).endswith(".parquet") and detect_usage_source(path) == EXPORT_TABLE:
        read = usage_table(path)
        if read is not None:
            return read
        source = EXPORT_TABLE
    rows, stats = extract_rows(path, source)
    return rows.to_table(), stats


class UsageCache:
    """Per-file Parquet parts keyed by (path, size, mtime). `hits`/`misses` count lookups."""

    def __init__(self, cache_dir: str | Path) -> None:
        self.root = Path(cache_dir) / f"usage-v{USAGE_SCHEMA_VERSION}"
        self.hits = 0
        self.misses = 0
        self.rejected = 0  # parts present but failing verification (rebuilt)

    def part_path(self, key: FileKey) -> Path:
        return part_file(self.root.parent, key.path)

    def lookup(self, key: FileKey) -> tuple[Path, ExtractStats] | None:
        """The cached part and its stored stats when the key matches; None otherwise."""
        part = self.part_path(key)
        if not part.exists():
            self.misses += 1
            return None
        try:
            meta = verified_metadata(part)
            stored = json.loads(meta[META_KEY])
        except (OSError, KeyError, ValueError, pa.ArrowException):
            self.misses += 1
            self.rejected += 1
            return None
        if (
            stored.get("key") != [key.path, key.size, key.mtime_ns]
            or stored.get("version") != USAGE_SCHEMA_VERSION
            or stored.get("rules") != EXTRACT_RULES_VERSION
        ):
            self.misses += 1
            return None
        self.hits += 1
        stats = ExtractStats(path=key.path)
        for name, value in stored.get("stats", {}).items():
            setattr(stats, name, value)
        return part, stats

    def store(self, key: FileKey, table: pa.Table, stats: ExtractStats) -> Path:
        part = self.part_path(key)
        write_part(
            part,
            table,
            {
                "key": [key.path, key.size, key.mtime_ns],
                "version": USAGE_SCHEMA_VERSION,
                "rules": EXTRACT_RULES_VERSION,
                "stats": stats.to_dict(),
            },
        )
        return part


def sum_path(part: Path) -> Path:
    return part.with_name(part.name + ".sum")


def _sha256(path: Path) -> tuple[str, int]:
    digest = hashlib.sha256()
    size = 0
    with open(path, "rb") as fh:
        while chunk := fh.read(1 << 20):
            digest.update(chunk)
            size += len(chunk)
    return digest.hexdigest(), size


def verified_metadata(part: Path) -> dict:
    """The part's key-value metadata, after checking it against its `.sum`; raises ValueError when bad."""
    with open(sum_path(part), encoding="utf-8") as fh:
        expected = json.load(fh)
    if not isinstance(expected, dict):
        raise ValueError("checksum file is not an object")
    if os.stat(part).st_size != expected.get("bytes"):
        raise ValueError("size differs from the checksum file")
    digest, _ = _sha256(part)
    if digest != expected.get("sha256"):
        raise ValueError("content hash differs from the checksum file")
    footer = pq.read_metadata(part)
    if footer.num_rows != expected.get("rows"):
        raise ValueError("row count differs from the checksum file")
    return footer.metadata or {}


def write_part(part: Path, table: pa.Table, meta: dict) -> None:
    """Write `table` with our metadata to `part` atomically (temp file + rename), then its `.sum`.

    The part is renamed into place before its checksum file: a crash in between leaves a part whose
    `.sum` does not match, which the next lookup rejects and rebuilds.
    """
    part.parent.mkdir(parents=True, exist_ok=True)
    if not table.schema.equals(usage_schema(), check_metadata=False):
        table = table.cast(usage_schema())
    metadata = {**(usage_schema().metadata or {}), META_KEY: json.dumps(meta).encode()}
    fd, tmp = tempfile.mkstemp(dir=part.parent, prefix=".part-", suffix=".parquet")
    os.close(fd)
    fd, tmp_sum = tempfile.mkstemp(dir=part.parent, prefix=".part-", suffix=".sum")
    os.close(fd)
    try:
        pq.write_table(table.replace_schema_metadata(metadata), tmp, compression="lz4")
        digest, size = _sha256(Path(tmp))
        Path(tmp_sum).write_text(
            json.dumps({"sha256": digest, "bytes": size, "rows": table.num_rows}), encoding="utf-8"
        )
        os.replace(tmp, part)
        os.replace(tmp_sum, sum_path(part))
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        Path(tmp_sum).unlink(missing_ok=True)
        raise


def extract_to_part(path: str, cache_dir: str, spill_dir: str | None = None) -> tuple[str, dict, bool]:
    """Cache-aware extraction of one file (a top-level function so a process pool can run it).

    Returns (part path, stats dict, whether it came from the cache). A part the cache cannot take (a full
    disk) goes to `spill_dir`, with a warning, when one is given (the caller's temporary folder).
    """
    cache = UsageCache(cache_dir)
    key = FileKey.of(path)
    hit = cache.lookup(key)
    if hit is not None:
        return str(hit[0]), hit[1].to_dict(), True
    table, stats = extract_file(path)
    try:
        part = cache.store(key, table, stats)
    except OSError as exc:
        if spill_dir is None:
            raise
        stats.warn(None, f"usage cache part not written: {exc.strerror or exc}")
        part = UsageCache(spill_dir).store(key, table, stats)
    return str(part), stats.to_dict(), False
