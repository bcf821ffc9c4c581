"""The async worker pool: bounded concurrency, rpm/tpm limits, retries, budget, abort and cancellation.

Invariants:
- at most `concurrency` workers and `concurrency` model calls in flight; the job queue is bounded
  (`2 x concurrency`), so a generator of 100,000 jobs is consumed lazily;
- every job taken from `jobs` gets exactly one `JobOutcome`, passed to `on_outcome` as soon as it is known;
- a job's results that were paid for are kept in its outcome even when the job did not finish (`results`
  may be partial: `None` where a call did not succeed), so a resumable runner never pays twice;
- retries, rate limits and the budget live here; a summarizer makes exactly one attempt per call;
- no polling: waits are computed sleeps (backoff, Retry-After, rate-limit windows) on an injected clock.

Statuses: `ok`; `failed` (a session-fatal error, or retries exhausted); `skipped` (a custom summarizer
returned `Cancel`); `aborted` (a run-fatal error such as 401/403 stopped the run); `budget_exhausted`
(`max_cost_usd` was reached before this job could finish); `cancelled` (stop requested or task cancelled).
"""

from __future__ import annotations

import asyncio
import inspect
import logging
import random
import time
from collections.abc import AsyncIterable, Awaitable, Callable, Iterable, Sequence
from dataclasses import dataclass, field, replace
from typing import TypeAlias

from batchcompact.core.calls import SummaryCall
from batchcompact.core.jsontypes import JsonValue
from batchcompact.core.words import counted
from batchcompact.summarize.base import (
    RetryableError,
    RunFatalError,
    SessionFatalError,
    Summarizer,
    SummaryCancelled,
    SummaryResult,
    is_free,
    is_remote,
)
from batchcompact.summarize.pool_settings import PoolSettings
from batchcompact.summarize.ratelimit import RateLimits
from batchcompact.summarize.redact import merge_counts, redact_text

log = logging.getLogger(__name__)

OK, FAILED, SKIPPED, ABORTED, BUDGET, CANCELLED = (
    "ok",
    "failed",
    "skipped",
    "aborted",
    "budget_exhausted",
    "cancelled",
)
MAX_RETRY_AFTER = 600.0


@dataclass
class SummaryJob:
    """One session's calls (1, or 2 for a split turn: they run concurrently)."""

    key: str
    calls: list[SummaryCall]
    version: str | None = None  # the input's fingerprint: a batch buyer notices a file changed since submission


@dataclass
class JobOutcome:
    key: str
    status: str
    results: list[SummaryResult | None] = field(default_factory=list)
    error: str | None = None
    attempts: int = 0

    @property
    def ok(self) -> bool:
        return self.status == OK

    @property
    def cost_usd(self) -> float:
        return sum(r.cost_usd or 0.0 for r in self.results if r is not None)


@dataclass
class PoolStats:
    jobs: int = 0
    by_status: dict[str, int] = field(default_factory=dict)
    calls: int = 0  # attempts sent to the summarizer
    retries: int = 0
    rate_limited: int = 0
    cost_usd: float = 0.0
    unpriced_calls: int = 0
    prompt_tokens: int = 0
    completion_tokens: int = 0
    stop_reason: str | None = None  # why launching stopped early (abort message, budget, cancel)
    elapsed_s: float = 0.0


# What the pool calls back, each either a plain function or a coroutine function (awaited when it returns an
# awaitable): `on_outcome(outcome)` once per job taken, `on_result(job, call_index, result)` once per paid call.
OutcomeHandler: TypeAlias = Callable[[JobOutcome], Awaitable[None] | None]
ResultHandler: TypeAlias = Callable[[SummaryJob, int, SummaryResult], Awaitable[None] | None]
Clock: TypeAlias = Callable[[], float]  # monotonic seconds
Sleep: TypeAlias = Callable[[float], Awaitable[None]]
Jobs: TypeAlias = Iterable[SummaryJob] | AsyncIterable[SummaryJob]


class _Stop(Exception):
    """Raised inside a job when the run stopped launching calls."""

    def __init__(self, status: str, message: str):
        super().__init__(message)
        self.status = status


