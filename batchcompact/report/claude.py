"""Claude Code usage: one row per API request.

Claude Code writes one assistant line per content block of a response; the lines share
`(message.id, requestId)` and repeat `usage`, early ones with partial `output_tokens`. Per key we keep
the line with the largest usage (output, then total), never the first. Lines that cannot carry a
request's usage (`progress`, `file-history-snapshot`) are skipped by a substring check before JSON
parsing; a line mentioning `"type":"assistant"` is always parsed, so the skip cannot lose a request.

Kinds: a file named `agent-acompact-*` is the compaction sub-agent -> `compaction`; other lines with
`isSidechain: true` (inline Task sub-agents, `subagents/` and legacy `agent-*.jsonl` files) ->
`sidechain`; the rest -> `main`. `<synthetic>` messages (made locally, never billed) are not rows.
Project = the folder under `projects/` (for `<session>/subagents/x.jsonl`, the session's folder's parent).
"""

from __future__ import annotations

from pathlib import Path

from batchcompact.report.lines import ExtractStats, as_int, iter_json_lines, parse_timestamp
from batchcompact.report.schema import UsageRows

SKIP_MARKERS = (b'"type":"progress"', b'"type":"file-history-snapshot"')


def claude_project(path: Path) -> str:
    parent = path.parent
    if parent.name == "subagents":
        parent = parent.parent.parent
    return parent.name


def claude_file_kind(path: Path) -> str | None:
    """`compaction` for the compaction sub-agent's file; None when the kind comes from each line."""
    return "compaction" if path.name.startswith("agent-acompact") else None


def extract_claude(path: str | Path, rows: UsageRows, stats: ExtractStats) -> None:
    path = Path(path)
    file = str(path)
    project = claude_project(path)
    file_kind = claude_file_kind(path)
    is_agent_file = path.name.startswith("agent-") or path.parent.name == "subagents"
    best: dict[tuple[str, str], tuple[tuple[int, int], dict]] = {}
    order: list[tuple[str, str]] = []
    anonymous = 0
    for number, obj in iter_json_lines(
        path, stats, want=(b'"usage"',), skip=SKIP_MARKERS, keep_if=b'"type":"assistant"'
    ):
        if obj.get("type") != "assistant":
            continue
        message = obj.get("message")
        if not isinstance(message, dict):
            continue
        usage = message.get("usage")
        model = message.get("model")
        if not isinstance(usage, dict) or model == "<synthetic>":
            continue
        message_id = message.get("id")
        request_id = obj.get("requestId")
        if not message_id and not request_id:
            anonymous += 1
            key = ("", f"line:{number}")
        else:
            key = (str(message_id or ""), str(request_id or ""))
        record = {
            "line": number,
            "session_id": obj.get("sessionId") or path.stem,
            "timestamp": obj.get("timestamp"),
            "model": model if isinstance(model, str) else None,
            "sidechain": bool(obj.get("isSidechain")) or is_agent_file,
            "usage": usage,
        }
        rank = (as_int(usage.get("output_tokens")), _usage_total(usage))
        previous = best.get(key)
        if previous is None:
            order.append(key)
            best[key] = (rank, record)
        else:
            stats.duplicates += 1
            if rank >= previous[0]:
                best[key] = (rank, record)
    for key in order:
        record = best[key][1]
        usage = record["usage"]
        kind = file_kind or ("sidechain" if record["sidechain"] else "main")
        rows.add(
            source="claude",
            file=file,
            line=record["line"],
            session_id=record["session_id"],
            project=project,
            timestamp=parse_timestamp(record["timestamp"]),
            provider="anthropic",
            model=record["model"],
            kind=kind,
            dedupe_key=f"{key[0]}:{key[1]}" if key[0] else None,
            input_tokens=as_int(usage.get("input_tokens")),
            output_tokens=as_int(usage.get("output_tokens")),
            cache_read_tokens=as_int(usage.get("cache_read_input_tokens")),
            cache_write_tokens=as_int(usage.get("cache_creation_input_tokens")),
        )


def _usage_total(usage: dict) -> int:
    return sum(
        as_int(usage.get(f))
        for f in ("input_tokens", "output_tokens", "cache_read_input_tokens", "cache_creation_input_tokens")
    )
