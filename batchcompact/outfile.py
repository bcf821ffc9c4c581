"""A command's output (`-o FILE`, `--chart FILE`, standard output): written whole or not at all, and a
failure to write it said as such, in one line, never as an internal error.

A file is written to a temp file beside it and renamed over it once complete, so a reader (a cron job's
next step) never sees half a report, and a write that fails (a full disk) leaves the file as it was. An
existing file keeps its mode and owner; a new one gets the mode `>` would give it (the umask's). A link is
followed: the link stays, the file it points to is replaced. A path that exists and is no regular file
(`/dev/stdout`, `/dev/null`, a named pipe) is written directly: renaming over it would replace it; so is
a file we may write in a folder where we may not make the temp file.

Standard output is wrapped (`guard_stdout`): a reader that closed it early (`| head`) stops the command
quietly with exit 141, as SIGPIPE stops `cat`; any other failure (`> /dev/full`) is OutputError.
"""

from __future__ import annotations

import errno
import os
import re
import stat
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any, Protocol, TextIO

from batchcompact.errors import OutputError, StdoutClosed, UsageError

OS_ERROR_NUMBER = re.compile(r"\[errno (\d+)\]|\(os error (\d+)\)")  # in pyarrow's and polars' messages


def _reason(exc: BaseException) -> str:
    """An error's reason in one line: the system's words for its error number where pyarrow or polars
    wrap them in their own ("... Detail: [errno 28] ...", "... (os error 2): PATH")."""
    found = OS_ERROR_NUMBER.search(str(exc))
    if found:
        return os.strerror(int(found.group(1) or found.group(2)))
    return getattr(exc, "strerror", None) or str(exc)


def _failed_writing(exc: BaseException, ours: tuple[str, ...]) -> bool:
    """`exc` is a failure to write the output (an OSError naming no file or one of `ours`, or polars' error
    for one: a ComputeError that names the OS error number); not another file's, met while the output's
    rows were made, which keeps its own name."""
    if type(exc).__name__ == "ComputeError":
        return bool(OS_ERROR_NUMBER.search(str(exc)))
    filename = getattr(exc, "filename", None)
    return isinstance(exc, OSError) and (filename is None or os.fspath(filename) in ours)


NAME_MAX = 255  # bytes in a file name, on every filesystem a session lives on
TEMP_ROOM = 64  # bytes a temp name adds after the file's own name: a mark, a pid, random hex, a host


def fitted_name(name: str) -> str:
    """`name` as it goes into a temp name beside it (`.NAME` + up to TEMP_ROOM bytes): itself, or, when
    that would pass NAME_MAX ("File name too long"), its start cut at a character and 8 hex of its hash,
    the same for the same name (a sweep finds a file's temps by it)."""
    raw = name.encode("utf-8", "surrogateescape")
    if 1 + len(raw) + TEMP_ROOM <= NAME_MAX:
        return name
    import hashlib

    keep = raw[:NAME_MAX - 1 - TEMP_ROOM - 9].decode("utf-8", "ignore")  # whole characters only
    return f"{keep}~{hashlib.sha1(raw).hexdigest()[:8]}"


def check_writable(path: str | None, option: str = "--output", made: str | None = None) -> None:
    """Refuse, before any work, an output FILE whose folder is missing, is no folder or cannot be written
    in: a long `run` should not end by failing to write its results. A folder inside `made` (a folder the
    command makes, `run --output-dir`) may be missing: `make_folder_of` makes it before the FILE is written."""
    if not path:
        return
    folder, later = _folder_of(path, made)
    if later:
        return
    if not os.path.isdir(folder):
        what = "does not exist" if not os.path.exists(folder) else "is not a folder"
        raise UsageError(f"{option} {path}: the folder {folder} {what}")
    if not os.access(folder, os.W_OK | os.X_OK) and not os.access(path, os.W_OK):
        raise UsageError(f"{option} {path}: cannot write in the folder {folder} ({_unwritable(folder)})")


