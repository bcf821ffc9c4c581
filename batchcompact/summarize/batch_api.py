"""Provider batch APIs over plain httpx: OpenAI Batch (Files API + /v1/batches, also Azure and
OpenAI-compatible servers such as vLLM) and Anthropic Message Batches.

Why httpx and not litellm: litellm 1.106.2 cannot create Anthropic batches (its transformation raises
`NotImplementedError`), and its OpenAI path hides the batch `metadata` and listing that orphan recovery
needs. One small client per API keeps every request explicit and testable against a loopback server.
httpx is already installed with litellm; it is imported lazily (`--help` stays instant).

Each client answers the same questions: `request_line` (one request, serialized once so its size
counts against the batch limit), `submit`, `retrieve`, `results`, `find` (a batch we created but did not
record, by its tag), `cancel`. `custom_id` is always the summary cache key, so a result can only ever land
on the call that asked for it.
"""

from __future__ import annotations

import abc
import json
import os
import time
from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Protocol

from batchcompact.core.calls import SummaryCall
from batchcompact.errors import RunAborted, UsageError
from batchcompact.formats.jsonl import sendable
from batchcompact.summarize.base import REASONING_HEADROOM
from batchcompact.summarize.redact import scrub

if TYPE_CHECKING:
    import httpx
from batchcompact.core.jsontypes import JsonObject, JsonValue

OPENAI, AZURE, ANTHROPIC = "openai", "azure", "anthropic"
OPENAI_BASE = "https://api.openai.com/v1"
ANTHROPIC_BASE = "https://api.anthropic.com"
ANTHROPIC_VERSION = "2023-06-01"
AZURE_API_VERSION = "2024-10-21"
TAG_KEY = "batchcompact_id"
# Providers that document a 50% batch discount (used when the price map has no `*_batches` price).
HALF_PRICE_PROVIDERS = frozenset({OPENAI, AZURE, ANTHROPIC})
_OPENAI_PREFIXES = {"openai": OPENAI, "hosted_vllm": OPENAI, "azure": AZURE, "anthropic": ANTHROPIC}
_COMPLETION_TOKENS_MODELS = ("o1", "o3", "o4", "gpt-5")


class MissingBatchKeyError(RunAborted):
    """No key for the batch API (exit 3, as for on-demand runs); nothing was uploaded."""


class BatchAPIError(RunAborted):
    """A batch endpoint refused or failed; the message names the endpoint and the fix."""


@dataclass(frozen=True)
class BatchTarget:
    """Where batch requests go: the provider's API, the model as that API names it, the key."""

    provider: str  # openai | azure | anthropic
    model: str  # litellm name, e.g. openai/gpt-4o-mini (prices, cache keys)
    api_model: str  # what the API receives, e.g. gpt-4o-mini
    api_base: str
    api_key: str | None = field(default=None, repr=False)


@dataclass
class BatchInfo:
    batch_id: str
    status: str  # the provider's word
    ended: bool
    total: int = 0
    succeeded: int = 0
    errored: int = 0
    expired: int = 0
    cancelled: int = 0
    created_at: float | None = None
    tag: str | None = None
    raw: JsonObject = field(default_factory=dict, repr=False)


@dataclass
class RequestResult:
    """One request's fate: `kind` is succeeded, errored, too_long, expired or cancelled."""

    custom_id: str
    kind: str
    text: str | None = None
    prompt_tokens: int = 0
    completion_tokens: int = 0
    cache_read_tokens: int = 0
    cache_write_tokens: int = 0
    error: str | None = None


