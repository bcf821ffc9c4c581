"""The writer lock of a session: held by a run from the read to the rename (pipeline/writer.py).

Two runs (whatever their state files) never write the same session at once: the second finds it locked
and skips it. A session kept in a database has its store's transaction instead.
"""

from __future__ import annotations

import fcntl
import os
from pathlib import Path


class SessionLocked(Exception):
    """Another process (another run) holds the session's writer lock."""


class SessionLock:
    """An exclusive, non-blocking flock on a session file, held from the read to the rename."""

    def __init__(self, path: str | Path) -> None:
        self.path = Path(path)
        self._handle = open(self.path, "rb")  # noqa: SIM115 - held until release()
        try:
            fcntl.flock(self._handle.fileno(), fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            self._handle.close()
            raise SessionLocked(f"{path}: locked by another run") from None
        except OSError:
            self._handle.close()
            raise

    def still_current(self) -> bool:
        """The locked file is still the one at the path (another run did not replace it meanwhile)."""
        try:
            now = os.stat(self.path)
        except OSError:
            return False
        held = os.fstat(self._handle.fileno())
        return (now.st_dev, now.st_ino) == (held.st_dev, held.st_ino)

    def release(self) -> None:
        if not self._handle.closed:
            self._handle.close()  # closing drops the flock


class DatabaseSessionLock:
    """The lock of a session kept in a database (`<db>#<id>`): nothing to hold from the read to the write,
    since the store writes in one transaction under the database's own write lock, and only when the
    session's rows are still those planned (another run's append makes ours "changed during the run")."""

    def __init__(self, path: str | Path) -> None:
        self.path = Path(path)

    def still_current(self) -> bool:
        return True

    def release(self) -> None:
        pass


def lock_session(path: str | Path) -> SessionLock | DatabaseSessionLock:
    """Take the writer lock of `path`; SessionLocked when another run holds it."""
    from batchcompact.agents import store_agent

    if store_agent(path) is not None:
        return DatabaseSessionLock(path)
    return SessionLock(path)