def check_folder(path: str | None, option: str) -> None:
    """Refuse, before any work, an output FOLDER the command would make or write in and cannot: one
    below a file, or whose nearest existing folder may not be written in (permission, a read-only
    filesystem). `run --report-dir` found it only after every session was written and paid for."""
    if not path:
        return
    target = os.path.abspath(os.path.realpath(os.path.expanduser(path)))
    existing = target
    while not os.path.exists(existing) and os.path.dirname(existing) != existing:
        existing = os.path.dirname(existing)
    if not os.path.isdir(existing):
        raise UsageError(f"{option} {path}: {existing} is not a folder")
    if not os.access(existing, os.W_OK | os.X_OK):
        raise UsageError(f"{option} {path}: cannot write in the folder {existing} ({_unwritable(existing)})")


def _unwritable(folder: str) -> str:
    """Why a folder may not be written in, in the system's words for the real error (`-o FILE` and
    `--output-dir` alike): the error of making a file there (`Read-only file system`, `Permission denied`);
    asked only once the folder's permissions said no, so no file is left. Where the file could be made
    after all (root, whom the permissions do not stop), a read-only mount, else the permissions."""
    import tempfile

    try:
        handle, name = tempfile.mkstemp(prefix=".batchcompact-probe-", dir=folder)
    except OSError as exc:
        return exc.strerror or str(exc)
    os.close(handle)
    os.unlink(name)
    try:
        if os.statvfs(folder).f_flag & os.ST_RDONLY:
            return os.strerror(errno.EROFS)
    except OSError:
        pass
    return os.strerror(errno.EACCES)


def _folder_of(path: str, made: str | None) -> tuple[str, bool]:
    """(the folder of output FILE `path`, whether it is missing and inside `made`: made when it is written)."""
    folder = os.path.dirname(os.path.abspath(os.path.realpath(path)))
    if not made or os.path.exists(folder):
        return folder, False
    top = os.path.abspath(os.path.realpath(made))
    return folder, os.path.commonpath([folder, top]) == top


def make_folder_of(path: str, made: str | None) -> None:
    """The folder of output FILE `path`, made when it is inside `made` (see `check_writable`) and missing."""
    folder, later = _folder_of(path, made)
    if later:
        try:
            os.makedirs(folder, exist_ok=True)
        except OSError as exc:
            raise OutputError(f"{path}: cannot write: {_reason(exc)}") from exc


@contextmanager
def replacing(path: str | os.PathLike[str]) -> Iterator[str]:
    """The path to write `path`'s new content to (see the module's doc); renamed over `path` when the block
    ends without an exception, removed when it does not. An OSError of the file becomes OutputError."""
    shown = os.fspath(path)
    target = os.path.realpath(shown)
    try:
        before: os.stat_result | None = os.stat(target)
    except FileNotFoundError:
        before = None
    except OSError as exc:
        raise OutputError(f"{shown}: cannot write: {_reason(exc)}") from exc
    if before is not None and not stat.S_ISREG(before.st_mode):
        yield from _direct(shown, target)
        return
    folder, name = os.path.split(target)
    tmp = os.path.join(folder, f".{fitted_name(name)}.batchcompact-out-{os.getpid()}-{os.urandom(4).hex()}")
    try:
        os.close(os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o666))  # the umask decides, as for `>`
    except OSError as exc:
        if before is None or not os.access(target, os.W_OK):
            raise OutputError(f"{shown}: cannot write: {_reason(exc)}") from exc
        yield from _direct(shown, target)  # a file we may write in a folder we may not: written in place
        return
    try:
        yield tmp
        if before is not None:
            _keep_mode(tmp, before)
        os.replace(tmp, target)
    except BaseException as exc:
        try:
            os.unlink(tmp)
        except OSError:
            pass
        if _failed_writing(exc, (tmp, target)):
            raise OutputError(f"{shown}: cannot write: {_reason(exc)}") from exc
        raise


