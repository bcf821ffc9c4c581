"""Overflow recovery: summarize a conversation that does not fit the model's input window, in pieces.

When the prompt would not fit (checked before sending: `call.prompt_tokens`, else chars/4, plus
`max_tokens`, against the window) or the provider answers with a context-length error, the call's messages
are serialized part by part and split into consecutive chunks that fit; the first chunk is summarized,
then each next chunk is folded into the running summary with the update prompt (history) or with the
running summary placed before the chunk (turn prefix, branch). Invariants:
- no message is dropped: every serialized part lands in exactly one chunk, in order (a single part larger
  than a chunk is cut to fit, with a marker saying how much was cut);
- the result records `overflow_calls` (the chunk calls) and `calls` (every call made, including the one
  that was refused), with tokens and cost summed over all of them (cost None if any call was unpriced);
- retryable errors propagate to the pool, which retries the whole recovery.
"""

from __future__ import annotations

import logging

from batchcompact.core.calls import BRANCH, HANDOFF, HISTORY, TURN_PREFIX, SummaryCall
from batchcompact.core.prompts import (
    build_branch_summary_prompt,
    build_handoff_prompt,
    build_summary_prompt,
    build_turn_prefix_prompt,
)
from batchcompact.core.serialize import serialize_message
from batchcompact.summarize.base import ContextTooLongError, Summarizer, SummaryResult, is_free, is_remote
from batchcompact.summarize.redact import merge_counts

log = logging.getLogger(__name__)
CHARS_PER_TOKEN = 4
PROMPT_OVERHEAD_TOKENS = 1500  # instructions + headings template around the conversation
MAX_HALVINGS = 4
MIN_CHUNK_TOKENS = 256


