"""Find session files under the paths a user gives: files, directories (recursive) and globs."""

from __future__ import annotations

import glob
import itertools
import logging
import os
import re
import stat
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass
from pathlib import Path

from batchcompact.agents import contracts, session_suffixes, store_agent, store_database
from batchcompact.errors import BatchCompactError, UsageError
from batchcompact.formats.jsonl import LONE_SURROGATE

log = logging.getLogger(__name__)

# Files this program leaves beside sessions; never read them as sessions.
IGNORED_SUFFIXES = (".bak", ".tmp", ".partial")
# What a file that is neither a regular file nor a folder is. Such a file is never opened: opening a
# named pipe waits for a writer that may never come (a cron job would hang), and a device may never end.
SPECIAL_KINDS = ((stat.S_ISFIFO, "a named pipe"), (stat.S_ISSOCK, "a socket"), (stat.S_ISCHR, "a character device"),
                 (stat.S_ISBLK, "a block device"))


def printable(text: str) -> str:
    """A file name (or any text) as valid UTF-8 text: bytes that are not UTF-8 (kept by Python as
    surrogates) become `\\xff` escapes, so such names can be stored (SQLite, Parquet) and printed; a lone
    surrogate that stands for no byte (JSON's `"\\ud800"`, which the standard library decodes) becomes
    U+FFFD."""
    try:
        text.encode("utf-8")
        return text
    except UnicodeEncodeError:
        pass
    try:
        return text.encode("utf-8", "surrogateescape").decode("utf-8", "backslashreplace")
    except UnicodeEncodeError:
        return LONE_SURROGATE.sub(_printable_surrogate, text)


def _printable_surrogate(match: re.Match) -> str:
    code = ord(match.group())
    return f"\\x{code - 0xDC00:02x}" if 0xDC80 <= code <= 0xDCFF else "\ufffd"


def resolved(path: str | Path) -> Path:
    """`path.resolve()`, except that a symlink loop (or an unreadable link) resolves to the absolute path
    itself: such a file is still listed, and fails on its own when read ("Too many levels of symbolic links")."""
    try:
        return Path(path).resolve()
    except (OSError, RuntimeError):
        return Path(os.path.abspath(path))


@dataclass(frozen=True)
class ScanItem:
    path: Path
    root: Path  # the argument it was found under; outputs mirror `path` relative to it

    @property
    def relative(self) -> Path:
        try:
            return self.path.relative_to(self.root)
        except ValueError:
            return Path(self.path.name)


def _is_session_name(name: str) -> bool:
    return name.endswith(session_suffixes()) and ".batchcompact-" not in name


def special_kind(path: str | Path) -> str | None:
    """What `path` (links followed) is when it is neither a regular file nor a folder ("a named pipe",
    "a socket", ...), else None; None too when it cannot be stat'ed (its reader then says why)."""
    try:
        mode = os.stat(path).st_mode
    except (OSError, ValueError):
        return None
    if stat.S_ISREG(mode) or stat.S_ISDIR(mode):
        return None
    return next((kind for test, kind in SPECIAL_KINDS if test(mode)), "not a regular file")


def skipped_special(path: str | Path) -> bool:
    """True, with a warning naming it, for a path that is a named pipe, a socket or a device."""
    kind = special_kind(path)
    if kind is None:
        return False
    _warn_once(f"{printable(str(path))}: skipped, {kind}, not a regular file")
    return True


_WARNED: set[str] = set()


def _warn_once(message: str) -> None:
    """A walk's warning, said once per process: `report` walks the same paths twice (the stored result's
    key, then the report), and a user should read each skipped file or folder once."""
    if message not in _WARNED:
        _WARNED.add(message)
        log.warning("%s", message)


def folder_entries(folder: str | Path) -> tuple[list[os.DirEntry], list[os.DirEntry]]:
    """A folder's (files, folders), each sorted by name (links to folders among the folders; an entry whose
    type cannot be read among the files, where reading it says why); nothing, with a warning naming the
    folder and why, when it cannot be listed (the walk goes on with the other folders)."""
    try:
        with os.scandir(folder) as scan:
            entries = sorted(scan, key=lambda e: e.name)
    except OSError as exc:
        _warn_once(f"{printable(str(folder))}: skipped, cannot list this folder: {oserror_text(exc)}")
        return [], []
    files: list[os.DirEntry[str]] = []
    folders: list[os.DirEntry[str]] = []
    for entry in entries:
        try:
            is_dir = entry.is_dir()
        except OSError:
            is_dir = False
        (folders if is_dir else files).append(entry)
    return files, folders


