"""Run state: what each session's outcome was, the summaries already paid for, and the run lock.

SQLite (stdlib) in WAL mode; every record is committed as soon as it is known, so a run killed at any
moment loses at most the calls in flight. Summaries are stored by the hash of exactly what was sent
(model, system prompt, user prompt, max_tokens), so a rerun never pays twice for the same summary.

Durability: a paid summary's commit syncs the write-ahead log to disk (`synchronous=FULL` for that
commit) before it returns, so it survives a power loss and is on disk before the file it goes into is
written. Outcome records (`record`, `record_invalid`) commit with `synchronous=NORMAL`: a killed process
loses none of them, and a power loss can lose only the last ones, which leaves what a crash between a
rename and its record already leaves (that session is checked again by the next run; see
docs/reliability.md).
"""

from __future__ import annotations

import fcntl
import hashlib
import json
import os
import sqlite3
import threading
import time
from dataclasses import dataclass
from pathlib import Path
from typing import NamedTuple

from batchcompact.core.jsontypes import JsonObject
from batchcompact.errors import LockHeldError, RunAborted
from batchcompact.lifecycle import forget_in_children, pid_alive, remember_in_children
from batchcompact.pipeline.statuses import COMPACTED, SKIPPED

SCHEMA = """
CREATE TABLE IF NOT EXISTS sessions (
    input_path TEXT NOT NULL,
    fingerprint TEXT NOT NULL,
    settings_hash TEXT NOT NULL,
    status TEXT NOT NULL,
    output_path TEXT,
    reason TEXT,
    run_id TEXT,
    updated_at REAL NOT NULL,
    PRIMARY KEY (input_path, fingerprint, settings_hash)
);
CREATE TABLE IF NOT EXISTS known_invalid (
    input_path TEXT NOT NULL,
    fingerprint TEXT NOT NULL,
    run_id TEXT NOT NULL,
    reason TEXT,
    PRIMARY KEY (input_path, fingerprint)
);
CREATE TABLE IF NOT EXISTS summaries (
    call_key TEXT PRIMARY KEY,
    result TEXT NOT NULL,
    created_at REAL NOT NULL
);
"""

# Outcomes after which a rerun has nothing left to do for that input.
FINAL_STATUSES = frozenset({COMPACTED, SKIPPED})


class Finished(NamedTuple):
    """A final outcome the state recorded for one input's bytes under one run's settings."""

    status: str
    output_path: str | None
    reason: str | None


@dataclass(frozen=True)
class Fingerprint:
    size: int
    mtime_ns: int
    sha256: str

    def __str__(self) -> str:
        return f"{self.size}:{self.sha256}"


def fingerprint_file(path: str | Path) -> Fingerprint:
    """Size, mtime and content hash, taken so that a change made while we read is noticed (a session kept
    in a database, `<db>#<id>`: its events' bytes, last change and hash, from the agent's store)."""
    from batchcompact.agents import contracts, store_agent

    agent = store_agent(path)
    if agent is not None and agent.store:
        return Fingerprint(*contracts.store(agent).fingerprint(path))
    stat = os.stat(path)
    digest = hashlib.sha256()
    with open(path, "rb") as handle:
        while chunk := handle.read(1 << 20):
            digest.update(chunk)
    return Fingerprint(stat.st_size, stat.st_mtime_ns, digest.hexdigest())


def call_key(model: str, system_prompt: str, user_prompt: str, max_tokens: int) -> str:
    digest = hashlib.sha256()
    for part in (model, system_prompt, user_prompt, str(max_tokens)):
        digest.update(part.encode("utf-8", "surrogatepass"))
        digest.update(b"\x00")
    return digest.hexdigest()


def settings_hash(values: JsonObject) -> str:
    return hashlib.sha256(json.dumps(values, sort_keys=True, default=str).encode()).hexdigest()[:16]


def _is_corrupt(exc: sqlite3.Error) -> bool:
    text = str(exc).lower()
    return any(word in text for word in ("not a database", "malformed", "corrupt", "no such table"))


