"""Copies of an agent's session database (`Agent.store`): the copy --output-dir writes and the backup
--in-place keeps, shared by every store (OpenClaw's, OpenCode's and Kilo's).

A copy is SQLite's online backup of the committed state (a WAL included), written beside the target and
linked into place, so a reader never sees half a database and a copy made meanwhile is kept as it is.
"""

from __future__ import annotations

import os
import sqlite3
from collections.abc import Callable
from pathlib import Path

from batchcompact.adapters.common.files import backup_names, make_folders, temp_name


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