# -- which API, which key ------------------------------------------------------------------------
def resolve_target(model: str, api_base: str | None = None, api_key: str | None = None) -> BatchTarget:
    """The batch API for `model`, checked before anything is planned or uploaded: an unknown model or
    provider without a batch API is a usage error (exit 2), a missing key aborts (exit 3).

    `openai/…` and `hosted_vllm/…` use the OpenAI Batch API (at `--api-base` when given), `azure/…`
    Azure OpenAI's (needs `--api-base`), `anthropic/…` (or a bare `claude-…`) Message Batches. A key is
    required, from `--api-key` or the provider's usual variable; only an OpenAI-compatible server at
    `--api-base` may go without one.
    """
    name = (model or "").strip()
    if not name or name.lower() == "builtin":
        raise UsageError("--batch needs a provider model (--model openai/… or anthropic/…); the built-in "
                         "summarizer is offline and costs nothing")
    prefix, _, bare = name.partition("/") if "/" in name else ("", "", name)
    if prefix:
        provider = _OPENAI_PREFIXES.get(prefix.lower())
    elif bare.lower().startswith("claude"):
        provider = ANTHROPIC
    elif bare.lower().startswith(("gpt-", "o1", "o3", "o4", "chatgpt")):
        provider = OPENAI
    else:
        provider = None
    if provider is None or not bare:
        raise UsageError(f"--batch: unknown model {name!r}: batch mode supports openai/<model>, azure/<deployment>, "
                         "hosted_vllm/<model> (with --api-base) and anthropic/<model>")
    if provider == ANTHROPIC:
        base = (api_base or ANTHROPIC_BASE).rstrip("/")
        for suffix in ("/v1/messages", "/v1"):
            base = base.removesuffix(suffix)
        key = api_key or os.environ.get("ANTHROPIC_API_KEY")
        variable = "ANTHROPIC_API_KEY"
    elif provider == AZURE:
        if not api_base:
            raise UsageError("--batch with an azure/ model needs --api-base https://<resource>.openai.azure.com")
        base = api_base.rstrip("/").removesuffix("/openai")
        key = api_key or os.environ.get("AZURE_API_KEY") or os.environ.get("AZURE_OPENAI_API_KEY")
        variable = "AZURE_API_KEY"
    else:
        base = (api_base or OPENAI_BASE).rstrip("/")
        key = api_key or os.environ.get("OPENAI_API_KEY")
        variable = "OPENAI_API_KEY"
    if not key and not (provider == OPENAI and api_base):
        raise MissingBatchKeyError(f"--batch with {name}: no API key (pass --api-key or set {variable}); "
                                   "nothing was uploaded")
    return BatchTarget(provider, name, bare, base, key)


class BatchClient(Protocol):
    """One provider's batch API, as the batch buyer (pipeline/batch.py) and `batchcompact batches` use it."""

    max_requests: int  # requests in one batch at most
    max_bytes: int  # its request lines' bytes at most

    def request_line(self, custom_id: str, call: SummaryCall) -> bytes: ...

    def submit(self, lines: list[bytes], tag: str) -> str: ...

    def retrieve(self, batch_id: str) -> BatchInfo: ...

    def results(self, info: BatchInfo) -> Iterator[RequestResult]: ...

    def find(self, tag: str, created_after: float, count: int, known: frozenset[str] = ...) -> str | None: ...

    def cancel(self, batch_id: str) -> BatchInfo: ...

    def close(self) -> None: ...


def client_for(target: BatchTarget, timeout: float = 120.0) -> BatchClient:
    if target.provider == ANTHROPIC:
        return AnthropicBatches(target, timeout)
    return OpenAIBatches(target, timeout)


# -- shared HTTP -----------------------------------------------------------------------------------
class _Client(abc.ABC):
    """What both providers' batch clients share: one httpx client, retried calls, key-free errors."""

    max_requests: int
    max_bytes: int
    retries = 3

    def __init__(self, target: BatchTarget, timeout: float) -> None:
        import httpx

        self.target = target
        self._httpx = httpx
        self.http = httpx.Client(timeout=timeout, headers=self._headers())

    @abc.abstractmethod
    def _headers(self) -> dict[str, str]:
        """The provider's authentication and version headers."""

    def close(self) -> None:
        self.http.close()

    def _url(self, path: str) -> str:
        return self.target.api_base + path

    # Any: httpx's own keyword arguments for the request (json, data, files, params, content, headers)
    def _send(self, method: str, path: str, what: str, **kwargs: Any) -> httpx.Response:
        """One endpoint call; transient failures are retried a few times, others raise `BatchAPIError`."""
        url = self._url(path)
        delay = 1.0
        for attempt in range(1, self.retries + 1):
            try:
                response = self.http.request(method, url, **kwargs)
            except self._httpx.HTTPError as exc:
                if attempt == self.retries:
                    raise BatchAPIError(f"{what}: cannot reach {self.target.api_base}: "
                                        f"{scrub(str(exc), self.target.api_key)}") from None
            else:
                if response.status_code < 400:
                    return response
                detail = scrub(response.text[:300], self.target.api_key)
                if response.status_code in (401, 403):
                    raise BatchAPIError(f"{what}: {self.target.model} refused the credentials (HTTP "
                                        f"{response.status_code}): {detail} (check --api-key)")
                if response.status_code != 429 and response.status_code < 500 or attempt == self.retries:
                    raise BatchAPIError(f"{what}: HTTP {response.status_code} from {self.target.api_base}: {detail}")
            time.sleep(delay)
            delay *= 2
        raise AssertionError("unreachable")


def _int(value: JsonValue) -> int:
    return int(value) if isinstance(value, int | float) and not isinstance(value, bool) else 0