def _direct(shown: str, target: str) -> Iterator[str]:
    try:
        yield target
    except Exception as exc:
        if _failed_writing(exc, (target,)):
            raise OutputError(f"{shown}: cannot write: {_reason(exc)}") from exc
        raise


def _keep_mode(tmp: str, before: os.stat_result) -> None:
    """The replaced file's mode, and its owner and group where we may (root, or our own)."""
    try:
        os.chown(tmp, before.st_uid, before.st_gid)
    except OSError:
        pass
    os.chmod(tmp, stat.S_IMODE(before.st_mode))


@contextmanager
def open_text(path: str | os.PathLike[str]) -> Iterator[TextIO]:
    """`path` opened for text (UTF-8, no newline translation) through `replacing`."""
    with replacing(path) as where:
        with open(where, "w", encoding="utf-8", newline="") as handle:
            yield handle


def write_text(path: str | os.PathLike[str], text: str) -> None:
    with open_text(path) as handle:
        handle.write(text)


class RawWriter(Protocol):
    """A binary stream's `write`: the bytes taken, or None when a non-blocking stream took none."""

    def write(self, data: memoryview, /) -> int | None: ...


class GuardedStdout:
    """Standard output whose write failures are said as such (StdoutClosed, OutputError); everything else
    is the wrapped stream's."""

    def __init__(self, stream: TextIO) -> None:
        self._stream = stream
        # Text goes to the binary buffer below the text layer, every byte of it: a text stream hands a
        # large write to `BufferedWriter.write`, which returns a short count when the reader leaves during
        # it (`write(1, ..., 652777) = 69632`) and the text layer drops the rest without an error, so
        # `report ... | head -1` ended 0, not 141 (`write_all`). A stream without one (a test's) is used as is.
        self._buffer = getattr(stream, "buffer", None)

    def write(self, text: Any) -> int:  # Any: what a caller hands sys.stdout; not a str: the stream's to refuse
        try:
            if self._buffer is None or not isinstance(text, str):
                return self._stream.write(text)
            write_all(self._buffer, text.encode(self._stream.encoding or "utf-8", self._stream.errors or "strict"))
            if self._stream.line_buffering and "\n" in text:  # a terminal: each line as it comes
                self._buffer.flush()
            return len(text)
        except OSError as exc:
            raise stdout_error(exc) from exc

    def flush(self) -> None:
        try:
            self._stream.flush()
        except OSError as exc:
            raise stdout_error(exc) from exc

    def __getattr__(self, name: str) -> Any:  # Any: the wrapped stream's attribute, whatever it is
        return getattr(self._stream, name)


def write_all(buffer: RawWriter, data: bytes) -> None:
    """Every byte of `data` into a binary stream, looping over short writes (a pipe whose reader left
    mid-write takes part of it and then raises BrokenPipeError: the caller hears of it)."""
    view = memoryview(data)
    while view:
        written = buffer.write(view)
        if written is None:  # a non-blocking stream that took nothing: not standard output's case
            raise BlockingIOError(errno.EAGAIN, os.strerror(errno.EAGAIN))
        view = view[written:]


def stdout_error(exc: OSError) -> BaseException:
    if exc.errno == errno.EPIPE:
        return StdoutClosed()
    return OutputError(f"standard output: cannot write: {_reason(exc)}")


def guard_stdout() -> None:
    """Wrap sys.stdout in GuardedStdout (once; the command line's process only)."""
    import sys

    if sys.stdout is not None and not isinstance(sys.stdout, GuardedStdout):
        sys.stdout = GuardedStdout(sys.stdout)


def silence_stdout() -> None:
    """Point file descriptor 1 at /dev/null once its reader is gone, so that the interpreter's last flush
    at exit does not fail again and print a traceback."""
    try:
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, 1)
        os.close(devnull)
    except OSError:
        pass
