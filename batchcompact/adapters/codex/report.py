"""Codex usage from `event_msg` / `token_count` events.

Each event carries the cumulative `total_token_usage` and the request's `last_token_usage`. An event
whose cumulative total equals the previous one repeats a request already counted and is dropped;
`info: null` events only report rate limits. Per-request usage comes from `last_token_usage`.

Normalization (so sums agree with other sources): Codex `input_tokens` INCLUDES cached tokens and
`output_tokens` INCLUDES reasoning. Rows get input = input - cached - cache writes, cache_read = cached,
cache_write = `cache_write_input_tokens` (Codex 0.16x; taken as inside `input_tokens` too, since its
`total_tokens` is input + output), output = output (reasoning_tokens recorded separately, not added again).
Model: the event's own `info.model`, else the latest `turn_context.model` before it; project: `session_meta.cwd`;
branch: `session_meta.git.branch`.
`dedupe_key` = event time + cumulative total, so an event copied into another rollout with its original
time is counted once across files; two distinct requests never share both.

Inherited history. A forked rollout (`session_meta.forked_from_id`) and a `thread_spawn` sub-agent
rollout (`session_meta.source.subagent.thread_spawn.parent_thread_id`) start with a copy of the parent's
history: the parent's own `session_meta`, then its items, every line re-stamped to the moment of the
copy (ccusage #950, #988, #1349). Those requests are the parent's (its own rollout counts them), so in
such a file the `token_count` events stamped in the same second as the copied parent `session_meta` are
not rows; without a copied meta, the events stamped in the child's first second are inherited only when
there are two or more of them (a burst no model answers in; one event there is the child's own quick
first call). Inherited events still set the running total the child's own events are compared with
(`stats.inherited_dropped` counts them).

Reading (README.md beside this file, "How the report reads a rollout"): lines are told apart by how Codex starts them
(`read_lines`); a repeated event and a turn_context equal to the last parsed one but for its turn id are
read by comparing their bytes with that parsed line (`stats.read_by_bytes`), the rest are parsed.
"""

from __future__ import annotations

import operator
import re
from collections.abc import Iterator
from pathlib import Path
from typing import IO

from batchcompact.adapters.codex.read import USAGE_FIELDS
from batchcompact.adapters.common.lines import ExtractStats, as_int, load_line, open_binary, parse_timestamp
from batchcompact.adapters.common.usage_rows import UsageRows
from batchcompact.core.jsontypes import JsonValue
from batchcompact.formats.jsonl import capped_lines

WANT = (b"token_count", b'"turn_context"', b'"session_meta"')
# How Codex starts every line: {"timestamp":"…","type":"<item>","payload":{"type":"<event>",… The outer
# type, and an event's own, then say whether the line matters without searching it whole (most of a
# rollout's bytes are response items). A line that starts otherwise is searched for WANT.
START = b'{"timestamp":"'
READ_ITEMS = (b"session_meta", b"turn_context")
TOKEN_COUNT, TURN_CONTEXT = b"token_count", b"turn_context"
OTHER = b"?"  # a line in another shape: parsed, then read by its keys
INFO, RATE_LIMITS = b',"info":', b',"rate_limits":'
TURN_ID = b',"payload":{"turn_id":"'


def line_kind(raw: bytes) -> tuple[bytes | None, int]:
    """What a rollout line is, from how Codex starts it: (b"session_meta" | b"turn_context" |
    b"token_count", the offset just after that type's closing quote), (None, 0) for a line the usage
    never reads, or (OTHER, 0) for a line in another shape (parse it if it holds a WANT marker). For the
    lines `FIXED_START` does not match: another width of time, another key order, escapes."""
    if raw.startswith(START):
        end = raw.find(b'"', 14)  # the timestamp's closing quote (a JSON string holds no bare quote)
        if end > 14 and raw[end - 1] != 92 and raw.startswith(b',"type":"', end + 1):  # 92: a backslash
            start = end + 10
            stop = raw.find(b'"', start, start + 40)
            if stop > 0 and raw[stop - 1] != 92:
                item = raw[start:stop]
                if item == b"turn_context":
                    return TURN_CONTEXT, stop + 1
                if item != b"event_msg":
                    return (item, stop + 1) if item in READ_ITEMS else (None, 0)
                if raw.startswith(b',"payload":{"type":"token_count"', stop + 1):
                    return TOKEN_COUNT, stop + 33
                if raw.startswith(b',"payload":{"type":"', stop + 1):
                    return None, 0  # another event
    return OTHER, 0


