"""Streaming JSONL reading that keeps line numbers and reports every malformed line.

A line is parsed with one `json.loads` on its bytes (which also validates UTF-8); the loop adds only a
few checks per line, so reading stays close to the speed of bare JSON parsing.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from batchcompact.core.entries import ERROR, WARNING, Problem

# A single line longer than this is reported instead of parsed: it would need that much memory again.
MAX_LINE_BYTES = 256 * 1024 * 1024


def _describe_json_error(exc: Exception, text: bytes) -> str:
    if isinstance(exc, UnicodeDecodeError):
        return f"invalid UTF-8 at byte {exc.start}"
    if isinstance(exc, RecursionError):
        return "JSON nested too deeply to parse"
    if isinstance(exc, json.JSONDecodeError):
        message = exc.msg[:-3] if exc.msg.endswith(" at") else exc.msg
        return f"invalid JSON: {message} at column {exc.colno}"
    return f"invalid JSON: {exc}"


def iter_json_lines(path: str | Path, problems: list[Problem]) -> Iterator[tuple[int, dict[str, Any]]]:
    """Yield (line number, object) for every line that is a JSON object; append a Problem for the rest.

    Blank lines are skipped silently (pi's parser does the same). A last line without a newline that
    does not parse is reported as a torn line (typical of a file still being written); one that parses
    is kept with a warning.
    """
    name = str(path)
    with open(path, "rb") as handle:
        lineno = 0
        pending: bytes | None = None
        for raw in handle:
            if pending is not None:
                yield from _parse(name, lineno, pending, problems, torn=False)
            lineno += 1
            pending = raw
        if pending is None:
            problems.append(Problem(name, None, ERROR, "empty file"))
            return
        yield from _parse(name, lineno, pending, problems, torn=not pending.endswith(b"\n"))


def _parse(
    name: str, lineno: int, raw: bytes, problems: list[Problem], torn: bool
) -> Iterator[tuple[int, dict[str, Any]]]:
    if len(raw) > MAX_LINE_BYTES:
        problems.append(Problem(name, lineno, ERROR, f"line of {len(raw)} bytes is larger than the limit"))
        return
    if not raw.strip():
        return
    try:
        obj = json.loads(raw)
    except (ValueError, RecursionError) as exc:
        if torn:
            problems.append(
                Problem(name, lineno, ERROR, "torn last line: no newline and incomplete JSON (still being written?)")
            )
        else:
            problems.append(Problem(name, lineno, ERROR, _describe_json_error(exc, raw)))
        return
    if not isinstance(obj, dict):
        problems.append(Problem(name, lineno, ERROR, f"line is a JSON {type(obj).__name__}, not an object"))
        return
    if torn:
        problems.append(Problem(name, lineno, WARNING, "last line has no trailing newline"))
    yield lineno, obj


def dumps_line(obj: dict[str, Any]) -> str:
    """One JSONL line as JavaScript's JSON.stringify writes it (compact, non-ASCII kept)."""
    return json.dumps(obj, ensure_ascii=False, separators=(",", ":")) + "\n"
