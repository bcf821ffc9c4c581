"""Codex usage from `event_msg` / `token_count` events.

Each event carries the cumulative `total_token_usage` and the request's `last_token_usage`. An event
whose cumulative total equals the previous one repeats a request already counted and is dropped;
`info: null` events only report rate limits. Per-request usage comes from `last_token_usage`.

Normalization (so sums agree with other sources): Codex `input_tokens` INCLUDES cached tokens and
`output_tokens` INCLUDES reasoning. Rows get input = input - cached, cache_read = cached,
cache_write = 0, output = output (reasoning_tokens recorded separately, not added again).
Model: the latest `turn_context.model` before the event; project: `session_meta.cwd`.
`dedupe_key` = event time + cumulative total, so an event copied into a forked rollout is counted once
across files (ccusage #988); two distinct requests never share both.
"""

from __future__ import annotations

from pathlib import Path

from batchcompact.formats.codex import USAGE_FIELDS
from batchcompact.report.lines import ExtractStats, as_int, iter_json_lines, parse_timestamp
from batchcompact.report.schema import UsageRows

WANT = (b"token_count", b'"turn_context"', b'"session_meta"')


def extract_codex(path: str | Path, rows: UsageRows, stats: ExtractStats) -> None:
    path = Path(path)
    file = str(path)
    session_id = project = model = None
    provider = "openai"
    previous_total: tuple | None = None
    for number, obj in iter_json_lines(path, stats, want=WANT):
        item_type = obj.get("type")
        payload = obj.get("payload")
        if not isinstance(payload, dict):
            continue
        if item_type == "session_meta":
            if session_id is None:  # forks write more than one; the first is this file's thread
                session_id = payload.get("id")
                project = payload.get("cwd")
                provider = payload.get("model_provider") or provider
            continue
        if item_type == "turn_context":
            model = payload.get("model") or model
            project = project or payload.get("cwd")
            continue
        if item_type != "event_msg" or payload.get("type") != "token_count":
            continue
        stats.token_events += 1
        info = payload.get("info")
        if not isinstance(info, dict):
            stats.info_null += 1
            continue
        total = info.get("total_token_usage")
        last = info.get("last_token_usage")
        total_key = tuple(as_int(total.get(f)) for f in USAGE_FIELDS) if isinstance(total, dict) else None
        if total_key is not None and total_key == previous_total:
            stats.repeats_dropped += 1
            continue
        if not isinstance(last, dict):
            if total_key is None:
                stats.warn(number, "token_count without usage; not counted")
                continue
            # No per-request figure: use the difference of cumulative totals.
            base = previous_total or (0,) * len(USAGE_FIELDS)
            last = {f: t - b for f, t, b in zip(USAGE_FIELDS, total_key, base, strict=True)}
        previous_total = total_key
        cached = as_int(last.get("cached_input_tokens"))
        rows.add(
            source="codex",
            file=file,
            line=number,
            session_id=session_id or _session_from_name(path),
            project=project,
            timestamp=parse_timestamp(obj.get("timestamp")),
            provider=provider,
            model=model or "gpt-5",  # logs before turn_context carried a model (Sept 2025) ran gpt-5
            kind="main",
            # Forked threads copy history; a copied event has the same time and cumulative total.
            dedupe_key=f"codex:{obj.get('timestamp')}:{total_key}" if total_key else None,
            input_tokens=max(as_int(last.get("input_tokens")) - cached, 0),
            output_tokens=as_int(last.get("output_tokens")),
            cache_read_tokens=cached,
            reasoning_tokens=as_int(last.get("reasoning_output_tokens")),
        )


def _session_from_name(path: Path) -> str:
    name = path.name.split(".jsonl")[0]
    return name[-36:] if len(name) >= 36 else name
