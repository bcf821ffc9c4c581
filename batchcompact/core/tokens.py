"""pi's token accounting (reference 3.1-3.2): chars/4 per message, context size from usage + trailing.

Lengths are JavaScript string lengths (UTF-16 code units), so a non-BMP character counts 2 as in pi.
"""

from __future__ import annotations

import json
import math
from dataclasses import dataclass

from batchcompact.core.jsontypes import JsonObject, JsonValue

IMAGE_CHARS = 4800


def js_len(text: str) -> int:
    """Length of a string in UTF-16 code units, as JavaScript's `string.length`."""
    if text.isascii():
        return len(text)
    return len(text.encode("utf-16-le", "surrogatepass")) // 2


def js_json(value: JsonValue) -> str:
    """Compact JSON as JavaScript's JSON.stringify writes it (non-ASCII kept)."""
    return json.dumps(value, ensure_ascii=False, separators=(",", ":"))


def _text_chars(content: JsonValue, image_chars: int) -> int:
    if isinstance(content, str):
        return js_len(content)
    chars = 0
    if isinstance(content, list):
        for block in content:
            if not isinstance(block, dict):
                continue
            kind = block.get("type")
            if kind == "text":
                text = block.get("text")
                if isinstance(text, str):
                    chars += js_len(text)
            elif kind == "image":
                chars += image_chars
    return chars


def estimate_chars(message: JsonObject) -> int:
    role = message.get("role")
    if role in ("user", "custom", "toolResult"):
        # Images count 4800 chars everywhere (pi since JUN; user images counted 0 before).
        return _text_chars(message.get("content"), IMAGE_CHARS)
    if role == "assistant":
        chars = 0
        content = message.get("content")
        for block in content if isinstance(content, list) else ():
            if not isinstance(block, dict):
                continue
            kind = block.get("type")
            if kind == "text":
                chars += js_len(block.get("text") or "")
            elif kind == "thinking":
                chars += js_len(block.get("thinking") or "")
            elif kind == "toolCall":
                chars += js_len(block.get("name") or "") + js_len(js_json(block.get("arguments", {})))
        return chars
    if role == "bashExecution":
        return js_len(message.get("command") or "") + js_len(message.get("output") or "")
    if role in ("branchSummary", "compactionSummary"):
        return js_len(message.get("summary") or "")
    return 0


def estimate_tokens(message: JsonObject) -> int:
    """ceil(chars / 4) for one AgentMessage."""
    return math.ceil(estimate_chars(message) / 4)


def usage_tokens(usage: JsonObject) -> int:
    """pi's calculateContextTokens: totalTokens, or the sum of the parts when it is 0 or missing."""
    total = usage.get("totalTokens")
    if total:
        return int(total)
    return int(
        (usage.get("input") or 0)
        + (usage.get("output") or 0)
        + (usage.get("cacheRead") or 0)
        + (usage.get("cacheWrite") or 0)
    )


def usable_usage(message: JsonObject) -> JsonObject | None:
    """The usage of an assistant message that is not aborted or an error, else None."""
    if message.get("role") != "assistant" or message.get("stopReason") in ("aborted", "error"):
        return None
    usage = message.get("usage")
    return usage if isinstance(usage, dict) else None


@dataclass(frozen=True)
class ContextEstimate:
    tokens: int
    usage_tokens: int
    trailing_tokens: int
    last_usage_index: int | None


def estimate_context_tokens(messages: list[JsonObject], usage_from: int = 0) -> ContextEstimate:
    """The context size: last usable assistant usage plus estimates of the messages after it.

    Usage on messages before index `usage_from` is ignored: after a compaction the kept messages carry
    usage measured on the old, larger context (pi guards against that stale usage too).
    """
    for index in range(len(messages) - 1, usage_from - 1, -1):
        usage = usable_usage(messages[index])
        if usage is not None:
            used = usage_tokens(usage)
            trailing = sum(estimate_tokens(m) for m in messages[index + 1 :])
            return ContextEstimate(used + trailing, used, trailing, index)
    total = sum(estimate_tokens(m) for m in messages)
    return ContextEstimate(total, 0, total, None)
