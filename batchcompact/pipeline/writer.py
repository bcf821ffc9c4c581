"""Writing compacted sessions: atomically, verified, never touching an original unless asked.

Every output is first written to a temporary file in the destination folder and fsynced, then re-read
and verified, and only then renamed into place. In place, the original is also re-fingerprinted just
before the rename: a file that changed since it was read (a live agent still writing) is not replaced.
"""

from __future__ import annotations

import hashlib
import os
import shutil
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from batchcompact.core.session import Session
from batchcompact.errors import VerificationError
from batchcompact.formats.jsonl import dumps_line
from batchcompact.pipeline.state import Fingerprint, fingerprint_file

TMP_MARK = ".batchcompact-tmp"


class ChangedDuringRun(Exception):
    """The input changed after it was read; nothing was replaced."""


@dataclass(frozen=True)
class WriteResult:
    output_path: str
    backup_path: str | None
    bytes_written: int


def _fsync_dir(folder: Path) -> None:
    try:
        fd = os.open(folder, os.O_RDONLY)
    except OSError:
        return
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


def _write_temp(target: Path, session: Session, new_lines: list[dict[str, Any]]) -> tuple[Path, bool]:
    """Write original (or migrated) content + new lines to a temp file beside `target`.

    Returns (temp path, appended) where appended means the original bytes are a prefix of the output.
    """
    target.parent.mkdir(parents=True, exist_ok=True)
    tmp = target.with_name(f".{target.name}{TMP_MARK}-{os.getpid()}")
    appended = not (session.format == "pi" and session.migrated)
    with open(tmp, "wb") as out:
        if appended:
            with open(session.path, "rb") as src:
                shutil.copyfileobj(src, out, 1 << 20)
            if out.tell() and not _ends_with_newline(session.path):
                out.write(b"\n")
        else:
            assert session.header is not None
            out.write(dumps_line(session.header).encode())
            for entry in session.entries:
                out.write(dumps_line(entry.data).encode())
        for line in new_lines:
            out.write(dumps_line(line).encode())
        out.flush()
        os.fsync(out.fileno())
    return tmp, appended


def _ends_with_newline(path: str) -> bool:
    with open(path, "rb") as handle:
        handle.seek(0, os.SEEK_END)
        if handle.tell() == 0:
            return True
        handle.seek(-1, os.SEEK_END)
        return handle.read(1) == b"\n"


def _prefix_hash(path: Path, size: int) -> str:
    digest = hashlib.sha256()
    remaining = size
    with open(path, "rb") as handle:
        while remaining > 0:
            chunk = handle.read(min(1 << 20, remaining))
            if not chunk:
                break
            digest.update(chunk)
            remaining -= len(chunk)
    return digest.hexdigest()


def write_session(
    session: Session,
    new_lines: list[dict[str, Any]],
    target: Path,
    fingerprint: Fingerprint,
    verify: Callable[[Path], list[str]],
    *,
    in_place: bool = False,
    backup: bool = True,
) -> WriteResult:
    """Write `session` + `new_lines` to `target` atomically after verifying the temp file.

    `verify(temp_path)` returns problems (empty = good). Raises VerificationError or ChangedDuringRun;
    in both cases the temp file is removed and nothing else changed.
    """
    tmp, appended = _write_temp(target, session, new_lines)
    try:
        if appended and _prefix_hash(tmp, fingerprint.size) != fingerprint.sha256:
            raise VerificationError("the original bytes are not a prefix of the output")
        problems = verify(tmp)
        if problems:
            raise VerificationError("; ".join(problems[:5]))
        current = fingerprint_file(session.path)
        if (current.size, current.mtime_ns, current.sha256) != (
            fingerprint.size,
            fingerprint.mtime_ns,
            fingerprint.sha256,
        ):
            raise ChangedDuringRun(f"{session.path} changed while it was being compacted")
        backup_path = None
        if in_place and backup:
            backup_path = str(target) + ".bak"
            bak_tmp = Path(backup_path + TMP_MARK)
            shutil.copy2(session.path, bak_tmp)
            with open(bak_tmp, "rb") as handle:
                os.fsync(handle.fileno())
            os.replace(bak_tmp, backup_path)
        size = tmp.stat().st_size
        os.replace(tmp, target)
        _fsync_dir(target.parent)
        return WriteResult(str(target), backup_path, size)
    finally:
        if tmp.exists():
            tmp.unlink()
