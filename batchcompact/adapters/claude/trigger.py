"""The auto-compaction point of Claude Code: a 200,000-token window unless the 1M context was on (a model id with
the `[1m]` tag, or any recorded reply whose context exceeded 200,000 tokens); auto-compaction at window -
min(model max output, 20,000) - 13,000, measured as the last reply's usage (input + cache creation + cache read
+ output) plus an estimate of what came after it. Constants read in the Claude Code 2.1.328 binary (npm
@anthropic-ai/claude-code-linux-x64): the output reserve cap `20000`, the auto-compact buffer `13000` (threshold
= effective window - 13000), the token count `input_tokens + cache_creation_input_tokens +
cache_read_input_tokens + output_tokens` and the 1M check "last assistant usage > 200000". README.md beside this
file ("When it compacts") lists the sources.

Pure: no I/O (`core/triggers.py` holds the shared `Trigger` and rules)."""

from __future__ import annotations

from collections.abc import Iterable

from batchcompact.core.jsontypes import JsonObject
from batchcompact.core.triggers import Trigger

CLAUDE_WINDOW = 200_000
CLAUDE_1M_WINDOW = 1_000_000
CLAUDE_OUTPUT_RESERVE_CAP = 20_000
CLAUDE_AUTOCOMPACT_BUFFER = 13_000


def claude_window(messages: Iterable[JsonObject]) -> tuple[int, str]:
    """(window, source) of a Claude Code session from its assistant messages (pi-shaped)."""
    for message in messages:
        if message.get("role") != "assistant":
            continue
        model = message.get("model")
        if isinstance(model, str) and model.lower().endswith("[1m]"):
            return CLAUDE_1M_WINDOW, "claude code 1M ([1m] model)"
        usage = message.get("usage")
        if isinstance(usage, dict) and (usage.get("totalTokens") or 0) > CLAUDE_WINDOW:
            return CLAUDE_1M_WINDOW, "claude code 1M (usage above 200k)"
    return CLAUDE_WINDOW, "claude code 200k"


def claude_threshold(window: int, max_output_tokens: int | None = None) -> int:
    """Claude Code's auto-compact point for a window."""
    reserve = min(max_output_tokens or CLAUDE_OUTPUT_RESERVE_CAP, CLAUDE_OUTPUT_RESERVE_CAP)
    return max(window - reserve - CLAUDE_AUTOCOMPACT_BUFFER, 1)


def claude_trigger(*, messages: Iterable[JsonObject] = (), override_window: int | None = None,
                   max_output_tokens: int | None = None, **_: object) -> Trigger:
    """Claude Code's: its 200k/1M window (or --context-window) and its auto-compact point."""
    if override_window:
        window, source = override_window, "--context-window"
    else:
        window, source = claude_window(messages)
    return Trigger(window, source, claude_threshold(window, max_output_tokens))
