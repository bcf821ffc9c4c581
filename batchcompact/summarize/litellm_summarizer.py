"""The litellm summarizer: one `acompletion` attempt per call, errors mapped to our taxonomy.

Invariants:
- `litellm` is imported on the first call, never at module import (`batchcompact --help` stays instant),
  and always after `LITELLM_LOCAL_MODEL_COST_MAP=True` is set (no price-map download);
- litellm's own retries are off (`num_retries=0`, `max_retries=0`): the pool owns retries;
- the API key never appears in an exception message we raise (it is scrubbed, with anything key-shaped).
"""

from __future__ import annotations

import email.utils
import logging
import os
import re
import time
from typing import Any

from batchcompact.core.calls import SummaryCall
from batchcompact.summarize.base import (
    ContextTooLongError,
    RateLimitedError,
    RetryableError,
    RunFatalError,
    SessionFatalError,
    SummaryCallError,
    SummaryResult,
)
from batchcompact.summarize.redact import scrub

log = logging.getLogger(__name__)
_litellm: Any = None
_PREFIX = re.compile(r"^(?:litellm\.\w+:\s*|\w+Error:\s*)+")


def import_litellm() -> Any:
    """Import litellm once, offline and quiet."""
    global _litellm
    if _litellm is None:
        os.environ.setdefault("LITELLM_LOCAL_MODEL_COST_MAP", "True")
        import litellm

        litellm.suppress_debug_info = True  # no "Give Feedback / Get Help" banner on every error
        litellm.telemetry = False
        # Their debug logs can carry request headers; -vv must not put an API key on stderr.
        for name in ("LiteLLM", "LiteLLM Router", "LiteLLM Proxy", "openai", "httpx", "httpcore"):
            logging.getLogger(name).setLevel(logging.WARNING)
        _litellm = litellm
    return _litellm


def _price_table(pricing_file: str | None) -> Any:
    try:
        from batchcompact.pricing import PriceTable
    except ImportError:  # pragma: no cover - pricing is written in parallel
        return None
    try:
        return PriceTable.load(pricing_file)
    except Exception as exc:  # a broken --pricing file is reported by the command that loads it
        log.debug("price table unavailable: %s", exc)
        return None


class LiteLLMSummarizer:
    """Summaries through any provider litellm knows. `remote`: prompts are redacted before reaching it."""

    remote = True

    def __init__(
        self,
        model: str,
        *,
        api_base: str | None = None,
        api_key: str | None = None,
        timeout: float | None = 600.0,
        pricing_file: str | None = None,
        reasoning_effort: str | None = None,
        extra_params: dict[str, Any] | None = None,
    ):
        self.name = model
        self.model = model
        self.api_base = api_base
        self._api_key = api_key
        self.timeout = timeout
        self.pricing_file = pricing_file
        self.reasoning_effort = reasoning_effort
        self.extra_params = dict(extra_params or {})
        self._prices = _price_table(pricing_file)
        self._max_output: int | None | bool = False  # False = not looked up yet

    def __repr__(self) -> str:  # never shows the key
        return f"LiteLLMSummarizer(model={self.model!r}, api_base={self.api_base!r})"

    # -- model facts -----------------------------------------------------------------------------
    @property
    def context_window(self) -> int | None:
        """The model's input window (tokens), from the price table without importing litellm."""
        if self._prices is not None:
            window = self._prices.context_window(self.model)
            if window:
                return int(window)
        return None

    def max_output_tokens(self) -> int | None:
        if self._max_output is False:
            value = self._prices.max_output_tokens(self.model) if self._prices is not None else None
            if not value:
                try:
                    value = import_litellm().get_model_info(self.model).get("max_output_tokens")
                except Exception:
                    value = None
            self._max_output = int(value) if value else None
        return self._max_output or None

    def _supports_reasoning(self) -> bool:
        try:
            return bool(import_litellm().supports_reasoning(self.model))
        except Exception:
            return False

    # -- the call --------------------------------------------------------------------------------
    def build_request(self, call: SummaryCall) -> dict[str, Any]:
        """The keyword arguments for `litellm.acompletion` (without the key, for logs and tests)."""
        max_tokens = call.max_tokens
        limit = self.max_output_tokens()
        if limit:
            max_tokens = min(max_tokens, limit)
        request: dict[str, Any] = {
            "model": self.model,
            "messages": [
                {"role": "system", "content": call.system_prompt},
                {"role": "user", "content": call.user_prompt},
            ],
            "max_tokens": max(1, max_tokens),
            "num_retries": 0,
            "max_retries": 0,
            **self.extra_params,
        }
        if self.timeout:
            request["timeout"] = self.timeout
        if self.api_base:
            request["api_base"] = self.api_base
        if self.reasoning_effort and self._supports_reasoning():
            request["reasoning_effort"] = self.reasoning_effort
        return request

    async def summarize(self, call: SummaryCall) -> SummaryResult:
        litellm = import_litellm()
        request = self.build_request(call)
        start = time.perf_counter()
        try:
            response = await litellm.acompletion(**request, api_key=self._api_key)
        except SummaryCallError:
            raise
        except Exception as exc:
            raise classify_error(exc, self.model, self._api_key) from None
        latency = time.perf_counter() - start
        return self._result(response, latency)

    def _result(self, response: Any, latency: float) -> SummaryResult:
        try:
            choice = response.choices[0]
            content = choice.message.content
        except (AttributeError, IndexError, KeyError, TypeError) as exc:
            raise RetryableError(f"malformed response from {self.model}: {exc}") from None
        if isinstance(content, list):
            content = "\n".join(p.get("text", "") for p in content if isinstance(p, dict))
        if not isinstance(content, str) or not content.strip():
            raise RetryableError(f"malformed response from {self.model}: empty summary")
        usage = getattr(response, "usage", None)
        prompt = int(getattr(usage, "prompt_tokens", 0) or 0)
        completion = int(getattr(usage, "completion_tokens", 0) or 0)
        details = getattr(usage, "prompt_tokens_details", None)
        cache_read = int(
            getattr(details, "cached_tokens", 0) or getattr(usage, "cache_read_input_tokens", 0) or 0
        )
        cache_write = int(getattr(usage, "cache_creation_input_tokens", 0) or 0)
        return SummaryResult(
            text=content,
            model=self.model,
            prompt_tokens=prompt,
            completion_tokens=completion,
            cache_read_tokens=cache_read,
            cache_write_tokens=cache_write,
            cost_usd=self._cost(response, prompt, completion, cache_read, cache_write),
            latency_s=latency,
        )

    def _cost(
        self, response: Any, prompt: int, completion: int, cache_read: int, cache_write: int
    ) -> float | None:
        """USD from a --pricing override first, then litellm's calculation; None when unpriced."""
        if self.pricing_file and self._prices is not None:
            cost = self._prices.cost(
                self.model,
                input_tokens=max(prompt - cache_read - cache_write, 0),
                output_tokens=completion,
                cache_read_tokens=cache_read,
                cache_write_tokens=cache_write,
            )
            if cost is not None:
                return cost
        hidden = getattr(response, "_hidden_params", None) or {}
        if isinstance(hidden.get("response_cost"), int | float):  # litellm already priced it (saves ~1.5 ms)
            return float(hidden["response_cost"])
        try:
            return float(import_litellm().completion_cost(completion_response=response, model=self.model))
        except Exception:
            pass
        if self._prices is not None:
            return self._prices.cost(
                self.model,
                input_tokens=max(prompt - cache_read - cache_write, 0),
                output_tokens=completion,
                cache_read_tokens=cache_read,
                cache_write_tokens=cache_write,
            )
        return None


