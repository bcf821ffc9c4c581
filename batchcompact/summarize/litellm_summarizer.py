"""The litellm summarizer: one `acompletion` attempt per call, errors mapped to our taxonomy.

Invariants:
- `litellm` is imported on the first call, never at module import (`batchcompact --help` stays instant),
  and always after `LITELLM_LOCAL_MODEL_COST_MAP=True` is set (no price-map download);
- litellm's own retries are off (`num_retries=0`, `max_retries=0`): the pool owns retries;
- the API key never appears in an exception message we raise (it is scrubbed, with anything key-shaped);
- the provider is resolved once (`preflight`) before the first request: an unknown model or a missing key
  aborts the run instead of failing every session; with `api_base` and no key a placeholder is sent;
- errors are classified by what happened (the exception chain), not by litellm's guessed status: a
  connection that never got an HTTP answer is "cannot reach <base URL>: <reason>", whatever status
  litellm attached to it; messages carry the provider's first line only.
"""

from __future__ import annotations

import email.utils
import logging
import re
import time
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any, Protocol, TypeAlias

from batchcompact.core.calls import SummaryCall
from batchcompact.formats.jsonl import sendable
from batchcompact.summarize.base import (
    REASONING_HEADROOM,
    ContextTooLongError,
    RateLimitedError,
    RetryableError,
    RunFatalError,
    SessionFatalError,
    SummaryCallError,
    SummaryResult,
)
from batchcompact.summarize.litellm_import import import_litellm
from batchcompact.summarize.redact import scrub

if TYPE_CHECKING:
    from batchcompact.pricing import PriceTable
    from batchcompact.summarize.preflight import ProviderInfo

log = logging.getLogger(__name__)
_PREFIX = re.compile(r"^(?:litellm\.\w+:\s*|\w+Error:\s*)+")

# The keyword arguments of `litellm.acompletion` (model, messages, max_tokens, ...; any extra a caller adds).
Request: TypeAlias = dict[str, object]
# litellm's ModelResponse: `_result` reads each field it needs defensively (a missing one is a RetryableError).
# Any: litellm ships no annotations, and no shape of its response is assumed here
Response: TypeAlias = Any


class Headers(Protocol):
    """A response's headers as httpx and litellm give them: only `get` is used."""

    def get(self, key: str, /) -> str | None: ...


def _price_table(pricing_file: str | None) -> PriceTable | None:
    try:
        from batchcompact.pricing import PriceTable
    except ImportError:  # pragma: no cover - pricing is written in parallel
        return None
    try:
        return PriceTable.load(pricing_file)
    except Exception as exc:  # a broken --pricing file is reported by the command that loads it
        log.debug("price table unavailable: %s", exc)
        return None



_ALWAYS_REASONING = ("o1", "o3", "o4", "gpt-5")


