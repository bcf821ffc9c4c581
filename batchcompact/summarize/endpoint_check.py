"""`--check`: one tiny real request (a few output tokens) through the summarizer to the endpoint the
preflight resolved, proving the key and the endpoint before a run spends anything."""

from __future__ import annotations

import asyncio

from batchcompact.summarize.preflight import EndpointCheckError, ProviderInfo


async def check_endpoint_async(info: ProviderInfo, *, timeout: float = 30.0) -> float:
    """One tiny real request to `info`'s endpoint; returns its latency in seconds.

    A refused key raises `RunFatalError` (exit 3); anything else that fails raises `EndpointCheckError`.
    """
    from batchcompact.summarize.base import RunFatalError, SummaryCallError
    from batchcompact.summarize.litellm_summarizer import LiteLLMSummarizer

    summarizer = LiteLLMSummarizer(info.model, api_base=info.api_base, api_key=info.api_key,
                                   timeout=timeout, provider=info)
    try:
        return await summarizer.ping()
    except RunFatalError:
        raise
    except SummaryCallError as exc:
        raise EndpointCheckError(f"--check failed: {exc.message}") from None


def check_endpoint(info: ProviderInfo, *, timeout: float = 30.0) -> float:
    """`check_endpoint_async` from synchronous code."""
    return asyncio.run(check_endpoint_async(info, timeout=timeout))
