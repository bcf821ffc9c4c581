"""Claude Code message lines -> pi-shaped messages (content blocks, usage, stop reasons).

Anthropic blocks map to pi's: text -> text, thinking/redacted_thinking -> thinking, tool_use and
server_tool_use -> toolCall{id, name, arguments}, image (base64 source) -> image, other blocks (web
search results, future types) -> text holding their JSON, so their size still counts.
"""

from __future__ import annotations

import json

from batchcompact.adapters.common.lines import as_int, as_name, object_at
from batchcompact.core.context import parse_timestamp_ms
from batchcompact.core.jsontypes import JsonObject, JsonValue

SUMMARY_PREAMBLE = (
    "This session is being continued from a previous conversation that ran out of context. "
    "The summary below covers the earlier portion of the conversation.\n\n"
)
STOP_REASONS = {
    "end_turn": "stop",
    "stop_sequence": "stop",
    "tool_use": "toolUse",
    "max_tokens": "length",
    "refusal": "stop",
    "pause_turn": "stop",
}



def claude_usage(usage: JsonValue) -> dict[str, int] | None:
    """Anthropic usage -> pi usage (input excludes cache reads and writes, as Anthropic reports it)."""
    if not isinstance(usage, dict):
        return None

    def n(key: str) -> int:
        value = usage.get(key)
        return as_int(value)  # 0 for what is not a finite number (inf, NaN)

    out = {
        "input": n("input_tokens"),
        "output": n("output_tokens"),
        "cacheRead": n("cache_read_input_tokens"),
        "cacheWrite": n("cache_creation_input_tokens"),
    }
    out["totalTokens"] = sum(out.values())
    return out


def _blocks_to_pi(content: JsonValue) -> list[JsonObject]:
    """Text/image blocks of a user message or a tool result -> pi blocks."""
    if isinstance(content, str):
        return [{"type": "text", "text": content}]
    out: list[JsonObject] = []
    for block in content if isinstance(content, list) else ():
        if not isinstance(block, dict):
            continue
        kind = block.get("type")
        if kind == "text":
            out.append({"type": "text", "text": block.get("text") or ""})
        elif kind == "image":
            source = object_at(block, "source")
            out.append(
                {
                    "type": "image",
                    "data": source.get("data") or "",
                    "mimeType": source.get("media_type") or "",
                }
            )
        elif kind == "document":
            out.append({"type": "text", "text": "[document]"})
    return out


def _assistant_blocks(content: JsonValue, tool_names: dict[str, str]) -> list[JsonObject]:
    out: list[JsonObject] = []
    if isinstance(content, str):
        return [{"type": "text", "text": content}]
    for block in content if isinstance(content, list) else ():
        if not isinstance(block, dict):
            continue
        kind = block.get("type")
        if kind == "text":
            out.append({"type": "text", "text": block.get("text") or ""})
        elif kind == "thinking":
            out.append(
                {
                    "type": "thinking",
                    "thinking": block.get("thinking") or "",
                    "thinkingSignature": block.get("signature"),
                }
            )
        elif kind == "redacted_thinking":
            out.append(
                {"type": "thinking", "thinking": "", "thinkingSignature": block.get("data"), "redacted": True}
            )
        elif kind in ("tool_use", "server_tool_use"):
            call_id = as_name(block.get("id"))
            name = as_name(block.get("name"))
            tool_names[call_id] = name
            arguments = block.get("input")
            out.append(
                {
                    "type": "toolCall",
                    "id": call_id,
                    "name": name,
                    "arguments": arguments if isinstance(arguments, dict) else {"input": arguments},
                }
            )
        else:  # web_search_tool_result and future blocks: kept as text so their size counts
            out.append({"type": "text", "text": json.dumps(block, ensure_ascii=False)})
    return out


def user_message(obj: JsonObject, tool_names: dict[str, str]) -> JsonObject:
    message = object_at(obj, "message")
    content: JsonValue = message.get("content")  # a list when it holds results
    timestamp = parse_timestamp_ms(obj.get("timestamp"))
    results = (
        [b for b in content if isinstance(b, dict) and b.get("type") == "tool_result"]
        if isinstance(content, list)
        else []
    )
    if not results:
        return {"role": "user", "content": _blocks_to_pi(content), "timestamp": timestamp}
    blocks: list[JsonObject] = []
    for result in results:
        blocks.extend(_blocks_to_pi(result.get("content")))
    others = [b for b in content if isinstance(b, dict) and b.get("type") != "tool_result"]
    blocks.extend(_blocks_to_pi(others))
    ids = [as_name(r.get("tool_use_id")) for r in results]
    return {
        "role": "toolResult",
        "toolCallId": ids[0],
        "toolName": tool_names.get(ids[0], ""),
        "content": blocks,
        "isError": any(bool(r.get("is_error")) for r in results),
        "timestamp": timestamp,
        "toolCallIds": ids,
    }


def assistant_message(lines: list[JsonObject], tool_names: dict[str, str]) -> JsonObject:
    blocks: list[JsonObject] = []
    model = stop = None
    best: tuple[tuple[int, int], dict[str, int]] | None = None
    error = None
    for obj in lines:
        message = object_at(obj, "message")
        blocks.extend(_assistant_blocks(message.get("content"), tool_names))
        model = message.get("model") or model
        stop = message.get("stop_reason") or stop
        if obj.get("isApiErrorMessage"):
            error = obj.get("error") or "API error"
        usage = claude_usage(message.get("usage"))
        if usage is not None and message.get("model") != "<synthetic>":
            rank = (usage["output"], usage["totalTokens"])
            if best is None or rank >= best[0]:
                best = (rank, usage)
    has_calls = any(b["type"] == "toolCall" for b in blocks)
    stop_reason = (
        STOP_REASONS.get(stop, "toolUse" if has_calls else "stop")
        if isinstance(stop, str)
        else ("toolUse" if has_calls else "stop")
    )
    out: JsonObject = {
        "role": "assistant",
        "content": blocks,
        "api": "anthropic-messages",
        "provider": "anthropic",
        "model": model,
        "stopReason": stop_reason,
        "timestamp": parse_timestamp_ms(lines[0].get("timestamp")),
    }
    if error is not None:
        out["stopReason"] = "error"
        out["errorMessage"] = str(error)
    if best is not None:
        out["usage"] = best[1]
    return out


def summary_text(obj: JsonObject) -> str:
    message = object_at(obj, "message")
    content = message.get("content")
    if isinstance(content, list):
        content = "".join(
            b.get("text") or "" for b in content if isinstance(b, dict) and b.get("type") == "text"
        )
    text = content if isinstance(content, str) else ""
    return text[len(SUMMARY_PREAMBLE) :] if text.startswith(SUMMARY_PREAMBLE) else text
