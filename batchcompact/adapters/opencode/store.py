"""Writing a compaction into an OpenCode (or Kilo) database the way OpenCode records its own.

OpenCode's own compaction (`/compact`, `POST /session/<id>/summarize`, or its overflow rule) adds two
messages to the session: a user message whose one part is `{"type": "compaction", "auto": ...,
"tail_start_id"?: <first kept message>}`, then an assistant message with `mode: "compaction"`, `agent:
"compaction"`, `summary: true`, `finish`, `parentID` = that user message, whose text part is the summary.
Each row change is also appended to the session's sync log (`event`: `message.updated.1`,
`message.part.updated.1`, `seq` counted in `event_sequence`). We write exactly that: the kept tail is
named by `tail_start_id` (OpenCode's loader puts it after the summary, read.py), the summary message
carries no usage (all-zero tokens, cost 0: the call was ours, counted in our report) and a `batchcompact`
marker (tokens before, file lists).

One transaction (`BEGIN IMMEDIATE`, OpenCode's own SQLite locking): a busy database is retried with a
back-off, then the session fails with the reason and nothing is written; a session changed since it was
read (its `time_updated` or its newest message) is not written (`ChangedSince`). Ids follow OpenCode's
`Identifier.ascending` (prefix, 12 hex digits of (ms * 4096 + counter) mod 2^48, 14 base62 characters),
later than every message of the session, the random part derived from the session and the summary, so
the same inputs write the same rows.
"""

from __future__ import annotations

import hashlib
import json
import os
import sqlite3
from collections.abc import Callable
from contextlib import closing
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

from batchcompact.adapters.common.database import (
    SessionDatabase,
    begin_immediate,
    write_in_one_transaction,
)
from batchcompact.adapters.opencode.extra import OpenCodeSessionExtra
from batchcompact.adapters.opencode.read import (
    COMPACTION_PROMPT,
    OpenCodeStoreError,
    check_schema,
    connect,
    format_of,
    read_session,
    session_ids,  # noqa: F401 - the store's listing (Agent.store), the reader's own
    split_session_path,
)
from batchcompact.core.context import build_session_context
from batchcompact.core.jsontypes import JsonObject, JsonValue

if TYPE_CHECKING:
    from batchcompact.core.session import Session

BASE62 = "0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz"
BUSY_TRIES = 6
BUSY_TIMEOUT_S = 2.0  # SQLite's own wait on each try


class DatabaseBusy(OpenCodeStoreError):
    """The database stayed locked by another writer (OpenCode itself) through every retry."""


class ChangedSince(OpenCodeStoreError):
    """The session changed after it was read (a live OpenCode is using it)."""


@dataclass(frozen=True)
class Written:
    user_id: str
    summary_id: str
    tail_start_id: str | None


def ascending_id(prefix: str, ms: int, counter: int, seed: str) -> str:
    """OpenCode's `Identifier.ascending` shape with a deterministic random part."""
    stamp = (ms * 0x1000 + counter) % (1 << 48)
    digest = hashlib.sha256(seed.encode()).digest()
    return f"{prefix}_{stamp:012x}" + "".join(BASE62[b % 62] for b in digest[:14])


def tail_message_id(session: Session, first_kept_entry_id: str) -> str | None:
    """The message a planned first kept entry belongs to (a tool result's entry id is its part id)."""
    messages = OpenCodeSessionExtra.of(session).messages
    for message in messages:
        if message["info"]["id"] == first_kept_entry_id:
            if message["info"].get("role") == "assistant" and message["info"].get("summary") is True:  # an earlier compaction: keep from its user message
                return message["info"].get("parentID")
            return first_kept_entry_id
        if any(p["id"] == first_kept_entry_id for p in message["parts"]):
            return message["info"]["id"]
    return None


