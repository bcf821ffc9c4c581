"""Rovo Dev CLI usage: one `session_context.json` per session (a pydantic-ai message history), rewritten as
the session grows.

Where the files are: `${ROVO_DATA_DIR:-~/.rovodev}/sessions/<session>/session_context.json`
(`ROVO_DATA_DIR` comma-separated, each folder searched whole), and the folder `sessions.persistenceDir`
in its `config.yml` names (`RovoPlace` in __init__.py). Rovo Dev CLI is not on npm or PyPI (it is
an extension of Atlassian's `acli`), so the format comes from public fixtures: ccusage's Rovo Dev reader
and its tests (tests/data/rovo, with their licence notice).

Usage: `{"id", "timestamp": <epoch s>, "workspace_path", "message_history": [..., {"kind": "response",
"model_name", "provider_name", "provider_response_id", "timestamp": <ISO, µs>, "usage": {...}}]}`. Each
`response` is one model call. Modern usage (pydantic-ai `RunUsage`): `input_tokens` (the whole prompt,
INCLUDING `cache_write_tokens` and `cache_read_tokens`), `output_tokens`; legacy (CLI 0.6.x, pydantic-ai
`Usage`): `request_tokens` (the whole prompt), `response_tokens`, no model and `vendor_id` for the id.
Both copy the provider's own split under `details` (`input_tokens` uncached,
`cache_creation_input_tokens`, `cache_read_input_tokens`, `output_tokens`), which is taken when present;
without it input = prompt − cache write − cache read. The session-level `usage` is cumulative and is
not read.

Dedupe: a fork copies its parent's responses into a new session file, so a response is keyed by the
provider's response id alone (not the session); a legacy response without one by its time, model and
token counts. The session is the folder's name (what the CLI calls it), else `id`; the project is
`workspace_path`. A response without a time takes the session's `timestamp`.
"""

from __future__ import annotations

from pathlib import Path

from batchcompact.adapters.common.documents import read_object
from batchcompact.adapters.common.lines import ExtractStats, as_int, first_str, parse_timestamp
from batchcompact.adapters.common.usage_rows import UsageRows

AGENT = "rovo"


def split(usage: dict) -> tuple[int, int, int, int]:
    """(uncached input, output, cache read, cache write) of one response's usage."""
    details = usage.get("details")
    details = details if isinstance(details, dict) else None
    if details is not None:
        uncached = as_int(details.get("input_tokens"))
        write = as_int(details.get("cache_creation_input_tokens"))
        read = as_int(details.get("cache_read_input_tokens"))
    else:
        write, read = as_int(usage.get("cache_write_tokens")), as_int(usage.get("cache_read_tokens"))
        prompt = max(as_int(usage.get("input_tokens")), as_int(usage.get("request_tokens")))
        uncached = max(prompt - write - read, 0)
    outputs = (as_int(usage.get("output_tokens")), as_int(details.get("output_tokens")) if details else 0,
               as_int(usage.get("response_tokens")))
    output = next((n for n in outputs if n > 0), 0)
    return uncached, output, read, write


def extract_rovo(path: str | Path, rows: UsageRows, stats: ExtractStats) -> None:
    path = Path(path)
    doc = read_object(path, stats)
    if doc is None:
        return
    history = doc.get("message_history")
    if not isinstance(history, list):
        stats.refuse("no `message_history` list: not a Rovo Dev session_context.json")
        return
    session_id = path.parent.name or first_str(doc, "id") or "unknown"
    project = first_str(doc, "workspace_path")
    started = doc.get("timestamp")
    fallback = parse_timestamp(started * 1000) if isinstance(started, (int, float)) and started > 0 else None
    for position, message in enumerate(history):
        if not isinstance(message, dict) or message.get("kind") != "response":
            continue
        usage = message.get("usage")
        if not isinstance(usage, dict):
            continue
        uncached, output, read, write = split(usage)
        if not (uncached or output or read or write):
            continue
        when = parse_timestamp(message.get("timestamp")) or fallback
        if when is None:
            stats.warn(None, f"response {position + 1} has usage but no time (nor the session's); not counted")
            continue
        model = first_str(message, "model_name")
        response_id = first_str(message, "provider_response_id", "vendor_id")
        if response_id:
            key = f"{AGENT}:response:{response_id}"
        else:  # not the session: a legacy fork's copy lives in another session's folder
            stamp = when.isoformat(timespec="milliseconds")
            key = f"{AGENT}:{stamp}:{model or ''}:{uncached}:{output}:{write}:{read}"
        rows.add(
            source=AGENT,
            file=str(path),
            line=None,
            session_id=session_id,
            project=project,
            timestamp=when,
            provider=first_str(message, "provider_name"),
            model=model,
            kind="main",
            dedupe_key=key,
            input_tokens=uncached,
            output_tokens=output,
            cache_read_tokens=read,
            cache_write_tokens=write,
        )
