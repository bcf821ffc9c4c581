"""How eval buys its model calls (the summaries and the judge's answers and grades): the pool, through
the summary cache when there is a run state."""

from __future__ import annotations

import asyncio
from typing import Any


def buy(summarizer: Any, model_key: str, jobs: list[Any], state: Any, pool_settings: Any, *, clock: Any = None,
        sleep: Any = None) -> tuple[dict[str, Any], Any]:
    """Run `jobs` through the pool (and the summary cache when there is a state); outcomes by job key."""
    from batchcompact.summarize.pool import run_jobs

    buyer = summarizer
    if state is not None:
        from batchcompact.pipeline.summary_cache import CachingSummarizer

        buyer = CachingSummarizer(summarizer, state, model_key)
    outcomes: dict[str, Any] = {}

    def collect(outcome: Any) -> None:
        outcomes[outcome.key] = outcome

    asyncio.run(run_jobs(jobs, buyer, pool_settings, on_outcome=collect, clock=clock, sleep=sleep))
    return outcomes, buyer
