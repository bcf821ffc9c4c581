"""pi's `serializeConversation` (reference section 4): the text a summary model reads."""

from __future__ import annotations

from batchcompact.core.jsontypes import JsonObject, JsonValue
from batchcompact.core.tokens import js_json, js_len

TOOL_RESULT_MAX_CHARS = 2000


def _texts(content: JsonValue) -> str:
    if isinstance(content, str):
        return content
    if not isinstance(content, list):
        return ""
    return "".join(b.get("text") or "" for b in content if isinstance(b, dict) and b.get("type") == "text")


def _truncate(text: str) -> str:
    """Cut at 2000 UTF-16 units, as pi's `text.slice(0, 2000)`, and say how much was cut."""
    length = js_len(text)
    if length <= TOOL_RESULT_MAX_CHARS:
        return text
    if text.isascii():
        head = text[:TOOL_RESULT_MAX_CHARS]
    else:
        units = text.encode("utf-16-le", "surrogatepass")[: TOOL_RESULT_MAX_CHARS * 2]
        head = units.decode("utf-16-le", "surrogatepass")
    return f"{head}\n\n[... {length - TOOL_RESULT_MAX_CHARS} more characters truncated]"


def format_tool_call(block: JsonObject) -> str:
    arguments = block.get("arguments")
    if not isinstance(arguments, dict):
        arguments = {}
    args = ", ".join(f"{key}={js_json(value)}" for key, value in arguments.items())
    return f"{block.get('name', '')}({args})"


def serialize_message(message: JsonObject) -> list[str]:
    role = message.get("role")
    parts: list[str] = []
    if role == "user":
        text = _texts(message.get("content"))
        if text:
            parts.append(f"[User]: {text}")
    elif role == "assistant":
        thinking: list[str] = []
        texts: list[str] = []
        calls: list[str] = []
        for block in message.get("content") or ():
            if not isinstance(block, dict):
                continue
            kind = block.get("type")
            if kind == "thinking":
                thinking.append(block.get("thinking") or "")
            elif kind == "text":
                texts.append(block.get("text") or "")
            elif kind == "toolCall":
                calls.append(format_tool_call(block))
        if thinking:
            joined = "\n".join(thinking)
            if joined:
                parts.append(f"[Assistant thinking]: {joined}")
        if texts:
            joined = "\n".join(texts)
            if joined:
                parts.append(f"[Assistant]: {joined}")
        if calls:
            parts.append(f"[Assistant tool calls]: {'; '.join(calls)}")
    elif role == "toolResult":
        text = _texts(message.get("content"))
        if text:
            parts.append(f"[Tool result]: {_truncate(text)}")
    return parts


def serialize_conversation(messages: list[JsonObject]) -> str:
    """LLM messages (after convert_to_llm) to pi's labelled text, parts joined by a blank line."""
    parts: list[str] = []
    for message in messages:
        parts.extend(serialize_message(message))
    return "\n\n".join(parts)
