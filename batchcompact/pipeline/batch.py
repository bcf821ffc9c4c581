"""Buying summaries through provider batch APIs, across cron runs (`run --batch`).

`BatchBuyer` is the batch side of the buying seam (`pipeline/buying.py`): it takes the same `SummaryJob`s
as the on-demand pool and hands back the same `JobOutcome`s. A run:

1. **collects**: every batch the state knows as open is checked; an ended batch's results are downloaded
   and, in one transaction, each succeeded summary goes into the summary cache (priced at the batch rate)
   and each request gets its final state (`collected`, `failed`, `overflow`);
2. **routes** each job: calls whose summaries are here are handed back (the session is then written
   through the same path as on-demand results); calls still in an open batch wait; new calls, and failed
   ones with attempts left, are spooled for submission. Those jobs get the outcome `batch_pending`;
3. **submits** the spool in batches within the provider's limits (a job's calls always share a batch):
   the intent (a local id, its request keys) is committed first, then the batch is created with the local
   id as metadata, then its provider id is recorded. A crash in between is healed by the next run, which
   looks the local id up in the provider's listing (`find`) and adopts the batch, or, when the provider
   never created it, forgets the intent so the requests are submitted again.

`custom_id` is the summary cache key: a summary is requested at most once while a request for it is
open or its result is in the cache, so no request is paid twice. The tables and their states are in
`pipeline/batch_store.py`, the operator's commands between runs in `pipeline/batch_commands.py`; the state
machine is in docs/batch.md.
"""

from __future__ import annotations

import asyncio
import dataclasses
import functools
import logging
import secrets
from collections.abc import AsyncIterable, AsyncIterator, Awaitable, Callable, Iterable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from batchcompact.core.calls import is_remote
from batchcompact.core.words import counted
from batchcompact.pipeline.batch_store import (
    COLLECTED,
    DELIVERED,
    OPEN_STATES,
    OVERFLOW,
    SUBMITTING,
    BatchRow,
    BatchStore,
    env_key,
)
from batchcompact.pipeline.state import call_key
from batchcompact.pipeline.statuses import BATCH_PENDING, CHANGED
from batchcompact.pipeline.summary_cache import CachingSummarizer

if TYPE_CHECKING:
    from batchcompact.core.calls import Summarizer, SummaryCall, SummaryResult
    from batchcompact.pipeline.state import RunState
    from batchcompact.summarize.batch_api import BatchClient, RequestResult
    from batchcompact.summarize.pool import JobOutcome, SummaryJob
    from batchcompact.summarize.pool_settings import PoolSettings

    Jobs = Iterable[SummaryJob] | AsyncIterable[SummaryJob]
    OnOutcome = Callable[[JobOutcome], Awaitable[None] | None]

log = logging.getLogger(__name__)

@dataclass(frozen=True)
class BatchOptions:
    """`run --batch` settings. `max_requests`/`max_bytes` lower the provider's per-batch limits."""

    api_base: str | None = None
    api_key: str | None = field(default=None, repr=False)
    max_attempts: int = 3  # submissions per request (expired, errored or cancelled ones are resubmitted)
    max_requests: int | None = None
    max_bytes: int | None = None
    timeout: float = 120.0


def batch_options(use_batch: bool, *, wait: bool, model: str, api_base: str | None, api_key: str | None,
                  max_attempts: int, summarizer_spec: str | None) -> BatchOptions | None:
    """`run --batch [--wait]` settings, checked before any file is read: --wait needs --batch, a batch is
    bought from a provider (no custom summarizer), and an unknown model or a missing key is refused now."""
    from batchcompact.errors import UsageError

    if wait and not use_batch:
        raise UsageError("--wait only applies to --batch")
    if not use_batch:
        return None
    if summarizer_spec:
        raise UsageError("--batch buys from a provider's batch API; it cannot use --summarizer")
    from batchcompact.summarize.batch_api import resolve_target

    resolve_target(model, api_base, api_key)  # refuse an unknown model or a missing key before planning
    return BatchOptions(api_base=api_base, api_key=api_key, max_attempts=max_attempts)