def _info_bytes(raw: bytes, at: int) -> bytes | None:
    """A canonical token_count line's bytes from its `info` value to `,"rate_limits":` (`at`: just after
    the event's type), or None. They are the whole info only if `_whole_object` says so."""
    if not raw.startswith(INFO, at):
        return None
    end = raw.find(RATE_LIMITS, at + 8)
    return raw[at + 8:end] if end > 0 else None


def _whole_object(value: bytes | None) -> bool:
    """`_info_bytes` hold one whole object: they end in a brace and their braces balance (Codex writes no
    brace inside the info's strings), so no `,"rate_limits":` inside the info cut them short."""
    return value is not None and value[-1:] == b"}" and value.count(b"{") == value.count(b"}")


def _turn_rest(raw: bytes, at: int) -> bytes | None:
    """A canonical turn_context line after its time and turn id (`at`: just after its type): two lines
    with equal rests have equal payloads but for `turn_id`. None when the id holds an escape."""
    if not raw.startswith(TURN_ID, at):
        return raw[at:]
    start = at + len(TURN_ID)
    end = raw.find(b'"', start)
    return raw[end:] if end > 0 and raw[end - 1] != 92 else None


def _repeats(raw: bytes, at: int, info: bytes) -> bool:
    """`_info_bytes(raw, at) == info` for the last parsed event's `info` (a `_whole_object`), compared in place:
    `info` holds no `,"rate_limits":` (its bytes were cut at the first one) and ends in a brace, which that
    marker does not hold, so an occurrence right after the equal bytes is the first one after the key."""
    start = at + 8
    return (raw.startswith(info, start) and raw.startswith(INFO, at)
            and raw.startswith(RATE_LIMITS, start + len(info)))


def _same_turn(raw: bytes, at: int, rest: bytes) -> bool:
    """`_turn_rest(raw, at) == rest`, compared in place (no copy of the line's rest)."""
    if not raw.startswith(TURN_ID, at):
        return len(raw) - at == len(rest) and raw.endswith(rest)
    end = raw.find(b'"', at + len(TURN_ID))
    return end == len(raw) - len(rest) and end > 0 and raw[end - 1] != 92 and raw.endswith(rest)


def _is_one_line(raw: bytes) -> bool:
    """The line ends as a finished JSON object and holds one record (two records glued by a torn write
    would hold a second start): only such a line may be read by its bytes."""
    return raw.endswith(b"}\n") and raw.find(START, 1) < 0


# Codex's usual line start, a 24-character time (no quote or backslash in it), then the types: a response
# item (1), a token_count event (2; any other event matches with no group), a turn context (3).
FIXED_START = re.compile(
    rb'\{"timestamp":"[^"\\]{24}","type":"(?:(response_item)"|event_msg","payload":\{"type":"(?:(token_count)")?'
    rb'|(turn_context)")').match