def always_reasons(model: str) -> bool:
    """OpenAI's o-series and GPT-5 reason on every call (`openai/gpt-5-mini`, `o3`, `azure/o4-mini`)."""
    return model.lower().rsplit("/", 1)[-1].startswith(_ALWAYS_REASONING)

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
        extra_params: Mapping[str, object] | None = None,
        provider: ProviderInfo | None = None,
    ):
        self.name = model
        self.model = model
        self.api_base = api_base
        self._api_key = api_key
        self.timeout = timeout
        self.pricing_file = pricing_file
        self.reasoning_effort = reasoning_effort
        self._reasoning: bool | None = None
        self.extra_params = dict(extra_params or {})
        self._prices = _price_table(pricing_file)
        self._max_output: int | None | bool = False  # False = not looked up yet
        self._provider = provider  # a preflight.ProviderInfo, resolved on the first call when not given

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

    def _reasons(self) -> bool:
        """Whether the model's output tokens include its reasoning: OpenAI's o-series and GPT-5 always, another
        model when --reasoning-effort asks for it. Its max_tokens then gets `REASONING_HEADROOM` beyond the
        summary budget (which its prompt still states), or the reasoning could use up the budget."""
        if self._reasoning is None:
            self._reasoning = always_reasons(self.model) or bool(self.reasoning_effort and self._supports_reasoning())
        return self._reasoning

    def _supports_reasoning(self) -> bool:
        try:
            return bool(import_litellm().supports_reasoning(self.model))
        except Exception:
            return False

    # -- the call --------------------------------------------------------------------------------
    def build_request(self, call: SummaryCall) -> Request:
        """The keyword arguments for `litellm.acompletion` (without the key, for logs and tests)."""
        max_tokens = call.max_tokens + (REASONING_HEADROOM if self._reasons() else 0)
        limit = self.max_output_tokens()
        if limit:
            max_tokens = min(max_tokens, limit)
        messages = [{"role": "system", "content": sendable(call.system_prompt)},
                    {"role": "user", "content": sendable(call.user_prompt)}]
        request = self._request(messages, max(1, max_tokens))
        if self.reasoning_effort and self._supports_reasoning():
            request["reasoning_effort"] = self.reasoning_effort
        return request

    def _request(self, messages: list[dict[str, str]], max_tokens: int) -> Request:
        """The arguments every call shares: litellm's own retries off (the pool owns retries)."""
        request: Request = {
            "model": self.model,
            "messages": messages,
            "max_tokens": max_tokens,
            "num_retries": 0,
            "max_retries": 0,
            **self.extra_params,
        }
        if self.timeout:
            request["timeout"] = self.timeout
        if self.api_base:
            request["api_base"] = self.api_base
        return request

    def provider(self) -> ProviderInfo:
        """The preflight's `ProviderInfo` (resolved once); an unusable model or key aborts the run."""
        if self._provider is None:
            from batchcompact.errors import BatchCompactError
            from batchcompact.summarize.preflight import preflight

            try:
                self._provider = preflight(self.model, self.api_base, self._api_key)
            except BatchCompactError as exc:
                raise RunFatalError(str(exc)) from None
        return self._provider

    async def _send(self, request: Request) -> Response:
        info = self.provider()
        try:
            return await import_litellm().acompletion(**request, api_key=self._api_key or info.api_key)
        except SummaryCallError:
            raise
        except Exception as exc:
            raise classify_error(exc, self.model, self._api_key, base_url=info.base_url) from None

    async def summarize(self, call: SummaryCall) -> SummaryResult:
        request = self.build_request(call)
        start = time.perf_counter()
        response = await self._send(request)
        latency = time.perf_counter() - start
        return self._result(response, latency)

    async def ping(self) -> float:
        """One tiny real request (`--check`): proves the key and the endpoint. Returns the latency."""
        request = self._request([{"role": "user", "content": "Reply with the single word: ok"}], 16)
        start = time.perf_counter()
        response = await self._send(request)
        if not getattr(response, "choices", None):
            raise RetryableError(f"malformed response from {self.model}: no choices")
        return time.perf_counter() - start

    def _result(self, response: Response, latency: float) -> SummaryResult:
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
        self, response: Response, prompt: int, completion: int, cache_read: int, cache_write: int
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
def parse_retry_after(headers: Headers | None, now: float | None = None) -> float | None:
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


def _headers(exc: Exception) -> Headers | None:
    headers = getattr(exc, "litellm_response_headers", None)
    if headers:
        return headers
    for link in _chain(exc):
        response = getattr(link, "response", None)
        headers = getattr(response, "headers", None)
        if headers:
            return headers
    return None


def _chain(exc: BaseException) -> list[BaseException]:
    """`exc` and its causes, outermost first (litellm wraps openai wraps httpx wraps the socket error)."""
    seen: list[BaseException] = []
    link: BaseException | None = exc
    while link is not None and link not in seen and len(seen) < 12:
        seen.append(link)
        link = link.__cause__ or link.__context__
    return seen


def _http_status(chain: list[BaseException]) -> int | None:
    """The status of the HTTP answer the provider sent: the innermost exception with a response wins
    (litellm's outer wrappers carry a made-up status, e.g. 500 for a refused connection)."""
    for link in reversed(chain):
        status = getattr(getattr(link, "response", None), "status_code", None)
        if isinstance(status, int):
            return status
    for link in chain:
        status = getattr(link, "status_code", None)
        if isinstance(status, int):
            return status
    return None


_TRANSPORT_NAMES = ("APIConnectionError", "ConnectError", "ConnectTimeout", "ClientConnectorError",
                    "ClientConnectionError", "ServerDisconnectedError", "RemoteProtocolError", "ReadError")


def _is_transport_failure(chain: list[BaseException]) -> bool:
    """True when no HTTP answer came back: refused, DNS, TLS, reset (not a timeout)."""
    import socket
    import ssl

    for link in chain:
        if isinstance(link, ConnectionError | socket.gaierror | ssl.SSLError):
            return True
        if type(link).__name__ in _TRANSPORT_NAMES and "Timeout" not in type(link).__name__:
            return True
    return False


