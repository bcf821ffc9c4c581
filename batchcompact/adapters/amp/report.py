"""Amp usage: one JSON document per thread, rewritten as the thread grows.

Where the files are: `${AMP_DATA_DIR:-~/.local/share/amp}/threads/T-<uuid>.json` (comma-separated).

Usage: threads with a `usageLedger` list one event per model call
(`events[].{id, timestamp, model, credits, tokens.{input, output, total}, toMessageId}`), the cache split
taken from the assistant message the event points at (`messageId == toMessageId`:
`usage.cacheCreationInputTokens`, `usage.cacheReadInputTokens`); the ledger wins over the messages.
Threads without one carry usage on each assistant message (`usage.{model, timestamp, inputTokens,
outputTokens, cacheCreationInputTokens, cacheReadInputTokens, totalInputTokens, credits}`).

Counting: `inputTokens` EXCLUDES the cache counters (`totalInputTokens` is their sum, never added
again). Usage without a model or time (old threads) is skipped, as ccusage does. Rows are keyed by the
thread and the ledger event's id (or the message's id / position), so a thread file copied elsewhere
counts once. Amp `credits` are not dollars and are not taken as a recorded cost.
"""

from __future__ import annotations

from pathlib import Path

from batchcompact.adapters.common.documents import read_object
from batchcompact.adapters.common.lines import (
    ExtractStats,
    as_int,
    as_name,
    first_str,
    parse_timestamp,
    rest_is_output,
)
from batchcompact.adapters.common.usage_rows import UsageRows
from batchcompact.core.jsontypes import JsonValue

AGENT = "amp"


def extract_amp(path: str | Path, rows: UsageRows, stats: ExtractStats) -> None:
    path = Path(path)
    thread = read_object(path, stats)
    if thread is None:
        return
    thread_id = first_str(thread, "id") or path.stem
    messages = [m for m in thread.get("messages") or [] if isinstance(m, dict)]
    ledger = thread.get("usageLedger")
    events = ledger.get("events") if isinstance(ledger, dict) else None
    if isinstance(events, list):
        cache = {}
        for message in messages:
            usage = message.get("usage")
            key = as_name(message.get("messageId"))  # an id; a list or an object is none (unhashable: exit 4)
            if message.get("role") == "assistant" and isinstance(usage, dict) and key:
                cache[key] = (as_int(usage.get("cacheCreationInputTokens")), as_int(usage.get("cacheReadInputTokens")))
        for position, event in enumerate(events):
            if not isinstance(event, dict) or not isinstance(event.get("tokens"), dict):
                continue
            writes, reads = cache.get(as_name(event.get("toMessageId")), (0, 0))
            tokens = event["tokens"]
            add_row(rows, path, thread_id, event.get("timestamp"), first_str(event, "model"),
                    [as_int(tokens.get("input")), as_int(tokens.get("output")), reads, writes],
                    as_int(tokens.get("total")), identity=first_str(event, "id") or f"event{position}")
        return
    for position, message in enumerate(messages):
        usage = message.get("usage")
        if message.get("role") != "assistant" or not isinstance(usage, dict):
            continue
        identity = message.get("messageId")
        add_row(rows, path, thread_id, usage.get("timestamp") or message.get("timestamp"),
                first_str(usage, "model") or first_str(message, "model"),
                [as_int(usage.get(k)) for k in
                 ("inputTokens", "outputTokens", "cacheReadInputTokens", "cacheCreationInputTokens")],
                as_int(usage.get("totalTokens")),
                identity=f"message{identity}" if identity is not None else f"position{position}")


def add_row(rows: UsageRows, path: Path, thread_id: str, when: JsonValue, model: str | None, numbers: list[int],
            total: int, *, identity: str) -> None:
    """numbers: input, output, cache read, cache write."""
    rest_is_output(numbers, total)
    timestamp = parse_timestamp(when)
    if not any(numbers) or model is None or timestamp is None:
        return
    rows.add_request(
        AGENT, path, thread_id, identity,
        project=None,
        timestamp=timestamp,
        provider=None,
        model=model,
        input_tokens=numbers[0],
        output_tokens=numbers[1],
        cache_read_tokens=numbers[2],
        cache_write_tokens=numbers[3],
    )
