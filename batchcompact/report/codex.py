"""Codex usage from `event_msg` / `token_count` events.

Each event carries the cumulative `total_token_usage` and the request's `last_token_usage`. An event
whose cumulative total equals the previous one repeats a request already counted and is dropped;
`info: null` events only report rate limits. Per-request usage comes from `last_token_usage`.

Normalization (so sums agree with other sources): Codex `input_tokens` INCLUDES cached tokens and
`output_tokens` INCLUDES reasoning. Rows get input = input - cached - cache writes, cache_read = cached,
cache_write = `cache_write_input_tokens` (Codex 0.16x; taken as inside `input_tokens` too, since its
`total_tokens` is input + output), output = output (reasoning_tokens recorded separately, not added again).
Model: the event's own `info.model`, else the latest `turn_context.model` before it; project: `session_meta.cwd`.
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
"""

from __future__ import annotations

from pathlib import Path

from batchcompact.formats.codex import USAGE_FIELDS
from batchcompact.report.lines import ExtractStats, as_int, iter_json_lines, parse_timestamp
from batchcompact.report.schema import UsageRows

WANT = (b"token_count", b'"turn_context"', b'"session_meta"')
# How Codex starts every line: {"timestamp":"…","type":"<item>","payload":{"type":"<event>",… The outer
# type, and an event's own, then say whether the line matters without searching it whole (most of a
# rollout's bytes are response items). A line that starts otherwise is searched for WANT.
START = b'{"timestamp":"'
READ_ITEMS = (b"session_meta", b"turn_context")


def wanted_line(raw: bytes) -> bool:
    """Whether a rollout line can matter to the usage: a `session_meta`, a `turn_context` or a
    `token_count` event (what `extract_codex` reads; it ignores every other line anyway). Plain byte
    tests, no regular expression: this runs for every line of every rollout."""
    if raw.startswith(START):
        end = raw.find(b'"', 14)  # the timestamp's closing quote (a JSON string holds no bare quote)
        if end > 14 and raw[end - 1] != 92 and raw.startswith(b',"type":"', end + 1):  # 92: a backslash
            start = end + 10
            stop = raw.find(b'"', start, start + 40)
            if stop > 0 and raw[stop - 1] != 92:
                item = raw[start:stop]
                if item != b"event_msg":
                    return item in READ_ITEMS
                if raw.startswith(b',"payload":{"type":"token_count"', stop + 1):
                    return True
                if raw.startswith(b',"payload":{"type":"', stop + 1):
                    return False  # another event
                return b"token_count" in raw
    return any(marker in raw for marker in WANT)


def extract_codex(path: str | Path, rows: UsageRows, stats: ExtractStats) -> None:
    path = Path(path)
    file = str(path)
    session_id = project = model = None
    provider = "openai"
    previous_total: tuple | None = None
    copy_second: str | None = None  # the second the inherited history was written in (a child rollout)
    copied_meta = False  # the parent's own session_meta was copied: what follows in that second is its history
    held: list[dict] = []  # events of the copy second in a child without a copied meta: a burst (>= 2) or its own
    child = False

    def release() -> None:
        if len(held) >= 2:
            stats.inherited_dropped += len(held)
        else:
            for kwargs in held:
                rows.add(**kwargs)
        held.clear()

    for number, obj in iter_json_lines(path, stats, wanted_line=wanted_line):
        item_type = obj.get("type")
        payload = obj.get("payload")
        if not isinstance(payload, dict):
            continue
        if item_type == "session_meta":
            if session_id is None:  # forks write more than one; the first is this file's thread
                session_id = payload.get("id")
                project = payload.get("cwd")
                provider = payload.get("model_provider") or provider
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
            continue
        if item_type != "event_msg" or payload.get("type") != "token_count":
            continue
        stats.token_events += 1
        info = payload.get("info")
        if type(info) is not dict:
            stats.info_null += 1
            continue
        named = info.get("model")
        if named and type(named) is str:  # newer rollouts name the model here too
            model = named
        total = info.get("total_token_usage")
        total_key = _counts(total) if type(total) is dict else None
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
        get = last.get
        cached = as_int(get("cached_input_tokens"))
        written = as_int(get("cache_write_input_tokens"))
        when = obj.get("timestamp")
        row = dict(
            source="codex",
            file=file,
            line=number,
            session_id=session_id or _session_from_name(path),
            project=project,
            timestamp=parse_timestamp(when),
            provider=provider,
            model=model or "gpt-5",  # logs before turn_context carried a model (Sept 2025) ran gpt-5
            kind="main",
            # Forked threads copy history; a copied event has the same time and cumulative total.
            dedupe_key=f"codex:{when}:{total_key}" if total_key else None,
            input_tokens=max(as_int(get("input_tokens")) - cached - written, 0),
            output_tokens=as_int(get("output_tokens")),
            cache_read_tokens=cached,
            cache_write_tokens=written,
            reasoning_tokens=as_int(get("reasoning_output_tokens")),
        )
        if in_copy:
            held.append(row)
        else:
            rows.add(**row)
    release()


_INTS = {int}


def _counts(usage: dict) -> tuple[int, ...]:
    """`usage`'s USAGE_FIELDS as ints (missing or not a number: 0); runs for every token_count event."""
    values = tuple(map(usage.get, USAGE_FIELDS))
    if set(map(type, values)) == _INTS:  # the common case, without a Python call per field
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


def _second(timestamp) -> str | None:
    """An ISO time cut to the second (the copy burst's unit)."""
    return timestamp[:19] if isinstance(timestamp, str) and len(timestamp) >= 19 else None


def _session_from_name(path: Path) -> str:
    name = path.name.split(".jsonl")[0]
    return name[-36:] if len(name) >= 36 else name
