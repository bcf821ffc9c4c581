"""Making a written file durable: its fsync in a thread while it is verified, its folder's fsync after the
rename, and the source's mode (and owner) carried over (pipeline/writer.py)."""

from __future__ import annotations

import os
import stat as stat_module
import threading
from pathlib import Path


def fsync_dir(folder: Path) -> None:
    """The folder's entries on disk (a rename is durable once its folder is synced); best effort."""
    try:
        fd = os.open(folder, os.O_RDONLY)
    except OSError:
        return
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


def copy_mode(fd: int, source: os.stat_result, *, owner: bool) -> None:
    """The source's permission bits; with `owner` also its owner and group where we may (root, or our own)."""
    if owner:
        try:
            os.fchown(fd, source.st_uid, source.st_gid)
        except OSError:  # not permitted (another user's file, not root): the mode is still copied
            pass
    os.fchmod(fd, stat_module.S_IMODE(source.st_mode))


class Durable:
    """The fsync of a written temp file, run in a thread while the caller verifies the file (a read of it
    needs no fsync; the rename does): `wait` before the rename. fsync releases the GIL, so the disk's
    wait and the verify's CPU overlap. Where no thread can be started, the fsync runs at once."""

    def __init__(self, fd: int) -> None:
        self._fd = fd
        self._error: BaseException | None = None
        self._thread: threading.Thread | None = threading.Thread(target=self._sync, name="batchcompact-fsync",
                                                                 daemon=True)
        try:
            self._thread.start()
        except RuntimeError:  # no thread to be had (a process or thread limit): as before, in line
            self._thread = None
            self._sync()

    def _sync(self) -> None:
        try:
            os.fsync(self._fd)
        except BaseException as exc:  # raised by wait(), in the caller's thread
            self._error = exc
        finally:
            os.close(self._fd)

    def wait(self) -> None:
        """Block until the file is on disk; raises the fsync's error (EIO, ENOSPC) if it failed."""
        self.join()
        if self._error is not None:
            raise self._error

    def join(self) -> None:
        if self._thread is not None:
            self._thread.join()


