"""`PoolSettings`: how the summary pool runs (concurrency, rate limits, retries, budget, redaction).

Its own module so that the command line builds the settings without importing the pool (asyncio),
which a run with the built-in summarizer never starts.
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass
class PoolSettings:
    concurrency: int = 8
    rpm: float | None = None
    tpm: float | None = None
    max_attempts: int = 6
    base_delay: float = 1.0
    max_delay: float = 60.0
    max_cost_usd: float | None = None
    redact: bool = True
    drain_on_stop: bool = True  # after abort/budget, still take the remaining jobs to report them
    cancel_grace: float = 0.0  # on task cancellation, seconds to let in-flight calls finish