# -- OpenAI / Azure / OpenAI-compatible ------------------------------------------------------------
class OpenAIBatches(_Client):
    """Files API upload of a JSONL file, then `POST /batches` (`/v1/chat/completions`, 24 h window)."""

    max_requests = 50_000
    max_bytes = 200 * 1024 * 1024

    def _headers(self) -> dict[str, str]:
        if not self.target.api_key:
            return {}
        if self.target.provider == AZURE:
            return {"api-key": self.target.api_key}
        return {"Authorization": f"Bearer {self.target.api_key}"}

    def _url(self, path: str) -> str:
        if self.target.provider == AZURE:
            version = os.environ.get("AZURE_API_VERSION", AZURE_API_VERSION)
            sep = "&" if "?" in path else "?"
            return f"{self.target.api_base}/openai{path}{sep}api-version={version}"
        return self.target.api_base + path

    @property
    def endpoint(self) -> str:
        return "/chat/completions" if self.target.provider == AZURE else "/v1/chat/completions"

    def request_line(self, custom_id: str, call: SummaryCall) -> bytes:
        tokens_field = "max_completion_tokens" if self.target.api_model.startswith(_COMPLETION_TOKENS_MODELS) \
            else "max_tokens"
        body = {
            "model": self.target.api_model,
            "messages": [{"role": "system", "content": sendable(call.system_prompt)},
                         {"role": "user", "content": sendable(call.user_prompt)}],
            # o-series and GPT-5 count their reasoning in max_completion_tokens: room beyond the summary budget
            tokens_field: max(1, call.max_tokens) + (REASONING_HEADROOM if tokens_field == "max_completion_tokens" else 0),
        }
        line = {"custom_id": custom_id, "method": "POST", "url": self.endpoint, "body": body}
        return json.dumps(line, ensure_ascii=False).encode("utf-8")

    def submit(self, lines: list[bytes], tag: str) -> str:
        content = b"\n".join(lines) + b"\n"
        uploaded = self._send("POST", "/files", "uploading the batch file", data={"purpose": "batch"},
                              files={"file": (f"batchcompact-{tag}.jsonl", content, "application/jsonl")}).json()
        created = self._send("POST", "/batches", "creating the batch", json={
            "input_file_id": uploaded["id"], "endpoint": self.endpoint, "completion_window": "24h",
            "metadata": {TAG_KEY: tag},
        }).json()
        return str(created["id"])

    def _info(self, raw: JsonObject) -> BatchInfo:
        counts = raw.get("request_counts") or {}
        status = str(raw.get("status") or "unknown")
        ended = status in ("completed", "failed", "expired", "cancelled")
        info = BatchInfo(str(raw.get("id")), status, ended, total=_int(counts.get("total")),
                         succeeded=_int(counts.get("completed")), errored=_int(counts.get("failed")),
                         created_at=raw.get("created_at"), tag=(raw.get("metadata") or {}).get(TAG_KEY), raw=raw)
        if status == "expired":
            info.expired = max(info.total - info.succeeded - info.errored, 0)
        elif status == "cancelled":
            info.cancelled = max(info.total - info.succeeded - info.errored, 0)
        return info

    def retrieve(self, batch_id: str) -> BatchInfo:
        return self._info(self._send("GET", f"/batches/{batch_id}", "checking the batch").json())

    def results(self, info: BatchInfo) -> Iterator[RequestResult]:
        for key in ("output_file_id", "error_file_id"):
            file_id = info.raw.get(key)
            if not file_id:
                continue
            response = self._send("GET", f"/files/{file_id}/content", "downloading batch results")
            for line in response.text.splitlines():
                if line.strip():
                    yield self._result(json.loads(line))

    def _result(self, line: JsonObject) -> RequestResult:
        custom_id = str(line.get("custom_id"))
        response = line.get("response") or {}
        body = response.get("body") or {}
        error = line.get("error") or body.get("error")
        if response.get("status_code") == 200 and not line.get("error"):
            try:
                text = body["choices"][0]["message"]["content"]
            except (KeyError, IndexError, TypeError):
                return RequestResult(custom_id, "errored", error="malformed response (no message content)")
            if not isinstance(text, str) or not text.strip():
                return RequestResult(custom_id, "errored", error="empty summary")
            usage = body.get("usage") or {}
            details = usage.get("prompt_tokens_details") or {}
            return RequestResult(custom_id, "succeeded", text, _int(usage.get("prompt_tokens")),
                                 _int(usage.get("completion_tokens")), _int(details.get("cached_tokens")))
        code = str((error or {}).get("code") or "") if isinstance(error, dict) else ""
        message = str((error or {}).get("message") or error or "request failed") if error else "request failed"
        kind = {"batch_expired": "expired", "batch_cancelled": "cancelled"}.get(code, "errored")
        if code == "context_length_exceeded" or "maximum context length" in message:
            kind = "too_long"
        return RequestResult(custom_id, kind, error=scrub(f"{code}: {message}" if code else message,
                                                          self.target.api_key))

    def find(self, tag: str, created_after: float, count: int, known: frozenset[str] = frozenset()) -> str | None:
        listing = self._send("GET", "/batches", "listing batches", params={"limit": 100}).json()
        for raw in listing.get("data") or []:
            if (raw.get("metadata") or {}).get(TAG_KEY) == tag:
                return str(raw["id"])
        return None

    def cancel(self, batch_id: str) -> BatchInfo:
        return self._info(self._send("POST", f"/batches/{batch_id}/cancel", "cancelling the batch").json())


