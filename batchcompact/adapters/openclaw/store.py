"""OpenClaw's SQLite transcript store (2026.9+): a session read into the session model, and a compaction
appended the way OpenClaw appends its own events.

Where: `agents/<agent id>/agent/openclaw-agent.sqlite` under OpenClaw's state folder (`~/.openclaw`).
Checked against `openclaw` 2026.9.6 (`PRAGMA user_version` 23, `schema_meta.schema_version` 23; its
`session-accessor.sqlite-transcript-store` module, `appendTranscriptEvent`):

- `transcript_events(session_id, seq, event_json | event_zstd, created_at, event_utf8_bytes,
  navigation_json)`: one row per pi session line, `seq` 0 the `session` header (version 4), then
  `model_change`, `thinking_level_change`, `custom`, `message`, `compaction` (pi's fields, OpenClaw's
  `appendCompaction`), `reset`... in order. `event_zstd` rows are cold-stored events (zstd of the JSON).
- `transcript_event_identities(session_id, event_id, seq, event_type, parent_id, message_idempotency_key,
  created_at)`: every event with an id, one row each (OpenClaw refuses a second event with a known id).
- `session_transcript_index_state` / `session_transcript_active_events`: OpenClaw's projection of the
  active path. Its readers use it only while `needs_rebuild = 0` and `indexed_seq` is the last seq;
  otherwise they read the events and rebuild it. We append without touching the projection and mark it
  `needs_rebuild = 1`, OpenClaw's own way of saying it is stale.
- `session_windows.updated_at` / `transcript_updated_at`: advanced to the new event's time, as an append does.

Writes take SQLite's own write lock (`BEGIN IMMEDIATE`, the busy timeout OpenClaw uses, 5 s), so a live
OpenClaw writer and we never interleave; a database still busy after that fails the session with the
reason and nothing is written (one transaction: the event, its identity and the projection mark commit
together or not at all).
"""

from __future__ import annotations

import hashlib
import json
import os
import sqlite3
import time
from collections.abc import Callable
from pathlib import Path

from batchcompact.adapters.common.database import (
    SEP,
    SessionDatabase,
    begin_immediate,
    session_path,
    write_in_one_transaction,
)
from batchcompact.adapters.common.lines import object_at
from batchcompact.adapters.openclaw.extra import OpenClawStoreExtra
from batchcompact.core.entries import ERROR, Problem
from batchcompact.core.jsontypes import JsonObject
from batchcompact.core.session import Session
from batchcompact.errors import BatchCompactError, SessionReadError

DATABASE = "openclaw-agent.sqlite"
KNOWN_SCHEMA_VERSIONS = frozenset({23})  # PRAGMA user_version of the databases we have read and written
BUSY_TIMEOUT_S = 5.0  # OpenClaw's OPENCLAW_SQLITE_BUSY_TIMEOUT_MS


class StoreBusy(BatchCompactError):
    """The database stayed locked by another writer (a live OpenClaw) past the retries."""


class StoreChanged(BatchCompactError):
    """The session gained events after it was read; nothing was written."""


def split_session_path(path: str | Path) -> tuple[Path, str] | None:
    """(database, session id) of `<db>#<id>`; None for any other path."""
    text = str(path)
    db, sep, session_id = text.rpartition(SEP)
    if not sep or not session_id or not db.endswith(DATABASE):
        return None
    return Path(db), session_id


def connect(db: str | Path, *, write: bool = False) -> sqlite3.Connection:
    """A connection to an existing database (never creates one), its schema version checked.

    Reading opens it read-only; SessionReadError names a corrupt or unknown database in one line."""
    path = Path(db)
    if not path.is_file():
        raise SessionReadError(f"{db}: no such database")
    uri = f"file:{path.resolve()}?mode={'rw' if write else 'ro'}"
    try:
        conn = sqlite3.connect(uri, uri=True, timeout=BUSY_TIMEOUT_S, isolation_level=None)
    except sqlite3.Error as exc:
        raise SessionReadError(f"{db}: cannot open the OpenClaw database: {exc}") from None
    # OpenClaw's CHECK constraints call octet_length() (SQLite 3.43); older SQLite libraries lack it
    conn.create_function("octet_length", 1, _octet_length, deterministic=True)
    try:
        schema_version(conn, db)
    except BaseException:
        conn.close()
        raise
    return conn


