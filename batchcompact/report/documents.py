"""Whole-document and SQLite sources for usage extraction: one JSON file, or one database read-only.

Some agents keep usage in a JSON document rewritten as the session grows (Amp threads, Droid
`*.settings.json`, Codebuff `chat-messages.json`) or in a SQLite database (Goose, Hermes). These helpers
read them the way `lines.iter_json_lines` reads JSONL: bad content is a warning naming the file, never
an exception, and a database is opened read-only so a running agent is never disturbed.
"""

from __future__ import annotations

import json
import sqlite3
from collections.abc import Iterator
from contextlib import closing
from pathlib import Path
from typing import Any

from batchcompact.report.lines import ExtractStats

MAX_DOCUMENT_BYTES = 512 << 20  # a usage document larger than this is not a session file


def read_json_document(path: str | Path, stats: ExtractStats) -> Any | None:
    """The parsed JSON value of `path`, or None (with a warning) when it is unreadable or invalid."""
    path = Path(path)
    size = path.stat().st_size
    if size > MAX_DOCUMENT_BYTES:
        stats.warn(None, f"{size} bytes is too large for a usage document; not read")
        return None
    raw = path.read_bytes()
    stats.lines += 1
    try:
        value = json.loads(raw)
    except UnicodeDecodeError:
        stats.malformed += 1
        stats.warn(None, "invalid UTF-8; file skipped")
        return None
    except ValueError as exc:
        stats.malformed += 1
        stats.warn(None, f"invalid JSON: {getattr(exc, 'msg', exc)}; file skipped")
        return None
    stats.parsed += 1
    return value


def query_sqlite(path: str | Path, sql: str, stats: ExtractStats) -> Iterator[sqlite3.Row]:
    """Rows of `sql` from the database at `path`, opened read-only; a warning (no rows) when it fails."""
    uri = Path(path).resolve().as_uri() + "?mode=ro"
    try:
        with closing(sqlite3.connect(uri, uri=True, timeout=5)) as db:
            db.row_factory = sqlite3.Row
            rows = db.execute(sql).fetchall()
    except sqlite3.Error as exc:
        stats.warn(None, f"cannot read the database: {exc}")
        return
    yield from rows


def table_columns(path: str | Path, table: str, stats: ExtractStats) -> set[str]:
    """The column names of `table` (empty when the table or the database is missing)."""
    return {row["name"] for row in query_sqlite(path, f"PRAGMA table_info({table})", stats)}


def first_str(obj: dict, *keys: str) -> str | None:
    """The first of `keys` whose value in `obj` is a non-empty string (stripped)."""
    for key in keys:
        value = obj.get(key)
        if isinstance(value, str) and value.strip():
            return value.strip()
    return None
