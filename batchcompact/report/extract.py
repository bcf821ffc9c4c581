"""Extract one file's usage rows (dispatch by detected format) and the per-file Parquet cache.

Cache invariant: a part file holds exactly the rows extracted from one source file whose
(absolute path, size, mtime_ns) and the usage schema version are stored in the part's Parquet
metadata; a part is reused only when all four match, so a changed file is always re-extracted.
Parts live in `<cache_dir>/usage-v<version>/<sha1 of path>.parquet` and are replaced atomically.
"""

from __future__ import annotations

import hashlib
import json
import os
import tempfile
from dataclasses import dataclass
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq

from batchcompact.errors import BatchCompactError
from batchcompact.report.detect import detect_format
from batchcompact.report.lines import ExtractStats
from batchcompact.report.schema import USAGE_SCHEMA, USAGE_SCHEMA_VERSION, UsageRows

# Bump when what an extractor produces from the same file changes (a cached part made by older rules
# is then a miss): 2 = built-in summarizer rows left out of run reports; 3 = branch summaries split out;
# 4 = summary entries keyed so the session file and the run report count them once; 5 = Claude
# agent_progress sub-agent usage, 1-hour cache writes, the project from `cwd`.
EXTRACT_RULES_VERSION = 5

META_KEY = b"batchcompact.usage_cache"


def default_cache_dir() -> Path:
    base = os.environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache")
    return Path(base) / "batchcompact"


def extract_file(path: str | Path, fmt: str | None = None) -> tuple[pa.Table, ExtractStats]:
    """All usage rows of one file, and what extraction saw. Never raises for bad content."""
    from batchcompact.report.claude import extract_claude
    from batchcompact.report.codex import extract_codex
    from batchcompact.report.pi import extract_pi
    from batchcompact.report.runs import extract_runs

    extractors = {
        "pi": extract_pi,
        "claude": extract_claude,
        "codex": extract_codex,
        "batchcompact": extract_runs,
    }
    stats = ExtractStats(path=str(path))
    rows = UsageRows()
    try:
        fmt = fmt or detect_format(path)
        stats.format = fmt
        if fmt in extractors:
            extractors[fmt](path, rows, stats)
    except BatchCompactError as exc:  # e.g. zstandard missing: say so, keep going
        stats.warn(None, str(exc))
    except OSError as exc:
        stats.warn(None, f"cannot read: {exc.strerror or exc}")
    stats.rows = len(rows)
    return rows.to_table(), stats


@dataclass(frozen=True)
class FileKey:
    path: str
    size: int
    mtime_ns: int

    @classmethod
    def of(cls, path: str | Path) -> FileKey:
        st = os.stat(path)
        return cls(str(Path(path).resolve()), st.st_size, st.st_mtime_ns)


class UsageCache:
    """Per-file Parquet parts keyed by (path, size, mtime). `hits`/`misses` count lookups."""

    def __init__(self, cache_dir: str | Path) -> None:
        self.root = Path(cache_dir) / f"usage-v{USAGE_SCHEMA_VERSION}"
        self.hits = 0
        self.misses = 0

    def part_path(self, key: FileKey) -> Path:
        return self.root / (
            hashlib.sha1(key.path.encode("utf-8", "surrogateescape")).hexdigest() + ".parquet"
        )

    def lookup(self, key: FileKey) -> tuple[Path, ExtractStats] | None:
        """The cached part and its stored stats when the key matches; None otherwise."""
        part = self.part_path(key)
        try:
            meta = pq.read_schema(part).metadata or {}
            stored = json.loads(meta[META_KEY])
        except (OSError, KeyError, ValueError, pa.ArrowInvalid):
            self.misses += 1
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


def write_part(part: Path, table: pa.Table, meta: dict) -> None:
    """Write `table` with our metadata to `part` atomically (temp file + rename)."""
    part.parent.mkdir(parents=True, exist_ok=True)
    if not table.schema.equals(USAGE_SCHEMA, check_metadata=False):
        table = table.cast(USAGE_SCHEMA)
    metadata = {**(USAGE_SCHEMA.metadata or {}), META_KEY: json.dumps(meta).encode()}
    fd, tmp = tempfile.mkstemp(dir=part.parent, prefix=".part-", suffix=".parquet")
    os.close(fd)
    try:
        pq.write_table(table.replace_schema_metadata(metadata), tmp, compression="zstd")
        os.replace(tmp, part)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise


def extract_to_part(path: str, cache_dir: str) -> tuple[str, dict, bool]:
    """Cache-aware extraction of one file (a top-level function so a process pool can run it).

    Returns (part path, stats dict, whether it came from the cache).
    """
    cache = UsageCache(cache_dir)
    key = FileKey.of(path)
    hit = cache.lookup(key)
    if hit is not None:
        return str(hit[0]), hit[1].to_dict(), True
    table, stats = extract_file(path)
    part = cache.store(key, table, stats)
    return str(part), stats.to_dict(), False
