"""Streaming JSONL reading that keeps line numbers and reports every malformed line.

A line is parsed with one `orjson.loads` on its bytes (which also validates UTF-8); the loop adds only a
few checks per line, so reading stays close to the speed of the fastest JSON parser. Where orjson refuses
a line that the standard library accepts (NaN, Infinity, lone surrogate escapes), the line is parsed
again with `json.loads`: what is accepted, and every error message, is exactly the standard library's.
One difference remains: orjson reads an integer beyond 64 bits as a float (no transcript field holds
one; the bytes of every original line are copied, never re-serialized).
"""

from __future__ import annotations

import functools
import gc
import hashlib
import io
import json
import os
import re
from collections.abc import Callable, Iterable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import IO, Protocol

import orjson

from batchcompact.core.entries import ERROR, WARNING, Problem
from batchcompact.core.jsontypes import JsonObject, JsonValue
from batchcompact.formats.compressed import is_decompress_error, open_session

# A single line longer than this is reported instead of read: it would need that much memory, and more
# to parse. Read in pieces of this size and passed over, so no line costs more memory than this.
MAX_LINE_BYTES = 256 * 1024 * 1024
# Read whole files through a 1 MB buffer: iterating the lines of a 40 MB session takes half the time it
# takes through the default 8 KB one (fewer reads).
READ_BUFFER = 1 << 20


class Digest(Protocol):
    """What the readers feed the bytes they read: a hashlib object, or a `SourceDigest` (which also counts them)."""

    def update(self, data: bytes, /) -> None: ...


class SourceDigest:
    """What a reader consumed: bytes, lines and their SHA-256 (fed every line by `iter_json_lines`)."""

    __slots__ = ("size", "lines", "_sha")

    def __init__(self) -> None:
        self.size = 0
        self.lines = 0
        self._sha = hashlib.sha256()

    def update(self, raw: bytes) -> None:
        self._sha.update(raw)
        self.size += len(raw)
        self.lines += 1

    def update_bytes(self, raw: bytes) -> None:
        """Bytes of a line too long to read (`jsonl.capped_lines`): hashed and counted, not a line."""
        self._sha.update(raw)
        self.size += len(raw)

    @property
    def sha256(self) -> str:
        return self._sha.hexdigest()


def capped_lines(handle: IO[bytes], on_long: Callable[[int, int], None] | None = None, *, first_line: int = 1,
                 digest: Digest | None = None, limit: int | None = None) -> Iterable[bytes]:
    """The lines of `handle` (a binary file read from a line's start, numbered from `first_line`) with none
    longer than `limit` (MAX_LINE_BYTES): a longer one is read in pieces and passed over, `on_long(line
    number, its bytes)` is told, and an empty line stands in its place (every reader passes over an empty
    line in silence), so the numbers of the lines after it stay right. Its bytes still go to `digest`
    (through its `update_bytes` when it counts lines, as `SourceDigest` does: the empty line the caller
    feeds it counts the long one); the caller feeds it the other lines. A plain file no longer than the
    limit cannot hold such a line: its own line iterator is returned, and the readers' loops pay nothing
    for the check (a decompressed stream's size is not known: it is always checked)."""
    limit = limit or MAX_LINE_BYTES
    if isinstance(getattr(handle, "raw", None), io.FileIO):  # a plain file, not a zstd stream
        try:
            if os.fstat(handle.fileno()).st_size - handle.tell() <= limit:
                return handle
        except (OSError, ValueError):
            pass
    return _capped(handle, on_long, first_line, digest, limit)


def _capped(handle: IO[bytes], on_long: Callable[[int, int], None] | None, number: int, digest: Digest | None,
            limit: int) -> Iterator[bytes]:
    read = functools.partial(handle.readline, limit)
    feed = None if digest is None else getattr(digest, "update_bytes", digest.update)
    for raw in iter(read, b""):
        if len(raw) == limit and raw[-1:] != b"\n":
            rest = read()
            if rest:  # longer than the limit (a last line of exactly the limit, with no newline, is kept)
                size = 0
                for piece in (raw, rest):
                    size += len(piece)
                    if feed is not None:
                        feed(piece)
                while rest[-1:] != b"\n":
                    rest = read()
                    if not rest:
                        break
                    size += len(rest)
                    if feed is not None:
                        feed(rest)
                if on_long is not None:
                    on_long(number, size)
                raw = b""
        number += 1
        yield raw


def _describe_json_error(exc: Exception, text: bytes) -> str:
    if isinstance(exc, UnicodeDecodeError):
        return f"invalid UTF-8 at byte {exc.start}"
    if isinstance(exc, RecursionError):
        return "JSON nested too deeply to parse"
    if isinstance(exc, json.JSONDecodeError):
        if exc.doc.strip() and exc.pos >= len(exc.doc.rstrip()):  # `{"type":"session"`: cut, not misspelt
            return "invalid JSON: the line ends before its JSON does (torn: a write cut short?)"
        message = exc.msg[:-3] if exc.msg.endswith(" at") else exc.msg
        return f"invalid JSON: {message} at column {exc.colno}"
    return f"invalid JSON: {exc}"


def loads_line(raw: bytes) -> JsonValue:
    """One JSON line with the standard library's semantics, at orjson's speed when orjson agrees."""
    try:
        return orjson.loads(raw)
    except orjson.JSONDecodeError:
        return json.loads(raw.decode())  # accepts what json accepts; raises json's error otherwise