def _octet_length(value: object) -> int | None:
    """SQLite's octet_length: the bytes of a value as text (UTF-8) or blob."""
    if value is None:
        return None
    if isinstance(value, bytes):
        return len(value)
    return len(str(value).encode("utf-8"))


def schema_version(conn: sqlite3.Connection, db: str | Path) -> int:
    """The database's schema version; SessionReadError when it is not one we know or not OpenClaw's."""
    try:
        version = conn.execute("PRAGMA user_version").fetchone()[0]
        tables = {row[0] for row in conn.execute("SELECT name FROM sqlite_master WHERE type = 'table'")}
    except sqlite3.DatabaseError as exc:
        raise SessionReadError(f"{db}: not a readable SQLite database ({exc})") from None
    if "transcript_events" not in tables:
        raise SessionReadError(f"{db}: not an OpenClaw agent database (no transcript_events table)")
    if version not in KNOWN_SCHEMA_VERSIONS:
        known = ", ".join(map(str, sorted(KNOWN_SCHEMA_VERSIONS)))
        raise SessionReadError(f"{db}: OpenClaw database schema version {version} is not one batchcompact "
                               f"knows ({known}); nothing was read or written")
    return version


def session_ids(db: str | Path) -> list[str]:
    """The sessions of a database, in the order they were started."""
    conn = connect(db)
    try:
        rows = conn.execute("SELECT session_id, MIN(created_at) FROM transcript_events GROUP BY session_id "
                            "ORDER BY 2, 1").fetchall()
    except sqlite3.DatabaseError as exc:
        raise SessionReadError(f"{db}: cannot read transcript_events ({exc})") from None
    finally:
        conn.close()
    return [row[0] for row in rows]


def _event(db: str | Path, row: tuple, problems: list[Problem]) -> JsonObject | None:
    """One stored event as its JSON object; a problem (file, seq) when it is not one."""
    seq, text, packed = row
    where = str(db)  # the database; the line is the event's seq
    if text is None and packed is not None:
        try:
            from batchcompact.formats.compressed import decompress

            text = decompress(bytes(packed)).decode("utf-8")
        except Exception as exc:  # a damaged frame, or the zstd extra missing
            problems.append(Problem(where, seq, ERROR, f"seq {seq}: cannot decompress event_zstd: {exc}"))
            return None
    try:
        event = json.loads(text) if isinstance(text, str) else None
    except ValueError as exc:
        problems.append(Problem(where, seq, ERROR, f"seq {seq}: invalid JSON in event_json: {exc}"))
        return None
    if not isinstance(event, dict):
        problems.append(Problem(where, seq, ERROR, f"seq {seq}: the event is not a JSON object"))
        return None
    return event


