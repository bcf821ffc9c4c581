"""Messages as pi's `convertToLlm` gives them to a summarizer (a user message, an assistant's text and tool calls,
a tool result) and a summary call over them, for the built-in summarizer's tests."""

from __future__ import annotations

from batchcompact.core.calls import HISTORY, SummaryCall


def call(messages, kind=HISTORY, max_tokens=2000, previous=None) -> SummaryCall:
    return SummaryCall(
        kind=kind,
        system_prompt="",
        user_prompt="",
        max_tokens=max_tokens,
        messages=tuple(messages),
        previous_summary=previous,
    )


def user(text):
    return {"role": "user", "content": text, "timestamp": 1}


def assistant(*blocks, stop="toolUse"):
    return {"role": "assistant", "content": list(blocks), "stopReason": stop, "timestamp": 1}


def tool_call(id_, name, **arguments):
    return {"type": "toolCall", "id": id_, "name": name, "arguments": arguments}


def text(value):
    return {"type": "text", "text": value}


def result(id_, name, output, error=False):
    return {
        "role": "toolResult",
        "toolCallId": id_,
        "toolName": name,
        "content": [text(output)],
        "isError": error,
        "timestamp": 1,
    }