def build_rows(session: Session, *, summary: str, first_kept_entry_id: str, now_ms: int,
               marker: JsonObject) -> tuple[list[tuple], list[tuple], Written]:
    """The message rows and part rows (id, session, created, updated, data) of our compaction."""
    extra = OpenCodeSessionExtra.of(session)
    messages, session_id = extra.messages, extra.session_id
    last = messages[-1]["info"]
    ms = max(now_ms, max(_created(m["info"]) for m in messages) + 1)
    seed = f"{session_id}\0{first_kept_entry_id}\0{summary}"
    user_id = ascending_id("msg", ms, 1, seed + "\0user")
    summary_id = ascending_id("msg", ms, 3, seed + "\0summary")
    tail = tail_message_id(session, first_kept_entry_id)
    last_user: JsonObject = next((m["info"] for m in reversed(messages) if m["info"].get("role") == "user"), {})
    last_assistant: JsonObject = next((m["info"] for m in reversed(messages) if m["info"].get("role") == "assistant"),
                                      {})
    model = extra.model or {}
    user_model: JsonObject = last_user["model"] if isinstance(last_user.get("model"), dict) else \
        {"providerID": model.get("providerID"), "modelID": model.get("modelID")}
    user_info = {"role": "user", "model": user_model, "agent": last_user.get("agent") or "build",
                 "time": {"created": ms}}
    compaction = {"type": "compaction", "auto": False}
    if tail is not None:
        compaction["tail_start_id"] = tail
    where = last_assistant.get("path") if isinstance(last_assistant.get("path"), dict) else \
        {"cwd": (session.header or {}).get("cwd"), "root": "/"}
    summary_info = {
        "role": "assistant", "parentID": user_id, "mode": "compaction", "agent": "compaction", "summary": True,
        "path": where, "cost": 0,
        "tokens": {"total": 0, "input": 0, "output": 0, "reasoning": 0, "cache": {"write": 0, "read": 0}},
        "modelID": last_assistant.get("modelID") or user_model.get("modelID"),
        "providerID": last_assistant.get("providerID") or user_model.get("providerID"),
        "time": {"created": ms + 1, "completed": ms + 1}, "finish": "stop", "batchcompact": marker,
    }
    text = {"type": "text", "text": summary, "time": {"start": ms + 1, "end": ms + 1}}
    message_rows = [(user_id, session_id, ms, ms, _dump(user_info)),
                    (summary_id, session_id, ms + 1, ms + 1, _dump(summary_info))]
    part_rows = [(ascending_id("prt", ms, 2, seed + "\0compaction"), user_id, session_id, ms, ms, _dump(compaction)),
                 (ascending_id("prt", ms + 1, 4, seed + "\0text"), summary_id, session_id, ms + 1, ms + 1,
                  _dump(text))]
    del last
    return message_rows, part_rows, Written(user_id, summary_id, tail)


def _created(info: JsonObject) -> int:
    value = (info.get("time") or {}).get("created")
    return int(value) if isinstance(value, (int, float)) else 0


def _dump(value: JsonValue) -> str:
    return json.dumps(value, ensure_ascii=False, separators=(",", ":"))


def _events(conn: sqlite3.Connection, session_id: str, message_rows: list[tuple], part_rows: list[tuple],
            seed: str) -> None:
    """Append the rows' sync events (as OpenCode logs each update) where the session has a sync log."""
    row = conn.execute("SELECT seq FROM event_sequence WHERE aggregate_id = ?", (session_id,)).fetchone()
    if row is None:
        return
    seq = row[0]
    events: list[tuple[int, str, JsonObject]] = []
    parts_of: dict[str, list[tuple]] = {}
    for part_row in part_rows:
        parts_of.setdefault(part_row[1], []).append(part_row)
    for message_id, _, created, _, data in message_rows:
        info = {"id": message_id, "sessionID": session_id, **json.loads(data)}
        events.append((created, "message.updated.1", {"sessionID": session_id, "info": info}))
        for part_id, _, _, part_created, _, part_data in parts_of.get(message_id, ()):
            part = {"id": part_id, "sessionID": session_id, "messageID": message_id, **json.loads(part_data)}
            events.append((part_created, "message.part.updated.1",
                           {"sessionID": session_id, "part": part, "time": part_created}))
    for index, (created, kind, data) in enumerate(events, start=1):
        event_id = ascending_id("evt", created, 16 + index, f"{seed}\0event{index}")
        conn.execute("INSERT INTO event (id, aggregate_id, seq, type, data) VALUES (?, ?, ?, ?, ?)",
                     (event_id, session_id, seq + index, kind, _dump(data)))
    conn.execute("UPDATE event_sequence SET seq = ? WHERE aggregate_id = ?", (seq + len(events), session_id))


def begin(conn: sqlite3.Connection, path: str | Path, tries: int = BUSY_TRIES, pause: float = 0.2) -> None:
    """`BEGIN IMMEDIATE` (the write lock), retried with a doubling pause while another writer holds it."""
    begin_immediate(conn, tries=tries, pause=pause, busy=lambda exc: DatabaseBusy(
        f"{path}: the database stayed locked by another writer ({exc}; {tries} tries); nothing written"))


