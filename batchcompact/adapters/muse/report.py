"""Muse Code usage: the `model_completed` events of each session's event-sourced `session.jsonl`.

Where the files are: `$XDG_DATA_HOME/muse/sessions/YYYY/MM/DD/<session uuid>/session.jsonl` (default
`~/.local/share`; macOS also `~/Library/Application Support/muse/sessions`), a child agent's log under its
parent's `subagent/<child uuid>/session.jsonl`. Muse Code is on neither npm nor PyPI, so the format comes
from public fixtures: ccusage's Muse reader and its tests (tests/data/muse, with their licence notice).

Usage: every line is an envelope `{"schema_version": 1, "id", "stream": {"kind": "session", "id":
<session>}, "recorded_at": <µs since the epoch>, "payload_type", "payload"}`. A `runtime.session` record
whose `payload.event.kind` is `model_completed` is one model call: `event.model`, `event.usage
{input_tokens, cache_read_tokens (or cached_tokens), cache_write_tokens, output_tokens,
reasoning_tokens}`. `input_tokens` INCLUDES the cache reads: input = input − cache read; reasoning is
inside the output count and only recorded. `runtime.session.metadata`'s `record.workspace_root` is the
project (a child agent's log has none: its parent's, two folders up). Tombstones (no `payload_type`) and every other record add nothing. A child agent's calls are in
its own log only (the parent's does not repeat them), so every log counts once. Muse records no cost:
the price comes from the price table by model. Rows are keyed by session and record id (record ids
repeat across sessions), so a copy of a log counts once.
"""

from __future__ import annotations

import json
from pathlib import Path

from batchcompact.adapters.common.lines import (
    ExtractStats,
    as_int,
    first_str,
    iter_json_lines,
    parse_timestamp,
)
from batchcompact.adapters.common.usage_rows import UsageRows
from batchcompact.formats.scan import printable

AGENT = "muse"


def workspace_root(path: Path) -> str | None:
    """`record.workspace_root` of the first `runtime.session.metadata` record of a log (read plainly: a
    parent's log, for its child's project)."""
    try:
        with open(path, "rb") as handle:
            for raw in handle:
                if b"runtime.session.metadata" not in raw:
                    continue
                try:
                    obj = json.loads(raw)
                except (ValueError, RecursionError):  # nested deeper than json recurses: no line of ours
                    continue
                payload = obj.get("payload") if isinstance(obj, dict) else None
                record = payload.get("record") if isinstance(payload, dict) else None
                if isinstance(record, dict) and first_str(record, "workspace_root"):
                    return first_str(record, "workspace_root")
    except OSError:
        return None
    return None


def extract_muse(path: str | Path, rows: UsageRows, stats: ExtractStats) -> None:
    path = Path(path)
    project: str | None = None
    calls: list[tuple[int, dict]] = []
    for number, obj in iter_json_lines(path, stats, want=(b"model_completed", b"runtime.session.metadata")):
        payload = obj.get("payload")
        payload = payload if isinstance(payload, dict) else {}
        if obj.get("payload_type") == "runtime.session.metadata":
            record = payload.get("record")
            record = record if isinstance(record, dict) else {}
            project = project or first_str(record, "workspace_root")
        elif obj.get("payload_type") == "runtime.session":
            calls.append((number, obj))
    if project is None and path.parent.parent.name == "subagent":
        project = workspace_root(path.parent.parent.parent / path.name)
    for number, obj in calls:
        event = obj["payload"].get("event") if isinstance(obj.get("payload"), dict) else None
        if not isinstance(event, dict) or event.get("kind") != "model_completed":
            continue
        usage = event.get("usage")
        usage = usage if isinstance(usage, dict) else {}
        cache_read = as_int(usage.get("cache_read_tokens")) if "cache_read_tokens" in usage else as_int(
            usage.get("cached_tokens"))
        gross = as_int(usage.get("input_tokens"))
        output, cache_write = as_int(usage.get("output_tokens")), as_int(usage.get("cache_write_tokens"))
        if not (gross or output or cache_read or cache_write):
            continue
        model = first_str(event, "model")
        micros = obj.get("recorded_at")
        when = parse_timestamp(micros // 1000) if isinstance(micros, int) and micros > 0 else None
        if when is None or model is None:
            stats.warn(number, f"a model call without {'a time' if when is None else 'a model'}; not counted")
            continue
        stream = obj.get("stream")
        stream = stream if isinstance(stream, dict) else {}
        session_id = first_str(stream, "id") or path.parent.name
        record_id = first_str(obj, "id") or f"line{number}"
        rows.add_request(
            AGENT, path, session_id, record_id, line=number,
            project=printable(project) if project else None,
            timestamp=when,
            provider=None,
            model=model,
            input_tokens=max(gross - cache_read, 0),
            output_tokens=output,
            cache_read_tokens=cache_read,
            cache_write_tokens=cache_write,
            reasoning_tokens=as_int(usage.get("reasoning_tokens")),
        )
