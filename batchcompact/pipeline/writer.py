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


def _write_temp(
    target: Path,
    session: Session,
    new_lines: list[dict[str, Any]],
    fingerprint: Fingerprint,
    replacements: dict[int, dict[str, Any]] | None = None,
) -> tuple[Path, bool]:
    """Write original (or migrated) content + new lines to a temp file beside `target`.

    Returns (temp path, appended) where appended means the original bytes are a prefix of the output.
    Only the `fingerprint.size` bytes that were read and planned are copied: bytes a live agent appended
    since then never reach the output, and a change to those bytes raises ChangedDuringRun.
    """
    target.parent.mkdir(parents=True, exist_ok=True)
    _remove_stale_temps(target)
    tmp = target.with_name(f".{target.name}{TMP_MARK}-{os.getpid()}")
    rewrite = session.format == "pi" and session.migrated  # v1/v2 files are written as v3, as pi does
    appended = not rewrite and not replacements
    replacements = replacements or {}
    try:
        with open(tmp, "wb") as out:
            if rewrite:
                assert session.header is not None
                out.write(dumps_line(session.header).encode())
                for entry in session.entries:
                    out.write(dumps_line(replacements.get(entry.line, entry.data)).encode())
            else:
                copy = _copy_lines if replacements else _copy_prefix_any
                last = copy(Path(session.path), out, fingerprint, replacements)
                if last not in (b"", b"\n"):
                    out.write(b"\n")
            for line in new_lines:
                out.write(dumps_line(line).encode())
            out.flush()
            os.fsync(out.fileno())
    except BaseException:
        tmp.unlink(missing_ok=True)
        raise
    return tmp, appended


def _remove_stale_temps(target: Path) -> None:
    """Remove temp files of `target` left by a run that was killed (its pid is gone)."""
    prefix = f".{target.name}{TMP_MARK}-"
    try:
        names = [name for name in os.listdir(target.parent) if name.startswith(prefix)]
    except OSError:
        return
    for name in names:
        pid = name[len(prefix):]
        if not pid.isdigit() or int(pid) == os.getpid():
            continue
        try:
            os.kill(int(pid), 0)
        except ProcessLookupError:
            (target.parent / name).unlink(missing_ok=True)
        except OSError:  # alive, owned by someone else
            pass


def _copy_prefix(source: Path, out: Any, fingerprint: Fingerprint) -> bytes:
    """Copy the first `fingerprint.size` bytes of `source`; they must hash to the fingerprint. Returns the last byte."""
    digest = hashlib.sha256()
    remaining = fingerprint.size
    last = b""
    with open(source, "rb") as src:
        while remaining > 0:
            chunk = src.read(min(1 << 20, remaining))
            if not chunk:
                break
            digest.update(chunk)
            out.write(chunk)
            remaining -= len(chunk)
            last = chunk[-1:]
    if remaining or digest.hexdigest() != fingerprint.sha256:
        raise ChangedDuringRun(f"{source} changed while it was being compacted")
    return last


def _copy_prefix_any(source: Path, out: Any, fingerprint: Fingerprint, _replacements: Any) -> bytes:
    return _copy_prefix(source, out, fingerprint)


def _copy_lines(source: Path, out: Any, fingerprint: Fingerprint, replacements: dict[int, dict[str, Any]]) -> bytes:
    """Copy the bytes that were read line by line, writing `replacements[lineno]` instead of those lines."""
    digest = hashlib.sha256()
    remaining = fingerprint.size
    last = b""
    with open(source, "rb") as src:
        for lineno, raw in enumerate(src, 1):
            if remaining <= 0:
                break
            raw = raw[:remaining]
            remaining -= len(raw)
            digest.update(raw)
            out.write(dumps_line(replacements[lineno]).encode() if lineno in replacements else raw)
            last = raw[-1:] if lineno not in replacements else b"\n"
    if remaining or digest.hexdigest() != fingerprint.sha256:
        raise ChangedDuringRun(f"{source} changed while it was being compacted")
    return last


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


def _check_unchanged(path: str, fingerprint: Fingerprint) -> None:
    current = fingerprint_file(path)
    if (current.size, current.mtime_ns, current.sha256) != (fingerprint.size, fingerprint.mtime_ns, fingerprint.sha256):
        raise ChangedDuringRun(f"{path} changed while it was being compacted")


def write_session(
    session: Session,
    new_lines: list[dict[str, Any]],
    target: Path,
    fingerprint: Fingerprint,
    verify: Callable[[Path], list[str]],
    *,
    in_place: bool = False,
    backup: bool = True,
    replacements: dict[int, dict[str, Any]] | None = None,
) -> WriteResult:
    """Write `session` + `new_lines` to `target` atomically after verifying the temp file.

    `replacements` (line number -> entry) rewrite those lines (tool-output pruning); every other byte of the
    original is copied unchanged. `verify(temp_path)` returns problems (empty = good). Raises VerificationError or ChangedDuringRun;
    in both cases the temp file is removed and nothing else changed.
    """
    tmp, appended = _write_temp(target, session, new_lines, fingerprint, replacements)
    try:
        if appended and _prefix_hash(tmp, fingerprint.size) != fingerprint.sha256:
            raise VerificationError("the original bytes are not a prefix of the output")
        problems = verify(tmp)
        _check_unchanged(session.path, fingerprint)  # a file that changed is reported as such, not as a failure
        if problems:
            raise VerificationError("; ".join(problems[:5]))
        backup_path = None
        if in_place and backup:
            backup_path = str(target) + ".bak"
            bak_tmp = Path(backup_path + TMP_MARK)
            shutil.copy2(session.path, bak_tmp)
            with open(bak_tmp, "rb") as handle:
                os.fsync(handle.fileno())
            os.replace(bak_tmp, backup_path)
        if in_place:  # check again right before the rename: the backup copy took time
            _check_unchanged(session.path, fingerprint)
        size = tmp.stat().st_size
        os.replace(tmp, target)
        _fsync_dir(target.parent)
        return WriteResult(str(target), backup_path, size)
    finally:
        if tmp.exists():
            tmp.unlink()
