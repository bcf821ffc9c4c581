"""Writing compacted sessions: atomically, verified, never touching an original unless asked.

Every output is first written to a temporary file in the destination folder, then re-read and verified
while its fsync runs, and only once it is verified and on disk renamed into place. Before the rename the
original is checked again: a file that changed since it was read (a live agent still writing) is not
replaced; an appended output's copied prefix is compared with it byte for byte in the same pass.

A run holds the session's writer lock (`session_lock.py`: a non-blocking flock on the session file) from
the read to the rename, so two runs (whatever their state files) never write the same session at once:
the second skips it. Temp names
carry the writer's pid, a random part and a tag of its host: a temp file is swept when its writer is gone,
judged by pid on the host that wrote it and by age (an hour) elsewhere, since other nodes' processes
cannot be seen from here. The backup of an in-place write is a hard link to the original (atomic,
no copy; a copy created with O_EXCL where the filesystem has no hard links) and never replaces an existing
`NAME.bak` holding different bytes: it takes the first free `NAME.bak.1`, `NAME.bak.2`, ... instead.
Outputs get the source's mode; in place also its owner and group (where permitted).
"""

from __future__ import annotations

import errno
import hashlib
import os
import shutil
import time
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from pathlib import Path
from typing import IO

from batchcompact.adapters.common.files import (  # shared with the database stores (adapters/common/database.py)
    TMP_MARK,
    ChangedDuringRun,
    _host_tag,
    backup_names,
    make_folders,
    temp_name,
)
from batchcompact.agents import get
from batchcompact.core.jsontypes import JsonObject
from batchcompact.core.session import Session
from batchcompact.errors import VerificationError
from batchcompact.formats.compressed import compressor_writer, decompress, is_zstd
from batchcompact.formats.jsonl import dumps_line
from batchcompact.lifecycle import pid_alive
from batchcompact.outfile import fitted_name
from batchcompact.pipeline.durable import Durable, copy_mode, fsync_dir
from batchcompact.pipeline.state import Fingerprint, fingerprint_file

BACKUP_COPY_ERRNOS = {errno.EPERM, errno.EXDEV, errno.EMLINK, errno.ENOTSUP, errno.EOPNOTSUPP}


def copy_file(source: str | Path, target: Path) -> None:
    """`source` copied to `target` through a temp file beside it and a rename (an unchanged session copied
    to --output-dir): a reader never sees half a copy. A session kept in a database goes into a copy of the
    database (made once; the agent's store)."""
    from batchcompact.agents import contracts, store_agent

    agent = store_agent(source)
    if agent is not None and agent.store:
        contracts.store(agent).copy_session(source, target)
        return
    tmp = temp_name(target)
    try:
        make_folders(target.parent)
        shutil.copy2(source, tmp)
        os.replace(tmp, target)
    except BaseException:
        tmp.unlink(missing_ok=True)
        raise


@dataclass(frozen=True)
class WriteResult:
    output_path: str
    backup_path: str | None
    bytes_written: int