def write_compaction(path: str | Path, session: Session, *, summary: str, first_kept_entry_id: str, now_ms: int,
                     marker: JsonObject | None = None, busy_timeout: float = 2.0,
                     tries: int = BUSY_TRIES, expect: tuple[int, str] | None = None,
                     verify: Callable[[Session], list[str]] | None = None) -> Written:
    """Record our compaction of `session` (read from `path`, or from the database `path` is a copy of)
    in one transaction. `expect`: the (bytes, SHA-256) of the session's rows as read (`fingerprint`),
    checked inside the transaction; `verify(written session) -> problems`, run on the session re-read
    inside the transaction before it commits. Raises `DatabaseBusy`, `ChangedSince`, `VerificationError`
    or `OpenCodeStoreError`; nothing is written then."""
    extra = OpenCodeSessionExtra.of(session)
    session_id = extra.session_id
    message_rows, part_rows, written = build_rows(session, summary=summary, first_kept_entry_id=first_kept_entry_id,
                                                  now_ms=now_ms, marker=marker or {})
    try:
        with closing(connect(path, write=True, timeout=busy_timeout)) as conn:

            def unchanged_then_write() -> None:
                check_schema(conn, path, session.agent)
                row = conn.execute("SELECT time_updated FROM session WHERE id = ?", (session_id,)).fetchone()
                last = conn.execute("SELECT id FROM message WHERE session_id = ? ORDER BY time_created DESC, id DESC "
                                    "LIMIT 1", (session_id,)).fetchone()
                if row is None or row[0] != (session.header or {}).get("time_updated") or \
                        (last[0] if last else None) != extra.last_message or \
                        (expect is not None and rows_digest(conn, session_id)[:2] != expect):
                    raise ChangedSince(f"{path}: session {session_id} changed since it was read; not written")
                conn.executemany("INSERT INTO message (id, session_id, time_created, time_updated, data) "
                                 "VALUES (?, ?, ?, ?, ?)", message_rows)
                conn.executemany("INSERT INTO part (id, message_id, session_id, time_created, time_updated, data) "
                                 "VALUES (?, ?, ?, ?, ?, ?)", part_rows)
                _events(conn, session_id, message_rows, part_rows, f"{session_id}\0{written.summary_id}")

            write_in_one_transaction(conn, lambda: begin(conn, path, tries), unchanged_then_write,
                                     lambda: read_session(path, session_id, agent=session.agent, conn=conn), verify)
    except sqlite3.Error as exc:
        raise OpenCodeStoreError(f"{path}: {exc}; nothing written") from None
    return written


def copy_database(source: str | Path, target: str | Path) -> None:
    """A consistent copy of the database (its WAL included) through SQLite's backup API."""
    with closing(connect(source)) as src, closing(sqlite3.connect(str(target))) as dst:
        src.backup(dst)


# The store of `Agent.store` (agents/spec.py): every session of a database is the path `<db>#<session id>`
# (`SEP`, `format_of`, `split_session_path`, `session_ids`: read.py, where the reader finds it too).


def rows_digest(conn: sqlite3.Connection, session_id: str) -> tuple[int, str, int]:
    """(bytes, SHA-256, last change in ms) of a session's stored rows: the session row's time, each message
    and part (id, time, data) in id order."""
    digest = hashlib.sha256()
    size = 0
    changed = 0
    row = conn.execute("SELECT time_updated FROM session WHERE id = ?", (session_id,)).fetchone()
    if row is None:
        raise OpenCodeStoreError(f"no session {session_id!r}")
    changed = int(row[0] or 0)
    digest.update(f"session:{row[0]}\0".encode())
    for table in ("message", "part"):
        for item_id, updated, data in conn.execute(
                f"SELECT id, time_updated, data FROM {table} WHERE session_id = ? ORDER BY id", (session_id,)):
            payload = (data if isinstance(data, str) else str(data)).encode("utf-8", "surrogatepass")
            digest.update(f"{table}:{item_id}:{updated}:{len(payload)}:".encode())
            digest.update(payload)
            size += len(payload)
            if isinstance(updated, int):
                changed = max(changed, updated)
    return size, digest.hexdigest(), changed


