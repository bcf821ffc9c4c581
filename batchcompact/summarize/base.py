"""The summarizer contract: one `SummaryCall` in, one `SummaryResult` out, and the error taxonomy.

The call, the result and the `Summarizer` Protocols live in `core/calls.py`, so that what names a summarizer
without running one (eval's measures, the pipeline's buyers) need not import this package; they are
re-exported here.

A summarizer makes exactly one attempt and never retries; the pool (`pool.py`) owns retries, rate limits
and budgets. Every failure a summarizer raises is a `SummaryCallError` subclass, whose class tells the pool
what to do:

- `RetryableError`: try again after a backoff (429, 5xx, timeouts, connection errors, malformed answers);
  `retry_after` carries the provider's Retry-After seconds when it sent one.
- `SessionFatalError`: give up on this job, keep running (other 4xx, context too long after recovery).
- `RunFatalError`: stop the whole run (authentication, permission): every other call would fail the same way.
"""

from __future__ import annotations

from batchcompact.core.calls import (
    InPlaceSummarizer,
    Summarizer,
    SummaryCall,
    SummaryResult,
    WindowedSummarizer,
    is_free,
    is_remote,
)
from batchcompact.errors import BatchCompactError, RunAborted, SummarizerError


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
    "InPlaceSummarizer",
    "RateLimitedError",
    "RetryableError",
    "RunFatalError",
    "SessionFatalError",
    "SummaryCall",
    "SummaryCallError",
    "SummaryCancelled",
    "SummaryResult",
    "Summarizer",
    "WindowedSummarizer",
    "is_free",
    "is_remote",
]


# Output tokens a reasoning model may spend thinking before it writes the summary: its max_tokens counts both,
# so it gets this much beyond the summary budget its prompt states (litellm_summarizer, batch_api).
REASONING_HEADROOM = 8192