# the temp file's fsync (in a thread while it is verified), its folder's and its mode: pipeline/durable.py
def _write_temp(
    target: Path,
    session: Session,
    new_lines: list[JsonObject],
    fingerprint: Fingerprint,
    replacements: dict[int, JsonObject] | None = None,
    in_place: bool = False,
) -> tuple[Path, bool, Durable]:
    """Write original (or migrated) content + new lines to a temp file beside `target`.

    Returns (temp path, appended, its fsync under way) where appended means the original bytes are a
    prefix of the output. Only the `fingerprint.size` bytes that were read and planned are copied:
    bytes a live agent appended since then never reach the output, and a change to those bytes raises
    ChangedDuringRun.
    """
    make_folders(target.parent)
    _remove_stale_temps(target)
    tmp = temp_name(target)
    rewrite = session.migrated and get(session.agent).migrate_on_write  # pi's v1/v2 files are written as v3
    compressed = is_zstd(session.path)
    if compressed and (rewrite or replacements):
        raise VerificationError("a zstd-compressed transcript is compacted by appending only (no pruning)")
    appended = not rewrite and not replacements and not compressed
    replacements = replacements or {}
    source = os.stat(session.path)
    fd = -1
    try:
        # private from the start, then the source's mode: never readable by more people than the original
        fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
        with os.fdopen(fd, "wb", closefd=False) as out:  # fd stays open for its fsync (durable.Durable)
            copy_mode(out.fileno(), source, owner=in_place)
            if compressed:
                _write_compressed(Path(session.path), out, fingerprint, new_lines)
                new_lines = []
            elif rewrite:
                assert session.header is not None
                out.write(dumps_line(session.header).encode())
                for entry in session.entries:
                    data = replacements.get(entry.line, entry.data) if entry.line is not None else entry.data
                    out.write(dumps_line(data).encode())
            else:
                copy = _copy_lines if replacements else _copy_prefix_any
                last = copy(Path(session.path), out, fingerprint, replacements)
                if last not in (b"", b"\n"):
                    out.write(b"\n")
            for line in new_lines:
                out.write(dumps_line(line).encode())
            out.flush()
        durable, fd = Durable(fd), -1  # it closes fd
    except BaseException:
        if fd >= 0:
            os.close(fd)
        tmp.unlink(missing_ok=True)
        raise
    return tmp, appended, durable


def _remove_stale_temps(target: Path) -> None:
    """Remove temp files of `target` left by a run that was killed (its writer is gone)."""
    prefix = f".{fitted_name(target.name)}{TMP_MARK}-"
    try:
        names = [name for name in os.listdir(target.parent) if name.startswith(prefix)]
    except OSError:
        return
    now = time.time()
    for name in names:
        try:
            if _stale(target.parent / name, now):
                (target.parent / name).unlink(missing_ok=True)
        except OSError:
            continue


_STALE_AGE_S = 3600.0  # temp names without a pid (older versions) are swept only when this old


def _owner_of_temp(name: str) -> tuple[int | None, str | None]:
    """(pid, host tag) from `.NAME.batchcompact-tmp-PID[-RANDOM[-HOST]]`; None where the name has none."""
    mark = name.rfind(TMP_MARK + "-")
    if mark < 0:
        return None, None
    parts = name[mark + len(TMP_MARK) + 1:].split("-")
    pid = int(parts[0]) if parts[0].isdigit() else None
    return pid, parts[2] if len(parts) > 2 else None


def _stale(path: Path, now: float) -> bool:
    """Whether the run that wrote temp file `path` is gone: its pid on this host, an hour's age otherwise."""
    pid, host = _owner_of_temp(path.name)
    if pid is not None and (host is None or host == _host_tag()):
        return pid != os.getpid() and not pid_alive(pid)
    return now - path.lstat().st_mtime >= _STALE_AGE_S


def _is_ours(name: str) -> bool:
    return TMP_MARK in name or name.endswith(".batchcompact-copy")


def sweep_stale_temps(folders: Iterable[str]) -> list[Path]:
    """Remove temp files that runs which are gone left in `folders` (killed, OOM, disk full); returns them.

    A temp file names its writer's pid and host: it is removed when that process no longer exists. Names
    without a pid (left by older versions) or written on another host are removed once they are an hour old.
    """
    removed = []
    now = time.time()
    for folder in {Path(f) for f in folders}:
        try:
            names = [n for n in os.listdir(folder) if _is_ours(n)]
        except OSError:
            continue
        for name in names:
            path = folder / name
            try:
                if not _stale(path, now):
                    continue
                path.unlink()
                removed.append(path)
            except OSError:
                continue
    return removed


def _write_compressed(source: Path, out: IO[bytes], fingerprint: Fingerprint, new_lines: list[JsonObject]) -> None:
    """A zstd transcript: the bytes that were read (checked against the fingerprint), decompressed, then
    the new lines, compressed again as one frame. Verification compares the decompressed contents."""
    with open(source, "rb") as src:
        data = src.read(fingerprint.size)
    if len(data) != fingerprint.size or hashlib.sha256(data).hexdigest() != fingerprint.sha256:
        raise ChangedDuringRun(f"{source} changed while it was being compacted")
    plain = decompress(data)
    writer = compressor_writer(out)
    writer.write(plain)
    if plain and not plain.endswith(b"\n"):
        writer.write(b"\n")
    for line in new_lines:
        writer.write(dumps_line(line).encode())
    writer.close()