def iter_json_lines(path: str | Path, problems: list[Problem], *, digest: Digest | None = None, offset: int = 0,
                    first_line: int = 1) -> Iterator[tuple[int, JsonObject]]:
    """Yield (line number, object) for every line that is a JSON object; append a Problem for the rest.

    Blank lines are skipped silently (pi's parser does the same). Only the last line can lack a newline:
    if it does not parse it is reported as a torn line (typical of a file still being written); if it
    parses it is kept with a warning. The loop is the hot path of every reader: one `orjson.loads` per
    line, everything else only on the rare line orjson refuses.

    `digest` (a hashlib object) is fed every byte read, so a caller knows exactly which bytes the objects
    came from. `offset` starts reading at that byte (the start of a line; numbered `first_line`): the
    lines appended after a prefix that was read before.
    """
    name = str(path)
    fast = orjson.loads
    fast_error = orjson.JSONDecodeError
    lineno = first_line - 1

    def too_long(number: int, size: int) -> None:
        problems.append(Problem(name, number, ERROR, f"line of {size} bytes is larger than the limit "
                                                     f"({MAX_LINE_BYTES} bytes); not read"))

    with open_session(path, READ_BUFFER) as handle:  # a zstd transcript is read as its decompressed stream
        if offset:
            handle.seek(offset)
        lines = capped_lines(handle, too_long, first_line=first_line, digest=digest)
        try:
            for raw in lines:  # the file itself, iterated here (a helper generator costs ~8% of a large read)
                lineno += 1
                if digest is not None:
                    digest.update(raw)
                try:
                    obj = fast(raw)
                except fast_error:
                    try:
                        obj = json.loads(raw.decode())
                    except (ValueError, RecursionError) as exc:
                        _report(name, lineno, raw, exc, problems)
                        continue
                if type(obj) is not dict:
                    problems.append(Problem(name, lineno, ERROR, f"line is a JSON {type(obj).__name__}, not an object"))
                    continue
                if raw[-1:] != b"\n":
                    problems.append(Problem(name, lineno, WARNING, "last line has no trailing newline"))
                yield lineno, obj
        except Exception as exc:  # only reading the handle raises here: a damaged zstd stream ends the lines
            if not is_decompress_error(exc):
                raise
            problems.append(Problem(name, lineno - first_line + 2, ERROR,
                                    f"zstd data damaged, nothing after this line can be read: {exc}"))
    if lineno == 0 and not offset:
        problems.append(Problem(name, None, ERROR, "empty file"))


def _report(name: str, lineno: int, raw: bytes, exc: Exception, problems: list[Problem]) -> None:
    if not raw.strip():
        return
    if raw[-1:] != b"\n" and not isinstance(exc, UnicodeDecodeError):
        problems.append(
            Problem(name, lineno, ERROR, "torn last line: no newline and incomplete JSON (still being written?)")
        )
    else:
        problems.append(Problem(name, lineno, ERROR, _describe_json_error(exc, raw)))


@contextmanager
def paused_gc() -> Iterator[None]:
    """Pause the cyclic garbage collector while many acyclic objects are built.

    Parsing allocates millions of dicts and lists; each allocation burst triggers collections that scan
    all of them (about 30% of reading time on big files) and find nothing, since parsed JSON has no cycles.
    Switching the collector back on would still scan every new object once (its youngest generation is
    then huge: 59 ms of a 40 MB session's 280 ms read), so the objects are handed to the oldest generation
    unscanned (`gc.freeze()` then `gc.unfreeze()`), as they would end up after surviving the scans anyway;
    a full collection still sees them. Not when something else froze objects (a pre-forking server):
    unfreezing would undo its freeze.
    """
    enabled = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if enabled:
            if gc.get_freeze_count() == 0:
                gc.freeze()
                gc.enable()
                gc.unfreeze()
            else:
                gc.enable()


def file_size(path: str | Path) -> int | None:
    """The file's size, or None when it cannot be stat'ed (the reader then reports the error)."""
    try:
        return os.stat(path).st_size
    except OSError:
        return None


def dumps_line(obj: JsonObject) -> str:
    """One JSONL line as JavaScript's JSON.stringify writes it (compact, non-ASCII kept, and a lone
    surrogate escaped: `"\\ud83d"`, as a JavaScript agent wrote it when it cut an emoji in half; the
    standard library read it as text, and UTF-8 has no bytes for it)."""
    text = json.dumps(obj, ensure_ascii=False, separators=(",", ":")) + "\n"
    if not text.isascii() and LONE_SURROGATE.search(text):
        return LONE_SURROGATE.sub(_escaped_surrogate, text)
    return text


LONE_SURROGATE = re.compile("[\ud800-\udfff]")


def sendable(text: str) -> str:
    """`text` as a provider can receive it: a lone surrogate (half of an emoji a JavaScript agent cut, which
    UTF-8 has no bytes for) becomes U+FFFD."""
    if text.isascii() or not LONE_SURROGATE.search(text):
        return text
    return LONE_SURROGATE.sub("\ufffd", text)


def _escaped_surrogate(match: re.Match) -> str:
    return f"\\u{ord(match.group()):04x}"
