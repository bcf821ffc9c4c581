"""How eval buys its model calls (the summaries it scores and the judge's answers and grades): the worker
pool, through the summary cache when there is a run state.

It lives in the pipeline, not under `eval/`, so that nothing under `batchcompact/eval/` imports
`batchcompact.summarize` (whose package loads the built-in summarizer): the measure and what it measures
share no code (docs/eval.md; tests/test_architecture.py). Jobs are `(key, [SummaryCall, ...])` pairs.
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from batchcompact.core.calls import Summarizer, SummaryCall
    from batchcompact.pipeline.state import RunState
    from batchcompact.summarize.pool import JobOutcome
    from batchcompact.summarize.pool_settings import PoolSettings


def buy(summarizer: Summarizer, model_key: str, jobs: list[tuple[str, list[SummaryCall]]], state: RunState | None,
        pool_settings: PoolSettings | None, *, clock: Callable[[], float] | None = None,
        # Any: the pool's JobOutcomes, read by eval/, which may not name a type of `batchcompact.summarize` (above)
        sleep: Callable[[float], Awaitable[None]] | None = None) -> tuple[dict[str, Any], Summarizer]:
    """Run `jobs` through the pool (and the summary cache when there is a state); outcomes by job key."""
    from batchcompact.summarize.pool import SummaryJob, run_jobs

    buyer: Summarizer = summarizer
    if state is not None:
        from batchcompact.pipeline.summary_cache import CachingSummarizer

        buyer = CachingSummarizer(summarizer, state, model_key)
    outcomes: dict[str, JobOutcome] = {}

    def collect(outcome: JobOutcome) -> None:
        outcomes[outcome.key] = outcome

    pool_jobs = [SummaryJob(key, list(calls)) for key, calls in jobs]
    asyncio.run(run_jobs(pool_jobs, buyer, pool_settings, on_outcome=collect, clock=clock, sleep=sleep))
    return outcomes, buyer
