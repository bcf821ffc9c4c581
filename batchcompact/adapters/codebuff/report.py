"""Codebuff usage: the assistant messages of each chat's `chat-messages.json`.

Where the files are: `${CODEBUFF_DATA_DIR:-~/.config/{manicode,manicode-dev,manicode-staging}}`
`/projects/<project>/chats/<chat id = ISO time with - for :>/chat-messages.json`; session id
`<channel>/<project>/<chat id>`. `run-state.json` (`contextTokenCount` is context size, not usage;
`creditsUsed`) and `chat-meta.json` are not read.

Usage: a JSON array; assistant messages (`variant` ai/agent or `role` assistant) with
`metadata.usage` or `metadata.codebuff.usage`, else the last assistant entry of
`metadata.runState.sessionState.mainAgentState.messageHistory[].providerOptions.codebuff.{model, usage}`.
Two naming styles occur and they count the cache differently:
- Anthropic style `inputTokens` / `cacheReadInputTokens` / `cacheCreationInputTokens`: input EXCLUDES
  the cache;
- OpenAI style `prompt_tokens` (`promptTokens`) with `prompt_tokens_details.cached_tokens`: the prompt
  INCLUDES the cached tokens, so input = prompt − cached. ccusage 20 takes input = prompt_tokens and adds
  the cached tokens again as cache reads, counting them twice and pricing them twice.
Rows are keyed by the session and the message `id` (else its position and numbers). `credits` are not
dollars and are not taken as a recorded cost. A message without a time takes the chat id's.
"""

from __future__ import annotations

import os
from datetime import UTC, datetime
from pathlib import Path

from batchcompact.adapters.common.documents import read_json
from batchcompact.adapters.common.lines import ExtractStats, as_int, first_str, parse_timestamp
from batchcompact.adapters.common.usage_rows import UsageRows
from batchcompact.core.jsontypes import JsonValue

AGENT = "codebuff"
ASSISTANT = ("ai", "agent", "assistant")


def session_of(path: Path) -> str:
    """`<channel>/projects/<project>/chats/<chat id>/chat-messages.json` -> `<channel>/<project>/<chat id>`."""
    chat = path.parent
    project = chat.parent.parent
    channel = project.parent.parent.name or "manicode"
    return f"{channel}/{project.name}/{chat.name}"


def chat_time(chat_id: str) -> datetime | None:
    """`2026-01-02T03-04-05.000Z` -> that time."""
    day, sep, clock = chat_id.partition("T")
    return parse_timestamp(f"{day}T{clock.replace('-', ':', 2)}") if sep else None


def read_usage(usage: JsonValue) -> tuple[int, int, int, int] | None:
    """(input excluding cache, output, cache read, cache write) of one usage object, or None."""
    if not isinstance(usage, dict):
        return None

    def pick(*keys: str) -> int:
        return next((as_int(usage[k]) for k in keys if as_int(usage.get(k))), 0)

    details = usage.get("prompt_tokens_details") or usage.get("promptTokensDetails")
    cached = 0
    if isinstance(details, dict):
        cached = as_int(details.get("cached_tokens")) or as_int(details.get("cachedTokens"))
    prompt = pick("prompt_tokens", "promptTokens")
    if prompt:  # OpenAI style: the prompt includes the cached tokens
        numbers = (max(prompt - cached, 0), pick("completion_tokens", "completionTokens"), min(cached, prompt),
                   pick("cache_creation_input_tokens", "cacheCreationInputTokens"))
    else:
        numbers = (pick("inputTokens", "input_tokens"), pick("outputTokens", "output_tokens", "completion_tokens"),
                   pick("cacheReadInputTokens", "cache_read_input_tokens") or cached,
                   pick("cacheCreationInputTokens", "cache_creation_input_tokens", "cacheCreationTokens",
                        "cache_creation_tokens"))
    return numbers if any(numbers) else None


def message_usage(message: dict) -> tuple[tuple[int, int, int, int] | None, str | None]:
    metadata = message.get("metadata")
    metadata = metadata if isinstance(metadata, dict) else {}
    model = first_str(metadata, "model")
    codebuff = metadata.get("codebuff")
    codebuff = codebuff if isinstance(codebuff, dict) else {}
    found = read_usage(metadata.get("usage")) or read_usage(codebuff.get("usage"))
    if found:
        return found, model or first_str(codebuff, "model")
    state = metadata.get("runState")
    for key in ("sessionState", "mainAgentState", "messageHistory"):
        state = state.get(key) if isinstance(state, dict) else None
    for entry in reversed(state if isinstance(state, list) else []):
        if not isinstance(entry, dict) or entry.get("role") != "assistant":
            continue
        options = entry.get("providerOptions")
        options = options if isinstance(options, dict) else {}
        inner = options.get("codebuff")
        inner = inner if isinstance(inner, dict) else {}
        found = read_usage(inner.get("usage")) or read_usage(options.get("usage"))
        if found:
            return found, model or first_str(inner, "model")
    return None, model


def extract_codebuff(path: str | Path, rows: UsageRows, stats: ExtractStats) -> None:
    path = Path(path)
    messages = read_json(path, stats)
    if not isinstance(messages, list):
        return
    session_id = session_of(path)
    fallback = chat_time(path.parent.name) or datetime.fromtimestamp(os.stat(path).st_mtime, tz=UTC)
    for position, message in enumerate(messages):
        if not isinstance(message, dict) or (message.get("variant") or message.get("role")) not in ASSISTANT:
            continue
        numbers, model = message_usage(message)
        if numbers is None:
            continue
        metadata = message.get("metadata")
        metadata = metadata if isinstance(metadata, dict) else {}
        when = parse_timestamp(message.get("timestamp") or message.get("createdAt") or metadata.get("timestamp"))
        identity = first_str(message, "id") or f"{position}:{':'.join(map(str, numbers))}"
        rows.add_request(
            AGENT, path, session_id, identity,
            project=None,
            timestamp=when or fallback,
            provider=None,
            model=model,
            input_tokens=numbers[0],
            output_tokens=numbers[1],
            cache_read_tokens=numbers[2],
            cache_write_tokens=numbers[3],
        )
