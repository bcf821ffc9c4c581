"""The summarizer contract: one `SummaryCall` in, one `SummaryResult` out, and the error taxonomy.

A summarizer makes exactly one attempt and never retries; the pool (`pool.py`) owns retries, rate limits
and budgets. Every failure a summarizer raises is a `SummaryCallError` subclass, whose class tells the pool
what to do:

- `RetryableError`: try again after a backoff (429, 5xx, timeouts, connection errors, malformed answers);
  `retry_after` carries the provider's Retry-After seconds when it sent one.
- `SessionFatalError`: give up on this job, keep running (other 4xx, context too long after recovery).
- `RunFatalError`: stop the whole run (authentication, permission): every other call would fail the same way.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Protocol, runtime_checkable

from batchcompact.core.calls import SummaryCall
from batchcompact.errors import BatchCompactError, RunAborted, SummarizerError


@dataclass
class SummaryResult:
    """What one summary cost and produced. `cost_usd` is None when the model has no known price."""

    text: str
    model: str
    prompt_tokens: int = 0
    completion_tokens: int = 0
    cache_read_tokens: int = 0
    cache_write_tokens: int = 0
    cost_usd: float | None = 0.0
    latency_s: float = 0.0
    attempts: int = 1
    redactions: dict[str, int] = field(default_factory=dict)
    overflow_calls: int = 0  # 0: no overflow recovery; else number of model calls the recovery made
    calls: int = 1
    from_hook: bool = False
    batch: bool = False  # bought through a provider batch API (at the batch price)

    @property
    def overflow_recovered(self) -> bool:
        return self.overflow_calls > 0

    @property
    def redaction_count(self) -> int:
        return sum(self.redactions.values())


@runtime_checkable
class Summarizer(Protocol):
    """Anything with a `name` and an async `summarize` that makes one attempt."""

    name: str

    async def summarize(self, call: SummaryCall) -> SummaryResult: ...


class SummaryCallError(SummarizerError):
    """One summary attempt failed. Subclasses say what the pool should do about it."""

    def __init__(self, message: str, *, status_code: int | None = None, retry_after: float | None = None):
        super().__init__(message)
        self.message = message
        self.status_code = status_code
        self.retry_after = retry_after


class RetryableError(SummaryCallError):
    """Transient: rate limit, server error, timeout, connection error, malformed response."""

    rate_limited = False


class RateLimitedError(RetryableError):
    """HTTP 429: retried, and the whole run pauses for Retry-After (or the backoff)."""

    rate_limited = True


class SessionFatalError(SummaryCallError):
    """Permanent for this call (bad request, content policy, ...): fail the session, keep the run going."""


class ContextTooLongError(SessionFatalError):
    """The prompt does not fit the model's input window; overflow recovery may chunk it."""


class RunFatalError(SummaryCallError, RunAborted):
    """Authentication or permission: no other call can succeed either, abort the run."""

    exit_code = RunAborted.exit_code


class Cancel:
    """Returned by a custom summarizer to skip a session (pi's `session_before_compact` cancel)."""

    def __init__(self, reason: str = "cancelled by custom summarizer"):
        self.reason = reason

    def __repr__(self) -> str:
        return f"Cancel({self.reason!r})"


class SummaryCancelled(BatchCompactError):
    """A custom summarizer asked to skip this session."""

    def __init__(self, reason: str):
        super().__init__(reason)
        self.reason = reason


__all__ = [
    "Cancel",
    "ContextTooLongError",
    "RateLimitedError",
    "RetryableError",
    "RunFatalError",
    "SessionFatalError",
    "SummaryCall",
    "SummaryCallError",
    "SummaryCancelled",
    "SummaryResult",
    "Summarizer",
]


# Output tokens a reasoning model may spend thinking before it writes the summary: its max_tokens counts both,
# so it gets this much beyond the summary budget its prompt states (litellm_summarizer, batch_api).
REASONING_HEADROOM = 8192