def read_lines(fh: IO[bytes], stats: ExtractStats) -> Iterator[tuple[int, bytes, bytes | None, int]]:
    """(number, line, line_kind's kind and offset) of the lines `extract_codex` reads from `fh`. Most of a
    rollout is response items and other events written with the usual time: `FIXED_START` reads their
    types in one match, without `line_kind`'s searches; a line in another shape goes to `line_kind`."""
    skipped = number = 0
    try:
        for number, raw in enumerate(capped_lines(fh, stats.too_long), start=1):
            fixed = FIXED_START(raw)
            if fixed is not None:
                group = fixed.lastindex
                if group == 2:
                    yield number, raw, TOKEN_COUNT, fixed.end()
                elif group == 3:
                    yield number, raw, TURN_CONTEXT, fixed.end()
                else:
                    skipped += 1  # a response item or another event
                continue
            kind, at = line_kind(raw)
            if kind is None or (kind is OTHER and not any(marker in raw for marker in WANT)):
                skipped += 1
                continue
            yield number, raw, kind, at
    finally:
        stats.lines += number
        stats.skipped_cheap += skipped


def extract_codex(path: str | Path, rows: UsageRows, stats: ExtractStats) -> None:
    path = Path(path)
    with open_binary(path) as fh:
        _read(fh, path, rows, stats)


def _read(fh: IO[bytes], path: Path, rows: UsageRows, stats: ExtractStats) -> None:
    file = str(path)
    session_id = project = model = branch = None
    provider = "openai"
    previous_total: tuple | None = None
    copy_second: str | None = None  # the second the inherited history was written in (a child rollout)
    copied_meta = False  # the parent's own session_meta was copied: what follows in that second is its history
    held = UsageRows()  # events of the copy second in a child without a copied meta: a burst (>= 2) or its own
    child = False
    # Lines read by their bytes (see this folder's README.md, "How the report reads a rollout"): an event whose info is byte for byte the
    # last parsed event's is a repeat; a turn_context equal to the last parsed one but for its turn id
    # names the same model and cwd. Each holds only after a parse of the line it is compared with.
    last_info: bytes | None = None  # the last parsed token_count's info, when its total became previous_total
    last_named: str | None = None  # that info's own model
    last_turn: bytes | None = None  # the last parsed turn_context's rest (_turn_rest)
    turn_model = turn_cwd = None  # that payload's model and cwd

    def release() -> None:
        if len(held) >= 2:
            stats.inherited_dropped += len(held)
        else:
            rows.rows.extend(held.rows)
        held.rows.clear()

    for number, raw, kind, at in read_lines(fh, stats):
        if kind is TOKEN_COUNT:
            if last_info is not None and _repeats(raw, at, last_info) and _is_one_line(raw):
                stats.token_events += 1
                stats.repeats_dropped += 1
                stats.read_by_bytes += 1
                if last_named:
                    model = last_named
                continue
        elif kind is TURN_CONTEXT:
            if last_turn is not None and _same_turn(raw, at, last_turn):
                model = turn_model or model
                project = project or turn_cwd
                stats.read_by_bytes += 1
                continue
        obj = load_line(raw, number, stats)
        if obj is None:
            continue
        item_type = obj.get("type")
        payload = obj.get("payload")
        if not isinstance(payload, dict):
            continue
        if item_type == "session_meta":
            if session_id is None:  # forks write more than one; the first is this file's thread
                session_id = payload.get("id")
                project = payload.get("cwd")
                provider = payload.get("model_provider") or provider
                git = payload.get("git")
                branch = _text(git.get("branch")) if isinstance(git, dict) else None
                child = parent_thread(payload) is not None
                if child:
                    copy_second = _second(obj.get("timestamp"))
            elif child and payload.get("id") != session_id:  # the parent's meta: its copied history follows
                copy_second = _second(obj.get("timestamp"))
                copied_meta = True
            continue
        if item_type == "turn_context":
            model = payload.get("model") or model
            project = project or payload.get("cwd")
            turn_rest = _turn_rest(raw, at) if kind is TURN_CONTEXT else None
            if turn_rest is not None:
                last_turn, turn_model, turn_cwd = turn_rest, payload.get("model"), payload.get("cwd")
            continue
        if item_type != "event_msg" or payload.get("type") != "token_count":
            continue
        stats.token_events += 1
        info = payload.get("info")
        last_info = None
        if type(info) is not dict:
            stats.info_null += 1
            continue
        named = info.get("model")
        if named and type(named) is str:  # newer rollouts name the model here too
            model = named
        total = info.get("total_token_usage")
        total_key = _counts(total) if type(total) is dict else None
        if total_key is not None:  # every way on from here leaves previous_total == total_key
            info_bytes = _info_bytes(raw, at) if kind is TOKEN_COUNT else None
            last_info = info_bytes if _whole_object(info_bytes) else None
            last_named = named if named and type(named) is str else None
        if total_key is not None and total_key == previous_total:
            stats.repeats_dropped += 1
            continue
        last = info.get("last_token_usage")
        if not isinstance(last, dict):
            if total_key is None:
                stats.warn(number, "token_count without usage; not counted")
                continue
            # No per-request figure: use the difference of cumulative totals.
            base = previous_total or (0,) * len(USAGE_FIELDS)
            last = {f: t - b for f, t, b in zip(USAGE_FIELDS, total_key, base, strict=True)}
        previous_total = total_key
        in_copy = copy_second is not None and _second(obj.get("timestamp")) == copy_second
        if in_copy and copied_meta:
            stats.inherited_dropped += 1
            continue
        if not in_copy and copy_second is not None:
            copy_second = None  # the child's own turns from here on
            release()
        given, cached, output, reasoning, _ = _counts(last)  # USAGE_FIELDS
        written = as_int(last.get("cache_write_input_tokens"))
        when = obj.get("timestamp")
        (held if in_copy else rows).add(
            source="codex", file=file, line=number, session_id=session_id or _session_from_name(path),
            project=project, timestamp=parse_timestamp(when), provider=provider,
            model=model or "gpt-5",  # logs before turn_context carried a model (Sept 2025) ran gpt-5
            kind="main",
            # Forked threads copy history; a copied event has the same time and cumulative total.
            dedupe_key=f"codex:{when}:{total_key}" if total_key else None,
            input_tokens=max(given - cached - written, 0), output_tokens=output, cache_read_tokens=cached,
            cache_write_tokens=written, reasoning_tokens=reasoning, branch=branch)
    release()


