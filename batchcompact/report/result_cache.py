"""Finished reports kept for an unchanged archive: the warm path that imports neither polars nor pyarrow.

A report's output depends only on the files it covers (their `FileKey`s: resolved path, size,
mtime_ns), the extraction rules and schema, the aggregation rules (`RESULT_RULES_VERSION`), the prices, the report settings, the output format and
the program version. After a full report, its rendered output (and the lines it wrote to stderr) is
stored under a hash of all of these. The next report with the same inputs stats every file, finds the
same hash, checks the stored bytes against their SHA-256 and prints them: no file is parsed, no table
is read, no aggregation runs. Any difference (a file added, removed or touched; another option; new
prices or rules) is another hash, and the full path runs.

Reports that depend on the clock (`--by block`: the active block) are never stored; `--last N` is
keyed by today's date in the report's time zone.

Files: `<cache>/usage-v<version>/results/<sha256>.json` (a header line with the payload's SHA-256 and
size, then the payload); written atomically, the oldest removed beyond `KEEP` files.
"""

from __future__ import annotations

import hashlib
import json
import logging
import os
import tempfile
import time
from collections.abc import Sequence
from dataclasses import asdict
from datetime import date, datetime
from pathlib import Path

from batchcompact.adapters.common.usage_rows import USAGE_SCHEMA_VERSION
from batchcompact.core.jsontypes import JsonObject, JsonValue
from batchcompact.report.files import EXTRACT_RULES_VERSION, FileKey, iter_keys
from batchcompact.report.settings import ReportSettings

log = logging.getLogger(__name__)

KEEP = 200  # stored results kept (each a few KB); the least recently written go first
FORMATS = ("table", "json", "csv")  # outputs stored as text (parquet and jsonl take the full path)
# What aggregation and rendering make of the rows: bump it whenever either changes what a report prints,
# so a result stored by the earlier code is not replayed (2: costs summed as exact picodollars; 3: CSV
# times end +00:00 as JSON's do, counts of one in the singular; 4: a request naming no model is
# "(unknown model)", --breakdown keeps a group's rows together).
RESULT_RULES_VERSION = 5  # 5: --format json in every command's shape (json_rows.py), not indented


def storable(settings: ReportSettings, fmt: str) -> bool:
    """Whether this report's output can be stored and replayed (it does not depend on the clock)."""
    return fmt in FORMATS and settings.by != "block" and settings.now is None


def archive_keys(paths: Sequence[str | Path]) -> list[FileKey] | None:
    """Every file the report would cover, as the full path finds them; None when one cannot be stat'ed
    (the full path reports it)."""
    try:
        return list(iter_keys(paths))
    except OSError:
        return None


def result_key(keys: list[FileKey], settings: ReportSettings, fmt: str, sources: list[dict]) -> str | None:
    """The hash of everything the output depends on; None when it cannot be pinned down (no prices)."""
    from batchcompact import __version__

    prices = _price_identity(settings.pricing_file)
    if prices is None:
        return None
    request = {
        "program": __version__,
        "schema": USAGE_SCHEMA_VERSION,
        "rules": EXTRACT_RULES_VERSION,
        "result_rules": RESULT_RULES_VERSION,
        "prices": prices,
        "settings": {k: _plain(v) for k, v in asdict(settings).items()},
        "today": _today(settings.timezone) if settings.last is not None else None,
        "format": fmt,
        "sources": sources,
    }
    digest = hashlib.sha256(json.dumps(request, sort_keys=True, default=str).encode())
    for key in keys:
        digest.update(f"\n{key.path}\0{key.size}\0{key.mtime_ns}".encode("utf-8", "surrogateescape"))
    return digest.hexdigest()


class ResultCache:
    def __init__(self, cache_dir: str | Path) -> None:
        self.folder = Path(cache_dir) / f"usage-v{USAGE_SCHEMA_VERSION}" / "results"

    def load(self, key: str) -> JsonObject | None:
        """The stored payload for `key`, verified; None when absent or damaged."""
        path = self.folder / f"{key}.json"
        try:
            with open(path, "rb") as fh:
                header, _, body = fh.read().partition(b"\n")
            meta = json.loads(header)
            if meta.get("key") != key or meta.get("bytes") != len(body):
                return None
            if hashlib.sha256(body).hexdigest() != meta.get("sha256"):
                log.debug("stored report %s does not match its checksum: ignored", path)
                return None
            payload = json.loads(body)
        except (OSError, ValueError, AttributeError):
            return None
        return payload if isinstance(payload, dict) else None

    def store(self, key: str, payload: JsonObject) -> None:
        """Keep `payload` for `key` (never fails the report: a result is only an optimisation)."""
        body = json.dumps(payload, ensure_ascii=False).encode("utf-8")
        header = json.dumps({"key": key, "sha256": hashlib.sha256(body).hexdigest(), "bytes": len(body)})
        tmp = None
        try:
            self.folder.mkdir(parents=True, exist_ok=True)
            fd, tmp = tempfile.mkstemp(dir=self.folder, prefix=".result-", suffix=".json")
            with os.fdopen(fd, "wb") as fh:
                fh.write(header.encode() + b"\n" + body)
            os.replace(tmp, self.folder / f"{key}.json")
            tmp = None
            self._prune()
        except OSError as exc:
            log.debug("report result not stored: %s", exc)
        finally:
            if tmp is not None:
                Path(tmp).unlink(missing_ok=True)

    def _prune(self) -> None:
        stored = sorted(self.folder.glob("*.json"), key=lambda p: p.stat().st_mtime_ns)
        for old in stored[: max(0, len(stored) - KEEP)]:
            old.unlink(missing_ok=True)


def _price_identity(pricing_file: str | None) -> list | None:
    """Which price maps a report used: litellm's bundled one and --pricing, by path, size and mtime."""
    from batchcompact.errors import UsageError
    from batchcompact.pricing import bundled_map_path

    try:
        files = [bundled_map_path()] + ([Path(pricing_file)] if pricing_file else [])
        return [[str(p.resolve()), p.stat().st_size, p.stat().st_mtime_ns] for p in files]
    except (OSError, UsageError):
        return None


def _today(timezone: str) -> str | None:
    from zoneinfo import ZoneInfo

    try:
        return datetime.now(ZoneInfo(timezone)).date().isoformat()
    except (ValueError, KeyError):
        return str(time.time())  # unknown zone: never the same key twice (the full path reports it)


def _plain(value: object) -> JsonValue:
    if isinstance(value, (date, datetime)):
        return value.isoformat()
    if isinstance(value, tuple):
        return list(value)
    return value