def _walk(root: str | Path) -> Iterator[Path]:
    """Session files under `root` (os.walk's order: a folder's files by name, then its folders by name;
    linked folders and batchcompact's own are not entered; a folder that cannot be listed is named in a
    warning and passed over). A file the directory entry says is regular needs no stat; any other is
    stat'ed, and a pipe, socket or device is skipped (`skipped_special`)."""
    stack = [root]  # folders still to list, the next on top: depth costs no recursion (a tree 1,100 deep)
    while stack:
        files, folders = folder_entries(stack.pop())
        for entry in files:
            if _is_session_name(entry.name) and (is_regular_entry(entry) or not skipped_special(entry.path)):
                yield Path(entry.path)
            elif store_database(entry.name) and is_regular_entry(entry):
                yield from database_sessions(Path(entry.path))
        stack.extend(folder.path for folder in reversed(folders)
                     if not folder.name.startswith(".batchcompact") and not folder.is_symlink())


def database_sessions(db: Path) -> list[Path]:
    """The sessions of an agent's database (OpenClaw's `openclaw-agent.sqlite`), each `<db>#<session id>`;
    the database itself when it cannot be listed (reading it then says why: corrupt, unknown schema)."""
    agent = store_database(db.name)
    assert agent is not None and agent.store is not None
    try:
        return [Path(f"{db}#{session_id}") for session_id in contracts.store(agent).session_ids(db)]
    except (BatchCompactError, OSError):  # its reader reports the database's problem in one line
        return [db]


def is_regular_entry(entry: os.DirEntry) -> bool:
    """The entry is a regular file, links followed (from the directory entry when it is no link: no stat)."""
    try:
        return entry.is_file()
    except OSError:
        return False


def iter_session_files(paths: Iterable[str | Path], require_any: bool = False) -> Iterator[ScanItem]:
    """Every session file under `paths`, each once, in a stable order.

    A file argument is taken whatever its name; directories are walked for `*.jsonl` (and `.jsonl.zst`);
    an argument with `*`, `?` or `[` is a glob (`**` recurses). `~` and $VARIABLES are expanded (a quoted
    argument reaches us unexpanded). A path that does not exist is a usage error, and so are arguments that
    hold no session file at all when `require_any` (the commands' "no session files found under PATH").
    """
    seen: set[Path] = set()
    paths = list(paths)
    for arg in paths:
        text = os.path.expanduser(os.path.expandvars(str(arg)))
        if any(ch in text for ch in "*?[") and not Path(text).exists():
            matches = sorted(glob.glob(text, recursive=True))
            if not matches:
                raise UsageError(f"no session files found under {text!r} (no file matches)")
            base = Path(_glob_base(text))
            candidates: list[tuple[Path, Path]] = []
            for match in matches:
                p = Path(match)
                if p.is_dir():
                    candidates.extend((f, base) for f in _walk(p))
                elif _is_session_name(p.name) and not skipped_special(p):
                    candidates.append((p, base))
                elif store_database(p.name) and not skipped_special(p):
                    candidates.extend((f, base) for f in database_sessions(p))
        else:
            p = Path(text)
            if store_agent(text) is not None and not p.exists():  # one session of a database: <db>#<id>
                candidates = [(p, p.parent)]
            elif not p.exists():
                raise UsageError(f"path not found: {text}")
            elif p.is_dir():
                candidates = [(f, p) for f in _walk(p)]
            elif store_database(p.name) and not skipped_special(p):
                candidates = [(f, p.parent) for f in database_sessions(p)]
            else:
                candidates = [] if skipped_special(p) else [(p, p.parent)]
        for path, root in candidates:
            key = resolved(path)
            if key in seen:
                continue
            seen.add(key)
            yield ScanItem(path, root)
    if require_any and not seen:
        raise UsageError("no session files found under " + ", ".join(str(p) for p in paths))


def check_each_path(paths: Iterable[str | Path], walk: Callable[[str], Iterator[object]] | None = None,
                    globs: bool = True) -> None:
    """Every PATH of a command line names something to read, checked before any work: a PATH that does
    not exist, a glob that matches nothing and a PATH that holds no session file are each a usage error
    naming it (exit 2), among other PATHS as alone. A typo in a crontab must not pass silently because
    another PATH of the line was right. A folder is walked until its first session file (`walk`: the
    command's own walk, default the one `iter_session_files` makes); a file named is always taken.
    `globs`: the command expands `*`, `?` and `[` (`report` takes its PATHS as they are)."""
    walk = walk or _walk
    for arg in paths:
        text = os.path.expanduser(os.path.expandvars(str(arg)))
        if globs and any(ch in text for ch in "*?[") and not Path(text).exists():
            matches = glob.iglob(text, recursive=True)  # lazily: the first session file ends the look
            first = next(matches, None)
            if first is None:
                raise UsageError(f"no session files found under {text!r} (no file matches)")
            found = any(next(iter(walk(m)), None) is not None if os.path.isdir(m)
                        else (_is_session_name(Path(m).name) or store_database(Path(m).name) is not None)
                        and not skipped_special(m)
                        for m in itertools.chain([first], matches))
        elif store_agent(text) is not None and not os.path.exists(text):  # one session of a database: <db>#<id>
            database = text.rsplit("#", 1)[0]
            if not os.path.exists(database):
                raise UsageError(f"path not found: {database}")
            continue  # its reader says whether the database holds that session
        elif not os.path.exists(text):
            raise UsageError(f"path not found: {text}")
        elif os.path.isdir(text):
            found = next(iter(walk(text)), None) is not None
        else:
            found = not skipped_special(text)
        if not found:
            raise UsageError(f"no session files found under {text}")