def _copy_prefix(source: Path, out: IO[bytes], fingerprint: Fingerprint, *, hashed: bool = True) -> bytes:
    """Copy the first `fingerprint.size` bytes of `source`; they must hash to the fingerprint. Returns the last byte.
    `hashed=False`: the copy is not hashed here, because the caller compares it with the source and hashes
    that before anything is renamed (`_check_appended`); a source shorter than the fingerprint still raises."""
    digest = hashlib.sha256() if hashed else None
    remaining = fingerprint.size
    last = b""
    with open(source, "rb") as src:
        while remaining > 0:
            chunk = src.read(min(1 << 20, remaining))
            if not chunk:
                break
            if digest is not None:
                digest.update(chunk)
            out.write(chunk)
            remaining -= len(chunk)
            last = chunk[-1:]
    if remaining or (digest is not None and digest.hexdigest() != fingerprint.sha256):
        raise ChangedDuringRun(f"{source} changed while it was being compacted")
    return last


def _copy_prefix_any(source: Path, out: IO[bytes], fingerprint: Fingerprint,
                     _replacements: dict[int, JsonObject] | None) -> bytes:
    return _copy_prefix(source, out, fingerprint, hashed=False)  # an appended output: _check_appended hashes


def _copy_lines(source: Path, out: IO[bytes], fingerprint: Fingerprint, replacements: dict[int, JsonObject]) -> bytes:
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


def _same_bytes(path: Path, fingerprint: Fingerprint) -> bool:
    try:
        if os.stat(path).st_size != fingerprint.size:
            return False
        return _prefix_hash(path, fingerprint.size) == fingerprint.sha256
    except OSError:
        return False


def make_backup(original: Path, target: Path, fingerprint: Fingerprint) -> tuple[str, bool]:
    """Keep the original's bytes as the first backup name that is free or already holds exactly them.
    Returns (backup path, whether this call created it).

    A hard link: atomic, no copy, same mode and owner. Where links are not possible, a copy written under an
    O_EXCL name. An existing backup with other bytes (an older original) is never replaced.
    """
    original = Path(os.path.realpath(original))  # link(2) on a symlink would link the symlink itself
    for name in backup_names(target):
        try:
            os.link(original, name)
            return str(name), True
        except FileExistsError:
            if _same_bytes(name, fingerprint):
                return str(name), False
            continue
        except OSError as exc:
            if exc.errno not in BACKUP_COPY_ERRNOS:
                raise
        try:
            _copy_exclusive(original, name, fingerprint)
            return str(name), True
        except FileExistsError:
            if _same_bytes(name, fingerprint):
                return str(name), False
    raise OSError(errno.EEXIST, f"no free backup name beside {target}")


