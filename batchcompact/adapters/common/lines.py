"""Streaming JSONL for usage extraction: line numbers, cheap skips before parsing, warnings not crashes."""

from __future__ import annotations

import json
import math
import re
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import IO

import orjson

from batchcompact.core.jsontypes import JsonObject, JsonValue
from batchcompact.errors import MissingExtraError
from batchcompact.formats import jsonl
from batchcompact.formats.compressed import ZSTD_MISSING
from batchcompact.formats.jsonl import capped_lines

MAX_WARNINGS_KEPT = 50
SURROGATE_ESCAPE = re.compile(rb"\\u[dD][89a-fA-F]")  # "\ud800": how JSON writes a (lone) surrogate
# a surrogate's own UTF-8 bytes (not UTF-8: json.loads of bytes decodes them with "surrogatepass")
SURROGATE_BYTES = re.compile(rb"\xed[\xa0-\xbf]")


@dataclass
class ExtractStats:
    """What one file's extraction saw. `warnings` name file:line; at most MAX_WARNINGS_KEPT are kept."""

    path: str
    format: str | None = None  # the agent whose usage reader read the file (stored in the caches by this name)
    lines: int = 0
    parsed: int = 0
    skipped_cheap: int = 0
    malformed: int = 0
    rows: int = 0
    duplicates: int = 0  # Claude streaming copies of one request merged away
    token_events: int = 0  # Codex token_count events
    repeats_dropped: int = 0  # Codex events repeating the previous cumulative total
    info_null: int = 0  # Codex rate-limit-only events
    inherited_dropped: int = 0  # Codex events of a parent's history copied into a fork or sub-agent rollout
    read_by_bytes: int = 0  # lines decided by comparing their bytes with a parsed one (Codex), not parsed
    # the rows may hold text that is not valid UTF-8 (`extract_rows` cleans them): JSON the standard library
    # decoded escapes a surrogate (a lone "\ud800" is valid JSON to it), or a file name is not UTF-8
    unclean: bool = False
    unread: int = 0  # 1: the file gave the report nothing it could read (`refuse`: named in a warning)
    incomplete: int = 0  # 1: the file is a usage export cut short: the report lacks rows (exit 1)
    warnings: list[str] = field(default_factory=list)
    warning_count: int = 0
    machines: dict[str, list[str]] = field(default_factory=dict)  # a usage export's machines: name -> ids

    def warn(self, line: int | None, message: str) -> None:
        self.warning_count += 1
        if len(self.warnings) < MAX_WARNINGS_KEPT:
            where = f"{self.path}:{line}" if line else self.path
            self.warnings.append(f"{where}: {message}")

    def refuse(self, message: str) -> None:
        """The whole file is left out (not a session, not readable): a warning naming it, counted as unread."""
        self.unread = 1
        self.warn(None, message)

    def too_long(self, line: int, size: int) -> None:
        """A line longer than MAX_LINE_BYTES (`jsonl.capped_lines`): passed over unread, with a warning."""
        self.malformed += 1
        self.warn(line, f"line of {size} bytes is larger than the limit ({jsonl.MAX_LINE_BYTES} bytes); skipped")

    def to_dict(self) -> JsonObject:
        return dict(self.__dict__)


def open_binary(path: str | Path, buffer: int = 1 << 20) -> IO[bytes]:
    """Open a transcript for reading bytes; `.zst` files are decompressed as a stream. `buffer`: bytes read
    at a time (a whole read takes 1 MB, a look at the first lines much less)."""
    path = Path(path)
    if path.suffix == ".zst":
        try:
            import zstandard
        except ImportError:
            raise MissingExtraError(ZSTD_MISSING) from None
        raw = open(path, "rb")  # noqa: SIM115 - closed with the reader below
        reader = zstandard.ZstdDecompressor().stream_reader(raw, closefd=True)
        import io

        return io.BufferedReader(reader, buffer_size=buffer)
    return open(path, "rb", buffering=buffer)  # noqa: SIM115


