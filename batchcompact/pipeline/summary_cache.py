"""Summaries already paid for, reused: a summarizer wrapper backed by the run state."""

from __future__ import annotations

import dataclasses
from typing import TYPE_CHECKING

from batchcompact.core.calls import SummaryResult, is_free, is_remote
from batchcompact.pipeline.state import RunState, call_key

if TYPE_CHECKING:
    from batchcompact.core.calls import Summarizer, SummaryCall


class CachingSummarizer:
    """Wraps a summarizer: a summary already paid for (same model and prompt) is reused from the state."""

    def __init__(self, inner: Summarizer, state: RunState, model_key: str) -> None:
        self.inner = inner
        self.name = inner.name
        self.free = is_free(inner)  # the pool's budget never refuses a free summarizer
        self.remote = is_remote(inner)  # the pool redacts prompts only for remote ones
        self.state = state
        self.model_key = model_key
        self.reused = 0
        self.cacheable = inner.name != "builtin"
        # id(returned) -> (returned, result as paid)
        self._paid_earlier: dict[int, tuple[SummaryResult, SummaryResult]] = {}

    async def summarize(self, call: SummaryCall) -> SummaryResult:
        if not self.cacheable:
            return await self.inner.summarize(call)
        reused = self.cached(call)
        if reused is not None:
            return reused
        result = await self.inner.summarize(call)
        self.state.put_summary(self.key(call), dataclasses.asdict(result))
        return result

    def key(self, call: SummaryCall) -> str:
        return call_key(self.model_key, call.system_prompt, call.user_prompt, call.max_tokens)

    def cached(self, call: SummaryCall) -> SummaryResult | None:
        """The summary for `call` when an earlier run paid for it (this run spends nothing), else None."""
        if not self.cacheable:
            return None
        cached = self.state.get_summary(self.key(call))
        if cached is None:
            return None
        self.reused += 1
        paid = SummaryResult(**cached)
        # Paid in an earlier run: this run spends nothing on it (its report row says so), but the
        # written entry still records what the summary cost (see `as_paid`).
        reused = dataclasses.replace(paid, cost_usd=0.0, calls=0, attempts=0, latency_s=0.0,
                                     prompt_tokens=0, completion_tokens=0, cache_read_tokens=0,
                                     cache_write_tokens=0, overflow_calls=0, redactions={},
                                     model=paid.model)
        self._paid_earlier[id(reused)] = (reused, paid)
        return reused

    def as_paid(self, result: SummaryResult) -> SummaryResult:
        """`result` with the usage it was bought with, also when an earlier run paid for it."""
        earlier = self._paid_earlier.pop(id(result), None)  # (returned, as paid)
        return earlier[1] if earlier is not None and earlier[0] is result else result