def batch_cost(model: str, pricing_file: str | None, *, prompt_tokens: int, completion_tokens: int,
               cache_read_tokens: int = 0, cache_write_tokens: int = 0) -> float | None:
    """USD at the batch rate (the map's `*_batches` prices, or 50% where the provider documents it)."""
    from batchcompact.pricing import PriceTable

    return PriceTable.load(pricing_file).cost(
        model, input_tokens=max(prompt_tokens - cache_read_tokens - cache_write_tokens, 0),
        output_tokens=completion_tokens, cache_read_tokens=cache_read_tokens, cache_write_tokens=cache_write_tokens,
        batch=True)


class BatchBuyer:
    """The batch side of the buying seam; see the module docstring."""

    batch = True

    def __init__(self, options: BatchOptions, summarizer: Summarizer, state: RunState, model_key: str,
                 pool_settings: PoolSettings,
                 run_id: str, *, pricing_file: str | None = None, max_cost_usd: float | None = None) -> None:
        from batchcompact.summarize.batch_api import resolve_target

        self.options = options
        self.target = resolve_target(model_key, options.api_base, options.api_key)
        self.store = BatchStore.of(state)
        self.caching = CachingSummarizer(summarizer, state, model_key)
        self.summarizer = summarizer
        self.model_key = model_key
        self.pool_settings = pool_settings
        self.redact = pool_settings.redact and is_remote(summarizer)
        self.run_id = run_id
        self.pricing_file = pricing_file
        self.max_cost_usd = max_cost_usd
        self._clients: dict[tuple[str, str], BatchClient] = {}
        self.spool: list[tuple[str, str, float | None, bytes]] = []
        self.spool_bytes = 0
        self.spooled: set[str] = set()
        self.committed = 0.0
        self.submitted_calls = 0
        self.submitted_batches = 0
        self.collected = 0
        self.collected_batches = 0
        self.waiting_jobs = 0
        self.waiting_batches: set[str] = set()
        self.on_demand: list[SummaryJob] = []
        self.notes: list[str] = []
        self._deliver: dict[str, list[str]] = {}  # job key -> collected keys it is being handed

    # -- clients -----------------------------------------------------------------------------------
    def client(self, provider: str | None = None, api_base: str | None = None) -> BatchClient:
        from batchcompact.summarize.batch_api import BatchTarget, client_for

        provider = provider or self.target.provider
        api_base = api_base or self.target.api_base
        key = (provider, api_base)
        if key not in self._clients:
            target = self.target
            if key != (self.target.provider, self.target.api_base):  # a batch of an earlier run's settings
                target = BatchTarget(provider, self.target.model, self.target.api_model, api_base,
                                     env_key(provider) if provider != self.target.provider else self.target.api_key)
            self._clients[key] = client_for(target, self.options.timeout)
        return self._clients[key]

    def limits(self) -> tuple[int, int]:
        client = self.client()
        requests = min(self.options.max_requests or client.max_requests, client.max_requests)
        size = min(self.options.max_bytes or client.max_bytes, client.max_bytes)
        return requests, size

    def close(self) -> None:
        for client in self._clients.values():
            client.close()

    # -- the seam ------------------------------------------------------------------------------------
    async def buy(self, jobs: Jobs, on_outcome: OnOutcome, stop_event: asyncio.Event | None = None) -> None:
        from batchcompact.summarize.pool import CANCELLED, JobOutcome

        try:
            await asyncio.to_thread(self.collect)
            async for job in _aiter(jobs):
                if stop_event is not None and stop_event.is_set():
                    outcome = JobOutcome(job.key, CANCELLED, [None] * len(job.calls), "stop requested")
                else:
                    routed = await asyncio.to_thread(self.route, job)
                    if routed is None:  # bought on demand after the batch jobs (see `route`)
                        self.on_demand.append(job)
                        continue
                    outcome = routed
                await _maybe_await(on_outcome(outcome))
                # handed over and written (on_outcome returns after the write): from now on a rerun
                # reuses these summaries at no cost instead of counting them again
                self.store.mark_delivered(self._deliver.pop(job.key, []))
            await asyncio.to_thread(self.flush)
            if self.on_demand:
                await self._buy_on_demand(on_outcome, stop_event)
        finally:
            self.notes = self._notes()
            self.close()

    async def _buy_on_demand(self, on_outcome: OnOutcome, stop_event: asyncio.Event | None) -> None:
        from batchcompact.summarize.pool import run_jobs

        settings = self.pool_settings
        if self.max_cost_usd is not None:
            settings = dataclasses.replace(settings, max_cost_usd=max(self.max_cost_usd - self.committed, 0.0))
        count = len(self.on_demand)
        self.notes.append(f"{count} session{'s' if count != 1 else ''} bought on demand (a prompt beyond the "
                          "model's window needs successive calls)")
        jobs = {job.key: job for job in self.on_demand}

        async def written(outcome: JobOutcome) -> None:
            await _maybe_await(on_outcome(outcome))
            job = jobs.get(outcome.key)
            if job is not None and outcome.ok:  # as in `buy`: delivered once applied and written
                self.store.mark_delivered([self._prepared(call)[2] for call in job.calls])

        await run_jobs(self.on_demand, _CollectedFirst(self), settings, on_outcome=written, stop_event=stop_event)

    def as_paid(self, result: SummaryResult) -> SummaryResult:
        return self.caching.as_paid(result)

    # -- collecting ------------------------------------------------------------------------------------
    def collect(self) -> None:
        """Check every open batch; settle those that ended (results into the cache)."""
        from batchcompact.summarize.batch_api import BatchAPIError

        for row in self.store.open_batches():
            try:
                client = self.client(row.provider, row.api_base)
                if row.state == SUBMITTING and not self._recover(row, client):
                    continue
                current = self.store.batch(row.local_id)
                assert current is not None  # an open batch of this store
                row = current
                assert row.batch_id is not None  # submitted, or adopted by `_recover`
                info = client.retrieve(row.batch_id)
                self.store.update_status(row.local_id, info)
                if not info.ended:
                    continue
                price = functools.partial(self._price, row.model)  # the batch's model, even if --model changed
                collected, _ = self.store.settle(row, info, client.results(info), price)
                self.collected += collected
                self.collected_batches += 1
                log.info("batch %s ended (%s): %d summaries collected", row.batch_id, info.status, collected)
            except BatchAPIError as exc:
                log.warning("batch %s: %s", row.batch_id or row.local_id, exc)
                self.notes.append(f"batch {row.batch_id or row.local_id} not checked: {exc}")

    def _recover(self, row: BatchRow, client: BatchClient) -> bool:
        """A batch whose creation was not recorded: adopt it from the provider's listing, or forget it."""
        found = client.find(row.local_id, row.created_at, row.requests, self.store.known_batch_ids())
        if found is None:
            log.warning("batch intent %s was never created by the provider; its requests go again", row.local_id)
            self.store.abandon(row.local_id)
            return False
        log.warning("adopted batch %s (created, but not recorded, by an interrupted run)", found)
        self.store.mark_submitted(row.local_id, found)
        return True

    def _price(self, model: str, res: RequestResult) -> float | None:
        return batch_cost(model, self.pricing_file, prompt_tokens=res.prompt_tokens,
                          completion_tokens=res.completion_tokens, cache_read_tokens=res.cache_read_tokens,
                          cache_write_tokens=res.cache_write_tokens)

    # -- routing one job ---------------------------------------------------------------------------------
    def _prepared(self, call: SummaryCall) -> tuple[SummaryCall, dict[str, int], str]:
        """The call as it would be sent (redacted like the pool does), and its cache key."""
        counts: dict[str, int] = {}
        if self.redact:
            from batchcompact.summarize.pool import redact_call

            call, counts = redact_call(call)
        return call, counts, call_key(self.model_key, call.system_prompt, call.user_prompt, call.max_tokens)

    def route(self, job: SummaryJob) -> JobOutcome | None:
        """The job's outcome now: ok (all summaries here), batch_pending, failed, budget, changed; or None
        when it must be bought on demand (a prompt beyond the model's window needs overflow recovery,
        whose successive calls each depend on the previous answer)."""
        from batchcompact.summarize.pool import BUDGET, OK, JobOutcome
        from batchcompact.summarize.pool import FAILED as JOB_FAILED

        prepared = [self._prepared(call) for call in job.calls]
        keys = [key for _, _, key in prepared]
        n = len(prepared)
        record = self.store.job(job.key)
        if record is not None and job.version and record[0] and record[0] != job.version:
            self.store.forget_job(job.key)
            return JobOutcome(job.key, CHANGED, [None] * n,
                              "the file changed after its summaries were requested in a batch; summaries "
                              "already paid for stay in the cache, and the next run plans the new content")
        results: list[SummaryResult | None] = [None] * n
        fresh: list[int] = []
        waiting: list[str] = []
        failures: list[str] = []
        too_long = False
        delivered: list[str] = []
        for i, (call, counts, key) in enumerate(prepared):
            if key in self.spooled:
                waiting.append("this run's batch")
                continue
            request = self.store.request(key)
            if request is not None and request[1] == COLLECTED:  # paid for, not yet handed to a session
                cached = self.store_result(key)
                if cached is not None:
                    results[i] = dataclasses.replace(cached, redactions=counts)
                    delivered.append(key)
                    continue
            reused = self.caching.cached(call)
            if reused is not None:
                results[i] = reused
                continue
            if request is None or request[1] == DELIVERED:
                fresh.append(i)
            elif request[1] in OPEN_STATES:
                waiting.append(request[0])
            elif request[1] == OVERFLOW:
                too_long = True
            elif request[2] >= self.options.max_attempts:
                failures.append(f"gave up after {counted(request[2], 'batch submission')}: {request[3]}")
            else:
                fresh.append(i)
        if failures:
            return JobOutcome(job.key, JOB_FAILED, results, "; ".join(failures), 0)
        if not fresh and not waiting and not too_long:
            self._deliver[job.key] = delivered
            self.store.forget_job(job.key)
            return JobOutcome(job.key, OK, results, None, sum(r.attempts for r in results if r is not None))  # all here
        fits = getattr(self.summarizer, "fits", None)
        if not waiting and (too_long or (fits is not None and not all(fits(prepared[i][0]) for i in fresh))):
            return None
        if waiting and not fresh:
            self.waiting_jobs += 1
            names = sorted({self._batch_name(w) for w in waiting})
            self.waiting_batches.update(names)
            return JobOutcome(job.key, BATCH_PENDING, results,
                              f"waiting for batch {', '.join(names)}; rerun to collect", 0)
        estimates = [self._estimate(prepared[i][0]) for i in fresh]
        est = sum(e or 0.0 for e in estimates)
        if self.max_cost_usd is not None and self.committed + est > self.max_cost_usd + 1e-12:
            return JobOutcome(job.key, BUDGET, results,
                              f"--max-cost ${self.max_cost_usd:.4f} reached: ${self.committed:.4f} committed to "
                              "batches in this run (estimated at the batch price)", 0)
        lines = [(keys[i], self.client().request_line(keys[i], prepared[i][0])) for i in fresh]
        max_requests, max_bytes = self.limits()
        size = sum(len(line) + 1 for _, line in lines)
        if self.spool and (len(self.spool) + len(lines) > max_requests or self.spool_bytes + size > max_bytes):
            self.flush()  # a job's calls always go in the same batch
        for (key, line), estimate in zip(lines, estimates, strict=True):
            self.spool.append((key, job.key, estimate, line))
            self.spooled.add(key)
        self.spool_bytes += size
        self.committed += est
        self.store.remember_job(job.key, job.version, keys)
        return JobOutcome(job.key, BATCH_PENDING, results,
                          "summary requested in a provider batch; rerun to collect", 0)

    def store_result(self, key: str) -> SummaryResult | None:
        from batchcompact.core.calls import SummaryResult

        cached = self.caching.state.get_summary(key)
        return SummaryResult(**cached) if cached is not None else None

    def _batch_name(self, local_id: str) -> str:
        if local_id == "this run's batch":
            return local_id
        row = self.store.batch(local_id)
        return (row.batch_id or local_id) if row else local_id

    def _estimate(self, call: SummaryCall) -> float | None:
        output = call.max_tokens  # the call's summary budget
        prompt = call.prompt_tokens or -(-len(call.system_prompt + call.user_prompt) // 4)
        return batch_cost(self.model_key, self.pricing_file, prompt_tokens=prompt, completion_tokens=output)

    # -- submitting ---------------------------------------------------------------------------------------
    def flush(self) -> None:
        """Submit the spool as one batch: intent recorded, batch created, id recorded."""
        if not self.spool:
            return
        local_id = secrets.token_hex(8)
        requests = [(key, job_key, est) for key, job_key, est, _ in self.spool]
        ests = [est for _, _, est, _ in self.spool]
        known = [e for e in ests if e is not None]
        est_total = None if len(known) != len(ests) else sum(known)
        self.store.intend(local_id, self.target, self.run_id, requests, est_total)
        batch_id = self.client().submit([line for *_, line in self.spool], local_id)
        self.store.mark_submitted(local_id, batch_id)
        log.info("submitted batch %s: %d requests", batch_id, len(self.spool))
        self.submitted_calls += len(self.spool)
        self.submitted_batches += 1
        self.spool.clear()
        self.spool_bytes = 0

    def _notes(self) -> list[str]:
        notes = list(self.notes)
        if self.collected_batches:
            notes.insert(0, f"collected {counted(self.collected, 'summary')} from {self.collected_batches} ended "
                            f"batch{'es' if self.collected_batches != 1 else ''}")
        if self.submitted_batches:
            notes.append(f"{counted(self.submitted_calls, 'call')} in {self.submitted_batches} "
                         f"batch{'es' if self.submitted_batches != 1 else ''} submitted; rerun to collect")
        if self.waiting_jobs:
            notes.append(f"{self.waiting_jobs} session{'s' if self.waiting_jobs != 1 else ''} waiting for {len(self.waiting_batches)} batch"
                         f"{'es' if len(self.waiting_batches) != 1 else ''} still in progress; rerun to collect")
        return notes


class _CollectedFirst:
    """The on-demand summarizer of a batch run: a summary collected from a batch but not yet handed to a
    session is handed over (and counted) first, and marked delivered once its session is written; anything
    else goes through the summary cache."""

    def __init__(self, buyer: BatchBuyer) -> None:
        self.buyer = buyer
        self.name = buyer.caching.name
        self.remote = buyer.caching.remote

    async def summarize(self, call: SummaryCall) -> SummaryResult:
        key = self.buyer.caching.key(call)  # the pool hands over the call already redacted
        request = self.buyer.store.request(key)
        if request is not None and request[1] == COLLECTED:
            result = self.buyer.store_result(key)
            if result is not None:
                return result
        return await self.buyer.caching.summarize(call)


async def _aiter(jobs: Jobs) -> AsyncIterator[SummaryJob]:
    if hasattr(jobs, "__aiter__"):
        async for job in jobs:
            yield job
    else:
        for job in jobs:
            yield job


async def _maybe_await(value: object) -> None:
    if asyncio.iscoroutine(value) or isinstance(value, asyncio.Future):
        await value


