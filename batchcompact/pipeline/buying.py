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

from typing import Any

from batchcompact.pipeline.summary_cache import CachingSummarizer


class OnDemandBuyer:
    batch = False

    def __init__(self, summarizer: Any, state: Any, model_key: str, pool_settings: Any, *, clock=None,
                 sleep=None) -> None:
        self.caching = CachingSummarizer(summarizer, state, model_key)
        self.pool_settings = pool_settings
        self.clock = clock
        self.sleep = sleep
        self.notes: list[str] = []

    async def buy(self, jobs: Any, on_outcome: Any, stop_event: Any = None) -> Any:
        from batchcompact.summarize.pool import run_jobs

        return await run_jobs(jobs, self.caching, self.pool_settings, on_outcome=on_outcome, clock=self.clock,
                              sleep=self.sleep, stop_event=stop_event)

    def as_paid(self, result: Any) -> Any:
        return self.caching.as_paid(result)


def make_buyer(options: Any, summarizer: Any, state: Any, pool_settings: Any, run_id: str, *, clock=None,
               sleep=None) -> Any:
    """The buyer the run's options ask for: a provider batch API (`--batch`) or the on-demand pool."""
    if getattr(options, "batch", None) is not None:
        from batchcompact.pipeline.batch import BatchBuyer

        return BatchBuyer(options.batch, summarizer, state, options.summary_model, pool_settings, run_id,
                          pricing_file=options.pricing_file, max_cost_usd=options.max_cost_usd)
    return OnDemandBuyer(summarizer, state, options.summary_model, pool_settings, clock=clock, sleep=sleep)