def iter_json_lines(
    path: str | Path,
    stats: ExtractStats,
    *,
    want: tuple[bytes, ...] = (),
    skip_starts: tuple[bytes, ...] = (),
    keep_if: bytes | None = None,
    always_first: bool = False,
    wanted_line: Callable[[bytes], object] | None = None,
) -> Iterator[tuple[int, dict]]:
    """Yield (line number, object) for lines worth parsing.

    A line is parsed only if it contains at least one of `want` (when given) and starts with none of
    `skip_starts` (a prefix test costs nothing, a search costs a pass over the line), unless it contains
    `keep_if` (a marker of lines that must not be skipped). `wanted_line`, when given, decides instead of
    `want` (a reader that can tell its lines apart by how they start need not search them whole). `always_first` parses
    line 1 regardless (headers). Invalid JSON, invalid UTF-8 and non-object lines become warnings
    naming file:line. Lines dropped by the substring checks are never parsed, so a malformed line that
    could not carry usage anyway (no `"usage"` in it) passes without a warning: that is the price of
    not parsing them, and `batchcompact validate` is the tool that checks every line.
    """
    one = want[0] if len(want) == 1 and wanted_line is None else None  # the common case, tested inline
    wanted = wanted_line or (_contains_any(want) if one is None else None)
    fast, fast_error = orjson.loads, orjson.JSONDecodeError
    number = skipped = parsed = 0
    with open_binary(path) as fh:
        try:
            for number, raw in enumerate(capped_lines(fh, stats.too_long), start=1):
                if not (always_first and number == 1):
                    if one is not None:
                        if one not in raw:
                            skipped += 1
                            continue
                    elif wanted is not None and not wanted(raw):
                        skipped += 1
                        continue
                    if skip_starts and raw.startswith(skip_starts) and not (keep_if and keep_if in raw):
                        skipped += 1
                        continue
                try:
                    obj = fast(raw)
                except fast_error:  # orjson refuses what json may accept (NaN…): json decides, and words errors
                    obj = slow_load(raw, number, stats)
                    if obj is None:
                        continue
                if not isinstance(obj, dict):
                    stats.malformed += 1
                    stats.warn(number, "not a JSON object; line skipped")
                    continue
                parsed += 1
                yield number, obj
        finally:
            stats.lines += number
            stats.skipped_cheap += skipped
            stats.parsed += parsed


def load_line(raw: bytes, number: int, stats: ExtractStats) -> dict | None:
    """One line's JSON object, or None with a warning naming file:line (invalid JSON or UTF-8, not an
    object; a blank line: None without one). Counts `stats.parsed` / `stats.malformed`."""
    try:
        obj = orjson.loads(raw)
    except orjson.JSONDecodeError:
        obj = slow_load(raw, number, stats)
        if obj is None:
            return None
    if not isinstance(obj, dict):
        stats.malformed += 1
        stats.warn(number, "not a JSON object; line skipped")
        return None
    stats.parsed += 1
    return obj


def slow_load(raw: bytes, number: int, stats: ExtractStats) -> JsonValue:
    """A line orjson refused: `json` decides (it accepts NaN…) and words the error. None for a blank line
    or, with a warning naming file:line, one that is not JSON."""
    if not raw.strip():  # a blank line (tested only here: strip copies the line)
        return None
    try:
        obj = json.loads(raw.decode("utf-8"))
        note_surrogates(raw, stats)
        return obj
    except UnicodeDecodeError:
        stats.malformed += 1
        stats.warn(number, "invalid UTF-8; line skipped")
    except (ValueError, RecursionError) as exc:
        stats.malformed += 1
        torn = " (torn last line?)" if not raw.endswith(b"\n") else ""
        reason = getattr(exc, "msg", None) or "nested too deeply"
        stats.warn(number, f"invalid JSON{torn}: {reason}; line skipped")
    return None


