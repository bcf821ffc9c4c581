"""One consolidated usage table per set of source files, so a warm report reads one file, not thousands.

Per-file parts (part_cache.py) make a changed file cheap to redo, but opening ten thousand small Parquet
files costs seconds each time they are scanned. After a collection of at least SNAPSHOT_MIN_FILES
files, their rows are written once more as one snapshot, next to an index of every file's key
(path, size, mtime_ns) and stats. The next report over the same files, unchanged, stats them, finds
every key equal, verifies the snapshot against its checksum (the same rule as the parts) and reads it
alone. Any difference (a file added, removed or changed; rules or schema versions; a damaged snapshot)
falls back to the per-file parts, which then write a new snapshot.

Files: `<cache>/usage-v<version>/snapshots/<sha1 of the sorted paths>.parquet` and `.index.json`.
"""

from __future__ import annotations

import hashlib
import json
import logging
import os
import tempfile
from pathlib import Path

from batchcompact.adapters.common.usage_rows import USAGE_SCHEMA_VERSION
from batchcompact.report.files import EXTRACT_RULES_VERSION, FileKey
from batchcompact.report.part_cache import _sha256

log = logging.getLogger(__name__)

SNAPSHOT_MIN_FILES = 50


def snapshot_files(root: Path, keys: list[FileKey]) -> tuple[Path, Path]:
    digest = hashlib.sha1("\n".join(sorted(k.path for k in keys)).encode("utf-8", "surrogateescape")).hexdigest()
    folder = root / f"usage-v{USAGE_SCHEMA_VERSION}" / "snapshots"
    return folder / f"{digest}.parquet", folder / f"{digest}.index.json"


def _fingerprint(keys: list[FileKey]) -> dict[str, list[int]]:
    return {k.path: [k.size, k.mtime_ns] for k in keys}


def load_snapshot(root: Path, keys: list[FileKey]) -> tuple[str, list[dict]] | None:
    """(snapshot path, per-file stats) when the snapshot matches every key exactly; else None."""
    table, index_path = snapshot_files(root, keys)
    try:
        with open(index_path, "rb") as fh:
            from batchcompact.formats.jsonl import loads_line

            index = loads_line(fh.read())
        if (
            index.get("version") != USAGE_SCHEMA_VERSION
            or index.get("rules") != EXTRACT_RULES_VERSION
            or index.get("keys") != _fingerprint(keys)
        ):
            return None
        digest, size = _sha256(table)
        if digest != index.get("sha256") or size != index.get("bytes"):
            log.debug("snapshot %s does not match its index: rebuilt", table)
            return None
    except (OSError, ValueError, AttributeError):
        return None
    return str(table), index.get("stats") or []


def write_snapshot(root: Path, keys: list[FileKey], parts: list[str], stats: list[dict]) -> str | None:
    """Write the snapshot of `parts` for `keys`; returns its path, or None when it could not be written."""
    table, index_path = snapshot_files(root, keys)
    try:
        import polars as pl

        table.parent.mkdir(parents=True, exist_ok=True)
        frame = pl.scan_parquet(parts).collect()
        fd, tmp = tempfile.mkstemp(dir=table.parent, prefix=".snap-", suffix=".parquet")
        os.close(fd)
        try:
            frame.write_parquet(tmp, compression="lz4")
            digest, size = _sha256(Path(tmp))
            index = {
                "version": USAGE_SCHEMA_VERSION,
                "rules": EXTRACT_RULES_VERSION,
                "sha256": digest,
                "bytes": size,
                "rows": frame.height,
                "keys": _fingerprint(keys),
                "stats": stats,
            }
            fd, tmp_index = tempfile.mkstemp(dir=table.parent, prefix=".snap-", suffix=".json")
            with os.fdopen(fd, "w", encoding="utf-8") as fh:
                json.dump(index, fh)
            os.replace(tmp, table)  # the table first: a crash in between leaves an index that does not match
            os.replace(tmp_index, index_path)
        finally:
            Path(tmp).unlink(missing_ok=True)
    except Exception as exc:  # a snapshot is an optimisation: the parts still hold everything
        log.debug("usage snapshot not written: %s", exc)
        return None
    return str(table)
