"""Sources that are not JSONL: one JSON document per file, and SQLite databases (read-only).

Both follow the readers' contract: bad content is a warning naming the file (a database row: its table
and rowid), never an exception. A database is opened read-only through a URI, so reading never writes
it (a live agent may be writing it; SQLite's own locking makes the read consistent, and rows committed
to the WAL file are seen).
"""

from __future__ import annotations

import json
import sqlite3
from collections.abc import Iterator
from contextlib import closing
from pathlib import Path
from typing import TYPE_CHECKING
from urllib.parse import quote

from batchcompact.adapters.common.lines import ExtractStats, note_surrogates

if TYPE_CHECKING:
    from batchcompact.core.jsontypes import JsonValue

MAX_DOCUMENT_BYTES = 512 << 20  # a JSON document larger than this is not one of an agent's session files


def read_json(path: str | Path, stats: ExtractStats) -> JsonValue:
    """The parsed document, or None (with a warning) when it is not JSON."""
    path = Path(path)
    size = path.stat().st_size
    if size > MAX_DOCUMENT_BYTES:
        stats.warn(None, f"{size} bytes: too large for a session document; not read")
        return None
    raw = path.read_bytes()
    stats.lines += raw.count(b"\n") + 1
    try:
        doc = json.loads(raw)
        note_surrogates(raw, stats)
    except UnicodeDecodeError:
        stats.malformed += 1
        stats.warn(None, "invalid UTF-8; file skipped")
        return None
    except (ValueError, RecursionError) as exc:
        stats.malformed += 1
        where = f":{exc.lineno}" if isinstance(exc, json.JSONDecodeError) else ""
        reason = getattr(exc, "msg", None) or "nested too deeply"
        stats.warn(None, f"invalid JSON{where}: {reason}; file skipped")
        return None
    stats.parsed += 1
    return doc


def read_object(path: str | Path, stats: ExtractStats) -> dict | None:
    """The session document when it is a JSON object; None when it is not JSON (with `read_json`'s warning)
    or another JSON value (an agent's file of another kind: nothing to count, no warning)."""
    doc = read_json(path, stats)
    return doc if isinstance(doc, dict) else None


def connect(path: str | Path) -> sqlite3.Connection:
    """A read-only connection (sqlite3.Error when it is not a database)."""
    uri = "file:" + quote(str(Path(path).resolve())) + "?mode=ro"
    return sqlite3.connect(uri, uri=True, timeout=10)


def columns(conn: sqlite3.Connection, table: str) -> list[str]:
    """The table's column names; empty when there is no such table."""
    return [row[1] for row in conn.execute(f"PRAGMA table_info({quote_name(table)})")]


def quote_name(name: str) -> str:
    return '"' + name.replace('"', '""') + '"'


def table_rows(path: str | Path, table: str, stats: ExtractStats) -> Iterator[tuple[int, dict]]:
    """(rowid, row as a dict) of every row of `table`, in rowid order; a warning when the table is missing.

    A text cell that is not UTF-8 makes Python's sqlite3 refuse its row, and the rest of the table with
    it: the read goes on after the last row it gave, with such text decoded as U+FFFD (a decoder in Python
    for every cell would cost ~50% of the read, so only a table that needs it pays), and a warning."""
    with closing(connect(path)) as conn:
        names = columns(conn, table)
        if not names:
            stats.warn(None, f"no `{table}` table: not a database this reader knows")
            return
        query = f"SELECT rowid, * FROM {quote_name(table)}"
        last = None
        while True:
            after = "" if last is None else " WHERE rowid > ?"
            try:
                for row in conn.execute(f"{query}{after} ORDER BY rowid", () if last is None else (last,)):
                    last = row[0]
                    stats.lines += 1
                    yield row[0], dict(zip(names, row[1:], strict=False))
                return
            except sqlite3.OperationalError as exc:
                if "decode" not in str(exc) or conn.text_factory is not str:
                    raise
                conn.text_factory = _replacing_text
                where = f"after rowid {last}" if last is not None else "in its first row"
                stats.warn(None, f"`{table}`: text that is not UTF-8 {where}; read with U+FFFD in its place")


def _replacing_text(raw: bytes) -> str:
    return raw.decode("utf-8", "replace")


def json_column(value: JsonValue, stats: ExtractStats, where: str) -> dict | None:
    """A JSON object stored in a text column, or None (with a warning naming `where`)."""
    if isinstance(value, bytes):
        value = value.decode("utf-8", "replace")
    if not isinstance(value, str):
        return None
    try:
        obj = json.loads(value)
        note_surrogates(value, stats)
    except (ValueError, RecursionError):
        stats.malformed += 1
        stats.warn(None, f"{where}: invalid JSON; row skipped")
        return None
    if not isinstance(obj, dict):
        stats.malformed += 1
        stats.warn(None, f"{where}: not a JSON object; row skipped")
        return None
    stats.parsed += 1
    return obj
