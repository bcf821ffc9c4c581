"""Find session files under the paths a user gives: files, directories (recursive) and globs."""

from __future__ import annotations

import glob
import os
from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from pathlib import Path

from batchcompact.agents import session_suffixes
from batchcompact.errors import UsageError

# Files this program leaves beside sessions; never read them as sessions.
IGNORED_SUFFIXES = (".bak", ".tmp", ".partial")


def printable(text: str) -> str:
    """A file name as valid UTF-8 text: bytes that are not UTF-8 (kept by Python as surrogates) become
    `\\xff` escapes, so such names can be stored (SQLite, Parquet) and printed."""
    try:
        text.encode("utf-8")
        return text
    except UnicodeEncodeError:
        return text.encode("utf-8", "surrogateescape").decode("utf-8", "backslashreplace")


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


def _walk(root: Path) -> Iterator[Path]:
    for folder, dirs, files in os.walk(root):
        dirs.sort()
        dirs[:] = [d for d in dirs if not d.startswith(".batchcompact")]
        for name in sorted(files):
            if _is_session_name(name):
                yield Path(folder) / name


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
            candidates = []
            for match in matches:
                p = Path(match)
                candidates.extend((f, base) for f in (_walk(p) if p.is_dir() else [p]) if _is_session_name(f.name))
        else:
            p = Path(text)
            if not p.exists():
                raise UsageError(f"path not found: {text}")
            if p.is_dir():
                candidates = [(f, p) for f in _walk(p)]
            else:
                candidates = [(p, p.parent)]
        for path, root in candidates:
            key = resolved(path)
            if key in seen:
                continue
            seen.add(key)
            yield ScanItem(path, root)
    if require_any and not seen:
        raise UsageError("no session files found under " + ", ".join(str(p) for p in paths))


def _glob_base(pattern: str) -> str:
    parts = Path(pattern).parts
    base: list[str] = []
    for part in parts:
        if any(ch in part for ch in "*?["):
            break
        base.append(part)
    return str(Path(*base)) if base else "."


def unreadable_reason(path: str, exc: BaseException) -> str:
    """One line for a file that cannot be read as a session: what it is (empty, compressed, binary) or why."""
    try:
        with open(path, "rb") as handle:
            head = handle.read(4096)
    except OSError as error:
        return f"cannot read: {oserror_text(error)}"
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


def oserror_text(exc: OSError) -> str:
    """An OSError in one line, without the path the row already names: "Permission denied"."""
    return exc.strerror or str(exc)