def _text(value: object) -> str | None:
    """A non-empty string, else None."""
    return value if isinstance(value, str) and value else None


_FIELDS = operator.itemgetter(*USAGE_FIELDS)


def _counts(usage: dict) -> tuple[int, ...]:
    """`usage`'s USAGE_FIELDS as ints (missing or not a number: 0); runs for every token_count event."""
    try:
        values = _FIELDS(usage)
    except KeyError:  # a field missing: 0
        return tuple(as_int(usage.get(field)) for field in USAGE_FIELDS)
    a, b, c, d, e = values  # the common case, without a Python call per field (bool is not int here)
    if type(a) is int and type(b) is int and type(c) is int and type(d) is int and type(e) is int:
        return values
    return tuple(as_int(v) for v in values)


def parent_thread(meta: dict) -> str | None:
    """The thread a rollout was forked or spawned from (its `session_meta` payload), or None."""
    forked = meta.get("forked_from_id")
    if isinstance(forked, str) and forked:
        return forked
    source = meta.get("source")
    subagent = source.get("subagent") if isinstance(source, dict) else None
    spawn = subagent.get("thread_spawn") if isinstance(subagent, dict) else None
    if isinstance(spawn, dict):
        parent = spawn.get("parent_thread_id")
        return parent if isinstance(parent, str) and parent else ""
    return None


def _second(timestamp: JsonValue) -> str | None:
    """An ISO time cut to the second (the copy burst's unit)."""
    return timestamp[:19] if isinstance(timestamp, str) and len(timestamp) >= 19 else None


def _session_from_name(path: Path) -> str:
    name = path.name.split(".jsonl")[0]
    return name[-36:] if len(name) >= 36 else name