def fingerprint(path: str | Path) -> tuple[int, int, str]:
    """(size, mtime_ns, sha256) of one session in a database: its rows' bytes, its last change (the newest
    row's `time_updated`: what --min-age measures) and their hash. OSError when the database is missing."""
    where = split_session_path(path)
    if where is None:
        raise OpenCodeStoreError(f"{path}: not an OpenCode session (<opencode.db>#<session id>)")
    db, session_id = where
    os.stat(db)  # a missing database is a missing file
    try:
        with closing(connect(db)) as conn:
            check_schema(conn, db, format_of(db))
            size, sha, changed = rows_digest(conn, session_id)
    except sqlite3.Error as exc:
        raise OpenCodeStoreError(f"{db}: not a readable SQLite database ({exc})") from None
    except OpenCodeStoreError as exc:
        raise OpenCodeStoreError(str(exc) if str(exc).startswith(str(db)) else f"{db}: {exc}") from None
    return size, changed * 1_000_000, sha


def _open_checked(db: Path) -> sqlite3.Connection:
    conn = connect(db)
    try:
        check_schema(conn, db, format_of(db))
    except BaseException:
        conn.close()
        raise
    return conn


def _held(db: Path, session_id: str) -> tuple[int, str]:
    with closing(connect(db)) as conn:
        return rows_digest(conn, session_id)[:2]


DATABASE_STORE = SessionDatabase(split=split_session_path, open_checked=_open_checked, held=_held,
                                 not_a_session=lambda path: OpenCodeStoreError(f"{path}: not an OpenCode session path"),
                                 changed=ChangedSince)
copy_session = DATABASE_STORE.copy_session  # an unchanged session to --output-dir (the store protocol's `copy_session`)


def write_session(session: Session, lines: list[JsonObject], target: str | Path,
                  verify: Callable[[Session], list[str]] | None, *, in_place: bool, backup: bool,
                  expect: tuple[int, str]) -> str:
    """Record the compaction line (`write.build_compaction`) in the session's database at `target`
    (`<db>#<id>`): in place (after a backup of the database, unless disabled), or in a copy of the database
    (made once, then shared by the other sessions of that database). `verify(written session)` runs
    inside the transaction; a busy database fails the session with the reason, nothing written."""
    [compaction] = [line for line in lines if line.get("type") == "compaction"]
    marker = {key: value for key, value in compaction.get("batchcompact", {}).items()}

    def write(out_db: Path) -> None:
        write_compaction(out_db, session, summary=compaction["summary"],
                         first_kept_entry_id=compaction["firstKeptEntryId"], now_ms=compaction["now_ms"],
                         marker=marker, expect=expect, verify=verify, busy_timeout=BUSY_TIMEOUT_S, tries=BUSY_TRIES)

    extra = OpenCodeSessionExtra.of(session)
    return DATABASE_STORE.write_session(Path(extra.database), extra.session_id, target, write,
                                        in_place=in_place, backup=backup, expect=expect)


def verify(path: str | Path, original: Session, written: Written, *, summary: str, agent: str) -> list[str]:
    """Re-read the session from the database: OpenCode's loader must start from our summary exactly once,
    then hold the kept tail in order."""
    again = read_session(path, OpenCodeSessionExtra.of(original).session_id, agent=agent)
    problems = [p.message for p in again.errors]
    if problems:
        return problems
    context = build_session_context(again.path_entries())
    compaction = context.compaction
    if compaction is None or compaction.id != written.summary_id:
        return ["the written compaction is not the session's latest"]
    if compaction.data.get("summary") != summary:
        return ["the summary read back differs from the one written"]
    texts = json.dumps([m.message for m in context.messages])
    if texts.count(json.dumps(summary)[1:-1]) != 1:
        return ["the summary is not in the rebuilt context exactly once"]
    from batchcompact.adapters.opencode.read import filter_compacted

    loaded = filter_compacted(OpenCodeSessionExtra.of(again).messages)
    if not loaded or loaded[0]["info"]["id"] != written.user_id or len(loaded) < 2 \
            or loaded[1]["info"]["id"] != written.summary_id:
        return [f"OpenCode's loader would not start from the summary ('{COMPACTION_PROMPT}' then the summary)"]
    if written.tail_start_id is None:
        return ["the compaction names no kept tail"]
    if (len(loaded) < 3 or loaded[2]["info"]["id"] != written.tail_start_id):
        return ["OpenCode's loader would not continue with the kept tail"]
    return []