def note_surrogates(raw: bytes | str, stats: ExtractStats) -> None:
    """Mark `stats.unclean` when `raw`, JSON that the standard library decoded (orjson refuses a lone
    surrogate), escapes a surrogate: its rows are cleaned before they are written or printed."""
    data = raw if isinstance(raw, bytes) else raw.encode("utf-8", "surrogatepass")
    if (b"\\u" in data and SURROGATE_ESCAPE.search(data)) or (b"\xed" in data and SURROGATE_BYTES.search(data)):
        stats.unclean = True


def _contains_any(markers: tuple[bytes, ...]) -> Callable[[bytes], bool] | None:
    """A fast `any(m in raw for m in markers)` (None for no markers). Plain `in` tests: a regular
    expression of the alternatives was 2.5x slower on Codex rollouts (it cannot search for a literal)."""
    if not markers:
        return None
    if len(markers) == 2:  # (iter_json_lines tests a single marker inline)
        a, b = markers
        return lambda raw: a in raw or b in raw
    if len(markers) == 3:
        a, b, c = markers
        return lambda raw: a in raw or b in raw or c in raw
    return lambda raw: any(m in raw for m in markers)


def parse_timestamp(value: JsonValue) -> datetime | None:
    """ISO-8601 string or epoch milliseconds -> aware UTC datetime; None when absent or unreadable."""
    if type(value) is str:  # the common case: 3.11's fromisoformat reads "Z" and offsets itself
        try:
            dt = datetime.fromisoformat(value)
        except ValueError:
            pass
        else:
            if dt.tzinfo is UTC:
                return dt
    if value is None or isinstance(value, bool):
        return None
    try:
        if isinstance(value, (int, float)):
            return datetime.fromtimestamp(value / 1000.0, tz=UTC)
        if isinstance(value, str):
            text = value.strip()
            if text.endswith("Z"):
                text = text[:-1] + "+00:00"
            dt = datetime.fromisoformat(text)
            return dt.replace(tzinfo=UTC) if dt.tzinfo is None else dt.astimezone(UTC)
    except (ValueError, OverflowError, OSError):
        return None
    return None


def as_int(value: JsonValue) -> int:
    """Token counts: numbers as int, anything else 0 (also a float that is not finite: int() raises on
    inf and NaN). A count too large to be one is checked where the rows are made (report/extract_rows.py)."""
    if type(value) is int:  # the common case first: this runs for every token field of every request
        return value
    if isinstance(value, bool) or not isinstance(value, (int, float)) or not math.isfinite(value):
        return 0
    return int(value)


def rest_is_output(numbers: list[int], total: int, *, else_into: int | None = None) -> None:
    """A recorded total larger than its parts (`numbers`: input, output, ...): the rest is output when none was
    recorded, else it goes to `numbers[else_into]` when given (Droid's thinking), else it is left out. In place."""
    rest = total - sum(numbers)
    if rest <= 0:
        return
    if not numbers[1]:
        numbers[1] = rest
    elif else_into is not None:
        numbers[else_into] += rest


def as_float(value: JsonValue) -> float | None:
    """Numbers as float (None for anything else, also an int past float's range: 10**400)."""
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        return None
    try:
        return float(value)
    except OverflowError:
        return None


def as_name(value: JsonValue) -> str:
    """An id, a name or a text part as text: a number said as digits, anything else (a list, an object: str()
    of one nested 1,000 levels recursed, exit 4; tests/test_fuzz.py) none."""
    if isinstance(value, str):
        return value
    return str(value) if isinstance(value, int | float) and not isinstance(value, bool) else ""


def object_at(obj: JsonObject, key: str) -> JsonObject:
    """`obj[key]` when it is a JSON object, else an empty one (a missing or malformed part reads as nothing)."""
    value = obj.get(key)
    return value if isinstance(value, dict) else {}


def first_str(obj: dict, *keys: str) -> str | None:
    """The first of `keys` whose value in `obj` is a non-empty string (stripped)."""
    for key in keys:
        value = obj.get(key)
        if isinstance(value, str) and value.strip():
            return value.strip()
    return None