def _processes_holding(path: Path) -> list[int]:
    """Pids (readable ones: this user's) with `path` open, from /proc (empty where there is none)."""
    wanted = os.path.realpath(path)
    pids = []
    try:
        entries = os.listdir("/proc")
    except OSError:
        return []
    for entry in entries:
        if not entry.isdigit() or int(entry) == os.getpid():
            continue
        try:
            fds = os.listdir(f"/proc/{entry}/fd")
        except OSError:
            continue
        for fd in fds:
            try:
                if os.readlink(f"/proc/{entry}/fd/{fd}") == wanted:
                    pids.append(int(entry))
                    break
            except OSError:
                continue
    return pids


def _lock_message(path: Path, holder: str) -> str:
    """Who holds the run lock, and what to do; a holder that is gone is said so."""
    if holder.isdigit() and not pid_alive(int(holder)):
        others = _processes_holding(Path(str(path) + ".lock"))
        left = (f"processes it left behind still hold it: pid {', '.join(map(str, others))} "
                f"(stop them: kill {' '.join(map(str, others))})") if others else "a process it left behind still holds it"
        return (f"the lock on {path} is held, but the run that took it (pid {holder}) is no longer running; "
                f"{left}, or pass a different --state")
    return (f"another batchcompact run holds the lock on {path} (pid {holder}); "
            "wait for it to finish, or pass a different --state")


def _text(value: str | None) -> str | None:
    """Paths as SQLite text: names that are not UTF-8 get \\xNN escapes (formats/scan.py printable)."""
    if value is None:
        return None
    from batchcompact.formats.scan import printable

    return printable(value)