def redact_call(call: SummaryCall) -> tuple[SummaryCall, dict[str, int]]:
    """The call with secrets redacted from its prompt, messages and previous summary; counts are the prompt's."""
    user_prompt, counts = redact_text(call.user_prompt)
    previous = redact_text(call.previous_summary)[0] if call.previous_summary else call.previous_summary
    messages = tuple(_redact_value(m) for m in call.messages)
    return replace(call, user_prompt=user_prompt, previous_summary=previous, messages=messages), counts


def _redact_value(value: JsonValue) -> JsonValue:
    if isinstance(value, str):
        return redact_text(value)[0]
    if isinstance(value, dict):
        return {
            k: _redact_value(v) if k not in ("data", "thinkingSignature") else v for k, v in value.items()
        }
    if isinstance(value, list):
        return [_redact_value(v) for v in value]
    return value


class _Pool:
    def __init__(
        self, summarizer: Summarizer, settings: PoolSettings, on_outcome: OutcomeHandler | None,
        on_result: ResultHandler | None, clock: Clock | None, sleep: Sleep | None, rng: random.Random | None,
    ) -> None:
        self.summarizer = summarizer
        self.settings = settings
        self.on_outcome = on_outcome
        self.on_result = on_result
        self.clock = clock or time.monotonic
        self.sleep = sleep or asyncio.sleep
        self.rng = rng or random.Random()
        self.limits = RateLimits(settings.rpm, settings.tpm, self.clock, self.sleep)
        self.slots = asyncio.Semaphore(max(1, settings.concurrency))
        self.stats = PoolStats()
        self.stop: _Stop | None = None
        self.pause_until = 0.0
        self.redact = settings.redact and is_remote(summarizer)
        self.free = is_free(summarizer)  # the built-in: no budget can be spent by it

    # -- outcomes ------------------------------------------------------------------------------
    async def emit(self, outcome: JobOutcome) -> None:
        self.stats.jobs += 1
        self.stats.by_status[outcome.status] = self.stats.by_status.get(outcome.status, 0) + 1
        if self.on_outcome is not None:
            value = self.on_outcome(outcome)
            if inspect.isawaitable(value):
                await value

    def request_stop(self, status: str, message: str) -> _Stop:
        """Stop launching calls (the first request wins); the stop in force."""
        if self.stop is None:
            self.stop = _Stop(status, message)
            self.stats.stop_reason = message
            log.warning("pool stopped launching calls: %s", message)
        return self.stop

    # -- one call, with retries ----------------------------------------------------------------
    def backoff(self, attempt: int, retry_after: float | None) -> float:
        delay = min(self.settings.max_delay, self.settings.base_delay * 2 ** (attempt - 1))
        delay *= 0.5 + 0.5 * self.rng.random()  # jitter: spread retries of many workers
        if retry_after is not None:
            delay = max(delay, min(retry_after, MAX_RETRY_AFTER))
        return delay

    def check_launch(self) -> None:
        if self.stop is not None:
            raise self.stop
        budget = self.settings.max_cost_usd
        if budget is not None and not self.free and self.stats.cost_usd >= budget:
            raise self.request_stop(BUDGET, f"budget of ${budget:.4f} reached (spent ${self.stats.cost_usd:.4f})")

    async def run_call(self, call: SummaryCall, counter: list[int]) -> SummaryResult:
        redactions: dict[str, int] = {}
        if self.redact:
            if len(call.user_prompt) > 200_000:
                call, redactions = await asyncio.to_thread(redact_call, call)
            else:
                call, redactions = redact_call(call)
        estimate = (
            call.prompt_tokens or -(-len(call.system_prompt + call.user_prompt) // 4)
        ) + call.max_tokens
        attempt = 0
        while True:
            self.check_launch()
            while (wait := self.pause_until - self.clock()) > 0:  # run-wide pause after a 429
                await self.sleep(wait)
                self.check_launch()
            async with self.slots:
                self.check_launch()
                reservation = await self.limits.acquire(estimate)
                self.check_launch()  # a stop may have come while waiting for the rate limit
                attempt += 1
                counter[0] += 1
                self.stats.calls += 1
                try:
                    result = await self.summarizer.summarize(call)
                except RetryableError as exc:
                    self.limits.settle(reservation, 0)  # tokens were not used; the request still counts
                    error = exc
                except RunFatalError as exc:
                    # Stop launching at once, not when this job ends: a split turn's other call, or any
                    # call still waiting for a slot, would only be refused the same way.
                    self.limits.settle(reservation, 0)
                    self.request_stop(ABORTED, f"run aborted: {exc}")
                    raise
                else:
                    self.limits.settle(reservation, result.prompt_tokens + result.completion_tokens)
                    self.account(result)
                    result.attempts = attempt
                    result.redactions = merge_counts(result.redactions, redactions)
                    return result
            if attempt >= self.settings.max_attempts:
                raise SessionFatalError(f"gave up after {counted(attempt, 'attempt')}: {error.message}")
            delay = self.backoff(attempt, error.retry_after)
            self.stats.retries += 1
            if getattr(error, "rate_limited", False):
                self.stats.rate_limited += 1
                self.pause_until = max(self.pause_until, self.clock() + delay)
            log.info("retrying in %.1fs (attempt %d): %s", delay, attempt, error.message)
            await self.sleep(delay)

    async def run_paid_call(self, job: SummaryJob, index: int, counter: list[int]) -> SummaryResult:
        """`run_call`, then `on_result` at once: a paid summary is handed over before its job finishes."""
        result = await self.run_call(job.calls[index], counter)
        if self.on_result is not None:
            value = self.on_result(job, index, result)
            if inspect.isawaitable(value):
                await value
        return result

    def account(self, result: SummaryResult) -> None:
        if result.cost_usd is None:
            self.stats.unpriced_calls += 1
        else:
            self.stats.cost_usd += result.cost_usd
        self.stats.prompt_tokens += result.prompt_tokens
        self.stats.completion_tokens += result.completion_tokens

    # -- one job -------------------------------------------------------------------------------
    async def run_job(self, job: SummaryJob) -> JobOutcome:
        if self.stop is not None:
            return JobOutcome(job.key, self.stop.status, [None] * len(job.calls), str(self.stop))
        counter = [0]
        tasks = [asyncio.ensure_future(self.run_paid_call(job, i, counter)) for i in range(len(job.calls))]
        try:
            done = await asyncio.gather(*tasks, return_exceptions=True)
        except asyncio.CancelledError:
            for task in tasks:
                task.cancel()
            done = await asyncio.gather(*tasks, return_exceptions=True)
            results = [r if isinstance(r, SummaryResult) else None for r in done]
            await self.emit(JobOutcome(job.key, CANCELLED, results, "cancelled", counter[0]))
            raise
        results = [r if isinstance(r, SummaryResult) else None for r in done]
        errors = [r for r in done if isinstance(r, BaseException)]
        if not errors:
            return JobOutcome(job.key, OK, results, None, counter[0])
        status, message = self.classify(errors)
        return JobOutcome(job.key, status, results, message, counter[0])

    def classify(self, errors: list[BaseException]) -> tuple[str, str]:
        """The job's status from its calls' errors, most serious first."""
        for exc in errors:
            if isinstance(exc, RunFatalError):
                self.request_stop(ABORTED, f"run aborted: {exc}")
                return ABORTED, str(exc)
        for exc in errors:
            if isinstance(exc, SummaryCancelled):
                return SKIPPED, exc.reason
        for exc in errors:
            if isinstance(exc, SessionFatalError):
                return FAILED, str(exc)
        for exc in errors:
            if isinstance(exc, _Stop):
                return exc.status, str(exc)
        for exc in errors:
            if isinstance(exc, asyncio.CancelledError):
                return CANCELLED, "cancelled"
        exc = errors[0]
        log.debug("unexpected summarizer error", exc_info=exc)
        return FAILED, f"{type(exc).__name__}: {exc}"

    # -- workers and producer ------------------------------------------------------------------
    async def worker(self, queue: asyncio.Queue[SummaryJob | None]) -> None:
        while True:
            job = await queue.get()
            if job is None:
                return
            outcome = await self.run_job(job)
            await self.emit(outcome)

    async def produce(self, jobs: Jobs, queue: asyncio.Queue[SummaryJob | None]) -> None:
        if isinstance(jobs, AsyncIterable):
            async for job in jobs:
                if self._stop_taking():
                    break
                await queue.put(job)
        else:
            for job in jobs:
                if self._stop_taking():
                    break
                await queue.put(job)
        for _ in range(self.workers):
            await queue.put(None)

    def _stop_taking(self) -> bool:
        """After a stop, keep taking jobs only to report them (abort/budget), never after a cancel."""
        return self.stop is not None and (self.stop.status == CANCELLED or not self.settings.drain_on_stop)

    async def run(self, jobs: Jobs) -> PoolStats:
        start = self.clock()
        self.workers = max(1, self.settings.concurrency)
        queue: asyncio.Queue[SummaryJob | None] = asyncio.Queue(maxsize=2 * self.workers)
        producer = asyncio.ensure_future(self.produce(jobs, queue))
        workers = [asyncio.ensure_future(self.worker(queue)) for _ in range(self.workers)]
        tasks = [producer, *workers]
        try:
            # asyncio.wait, not gather: cancelling us must not cancel the workers before the grace period.
            done, pending = await asyncio.wait(tasks, return_when=asyncio.FIRST_EXCEPTION)
        except asyncio.CancelledError:
            await self.shutdown(producer, workers, queue)
            raise
        finally:
            self.stats.elapsed_s = self.clock() - start
        failed = [error for t in done if not t.cancelled() and (error := t.exception()) is not None]
        if failed:  # e.g. on_outcome raised: stop everything and let the caller see it
            for task in pending:
                task.cancel()
            await asyncio.gather(*pending, return_exceptions=True)
            raise failed[0]
        return self.stats

    async def shutdown(
        self, producer: asyncio.Future[None], workers: Sequence[asyncio.Future[None]],
        queue: asyncio.Queue[SummaryJob | None],
    ) -> None:
        """Cancellation: stop launching, give in-flight calls `cancel_grace`, report every taken job."""
        self.request_stop(CANCELLED, "cancelled")
        producer.cancel()
        queued = []
        while not queue.empty():
            job = queue.get_nowait()
            if job is not None:
                queued.append(job)
        for _ in workers:  # the queue is empty now, so these fit: idle workers exit at once
            queue.put_nowait(None)
        pending = [w for w in workers if not w.done()]
        if pending and self.settings.cancel_grace > 0:
            await asyncio.wait(pending, timeout=self.settings.cancel_grace)
        for task in workers:
            task.cancel()
        await asyncio.gather(producer, *workers, return_exceptions=True)
        for job in queued:
            await self.emit(JobOutcome(job.key, CANCELLED, [None] * len(job.calls), "cancelled"))


async def run_jobs(
    jobs: Jobs,
    summarizer: Summarizer,
    settings: PoolSettings | None = None,
    *,
    on_outcome: OutcomeHandler | None = None,
    on_result: ResultHandler | None = None,
    clock: Clock | None = None,
    sleep: Sleep | None = None,
    rng: random.Random | None = None,
    stop_event: asyncio.Event | None = None,
) -> PoolStats:
    """Summarize every job; call `on_outcome` as each finishes; return the run's totals.

    `on_result(job, call_index, result)` is called as soon as each call succeeds (before its job's
    outcome), so a runner can persist a paid summary even if the other call of a split turn never ends.

    `stop_event` (set it from a SIGINT handler) stops launching new calls gracefully: in-flight calls
    finish, every remaining job is reported `cancelled`, and `run_jobs` returns normally. Cancelling the
    task instead cancels in-flight calls (after `settings.cancel_grace`), reports the taken jobs as
    `cancelled`, then re-raises `CancelledError`.
    """
    pool = _Pool(summarizer, settings or PoolSettings(), on_outcome, on_result, clock, sleep, rng)
    if stop_event is None:
        return await pool.run(jobs)

    async def watch() -> None:
        await stop_event.wait()
        pool.request_stop(CANCELLED, "stop requested")

    watcher = asyncio.ensure_future(watch())
    try:
        return await pool.run(jobs)
    finally:
        watcher.cancel()
