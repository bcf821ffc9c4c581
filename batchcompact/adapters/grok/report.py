"""Grok Build CLI usage: the `turn_completed` events of each session's `updates.jsonl`.

Where the files are: `${GROK_HOME:-~/.grok}/sessions/<work dir>/<session id>/updates.jsonl` (the
append-only conversation log), with `summary.json` (`info.cwd`, `info.git_root_dir`) and `usage.json`
(what `grok usage` prints) beside it. Learned from public descriptions of real files (a third-party
census of 48 session folders, 2026-09) and checked against ccusage 20.0.24's reader on generated files.

Usage: one line per turn, `{"timestamp": <unix s>, "params": {"update": {"sessionUpdate":
"turn_completed", "usage": {inputTokens, outputTokens, cachedReadTokens, cacheCreationTokens,
reasoningTokens, totalTokens, costUsdTicks, modelUsage: {<model>: {...same}}}}}, "_meta": {"eventId"}}`.
Each turn's usage is that turn's own (not a running total): turns are summed. A cancelled turn has
`usage: null` and adds nothing. Sub-agents run as sessions of their own (their own `updates.jsonl`),
and the parent's log does not repeat their tokens, so every log counts once; `usage.json` is not read
(a parent's includes its children's, which would count them twice).

Counting: `inputTokens` INCLUDES `cachedReadTokens` (input + output = total), so input = input − cache
read; reasoning is inside the output count and is only recorded. `costUsdTicks` / 1e10 is the turn's
cost in USD (Grok's unit), the recorded cost used in `auto` mode. One row per model of `modelUsage`
(else one for the turn), keyed `grok:<eventId>:<model>` so a log copied elsewhere counts once.
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
from batchcompact.adapters.common.model_names import price_name
from batchcompact.adapters.common.usage_rows import UsageRows
from batchcompact.formats.scan import printable

AGENT = "grok"
TICKS_PER_USD = 1e10


def session_project(folder: Path) -> str | None:
    """The work directory `summary.json` beside the log records."""
    try:
        summary = json.loads((folder / "summary.json").read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None
    info = summary.get("info") if isinstance(summary, dict) else None
    source = info if isinstance(info, dict) else summary if isinstance(summary, dict) else {}
    found = first_str(source, "cwd", "git_root_dir")
    return printable(found) if found else found  # JSON the standard library read: "\ud800" is text to it


def extract_grok(path: str | Path, rows: UsageRows, stats: ExtractStats) -> None:
    path = Path(path)
    project = session_project(path.parent)
    for number, obj in iter_json_lines(path, stats, want=(b"turn_completed",)):
        params = obj.get("params")
        params = params if isinstance(params, dict) else {}
        update = params.get("update")
        update = update if isinstance(update, dict) else {}
        usage = update.get("usage")
        if update.get("sessionUpdate") != "turn_completed" or not isinstance(usage, dict):
            continue
        meta = obj.get("_meta")
        meta = meta if isinstance(meta, dict) else params.get("_meta")
        meta = meta if isinstance(meta, dict) else {}
        event = first_str(meta, "eventId") or f"{path}:{number}"
        seconds = obj.get("timestamp")
        when = parse_timestamp(seconds * 1000) if isinstance(seconds, (int, float)) else parse_timestamp(seconds)
        if when is None and isinstance(meta.get("agentTimestampMs"), (int, float)):
            when = parse_timestamp(meta["agentTimestampMs"])
        session_id = first_str(params, "sessionId") or path.parent.name
        per_model = usage.get("modelUsage")
        parts = [(m, u) for m, u in per_model.items() if isinstance(u, dict)] if isinstance(per_model, dict) else []
        for model, part in parts or [(None, usage)]:
            total_input = as_int(part.get("inputTokens"))
            cache_read = min(as_int(part.get("cachedReadTokens")), total_input)
            output = as_int(part.get("outputTokens"))
            cache_write = as_int(part.get("cacheCreationTokens"))
            if not (total_input or output or cache_write):
                continue
            ticks = part.get("costUsdTicks")
            rows.add(
                source=AGENT,
                file=str(path),
                line=number,
                session_id=session_id,
                project=project,
                timestamp=when,
                provider="xai",
                model=price_name(model),
                kind="main",
                dedupe_key=f"{AGENT}:{event}:{model or ''}",
                input_tokens=total_input - cache_read,
                output_tokens=output,
                cache_read_tokens=cache_read,
                cache_write_tokens=cache_write,
                reasoning_tokens=as_int(part.get("reasoningTokens")),
                recorded_cost_usd=as_int(ticks) / TICKS_PER_USD if isinstance(ticks, (int, float)) else None,
            )