def read_session(path: str | Path, conn: sqlite3.Connection | None = None) -> Session:
    """`<db>#<session id>` as a `Session` (format `openclaw`), read as OpenClaw's loader reads the rows:
    in `seq` order, each a pi session line (pi's header, entry and compaction checks). A problem's line is
    the event's seq. Raises SessionReadError only for the database as a whole (unreadable, unknown
    schema, no such session)."""
    from batchcompact.adapters.pi.read import _check_compactions, _check_entries, _split_lines

    where = split_session_path(path)
    if where is None:
        raise SessionReadError(f"{path}: not an OpenClaw session (<{DATABASE}>#<session id>)")
    db, session_id = where
    own = conn is None
    conn = connect(db) if conn is None else conn
    try:
        rows = _rows(conn, session_id)
    except sqlite3.DatabaseError as exc:
        raise SessionReadError(f"{db}: cannot read transcript_events ({exc})") from None
    finally:
        if own:
            conn.close()
    if not rows:
        raise SessionReadError(f"{db}: no session {session_id!r} in transcript_events")
    name = str(path)
    problems: list[Problem] = []
    items = [(row[0], event) for row in rows if (event := _event(db, row, problems)) is not None]
    header, entries = _split_lines(items, name, problems, first=True)
    compactions = _check_entries(name, entries, problems, ids=True)
    session = Session(name, "openclaw", header, entries, version=(header or {}).get("version"), problems=problems)
    _check_compactions(session, compactions)
    session.extra = OpenClawStoreExtra(database=str(db), session_id=session_id, last_seq=rows[-1][0])
    return session


def _rows(conn: sqlite3.Connection, session_id: str) -> list[tuple]:
    return conn.execute("SELECT seq, event_json, event_zstd FROM transcript_events WHERE session_id = ? "
                        "ORDER BY seq", (session_id,)).fetchall()


def _rows_digest(rows: list[tuple]) -> tuple[int, str]:
    """(bytes, SHA-256) of a session's stored rows (seq, JSON or zstd payload): what was read."""
    digest = hashlib.sha256()
    size = 0
    for seq, text, packed in rows:
        payload = text.encode("utf-8") if isinstance(text, str) else bytes(packed or b"")
        digest.update(f"{seq}:{len(payload)}:".encode())
        digest.update(payload)
        size += len(payload)
    return size, digest.hexdigest()


def fingerprint(path: str | Path) -> tuple[int, int, str]:
    """(size, mtime_ns, sha256) of one session in a database: its events' bytes, its last change (the newest
    event's or the session window's time) and their hash. OSError when the database is missing."""
    where = split_session_path(path)
    if where is None:
        raise SessionReadError(f"{path}: not an OpenClaw session")
    db, session_id = where
    os.stat(db)  # a missing database is a missing file
    conn = connect(db)
    try:
        rows = _rows(conn, session_id)
        changed = last_change_ms(db, session_id, conn)
    except sqlite3.DatabaseError as exc:
        raise SessionReadError(f"{db}: cannot read transcript_events ({exc})") from None
    finally:
        conn.close()
    size, sha = _rows_digest(rows)
    return size, (changed or 0) * 1_000_000, sha


def _identity(event: JsonObject) -> tuple[str, str | None, str | None, str | None] | None:
    """(event id, type, parent id, message idempotency key), as OpenClaw's `readTranscriptEventIdentity`."""
    event_id = event.get("id")
    if not isinstance(event_id, str) or not event_id:
        return None
    message = object_at(event, "message")
    key = message.get("idempotencyKey")
    parent = event.get("parentId")
    return (event_id, event.get("type") if isinstance(event.get("type"), str) else None,
            parent if isinstance(parent, str) else None, key if isinstance(key, str) else None)


