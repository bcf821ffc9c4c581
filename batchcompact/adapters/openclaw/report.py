"""OpenClaw usage: pi-coding-agent session JSONL under OpenClaw's own folders.

Where the files are: `$OPENCLAW_DIR` (comma-separated) else `~/.openclaw`, and the legacy names
`~/.clawdbot`, `~/.moltbot`, `~/.moldbot`. OpenClaw 2026.9+ keeps each agent's transcripts in
`agents/<agent id>/agent/openclaw-agent.sqlite`, table `transcript_events(session_id, seq, event_json)`,
each event the exact JSONL record; older versions (and exports) write
`agents/<agent id>/sessions/<session id>.jsonl`, plus archived copies `<id>.jsonl.reset.<ts>` /
`<id>.jsonl.deleted.<ts>` beside them. Both are read; a record in both counts once (the key below).

Shape: pi's (`session` header, `model_change {provider, modelId}`, `custom` `model-snapshot`,
`message {message {role, usage}}`). Usage: assistant `message.usage.{input, output, cacheRead,
cacheWrite, totalTokens, cost.total}`; `input` EXCLUDES cache reads, as pi's does; the recorded
`cost.total` is used in `auto` mode. Model from the message, else the last model change.

One file, one agent: a file under an OpenClaw folder is OpenClaw's, never also pi's, so pointing pi's
folder at an OpenClaw tree does not count it twice (ccusage 20 counts such a tree once per adapter).
Archived copies repeat the live file's records: each row is keyed as pi keys its messages
(`usage_rows.PiEntryKeys`: the entry's and the message's times and the token counts, prefix `pi-entry:`), so a
record present in the live file and in a `.reset.` copy, in the database and in an export, or in a copy
of the transcript under pi's folder counts once; an entry with no time falls back to the session and the
entry's `id`.
"""

from __future__ import annotations

from collections.abc import Iterable
from pathlib import Path

from batchcompact.adapters.common.documents import json_column, table_rows
from batchcompact.adapters.common.lines import (
    ExtractStats,
    as_float,
    as_int,
    first_str,
    iter_json_lines,
    parse_timestamp,
    rest_is_output,
)
from batchcompact.adapters.common.usage_rows import PiEntryKeys, UsageRows

AGENT = "openclaw"
WANT = (b'"model_change"', b'"model-snapshot"', b'"usage"')
DATABASE = "openclaw-agent.sqlite"  # per agent: agents/<agent id>/agent/openclaw-agent.sqlite (2026.9+)


def session_from_name(path: Path) -> str:
    """`abc.jsonl`, `abc.jsonl.reset.2026…` -> `abc`."""
    return path.name.split(".jsonl")[0] or path.name


def extract_openclaw(path: str | Path, rows: UsageRows, stats: ExtractStats) -> None:
    """A session JSONL file (or an archive of one), or an agent's `openclaw-agent.sqlite`."""
    path = Path(path)
    if path.name == DATABASE:
        extract_openclaw_db(path, rows, stats)
        return
    records = iter_json_lines(path, stats, want=WANT, always_first=True)
    add_session_rows(str(path), session_from_name(path), records, rows)


def extract_openclaw_db(path: Path, rows: UsageRows, stats: ExtractStats) -> None:
    """OpenClaw 2026.9+: `transcript_events(session_id, seq, event_json)` holds each session's records,
    each the exact JSONL line; they are read per session in `seq` order, like a file. A cold-stored event
    (`event_zstd`, a zstd frame of the line, `event_json` NULL) is decompressed; one that cannot be is
    named in a warning (it was left out of the usage in silence)."""
    sessions: dict[str, list[tuple[int, dict]]] = {}
    for rowid, row in table_rows(path, "transcript_events", stats):
        text = row.get("event_json")
        if text is None and row.get("event_zstd") is not None:
            text = _cold_event(row["event_zstd"], stats, rowid)
        event = json_column(text, stats, f"transcript_events rowid {rowid}")
        if event is not None:
            seq = row.get("seq")
            sessions.setdefault(str(row.get("session_id")), []).append((seq if isinstance(seq, int) else rowid, event))
    for session_id, events in sessions.items():
        add_session_rows(str(path), session_id, sorted(events, key=lambda e: e[0]), rows)


def _cold_event(packed: bytes, stats: ExtractStats, rowid: int) -> str | None:
    from batchcompact.formats.compressed import decompress

    try:
        return decompress(bytes(packed)).decode("utf-8", "replace")
    except Exception as exc:  # a damaged frame, or the zstd extra missing
        stats.malformed += 1
        stats.warn(None, f"transcript_events rowid {rowid}: cannot decompress event_zstd ({exc}); row skipped")
        return None


def add_session_rows(file: str, session_id: str, records: Iterable[tuple[int, dict]], rows: UsageRows) -> None:
    """The rows of one session's records (line or sequence number, record), in order."""
    project = None
    model = provider = None
    keys = PiEntryKeys()
    rank = PiEntryKeys.ORIGINAL
    for number, obj in records:
        kind = obj.get("type")
        if kind == "session":
            session_id = first_str(obj, "id") or session_id
            project = first_str(obj, "cwd")
            rank = PiEntryKeys.rank(obj)
            continue
        if kind == "model_change" or (kind == "custom" and obj.get("customType") == "model-snapshot"):
            source = obj.get("data")
            source = source if isinstance(source, dict) else obj
            model = first_str(source, "modelId", "model") or model
            provider = first_str(source, "provider") or provider
            continue
        message = obj.get("message")
        if kind != "message" or not isinstance(message, dict) or message.get("role") != "assistant":
            continue
        usage = message.get("usage")
        if not isinstance(usage, dict):
            continue
        numbers = [as_int(usage.get(k)) for k in ("input", "output", "cacheRead", "cacheWrite")]
        recorded = tuple(numbers)
        total = as_int(usage.get("totalTokens"))
        rest_is_output(numbers, total)
        if not any(numbers):
            continue
        when = message.get("timestamp") or obj.get("timestamp")
        row_model = first_str(message, "modelId", "model") or model
        cost = usage.get("cost")
        entry_id = first_str(obj, "id")
        identity = entry_id or f"{when}:{row_model}:{':'.join(map(str, numbers))}"
        rows.add(
            source=AGENT,
            file=file,
            line=number,
            session_id=session_id,
            project=project,
            timestamp=parse_timestamp(when),
            provider=first_str(message, "provider") or provider,
            model=row_model,
            kind="main",
            dedupe_key=keys(obj, message, recorded, f"{AGENT}:{session_id}:{identity}"),
            dedupe_rank=rank,
            input_tokens=numbers[0],
            output_tokens=numbers[1],
            cache_read_tokens=numbers[2],
            cache_write_tokens=numbers[3],
            recorded_cost_usd=as_float(cost.get("total")) if isinstance(cost, dict) else None,
        )
