"""One SQLite session store for every agent that keeps its sessions in a database (`Agent.store`: OpenCode's,
Kilo's and OpenClaw's), each session `<db>#<session id>`. The agent says how to open, check and digest its
database and what to write; this module does the rest the same way for all:

- the copy --output-dir writes and the backup --in-place keeps (`.bak`, `.bak.N`, one already holding the
  session as read reused): SQLite's online backup of the committed state (a WAL included), written beside
  the target and linked into place, so a reader never sees half a database and a copy made meanwhile is kept;
- the write: one transaction under SQLite's write lock (`BEGIN IMMEDIATE`, retried while another writer holds
  it), the session re-read inside it and verified before the commit, rolled back on any failure, so a
  session is written whole and verified or not at all; a session changed since it was read is the writer's
  `ChangedDuringRun`.
"""

from __future__ import annotations

import os
import sqlite3
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import TypeVar

from batchcompact.adapters.common.files import ChangedDuringRun, backup_names, make_folders, temp_name
from batchcompact.errors import SessionReadError, VerificationError

SEP = "#"  # a session inside a database: "<database>#<session id>"
T = TypeVar("T")
S = TypeVar("S")  # the session read back


def session_path(db: str | Path, session_id: str) -> str:
    return f"{db}{SEP}{session_id}"


def copy_database(source: Path, target: Path, open_source: Callable[[Path], sqlite3.Connection]) -> None:
    """A consistent copy of a live database at `target` (`open_source`: the store's read-only connection,
    which checks the schema); a target that exists meanwhile is left as it is."""
    make_folders(target.parent)
    tmp = temp_name(target)
    try:
        src = open_source(source)
        try:
            dst = sqlite3.connect(str(tmp))
            try:
                src.backup(dst)
                dst.execute("PRAGMA journal_mode = DELETE")  # one self-contained file; the agent turns WAL on again
            finally:
                dst.close()
        finally:
            src.close()
        os.chmod(tmp, os.stat(source).st_mode & 0o7777)
        try:
            os.link(tmp, target)
        except FileExistsError:
            pass
    finally:
        tmp.unlink(missing_ok=True)


def backup_database(db: Path, holds_as_read: Callable[[Path], bool],
                    open_source: Callable[[Path], sqlite3.Connection]) -> str:
    """The backup of an in-place write: the first of `<db>.bak`, `.bak.1`, ... that holds the session as it
    was read (`holds_as_read`: an earlier session of the same run made it), else a new copy at the first
    free name."""
    for name in backup_names(db):
        if not name.exists():
            copy_database(db, name, open_source)
            return str(name)
        if holds_as_read(name):
            return str(name)
    raise OSError(f"no free backup name beside {db}")


def output_database(source: Path, target: Path, *, in_place: bool, backup: Callable[[], object] | None,
                    copy: Callable[[Path, Path], None]) -> Path:
    """The database a session's write goes to: `source` itself in place (after `backup()`, unless None), else
    the copy at `target`, made by `copy(source, target)` the first time (the other sessions of that database
    are then written into the same copy)."""
    if in_place:
        if backup is not None:
            backup()
        return source
    if not target.exists():
        copy(source, target)
    return target


def begin_immediate(conn: sqlite3.Connection, *, tries: int, pause: float,
                    busy: Callable[[sqlite3.OperationalError], Exception]) -> None:
    """`BEGIN IMMEDIATE` (SQLite's write lock, the one the agents' own writers take), tried `tries` times while
    another writer holds it, each try waiting the connection's busy timeout, then `pause * 2**n` seconds before
    the next (0: none); `busy(error)` is raised after the last."""
    for attempt in range(tries):
        try:
            conn.execute("BEGIN IMMEDIATE")
            return
        except sqlite3.OperationalError as exc:
            text = str(exc).lower()
            if "locked" not in text and "busy" not in text:
                raise
            if attempt + 1 == tries:
                raise busy(exc) from None
            if pause:
                time.sleep(pause * (2 ** attempt))


def write_in_one_transaction(conn: sqlite3.Connection, begin: Callable[[], None], write: Callable[[], T],
                             reread: Callable[[], S], verify: Callable[[S], list[str]] | None) -> T:
    """`write()` (which first checks the session is as it was read) inside one transaction opened by
    `begin()`; then, before the commit, `verify(reread())`: the written session read back through the same
    connection (VerificationError naming its first problems). Any failure rolls it all back; `write`'s result."""
    begin()
    try:
        result = write()
        if verify is not None:
            problems = verify(reread())
            if problems:
                raise VerificationError("; ".join(problems[:5]))
        conn.execute("COMMIT")
    except BaseException:
        if conn.in_transaction:
            conn.execute("ROLLBACK")
        raise
    return result


@dataclass(frozen=True)
class SessionDatabase:
    """What one agent's store tells this module about its databases."""

    split: Callable[[str | Path], tuple[Path, str] | None]  # `<db>#<id>` -> (db, id); None for another path
    open_checked: Callable[[Path], sqlite3.Connection]  # read-only, its schema checked: the source of a copy
    held: Callable[[Path, str], tuple[int, str]]  # (bytes, SHA-256) of a session's rows in a database
    not_a_session: Callable[[str], Exception]  # the error naming a path that is none of its sessions
    changed: type[BaseException]  # the agent's "changed since it was read", raised inside the transaction

    def where(self, path: str | Path) -> tuple[Path, str]:
        where = self.split(path)
        if where is None:
            raise self.not_a_session(str(path))
        return where

    def copy(self, source: Path, target: Path) -> None:
        copy_database(source, target, self.open_checked)

    def copy_session(self, source: str | Path, target: str | Path) -> None:
        """An unchanged session to --output-dir: the copy of its database holds it (made if missing)."""
        where, to = self.split(source), self.split(target)
        if where is None or to is None:
            raise self.not_a_session(str(source))
        if not to[0].exists():
            self.copy(where[0], to[0])

    def backup(self, db: Path, session_id: str, expect: tuple[int, str]) -> str:
        """The backup of an in-place write: `<db>.bak`, `.bak.1`, ..., one that already holds this session as
        it was read (`expect`) reused."""

        def holds_as_read(name: Path) -> bool:
            try:
                return self.held(name, session_id) == expect
            except (SessionReadError, sqlite3.Error):
                return False

        return backup_database(db, holds_as_read, self.open_checked)

    def write_session(self, source: Path, session_id: str, target: str | Path, write: Callable[[Path], object], *,
                      in_place: bool, backup: bool, expect: tuple[int, str]) -> str:
        """`write(database)` of the session `session_id` of `source`, into the database of `target`
        (`<db>#<id>`): `source` itself in place (after its backup, unless `backup` is false), else its copy
        (made once, then shared by the other sessions of that database). The agent's `changed` becomes
        `ChangedDuringRun`. The written session's path."""
        out_db = output_database(source, self.where(target)[0], in_place=in_place, copy=self.copy,
                                 backup=(lambda: self.backup(source, session_id, expect)) if backup else None)
        try:
            write(out_db)
        except self.changed as exc:
            raise ChangedDuringRun(str(exc)) from None
        return session_path(out_db, session_id)
