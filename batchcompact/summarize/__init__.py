"""Summarizers and the worker pool: `SummaryCall` -> `SummaryResult`.

Nothing here imports litellm at import time; the litellm summarizer imports it on its first call.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from batchcompact.summarize.base import (
    Cancel,
    ContextTooLongError,
    RateLimitedError,
    RetryableError,
    RunFatalError,
    SessionFatalError,
    Summarizer,
    SummaryCallError,
    SummaryCancelled,
    SummaryResult,
)
from batchcompact.summarize.builtin import BuiltinSummarizer

if TYPE_CHECKING:  # what `__getattr__` loads on first use, as the type checker should see it
    from batchcompact.summarize.custom import load_summarizer
    from batchcompact.summarize.pool import JobOutcome, PoolStats, SummaryJob, run_jobs
    from batchcompact.summarize.pool_settings import PoolSettings
    from batchcompact.summarize.preflight import ProviderInfo

BUILTIN = "builtin"

# Loaded on first use (module __getattr__): the pool (asyncio) and custom summarizers (importlib.metadata)
# are not needed by a run with the built-in summarizer, nor by anything importing `summarize.redact`.
_LAZY = {
    "load_summarizer": "batchcompact.summarize.custom",
    "JobOutcome": "batchcompact.summarize.pool",
    "PoolSettings": "batchcompact.summarize.pool_settings",
    "PoolStats": "batchcompact.summarize.pool",
    "SummaryJob": "batchcompact.summarize.pool",
    "run_jobs": "batchcompact.summarize.pool",
}


# Any: one of `_LAZY`'s names (a function or a class); the type checker sees each through the imports above
def __getattr__(name: str) -> Any:
    module = _LAZY.get(name)
    if module is None:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    import importlib

    value = getattr(importlib.import_module(module), name)
    globals()[name] = value
    return value


def build_summarizer(
    model: str | None = None,
    *,
    api_base: str | None = None,
    api_key: str | None = None,
    timeout: float | None = None,
    summarizer_spec: str | None = None,
    pricing_file: str | None = None,
    reasoning_effort: str | None = None,
    provider: ProviderInfo | None = None,
) -> Summarizer:
    """The summarizer for the command-line options: a custom one, the builtin, or litellm + overflow recovery."""
    if summarizer_spec:
        from batchcompact.summarize.custom import load_summarizer

        return load_summarizer(summarizer_spec)
    if model is None or model.strip().lower() == BUILTIN:
        return BuiltinSummarizer()
    from batchcompact.summarize.litellm_summarizer import LiteLLMSummarizer
    from batchcompact.summarize.overflow import OverflowSummarizer

    inner = LiteLLMSummarizer(
        model.strip(),
        api_base=api_base,
        api_key=api_key,
        timeout=timeout if timeout is not None else 600.0,
        pricing_file=pricing_file,
        reasoning_effort=reasoning_effort,
        provider=provider,
    )
    return OverflowSummarizer(inner)


__all__ = [
    "BUILTIN",
    "BuiltinSummarizer",
    "Cancel",
    "ContextTooLongError",
    "JobOutcome",
    "PoolSettings",
    "PoolStats",
    "RateLimitedError",
    "RetryableError",
    "RunFatalError",
    "SessionFatalError",
    "SummaryCallError",
    "SummaryCancelled",
    "SummaryJob",
    "Summarizer",
    "SummaryResult",
    "build_summarizer",
    "load_summarizer",
    "run_jobs",
]