def estimate_prompt_tokens(call: SummaryCall) -> int:
    if call.prompt_tokens:
        return call.prompt_tokens
    return -(-(len(call.system_prompt) + len(call.user_prompt)) // CHARS_PER_TOKEN)


def split_into_chunks(parts: list[str], max_chars: int) -> list[str]:
    """Consecutive parts joined by blank lines into chunks of at most `max_chars` (oversized parts cut)."""
    max_chars = max(max_chars, 1)
    chunks: list[str] = []
    current: list[str] = []
    size = 0
    for part in parts:
        if len(part) > max_chars:
            cut = len(part) - max_chars
            marker = f"\n\n[... {cut} characters cut to fit the summary model's window]"
            part = part[: max(max_chars - len(marker), 0)] + marker
        extra = len(part) + (2 if current else 0)
        if current and size + extra > max_chars:
            chunks.append("\n\n".join(current))
            current, size = [], 0
            extra = len(part)
        current.append(part)
        size += extra
    if current:
        chunks.append("\n\n".join(current))
    return chunks


def build_chunk_prompt(call: SummaryCall, chunk: str, running: str | None) -> str:
    """The prompt for one chunk: the first uses the call's own previous summary, the next fold `running` in."""
    if call.kind == HISTORY:
        return build_summary_prompt(
            chunk, running if running is not None else call.previous_summary, call.instructions,
            budget=call.max_tokens,
        )
    conversation = chunk
    if running is not None:
        conversation = f"[Summary of the earlier part of this conversation]:\n{running}\n\n{chunk}"
    if call.kind == TURN_PREFIX:
        return build_turn_prefix_prompt(conversation, call.instructions, budget=call.max_tokens)
    if call.kind == BRANCH:
        return build_branch_summary_prompt(conversation, call.instructions, budget=call.max_tokens)
    if call.kind == HANDOFF:  # the earlier summary only with the first chunk, as for the history
        return build_handoff_prompt(chunk, running if running is not None else call.previous_summary,
                                    call.instructions, budget=call.max_tokens)
    raise ValueError(f"unknown summary kind {call.kind!r}")


def combine(results: list[SummaryResult], refused_calls: int) -> SummaryResult:
    last = results[-1]
    costs = [r.cost_usd for r in results]
    return SummaryResult(
        text=last.text,
        model=last.model,
        prompt_tokens=sum(r.prompt_tokens for r in results),
        completion_tokens=sum(r.completion_tokens for r in results),
        cache_read_tokens=sum(r.cache_read_tokens for r in results),
        cache_write_tokens=sum(r.cache_write_tokens for r in results),
        cost_usd=None if any(c is None for c in costs) else sum(c for c in costs if c is not None),
        latency_s=sum(r.latency_s for r in results),
        attempts=1,
        redactions=merge_counts(*(r.redactions for r in results)),
        overflow_calls=len(results),
        calls=len(results) + refused_calls,
        from_hook=last.from_hook,
    )


class OverflowSummarizer:
    """Wraps a summarizer; passes calls through, and recovers from prompts too long for the window."""

    def __init__(self, inner: Summarizer, context_window: int | None = None):
        self.inner = inner
        self.name = inner.name
        self.remote = is_remote(inner)
        self.free = is_free(inner)
        self.context_window = (
            context_window if context_window is not None else getattr(inner, "context_window", None)
        )

    def fits(self, call: SummaryCall) -> bool:
        if not self.context_window:
            return True
        return estimate_prompt_tokens(call) + call.max_tokens <= self.context_window

    async def summarize(self, call: SummaryCall) -> SummaryResult:
        refused = 0
        if self.fits(call) or not call.messages:
            try:
                return await self.inner.summarize(call)
            except ContextTooLongError:
                if not call.messages:
                    raise
                refused = 1
                log.info("%s: prompt too long, recovering in chunks", self.name)
        return await self.recover(call, refused)

    def chunk_budget_chars(self, call: SummaryCall) -> int:
        previous = len(call.previous_summary or "") // CHARS_PER_TOKEN
        if self.context_window:
            tokens = self.context_window - call.max_tokens - PROMPT_OVERHEAD_TOKENS - previous
        else:  # the provider refused but we do not know its window: start from half the prompt
            tokens = estimate_prompt_tokens(call) // 2
        # Later chunks also carry the running summary (up to max_tokens long).
        tokens -= call.max_tokens
        return max(tokens, MIN_CHUNK_TOKENS) * CHARS_PER_TOKEN

    async def recover(self, call: SummaryCall, refused: int) -> SummaryResult:
        parts = [part for message in call.messages for part in serialize_message(dict(message))]
        budget = self.chunk_budget_chars(call)
        if refused:  # the provider's window is smaller than we believed: start from half the prompt
            budget = min(budget, max(len(call.user_prompt) // 2, MIN_CHUNK_TOKENS * CHARS_PER_TOKEN))
        for _ in range(MAX_HALVINGS + 1):
            chunks = split_into_chunks(parts, budget)
            try:
                results = await self._fold(call, chunks)
            except ContextTooLongError:
                refused += 1
                budget //= 2
                if budget < MIN_CHUNK_TOKENS * CHARS_PER_TOKEN:
                    raise
                log.info("%s: chunk still too long, halving to %d chars", self.name, budget)
                continue
            return combine(results, refused)
        raise ContextTooLongError(f"{self.name}: prompt does not fit even in small chunks")

    async def _fold(self, call: SummaryCall, chunks: list[str]) -> list[SummaryResult]:
        results: list[SummaryResult] = []
        running: str | None = None
        for chunk in chunks:
            sub = SummaryCall(
                kind=call.kind,
                system_prompt=call.system_prompt,
                user_prompt=build_chunk_prompt(call, chunk, running),
                max_tokens=call.max_tokens,
                previous_summary=running if running is not None else call.previous_summary,
                instructions=call.instructions,
                meta={**call.meta, "overflow_chunk": len(results) + 1, "overflow_chunks": len(chunks)},
            )
            result = await self.inner.summarize(sub)
            results.append(result)
            running = result.text
        return results