def append_events(db: str | Path, session_id: str, events: list[JsonObject], *, last_seq: int,
                  now_ms: int | None = None, attempts: int = 3, busy_timeout_s: float | None = None,
                  expect: tuple[int, str] | None = None,
                  verify: Callable[[Session], list[str]] | None = None) -> list[int]:
    """Append `events` to a session in one transaction, after the `last_seq` it was read with; their seqs.

    `expect`: the (bytes, SHA-256) of the session's rows as read (`fingerprint`), checked inside the
    transaction; `verify(written session) -> problems`, run on the session re-read inside the transaction
    before it commits. StoreChanged when the session is not as read (a live agent wrote), StoreBusy when
    the database stayed locked through `attempts` busy timeouts, VerificationError when `verify` found
    problems; in every case nothing was written."""
    now_ms = int(time.time() * 1000) if now_ms is None else now_ms
    busy_timeout_s = BUSY_TIMEOUT_S if busy_timeout_s is None else busy_timeout_s
    conn = connect(db, write=True)
    try:
        conn.execute(f"PRAGMA busy_timeout = {int(busy_timeout_s * 1000)}")

        def unchanged_then_append() -> list[int]:
            if expect is not None and _rows_digest(_rows(conn, session_id)) != expect:
                raise StoreChanged(f"{session_path(db, session_id)} changed while it was being compacted")
            return _append_in_transaction(conn, db, session_id, events, last_seq, now_ms)

        seqs = write_in_one_transaction(conn, lambda: _begin(conn, db, attempts, busy_timeout_s),
                                        unchanged_then_append,
                                        lambda: read_session(session_path(db, session_id), conn), verify)
    except sqlite3.DatabaseError as exc:  # a full disk, a read-only or damaged file: nothing was committed
        raise SessionReadError(f"{db}: cannot write: {exc}; nothing written") from None
    finally:
        conn.close()
    return seqs


def _begin(conn: sqlite3.Connection, db: str | Path, attempts: int, busy_timeout_s: float) -> None:
    """`BEGIN IMMEDIATE` (the write lock every OpenClaw writer takes), each try waiting the busy timeout."""
    begin_immediate(conn, tries=attempts, pause=0, busy=lambda exc: StoreBusy(
        f"{db}: database is locked by another writer (a live OpenClaw?) after {attempts} tries of "
        f"{busy_timeout_s:g}s; nothing written"))


def _append_in_transaction(conn: sqlite3.Connection, db: str | Path, session_id: str,
                           events: list[JsonObject], last_seq: int, now_ms: int) -> list[int]:
    current = conn.execute("SELECT MAX(seq) FROM transcript_events WHERE session_id = ?", (session_id,)).fetchone()[0]
    if current != last_seq:
        raise StoreChanged(f"{session_path(db, session_id)} changed while it was being compacted "
                           f"(last seq {current}, read {last_seq})")
    seqs = []
    for offset, event in enumerate(events, 1):
        seq = last_seq + offset
        identity = _identity(event)
        if identity and conn.execute("SELECT 1 FROM transcript_event_identities WHERE session_id = ? AND event_id = ?",
                                     (session_id, identity[0])).fetchone():
            raise StoreChanged(f"{session_path(db, session_id)}: an event with id {identity[0]!r} is already stored")
        conn.execute("INSERT INTO transcript_events (session_id, seq, event_json, created_at) VALUES (?, ?, ?, ?)",
                     (session_id, seq, json.dumps(event, ensure_ascii=False, separators=(",", ":")), now_ms))
        if identity:
            conn.execute("INSERT INTO transcript_event_identities (session_id, event_id, seq, event_type, parent_id, "
                         "message_idempotency_key, created_at) VALUES (?, ?, ?, ?, ?, ?, ?)",
                         (session_id, identity[0], seq, identity[1], identity[2], identity[3], now_ms))
        seqs.append(seq)
    _index_appended(conn, session_id, [(seq, event) for seq, event in zip(seqs, events, strict=True)], now_ms)
    conn.execute("UPDATE session_windows SET updated_at = MAX(updated_at, ?), "
                 "transcript_updated_at = MAX(COALESCE(transcript_updated_at, 0), ?) WHERE session_id = ?",
                 (now_ms, now_ms, session_id))
    return seqs