def _copy_exclusive(original: Path, name: Path, fingerprint: Fingerprint) -> None:
    source = os.stat(original)
    fd = os.open(name, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
    try:
        with os.fdopen(fd, "wb") as out:
            copy_mode(out.fileno(), source, owner=True)
            _copy_prefix(original, out, fingerprint)
            out.flush()
            os.fsync(out.fileno())
    except BaseException:
        name.unlink(missing_ok=True)
        raise


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


def _check_appended(path: str, tmp: Path, fingerprint: Fingerprint) -> None:
    """`_check_unchanged(path)` and the temp file's first `fingerprint.size` bytes equal to the source's, in
    one pass: each chunk of the source is hashed (its size, mtime and SHA-256 must still be the planned
    ones) and compared byte for byte with the same chunk of the temp file. So the temp file starts with
    exactly the planned bytes, shown with one hash instead of two (docs/reliability.md). ChangedDuringRun
    when the source changed; VerificationError when the source is as planned but the copy in the temp
    file is not."""
    stat = os.stat(path)
    digest = hashlib.sha256()
    same = True
    remaining = fingerprint.size
    with open(path, "rb") as source, open(tmp, "rb") as written:
        while remaining > 0:
            chunk = source.read(min(1 << 20, remaining))
            if not chunk:
                break
            digest.update(chunk)
            same = same and written.read(len(chunk)) == chunk
            remaining -= len(chunk)
        ended = not source.read(1)
    now = (stat.st_size, stat.st_mtime_ns, digest.hexdigest())
    if remaining or not ended or now != (fingerprint.size, fingerprint.mtime_ns, fingerprint.sha256):
        raise ChangedDuringRun(f"{path} changed while it was being compacted")
    if not same:
        raise VerificationError("the original bytes are not a prefix of the output")


def write_session(
    session: Session,
    new_lines: list[JsonObject],
    target: Path,
    fingerprint: Fingerprint,
    verify: Callable[[Path], list[str]],
    *,
    in_place: bool = False,
    backup: bool = True,
    replacements: dict[int, JsonObject] | None = None,
) -> WriteResult:
    """Write `session` + `new_lines` to `target` atomically after verifying the temp file.

    `replacements` (line number -> entry) rewrite those lines (tool-output pruning); every other byte of the
    original is copied unchanged. `verify(temp_path)` returns problems (empty = good). Raises VerificationError or ChangedDuringRun;
    in both cases the temp file is removed and nothing else changed.
    """
    tmp, appended, durable = _write_temp(target, session, new_lines, fingerprint, replacements, in_place)
    try:
        # The verify runs while the temp file's fsync does. For an appended output it parses only the new
        # lines (adapters/pi/read.py read_pi_appended, told the prefix is checked): its answer counts only once
        # `_check_appended` has shown the temp file starts with the planned bytes, before anything is renamed.
        problems = verify(tmp)
        if appended:
            _check_appended(session.path, tmp, fingerprint)  # changed: reported as such, not as a failure
        else:
            _check_unchanged(session.path, fingerprint)
        if problems:
            raise VerificationError("; ".join(problems[:5]))
        durable.wait()
        backup_path = None
        if in_place and backup:
            backup_path, created = make_backup(Path(session.path), target, fingerprint)
        try:
            if in_place:  # check again right before the rename: the backup took time
                _check_unchanged(session.path, fingerprint)
            size = tmp.stat().st_size
            os.replace(tmp, target)
        except BaseException:
            if backup_path and created:  # nothing was replaced: no backup of it either
                Path(backup_path).unlink(missing_ok=True)
            raise
        fsync_dir(target.parent)
        return WriteResult(str(target), backup_path, size)
    finally:
        durable.join()
        if tmp.exists():
            tmp.unlink()


class AlreadyWritten(Exception):
    """The new session file is there already (`write_new_session`): it is left as it is."""

    def __init__(self, path: Path) -> None:
        super().__init__(str(path))
        self.path = path


def write_new_session(target: Path, lines: list[JsonObject], source: str | Path,
                      verify: Callable[[Path], list[str]]) -> Path:
    """Write a new session file (a handoff's) at `target`, whole or not at all: a temp file beside it with
    the source session's mode, synced and verified, then linked into place, never over an existing file
    (AlreadyWritten). The source is only read (its mode)."""
    make_folders(target.parent)
    tmp = temp_name(target)
    fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
    try:
        with os.fdopen(fd, "wb", closefd=False) as out:
            copy_mode(out.fileno(), os.stat(source), owner=False)
            for line in lines:
                out.write(dumps_line(line).encode())
            out.flush()
        os.fsync(fd)
        os.close(fd)
        fd = -1
        problems = verify(tmp)
        if problems:
            raise VerificationError("; ".join(problems[:3]))
        try:
            os.link(tmp, target)  # fails on an existing file: a rerun never replaces a handoff
        except FileExistsError:
            raise AlreadyWritten(target) from None
        fsync_dir(target.parent)
    finally:
        if fd >= 0:
            os.close(fd)
        tmp.unlink(missing_ok=True)
    return target
