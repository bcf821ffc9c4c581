"""How summaries are bought: the seam between the run loop and the money.

A buyer takes the run's `SummaryJob`s (each call keyed by the summary cache key) and hands back one
`JobOutcome` per job through `on_outcome`, with the same `SummaryResult`s whichever way it bought them;
the run loop applies, verifies and writes them without knowing which buyer it had.

- `OnDemandBuyer`: the rate-limited worker pool, through the summary cache (summaries already paid for
  are reused).
- `BatchBuyer` (`pipeline/batch.py`): provider batch APIs at batch prices; a job whose summaries are not
  back yet gets the outcome `batch_pending`, and a later run collects them.

Both expose `as_paid(result)` (the usage a summary was bought with, for the written entry) and `notes`
(lines for the run summary).
"""

from __future__ import annotations

from collections.abc import AsyncIterable, Awaitable, Callable, Iterable
from typing import TYPE_CHECKING, Protocol

from batchcompact.pipeline.summary_cache import CachingSummarizer

if TYPE_CHECKING:
    import asyncio

    from batchcompact.core.calls import Summarizer, SummaryResult
    from batchcompact.pipeline.batch import BatchBuyer
    from batchcompact.pipeline.run_options import RunOptions
    from batchcompact.pipeline.state import RunState
    from batchcompact.summarize.pool import JobOutcome, PoolStats, SummaryJob
    from batchcompact.summarize.pool_settings import PoolSettings

Jobs = Iterable["SummaryJob"] | AsyncIterable["SummaryJob"]  # the run's jobs, taken lazily
OnOutcome = Callable[["JobOutcome"], "Awaitable[None] | None"]  # each job's outcome, as soon as it is known


class Buyer(Protocol):
    """What the run loop asks of a buyer (see the module docstring)."""

    batch: bool  # buys through a provider batch API
    notes: list[str]  # lines for the run summary

    async def buy(self, jobs: Jobs, on_outcome: OnOutcome, stop_event: asyncio.Event | None = None) -> object:
        """One outcome per job, through `on_outcome`; stop taking jobs once `stop_event` is set."""
        ...

    def as_paid(self, result: SummaryResult) -> SummaryResult:
        """`result` with the usage it was bought with (also when an earlier run paid for it)."""
        ...


class OnDemandBuyer:
    batch = False

    def __init__(self, summarizer: Summarizer, state: RunState, model_key: str, pool_settings: PoolSettings, *,
                 clock: Callable[[], float] | None = None, sleep: Callable[[float], Awaitable[None]] | None = None
                 ) -> None:
        self.caching = CachingSummarizer(summarizer, state, model_key)
        self.pool_settings = pool_settings
        self.clock = clock
        self.sleep = sleep
        self.notes: list[str] = []

    async def buy(self, jobs: Jobs, on_outcome: OnOutcome, stop_event: asyncio.Event | None = None) -> PoolStats:
        from batchcompact.summarize.pool import run_jobs

        return await run_jobs(jobs, self.caching, self.pool_settings, on_outcome=on_outcome, clock=self.clock,
                              sleep=self.sleep, stop_event=stop_event)

    def as_paid(self, result: SummaryResult) -> SummaryResult:
        return self.caching.as_paid(result)


def make_buyer(options: RunOptions, summarizer: Summarizer, state: RunState, pool_settings: PoolSettings,
               run_id: str, *, clock: Callable[[], float] | None = None,
               sleep: Callable[[float], Awaitable[None]] | None = None) -> OnDemandBuyer | BatchBuyer:
    """The buyer the run's options ask for: a provider batch API (`--batch`) or the on-demand pool."""
    if options.batch is not None:
        from batchcompact.pipeline.batch import BatchBuyer

        return BatchBuyer(options.batch, summarizer, state, options.summary_model, pool_settings, run_id,
                          pricing_file=options.pricing_file, max_cost_usd=options.max_cost_usd)
    return OnDemandBuyer(summarizer, state, options.summary_model, pool_settings, clock=clock, sleep=sleep)
