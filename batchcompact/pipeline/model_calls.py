"""How eval buys its model calls (the summaries it scores and the judge's answers and grades): the worker
pool, through the summary cache when there is a run state.

It lives in the pipeline, not under `eval/`, so that nothing under `batchcompact/eval/` imports
`batchcompact.summarize` (whose package loads the built-in summarizer): the measure and what it measures
share no code (docs/eval.md; tests/test_architecture.py). Jobs are `(key, [SummaryCall, ...])` pairs.
"""

from __future__ import annotations

import asyncio
from typing import Any


def buy(summarizer: Any, model_key: str, jobs: list[tuple[str, list[Any]]], state: Any, pool_settings: Any, *,
        clock: Any = None, sleep: Any = None) -> tuple[dict[str, Any], Any]:
    """Run `jobs` through the pool (and the summary cache when there is a state); outcomes by job key."""
    from batchcompact.summarize.pool import SummaryJob, run_jobs

    buyer = summarizer
    if state is not None:
        from batchcompact.pipeline.summary_cache import CachingSummarizer

        buyer = CachingSummarizer(summarizer, state, model_key)
    outcomes: dict[str, Any] = {}

    def collect(outcome: Any) -> None:
        outcomes[outcome.key] = outcome

    pool_jobs = [SummaryJob(key, list(calls)) for key, calls in jobs]
    asyncio.run(run_jobs(pool_jobs, buyer, pool_settings, on_outcome=collect, clock=clock, sleep=sleep))
    return outcomes, buyer