def _index_appended(conn: sqlite3.Connection, session_id: str, appended: list[tuple[int, JsonObject]],
                    now_ms: int) -> None:
    """OpenClaw's projection of the active path, carried forward over the appended events as its
    `createTranscriptIndexAppenderInTransaction` does: each event that extends the indexed leaf gets its
    `session_transcript_active_events` row and becomes the leaf. When the projection is not current (or
    an event does not extend it) it is marked for rebuild instead (`needs_rebuild = 1`), as OpenClaw does;
    OpenClaw then rebuilds it before reading (a one-shot `openclaw agent --local` refuses such a session
    until a gateway has). Events without a message add no FTS row (a compaction has none)."""
    state = conn.execute("SELECT indexed_seq, leaf_event_id, needs_rebuild, active_event_count, active_message_count "
                         "FROM session_transcript_index_state WHERE session_id = ?", (session_id,)).fetchone()
    if state is None:
        return  # no projection yet: OpenClaw builds it from the events when it first reads the session
    indexed, leaf, dirty, events_count, messages_count = state
    unclassified = conn.execute("SELECT 1 FROM session_transcript_active_events WHERE session_id = ? AND "
                                "context_eligible IS NULL LIMIT 1", (session_id,)).fetchone()
    for seq, event in appended:
        message = event.get("message")
        if dirty or unclassified or message is not None or seq != indexed + 1 or event.get("parentId") != leaf \
                or event.get("appendMode") == "side" or not isinstance(event.get("id"), str):
            conn.execute("UPDATE session_transcript_index_state SET needs_rebuild = 1, updated_at = ? "
                         "WHERE session_id = ?", (now_ms, session_id))
            return
        conn.execute("INSERT INTO session_transcript_active_events (session_id, active_position, event_seq, "
                     "message_position, context_eligible) VALUES (?, ?, ?, NULL, 1)", (session_id, events_count, seq))
        indexed, leaf, events_count = seq, event["id"], events_count + 1
    conn.execute("UPDATE session_transcript_index_state SET indexed_seq = ?, leaf_event_id = ?, active_event_count = ?, "
                 "active_message_count = ?, needs_rebuild = 0, updated_at = ? WHERE session_id = ?",
                 (indexed, leaf, events_count, messages_count, now_ms, session_id))


def last_change_ms(db: str | Path, session_id: str, conn: sqlite3.Connection | None = None) -> int | None:
    """When the session last changed (its newest event's `created_at`, or its window's `updated_at`), in ms."""
    own = conn is None
    conn = connect(db) if conn is None else conn
    try:
        event = conn.execute("SELECT MAX(created_at) FROM transcript_events WHERE session_id = ?",
                             (session_id,)).fetchone()[0]
        window = conn.execute("SELECT MAX(updated_at, COALESCE(transcript_updated_at, 0)) FROM session_windows "
                              "WHERE session_id = ?", (session_id,)).fetchone()
    finally:
        if own:
            conn.close()
    values = [v for v in (event, window[0] if window else None) if isinstance(v, int)]
    return max(values) if values else None


def _held(db: Path, session_id: str) -> tuple[int, str]:
    conn = connect(db)
    try:
        return _rows_digest(_rows(conn, session_id))
    finally:
        conn.close()


DATABASE_STORE = SessionDatabase(split=split_session_path, open_checked=connect, held=_held,
                                 not_a_session=lambda path: SessionReadError(f"{path}: not an OpenClaw session path"),
                                 changed=StoreChanged)
copy_session = DATABASE_STORE.copy_session  # an unchanged session to --output-dir (the store protocol's)


def write_session(session: Session, lines: list[JsonObject], target: str | Path,
                  verify: Callable[[Session], list[str]] | None, *, in_place: bool, backup: bool,
                  expect: tuple[int, str]) -> str:
    """Append `lines` to the session in `target` (`<db>#<id>`): in place (after a backup of the database,
    unless disabled), or in a copy of the database at the target (made once, then shared by the other
    sessions of that database). `verify(written session)` runs inside the transaction."""
    extra = OpenClawStoreExtra.of(session)
    session_id = extra.session_id
    return DATABASE_STORE.write_session(
        Path(extra.database), session_id, target,
        lambda out_db: append_events(out_db, session_id, lines, last_seq=extra.last_seq, expect=expect,
                                     verify=verify),
        in_place=in_place, backup=backup, expect=expect)


