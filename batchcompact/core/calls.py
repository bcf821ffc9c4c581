"""The unit of work handed to a summarizer: one model call, fully prepared."""

from __future__ import annotations

from dataclasses import dataclass, field

from batchcompact.core.jsontypes import JsonObject

HISTORY = "history"
TURN_PREFIX = "turn_prefix"
BRANCH = "branch"
HANDOFF = "handoff"  # the whole context, for a new session (core/handoff.py)


@dataclass(frozen=True)
class SummaryCall:
    """One summary to produce.

    `user_prompt` is exactly what a model receives; `messages` are the LLM messages it was built from,
    kept so that the built-in summarizer can read structure and overflow recovery can re-chunk.
    """

    kind: str
    system_prompt: str
    user_prompt: str
    max_tokens: int
    messages: tuple[JsonObject, ...] = ()
    previous_summary: str | None = None
    instructions: str | None = None
    prompt_tokens: int = 0
    meta: JsonObject = field(default_factory=dict, compare=False)