# -- errors ---------------------------------------------------------------------------------------
def parse_retry_after(headers: Any, now: float | None = None) -> float | None:
    """Seconds from `retry-after-ms` / `retry-after` (seconds or an HTTP date), or None."""
    if not headers:
        return None
    try:
        get = headers.get
    except AttributeError:
        return None
    value = get("retry-after-ms") or get("Retry-After-Ms")
    if value:
        try:
            return max(float(value) / 1000.0, 0.0)
        except ValueError:
            pass
    value = get("retry-after") or get("Retry-After")
    if not value:
        return None
    try:
        return max(float(value), 0.0)
    except ValueError:
        pass
    try:
        when = email.utils.parsedate_to_datetime(value).timestamp()
    except (TypeError, ValueError):
        return None
    return max(when - (now if now is not None else time.time()), 0.0)


def _headers(exc: Exception) -> Any:
    headers = getattr(exc, "litellm_response_headers", None)
    if headers:
        return headers
    response = getattr(exc, "response", None)
    return getattr(response, "headers", None)


def classify_error(exc: Exception, model: str, api_key: str | None = None) -> SummaryCallError:
    """Map a litellm/openai/httpx exception to retry / fail-this-session / abort-the-run."""
    litellm = import_litellm()
    status = getattr(exc, "status_code", None)
    status = status if isinstance(status, int) else None
    detail = scrub(_PREFIX.sub("", str(exc)).strip() or type(exc).__name__, api_key)
    where = f"{model}" + (f" (HTTP {status})" if status else "")
    retry_after = parse_retry_after(_headers(exc))
    if isinstance(exc, litellm.ContextWindowExceededError):
        return ContextTooLongError(f"prompt too long for {where}: {detail}", status_code=status)
    if status in (401, 403) or isinstance(exc, litellm.AuthenticationError | litellm.PermissionDeniedError):
        hint = (
            "check --api-key / the provider's key variable"
            if status != 403
            else "check the key's permissions"
        )
        return RunFatalError(f"{where} refused the credentials: {detail} ({hint})", status_code=status)
    if status == 402:
        return RunFatalError(f"{where} requires payment: {detail}", status_code=status)
    if status == 429 or isinstance(exc, litellm.RateLimitError):
        return RateLimitedError(
            f"rate limited by {where}: {detail}", status_code=429, retry_after=retry_after
        )
    if status is not None and (status >= 500 or status in (408, 409, 425)):
        return RetryableError(
            f"server error from {where}: {detail}", status_code=status, retry_after=retry_after
        )
    retryable_types = (
        litellm.Timeout,
        litellm.APIConnectionError,
        litellm.InternalServerError,
        litellm.ServiceUnavailableError,
        litellm.APIResponseValidationError,
    )
    if isinstance(exc, retryable_types):
        return RetryableError(
            f"transient error from {where}: {detail}", status_code=status, retry_after=retry_after
        )
    if status is not None and 400 <= status < 500:
        return SessionFatalError(f"{where} rejected the request: {detail}", status_code=status)
    if isinstance(exc, ValueError | KeyError | TypeError | AttributeError):  # malformed answers surface so
        return RetryableError(f"malformed response from {where}: {detail}", status_code=status)
    return SessionFatalError(f"{where} failed: {detail}", status_code=status)