# -- Anthropic Message Batches ----------------------------------------------------------------------
class AnthropicBatches(_Client):
    """Requests inline in one JSON body: `POST /v1/messages/batches` (≤ 100,000 requests or 256 MB)."""

    max_requests = 100_000
    max_bytes = 256 * 1024 * 1024

    def _headers(self) -> dict[str, str]:
        headers = {"anthropic-version": ANTHROPIC_VERSION}
        if self.target.api_key:
            headers["x-api-key"] = self.target.api_key
        return headers

    def request_line(self, custom_id: str, call: SummaryCall) -> bytes:
        params = {
            "model": self.target.api_model,
            "max_tokens": max(1, call.max_tokens),
            "system": sendable(call.system_prompt),
            "messages": [{"role": "user", "content": sendable(call.user_prompt)}],
        }
        return json.dumps({"custom_id": custom_id, "params": params}, ensure_ascii=False).encode("utf-8")

    def submit(self, lines: list[bytes], tag: str) -> str:
        body = b'{"requests":[' + b",".join(lines) + b"]}"
        created = self._send("POST", "/v1/messages/batches", "creating the message batch", content=body,
                             headers={"content-type": "application/json"}).json()
        return str(created["id"])

    def _info(self, raw: JsonObject) -> BatchInfo:
        counts = raw.get("request_counts") or {}
        status = str(raw.get("processing_status") or "unknown")
        info = BatchInfo(str(raw.get("id")), status, status == "ended",
                         succeeded=_int(counts.get("succeeded")), errored=_int(counts.get("errored")),
                         expired=_int(counts.get("expired")), cancelled=_int(counts.get("canceled")),
                         created_at=_timestamp(raw.get("created_at")), raw=raw)
        info.total = info.succeeded + info.errored + info.expired + info.cancelled + _int(counts.get("processing"))
        return info

    def retrieve(self, batch_id: str) -> BatchInfo:
        return self._info(self._send("GET", f"/v1/messages/batches/{batch_id}", "checking the batch").json())

    def results(self, info: BatchInfo) -> Iterator[RequestResult]:
        response = self._send("GET", f"/v1/messages/batches/{info.batch_id}/results", "downloading batch results")
        for line in response.text.splitlines():
            if line.strip():
                yield self._result(json.loads(line))

    def _result(self, line: JsonObject) -> RequestResult:
        custom_id = str(line.get("custom_id"))
        result = line.get("result") or {}
        kind = result.get("type")
        if kind == "succeeded":
            message = result.get("message") or {}
            text = "\n".join(part.get("text", "") for part in message.get("content") or []
                             if isinstance(part, dict) and part.get("type") == "text")
            if not text.strip():
                return RequestResult(custom_id, "errored", error="empty summary")
            usage = message.get("usage") or {}
            read, write = _int(usage.get("cache_read_input_tokens")), _int(usage.get("cache_creation_input_tokens"))
            return RequestResult(custom_id, "succeeded", text, _int(usage.get("input_tokens")) + read + write,
                                 _int(usage.get("output_tokens")), read, write)
        if kind in ("expired", "canceled"):
            return RequestResult(custom_id, "expired" if kind == "expired" else "cancelled", error=kind)
        error = (result.get("error") or {}).get("error") or result.get("error") or {}
        message = str(error.get("message") or "request errored") if isinstance(error, dict) else str(error)
        kind = "too_long" if "prompt is too long" in message else "errored"
        return RequestResult(custom_id, kind, error=scrub(message, self.target.api_key))

    def find(self, tag: str, created_after: float, count: int, known: frozenset[str] = frozenset()) -> str | None:
        """Message batches carry no metadata: a batch created after our intent with exactly our count."""
        listing = self._send("GET", "/v1/messages/batches", "listing batches", params={"limit": 100}).json()
        for raw in listing.get("data") or []:
            info = self._info(raw)
            if (info.batch_id not in known and info.created_at is not None and info.created_at >= created_after - 120
                    and info.total == count):
                return info.batch_id
        return None

    def cancel(self, batch_id: str) -> BatchInfo:
        return self._info(self._send("POST", f"/v1/messages/batches/{batch_id}/cancel",
                                     "cancelling the batch").json())


def _timestamp(value: JsonValue) -> float | None:
    if isinstance(value, int | float):
        return float(value)
    if isinstance(value, str):
        from datetime import datetime

        try:
            return datetime.fromisoformat(value.replace("Z", "+00:00")).timestamp()
        except ValueError:
            return None
    return None