class RunState:
    """The state database plus an exclusive lock held for the whole run."""

    def __init__(self, path: str | Path) -> None:
        self.path = Path(path)
        self.moved_aside: Path | None = None  # where an unreadable database went (then a new one was made)
        try:
            self._open()
        except (OSError, sqlite3.Error) as exc:
            if getattr(self, "_lock_handle", None) is not None and not self._lock_handle.closed:
                self._lock_handle.close()
            remember_in_children(self.path)
            reason = exc.strerror if isinstance(exc, OSError) and exc.strerror else str(exc)
            if isinstance(exc, OSError) and exc.filename and str(exc.filename) != str(self.path):
                reason += f" ({exc.filename})"
            raise RunAborted(f"cannot use the run state {self.path}: {reason} "
                             "(free space, fix the permissions, or pass another --state)") from None

    def _open(self) -> None:
        self.path.parent.mkdir(parents=True, exist_ok=True)
        # Worker processes forked while this is open close the lock and the database in the child.
        forget_in_children(self.path)
        self._lock_handle = open(str(self.path) + ".lock", "a+")
        try:
            fcntl.flock(self._lock_handle.fileno(), fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            self._lock_handle.seek(0)
            holder = self._lock_handle.read().strip() or "unknown"
            self._lock_handle.close()
            raise LockHeldError(_lock_message(self.path, holder)) from None
        self._lock_handle.seek(0)
        self._lock_handle.truncate()
        self._lock_handle.write(str(os.getpid()))
        self._lock_handle.flush()
        # One connection shared by the event loop and the writer threads: every use holds this lock
        # (sqlite3 connections must not run statements from two threads at once).
        self._db_lock = threading.Lock()
        try:
            self.db = self._connect()
        except sqlite3.DatabaseError as exc:
            if isinstance(exc, sqlite3.OperationalError) and not _is_corrupt(exc):
                raise  # disk full, read-only, ...: not the database's fault
            self.moved_aside = self._move_aside(exc)
            self.db = self._connect()

    def _connect(self) -> sqlite3.Connection:
        db = sqlite3.connect(str(self.path), timeout=30, check_same_thread=False)
        try:
            db.execute("PRAGMA journal_mode=WAL")
            db.execute("PRAGMA synchronous=NORMAL")  # put_summary syncs its own commits (module docstring)
            db.executescript(SCHEMA)
            db.execute("SELECT count(*) FROM sessions").fetchone()
            db.commit()
        except BaseException:
            db.close()
            raise
        return db

    def _move_aside(self, exc: Exception) -> Path:
        """Keep an unreadable database (and its -wal/-shm) as STATE.corrupt-TIME for inspection."""
        stamp = time.strftime("%Y%m%dT%H%M%S", time.gmtime())
        aside = self.path.with_name(f"{self.path.name}.corrupt-{stamp}")
        n = 1
        while aside.exists():
            aside = self.path.with_name(f"{self.path.name}.corrupt-{stamp}-{n}")
            n += 1
        os.replace(self.path, aside)
        for suffix in ("-wal", "-shm", "-journal"):
            side = Path(str(self.path) + suffix)
            if side.exists():
                os.replace(side, Path(str(aside) + suffix))
        import logging

        logging.getLogger(__name__).warning(
            "the run state %s was unreadable (%s); moved it aside to %s and started a new one: finished "
            "sessions are checked again, summaries stored there are not reused", self.path, exc, aside)
        return aside

    def close(self) -> None:
        with self._db_lock:
            self.db.close()
        fcntl.flock(self._lock_handle.fileno(), fcntl.LOCK_UN)
        self._lock_handle.close()
        remember_in_children(self.path)

    def __enter__(self) -> RunState:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def finished(self, input_path: str, fingerprint: Fingerprint | None, settings: str) -> Finished | None:
        """The recorded final outcome for this exact input and settings, if any (None: a file with no
        fingerprint, such as one no reader takes, is looked up as the text `None`)."""
        with self._db_lock:
            row = self.db.execute(
                "SELECT status, output_path, reason FROM sessions WHERE input_path=? AND fingerprint=? "
                "AND settings_hash=?",
                (_text(input_path), str(fingerprint), settings),
            ).fetchone()
        if row is None or row[0] not in FINAL_STATUSES:
            return None
        return Finished(*row)

    def finished_fingerprints(self, input_path: str, settings: str) -> frozenset[str]:
        """The fingerprints of this input recorded with a final outcome under these settings."""
        with self._db_lock:
            rows = self.db.execute(
                "SELECT fingerprint, status FROM sessions WHERE input_path=? AND settings_hash=?",
                (_text(input_path), settings),
            ).fetchall()
        return frozenset(fingerprint for fingerprint, status in rows if status in FINAL_STATUSES)

    def record(self, input_path: str, fingerprint: Fingerprint | None, settings: str, status: str,
               output_path: str | None, reason: str | None, run_id: str) -> None:
        with self._db_lock:
            self.db.execute(
                "INSERT OR REPLACE INTO sessions VALUES (?, ?, ?, ?, ?, ?, ?, ?)",
                (_text(input_path), str(fingerprint), settings, status, _text(output_path), _text(reason), run_id,
                 time.time()),
            )
            self.db.commit()

    def known_invalid(self, input_path: str, fingerprint: Fingerprint) -> str | None:
        """The run that first found these exact bytes invalid, if one did."""
        with self._db_lock:
            row = self.db.execute("SELECT run_id FROM known_invalid WHERE input_path=? AND fingerprint=?",
                                  (_text(input_path), str(fingerprint))).fetchone()
        return row[0] if row else None

    def record_invalid(self, input_path: str, fingerprint: Fingerprint, run_id: str, reason: str | None) -> None:
        """Remember an invalid file by its content; the first run that saw it is kept."""
        with self._db_lock:
            self.db.execute("INSERT OR IGNORE INTO known_invalid VALUES (?, ?, ?, ?)",
                            (_text(input_path), str(fingerprint), run_id, _text(reason)))
            self.db.commit()

    def get_summary(self, key: str) -> JsonObject | None:
        with self._db_lock:
            row = self.db.execute("SELECT result FROM summaries WHERE call_key=?", (key,)).fetchone()
        return json.loads(row[0]) if row else None

    def put_summary(self, key: str, result: JsonObject) -> None:
        """Store a paid summary durably: the log is synced to disk before this returns."""
        with self._db_lock:
            self.db.execute("PRAGMA synchronous=FULL")
            try:
                self.db.execute(
                    "INSERT OR REPLACE INTO summaries VALUES (?, ?, ?)", (key, json.dumps(result), time.time())
                )
                self.db.commit()
            finally:
                # (inside a transaction left open by a failed commit SQLite refuses the change: the
                # connection then stays at FULL, the stricter level, and the original error is raised)
                if not self.db.in_transaction:
                    self.db.execute("PRAGMA synchronous=NORMAL")
