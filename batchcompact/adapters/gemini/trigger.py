"""The auto-compaction point of Gemini CLI: the model's window as Gemini CLI's `tokenLimit` gives it (1,048,576;
256,000 for Gemma 4) and its compression threshold, half of it (`DEFAULT_COMPRESSION_TOKEN_THRESHOLD` 0.5 in
packages/core/src/context/chatCompressionService.ts). Gemini compares its last prompt's token count;
batchcompact its usual measure (the last reply's usage plus an estimate of what came after it).

Pure: no I/O (`core/triggers.py` holds the shared `Trigger` and rules)."""

from __future__ import annotations

from collections.abc import Iterable

from batchcompact.core.jsontypes import JsonObject
from batchcompact.core.triggers import Trigger

GEMINI_TOKEN_LIMIT = 1_048_576  # Gemini CLI tokenLimit(): every model but Gemma 4
GEMMA_4_TOKEN_LIMIT = 256_000
GEMINI_COMPRESSION_FRACTION = 0.5


def gemini_window(model: str | None) -> int:
    """Gemini CLI's `tokenLimit(model)`."""
    return GEMMA_4_TOKEN_LIMIT if isinstance(model, str) and model.startswith("gemma-4-") else GEMINI_TOKEN_LIMIT


def gemini_trigger(*, messages: Iterable[JsonObject] = (), override_window: int | None = None,
                   **_: object) -> Trigger:
    """Gemini CLI's: tokenLimit of the session's model and half of it."""
    if override_window:
        return Trigger(override_window, "--context-window", int(override_window * GEMINI_COMPRESSION_FRACTION))
    model = None
    for message in messages:
        if message.get("role") == "assistant" and message.get("model"):
            model = message["model"]
    window = gemini_window(model)
    return Trigger(window, "gemini cli tokenLimit", int(window * GEMINI_COMPRESSION_FRACTION))