def _glob_base(pattern: str) -> str:
    parts = Path(pattern).parts
    base: list[str] = []
    for part in parts:
        if any(ch in part for ch in "*?["):
            break
        base.append(part)
    return str(Path(*base)) if base else "."


PARQUET_NOT_SESSION = "a Parquet file, not a session transcript"


def unreadable_reason(path: str, exc: BaseException) -> str:
    """One line for a file that cannot be read as a session: what it is (empty, compressed, binary) or why.
    A database of an agent's sessions (or a session in one) is said in its store's own words, without the
    database's name in front: the row or line that reports the file names it once."""
    if store_agent(path) is not None or store_database(Path(path).name) is not None:
        said = str(exc)
        for named in (path, path.split("#", 1)[0]):  # `DB#id`, or the database the store names first
            if said.startswith(f"{named}: "):
                return said[len(named) + 2:]
        return said
    try:
        with open(path, "rb") as handle:
            head = handle.read(4096)
    except OSError as error:
        return broken_link_reason(path) or f"cannot read: {oserror_text(error)}"
    if not head:
        return "empty file: no session entries"
    if head.startswith(b"\x28\xb5\x2f\xfd"):  # zstd: readable with the zstd extra
        from importlib.util import find_spec

        if find_spec("zstandard") is None:
            return "zstd-compressed transcript: install the zstandard package (pip install 'batchcompact[zstd]')"
        return str(exc) if str(exc).startswith("zstd") else f"zstd-compressed transcript that does not decompress: {exc}"
    if head.startswith(b"\x1f\x8b"):
        return "gzip-compressed: decompress it first (gunzip), then run again"
    if head.startswith((b"PK\x03\x04", b"BZh", b"\xfd7zXZ")):
        return "a compressed archive, not JSONL text"
    if head.startswith(b"PAR1"):  # Parquet's magic: a table (a report, an export), said as one
        return PARQUET_NOT_SESSION
    try:
        text = head.decode("utf-8")
    except UnicodeDecodeError as error:
        if error.start < len(head) - 4:  # not just a character cut by the 4096-byte window
            return f"binary, not UTF-8 JSONL text (byte {error.start})"
        text = ""
    if "\x00" in text:
        return "binary, not JSONL text (NUL bytes)"
    if isinstance(exc, OSError):
        return f"cannot read: {oserror_text(exc)}"
    return str(exc)


def broken_link_reason(path: str | os.PathLike[str]) -> str | None:
    """Why a symbolic link leads to no file, in the words every command uses ("cannot read: Too many
    levels of symbolic links" for a loop, "cannot read: a symbolic link to X, which does not exist");
    None when `path` is no link or its target is there."""
    try:
        if not os.path.islink(path):
            return None
        os.stat(path)
        return None
    except FileNotFoundError:
        try:
            return f"cannot read: a symbolic link to {os.readlink(path)}, which does not exist"
        except OSError as exc:
            return f"cannot read: {oserror_text(exc)}"
    except OSError as exc:
        return f"cannot read: {oserror_text(exc)}"


def missing_file_reason(path: str | os.PathLike[str]) -> str:
    """Why a file that was listed by the driver cannot be opened here, without its path (the row names it):
    a link that leads nowhere says so in the system's words, as `validate` and `run` do ("cannot read:
    Too many levels of symbolic links" for a loop); a file not there at all was removed since, or is on
    a filesystem this node does not see."""
    broken = broken_link_reason(path)
    if broken:
        return broken
    import socket  # only here: ~9 ms of every command's start

    return (f"not found on host {socket.gethostname()} (removed since it was listed, or on a filesystem this "
            "node does not see: with --executor ray, inputs and outputs must be on a filesystem every node sees "
            "at the same path)")


def oserror_text(exc: OSError) -> str:
    """An OSError in one line, without the path the row already names: "Permission denied"."""
    return exc.strerror or str(exc)