def _is_timeout(chain: list[BaseException]) -> bool:
    import asyncio

    return any(
        isinstance(link, TimeoutError | asyncio.TimeoutError) or "Timeout" in type(link).__name__
        for link in chain
    )


def _transport_reason(chain: list[BaseException]) -> str:
    """A few words for why the connection failed, from the innermost cause."""
    import socket
    import ssl

    for link in reversed(chain):
        if isinstance(link, ConnectionRefusedError):
            return "connection refused"
        if isinstance(link, socket.gaierror):
            return f"host name not resolved ({link.strerror or link})"
        if isinstance(link, ssl.SSLError):
            return f"TLS error: {getattr(link, 'reason', None) or link}"
        if isinstance(link, ConnectionResetError):
            return "connection reset"
        if isinstance(link, OSError) and link.strerror:
            return link.strerror.lower()
    text = str(chain[-1]).strip() or type(chain[-1]).__name__
    return re.sub(r"\s*ssl:<[^>]*>", "", text)


_MISSING_KEY = re.compile(r"missing credentials|api_key client option must be set|missing \w+ api key|"
                          r"no api key|api key not (?:found|provided)", re.IGNORECASE)


def provider_message(exc: Exception, api_key: str | None = None, limit: int = 200) -> str:
    """The provider's own message, first line only, scrubbed and shortened."""
    text = ""
    for link in _chain(exc):
        body = getattr(link, "body", None)
        if isinstance(body, dict):
            inner = body.get("error", body)
            message = inner.get("message") if isinstance(inner, dict) else inner
            if isinstance(message, str) and message.strip():
                text = message
                break
    if not text:
        text = _PREFIX.sub("", str(exc)).strip()
        text = re.sub(r"^\w*(?:Exception|Error) - ", "", text)
    text = scrub(text.strip(), api_key)
    first = next((line.strip() for line in text.splitlines() if line.strip()), "") or type(exc).__name__
    return first if len(first) <= limit else first[: limit - 1] + "…"


def classify_error(exc: Exception, model: str, api_key: str | None = None, *,
                   base_url: str | None = None) -> SummaryCallError:
    """Map a litellm/openai/httpx exception to retry / fail-this-session / abort-the-run by what happened."""
    litellm = import_litellm()
    chain = _chain(exc)
    detail = provider_message(exc, api_key)
    where_url = base_url or model
    retry_after = parse_retry_after(_headers(exc))
    if isinstance(exc, litellm.ContextWindowExceededError):
        status = _http_status(chain)
        return ContextTooLongError(f"prompt too long for {model}: {detail}", status_code=status)
    if _MISSING_KEY.search(str(exc)):
        return RunFatalError(f"no API key for {model}: {detail} (set the provider's key variable or "
                             "pass --api-key)")
    if _is_transport_failure(chain):
        return RetryableError(f"cannot reach {where_url}: {_transport_reason(chain)}")
    if _is_timeout(chain):
        return RetryableError(f"no answer from {where_url} (timed out)")
    status = _http_status(chain)
    where = f"{model}" + (f" (HTTP {status})" if status else "")
    if status in (401, 403) or (
        status is None and isinstance(exc, litellm.AuthenticationError | litellm.PermissionDeniedError)
    ):
        hint = "check --api-key / the provider's key variable" if status != 403 else "check the key's permissions"
        return RunFatalError(f"{where} refused the credentials: {detail} ({hint})", status_code=status)
    if status == 402:
        return RunFatalError(f"{where} requires payment: {detail}", status_code=status)
    if status == 429 or (status is None and isinstance(exc, litellm.RateLimitError)):
        return RateLimitedError(f"rate limited by {where}: {detail}", status_code=429, retry_after=retry_after)
    if status is not None and (status >= 500 or status in (408, 409, 425)):
        return RetryableError(f"server error from {where}: {detail}", status_code=status, retry_after=retry_after)
    if status is not None and 400 <= status < 500:
        return SessionFatalError(f"{where} rejected the request: {detail}", status_code=status)
    retryable_types = (
        litellm.Timeout,
        litellm.APIConnectionError,
        litellm.InternalServerError,
        litellm.ServiceUnavailableError,
        litellm.APIResponseValidationError,
    )
    if isinstance(exc, retryable_types):
        return RetryableError(f"transient error from {where}: {detail}", retry_after=retry_after)
    if isinstance(exc, ValueError | KeyError | TypeError | AttributeError):  # malformed answers surface so
        return RetryableError(f"malformed response from {where}: {detail}")
    return SessionFatalError(f"{where} failed: {detail}")
