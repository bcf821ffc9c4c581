"""Custom summarizers (pi's `session_before_compact`): `--summarizer module:callable` or an entry point.

A custom summarizer is either
- a callable `fn(call: SummaryCall) -> str | Cancel | SummaryResult` (sync or async); sync callables run
  in a worker thread so they cannot stall the event loop; or
- an object (or a class, instantiated without arguments) with `name` and `async summarize(call)`.
Results are flagged `from_hook=True` (written entries carry `fromHook: true`); returning `Cancel(reason)`
skips the session. Prompts reach a custom summarizer unredacted (it runs in-process, like a pi extension):
a hook that sends them elsewhere should call `batchcompact.summarize.redact.redact_text` itself.
"""

from __future__ import annotations

import asyncio
import importlib
import inspect
import time
from collections.abc import Callable
from importlib.metadata import entry_points
from typing import Any, Protocol, TypeAlias

from batchcompact.core.calls import SummaryCall
from batchcompact.errors import UsageError
from batchcompact.summarize.base import Cancel, SessionFatalError, Summarizer, SummaryCancelled, SummaryResult

ENTRY_POINT_GROUP = "batchcompact.summarizers"

# A user's function: it returns a summary string, a `Cancel`, a `SummaryResult` or an awaitable of one.
# Any: what a user's function returns is whatever it returns; `to_result` checks it
HookFunction: TypeAlias = Callable[[SummaryCall], Any]


class SummarizerObject(Protocol):
    """A user's summarizer object: `summarize(call)`, sync or async (`name` and `remote` are optional)."""

    def summarize(self, call: SummaryCall) -> object: ...


class HookSummarizer:
    """Adapts a user callable to the `Summarizer` protocol."""

    remote = False

    def __init__(self, func: HookFunction, name: str) -> None:
        self.func = func
        self.name = name

    async def summarize(self, call: SummaryCall) -> SummaryResult:
        start = time.perf_counter()
        if inspect.iscoroutinefunction(self.func):
            value = await self.func(call)
        else:
            value = await asyncio.to_thread(self.func, call)
            if inspect.isawaitable(value):
                value = await value
        return to_result(value, self.name, time.perf_counter() - start)


def to_result(value: object, name: str, latency: float) -> SummaryResult:
    if isinstance(value, Cancel):
        raise SummaryCancelled(value.reason)
    if isinstance(value, SummaryResult):
        value.from_hook = True
        return value
    if isinstance(value, str) and value.strip():
        return SummaryResult(
            text=value,
            model=name,
            cost_usd=0.0,
            latency_s=latency,
            from_hook=True,
            completion_tokens=-(-len(value) // 4),
        )
    raise SessionFatalError(
        f"custom summarizer {name} returned {type(value).__name__}, expected a summary string"
    )


class _ObjectSummarizer:
    """Wraps an object that already has `summarize`, to flag its results `from_hook`."""

    def __init__(self, obj: SummarizerObject, name: str) -> None:
        self.obj = obj
        self.name = getattr(obj, "name", name)
        self.remote = getattr(obj, "remote", False)

    async def summarize(self, call: SummaryCall) -> SummaryResult:
        start = time.perf_counter()
        value = self.obj.summarize(call)
        if inspect.isawaitable(value):
            value = await value
        return to_result(value, self.name, time.perf_counter() - start)


def _resolve(spec: str) -> object:
    if ":" in spec:
        module_name, _, attr = spec.partition(":")
        try:
            target: object = importlib.import_module(module_name)
        except ImportError as exc:
            raise UsageError(f"--summarizer {spec}: cannot import {module_name!r} ({exc})") from None
        for part in attr.split("."):
            try:
                target = getattr(target, part)
            except AttributeError:
                raise UsageError(f"--summarizer {spec}: {module_name!r} has no attribute {attr!r}") from None
        return target
    matches = [ep for ep in entry_points(group=ENTRY_POINT_GROUP) if ep.name == spec]
    if not matches:
        names = sorted(ep.name for ep in entry_points(group=ENTRY_POINT_GROUP))
        known = f" (installed: {', '.join(names)})" if names else ""
        raise UsageError(f"--summarizer {spec}: use module:callable or an installed summarizer name{known}")
    return matches[0].load()


def load_summarizer(spec: str) -> Summarizer:
    """A `Summarizer` from `module:callable` or the name of a `batchcompact.summarizers` entry point."""
    target = _resolve(spec)
    if inspect.isclass(target):
        target = target()
    if hasattr(target, "summarize"):
        return _ObjectSummarizer(target, spec)
    if callable(target):
        return HookSummarizer(target, spec)
    raise UsageError(f"--summarizer {spec}: {type(target).__name__} is not callable")
