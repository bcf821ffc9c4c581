"""The summarizer seam: the unit of work handed to a summarizer (one model call, fully prepared), what it
gives back, and the Protocols a summarizer satisfies. The summarizers themselves live in `summarize/`; this
module is the contract, so that code naming a summarizer (eval's measures, the pipeline) imports none."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Protocol, runtime_checkable

from batchcompact.core.jsontypes import JsonObject

HISTORY = "history"
TURN_PREFIX = "turn_prefix"
BRANCH = "branch"
HANDOFF = "handoff"  # the whole context, for a new session (core/handoff.py)


@dataclass(frozen=True)
class SummaryCall:
    """One summary to produce.

    `user_prompt` is exactly what a model receives; `messages` are the LLM messages it was built from,
    kept so that the built-in summarizer can read structure and overflow recovery can re-chunk.
    """

    kind: str
    system_prompt: str
    user_prompt: str
    max_tokens: int
    messages: tuple[JsonObject, ...] = ()
    previous_summary: str | None = None
    instructions: str | None = None
    prompt_tokens: int = 0
    meta: JsonObject = field(default_factory=dict, compare=False)


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
    """Anything with a `name` and an async `summarize` that makes one attempt: the built-in, the litellm one,
    overflow recovery around it, a custom (hook) one, the run's summary cache around any of them.

    Two attributes are optional, read through `is_remote` and `is_free` (a summarizer without them is remote
    and costs money): `remote = False` says prompts never leave the machine (the pool does not redact them),
    `free = True` that it costs nothing (a --max-cost budget never refuses it).
    """

    name: str

    async def summarize(self, call: SummaryCall) -> SummaryResult: ...


@runtime_checkable
class InPlaceSummarizer(Summarizer, Protocol):
    """A summarizer that also works synchronously in any process (the built-in one): a worker that planned a
    session makes its summary where it is (`summarize_now`), with no pool."""

    def summarize_now(self, call: SummaryCall) -> SummaryResult: ...


@runtime_checkable
class WindowedSummarizer(Summarizer, Protocol):
    """A summarizer that knows its model's input window: `fits(call)` is False when the call's prompt and
    output budget would not fit it (overflow recovery then chunks the call; a batch buys it on demand)."""

    def fits(self, call: SummaryCall) -> bool: ...


def is_remote(summarizer: Summarizer) -> bool:
    """Whether prompts leave the machine (then the pool redacts them): `remote`, True when not said."""
    return bool(getattr(summarizer, "remote", True))


def is_free(summarizer: Summarizer) -> bool:
    """Whether the summarizer costs nothing (a budget never refuses it): `free`, False when not said."""
    return bool(getattr(summarizer, "free", False))
