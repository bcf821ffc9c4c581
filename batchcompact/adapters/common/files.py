"""Files beside a target, as every writer makes them (pipeline/writer.py for session files, database.py for
session databases): the temp name (`.NAME.batchcompact-tmp-PID-RANDOM-HOST`, which the writer's sweep reads
back), the folders made one at a time, the backup names (`NAME.bak`, `NAME.bak.1`, ...), and
`ChangedDuringRun`: the input changed after it was read, so nothing was replaced.
"""

from __future__ import annotations

import functools
import hashlib
import os
import socket
from collections.abc import Iterator
from pathlib import Path

from batchcompact.outfile import fitted_name

TMP_MARK = ".batchcompact-tmp"


def temp_name(target: Path, kind: str = TMP_MARK) -> Path:
    """A temp path beside `target`, unique to this process and call: `.NAME.batchcompact-tmp-PID-RANDOM-HOST`
    (a NAME too long for that to fit in a file name is cut, with its hash: `outfile.fitted_name`)."""
    return target.with_name(f".{fitted_name(target.name)}{kind}-{os.getpid()}-{os.urandom(4).hex()}-{_host_tag()}")


def make_folders(folder: Path) -> None:
    """`folder.mkdir(parents=True, exist_ok=True)` without its recursion, one call per missing folder: an
    output mirroring an input 1,100 folders deep would exceed Python's recursion limit. Each missing folder
    is made from the deepest one that is there down; one made meanwhile by another process is fine."""
    missing = []
    while not folder.is_dir() and folder.parent != folder:
        missing.append(folder)
        folder = folder.parent
    for made in reversed(missing):
        try:
            made.mkdir()
        except FileExistsError:
            if not made.is_dir():
                raise


@functools.cache
def _host_tag() -> str:
    """This machine, in temp names (a shared filesystem sees every node's): 8 hex of its name's hash."""
    return hashlib.sha1(socket.gethostname().encode("utf-8", "surrogateescape")).hexdigest()[:8]


class ChangedDuringRun(Exception):
    """The input changed after it was read; nothing was replaced."""


def backup_names(target: Path) -> Iterator[Path]:
    """`NAME.bak`, then `NAME.bak.1`, `NAME.bak.2`, ...: where backups of `target` go, in order."""
    yield Path(f"{target}.bak")
    for n in range(1, 10_000):
        yield Path(f"{target}.bak.{n}")
