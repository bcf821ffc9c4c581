"""`run`'s phase 2: buy the summaries of the queued sessions, write each as its summaries come back.

Each queued session is locked (`run_locks.py`), re-read and re-planned by a worker (`prepare_file`), and
its calls handed to the buyer (the on-demand pool or a provider batch) as one `SummaryJob`. The pool's
queue is bounded, so only a few sessions are in memory at once; each outcome is applied, written and
verified by a worker (`finish_file`) and recorded by the run loop at once, so a kill loses at most the
calls in flight (those paid for are in the state).
"""

from __future__ import annotations

import dataclasses
from typing import TYPE_CHECKING, Any

from batchcompact.core.planner import CompactionPlan
from batchcompact.lifecycle import (
    add_loop_stop_handlers,
    remove_loop_stop_handlers,
    restore_stop_handlers,
    saved_stop_handlers,
    stop_signal_name,
)
from batchcompact.pipeline.buying import Buyer, make_buyer
from batchcompact.pipeline.executor import ExecutorLost
from batchcompact.pipeline.outcome import PreparedSession, usage_fields
from batchcompact.pipeline.run_ledger import RunLedger
from batchcompact.pipeline.run_plan import Queued
from batchcompact.pipeline.session_task import SessionWork, finish_file, prepare_file
from batchcompact.pipeline.statuses import BATCH_PENDING, BUDGET_EXHAUSTED, CHANGED, FAILED, SKIPPED
from batchcompact.pipeline.task_records import Outcome

if TYPE_CHECKING:
    from collections.abc import AsyncIterator

    from batchcompact.core.calls import SummaryCall
    from batchcompact.summarize.pool import JobOutcome, SummaryJob


class SummarizePhase:
    """Phase 2 of one run: `buyer` (its `notes` end up in the run summary) and the abort reason."""

    # Any: the `Runner` (pipeline/run.py), which imports this module
    def __init__(self, run: Any, ledger: RunLedger) -> None:
        self.run = run
        self.ledger = ledger
        self.buyer: Buyer | None = None  # how summaries are bought: on demand (the pool) or a provider batch API
        self.abort_reason: str | None = None

    def summarize_all(self, queued: list[Queued]) -> str | None:
        """Buy, write and record every queued session; the reason the run aborted, or None."""
        if not queued:
            return None
        import asyncio  # only runs that buy summaries here (a model, a custom summarizer) get this far

        run = self.run
        buyer: Buyer
        buyer = self.buyer = make_buyer(run.options, run.summarizer, self.ledger.state, run.pool_settings,
                                        run.run_id, clock=run.clock, sleep=run.sleep)
        run.progress.bar("summarize", len(queued), "compacting")
        stop = asyncio.Event()
        spent = {"cost": 0.0}
        locks = run.locks
        # no lookahead: a prepared session holds its calls' prompts and its lock until the pool takes it
        prepared = run.executor.map(prepare_file, locks.work(queued, run.prompt_tokens, run.finish), run.task,
                                    lookahead=False)

        async def jobs() -> AsyncIterator[SummaryJob]:
            from batchcompact.summarize.pool import SummaryJob

            while (record := await asyncio.to_thread(next, prepared, None)) is not None:
                pending = locks.prepared(record, run.finish)
                if pending is not None:
                    yield SummaryJob(str(pending.item.path), pending.calls, str(pending.fingerprint))

        async def on_outcome(outcome: JobOutcome) -> None:
            pending = locks.take(outcome.key)
            if pending is None:
                return
            spent["cost"] += outcome.cost_usd
            try:
                await self._complete(pending, outcome)
            finally:
                locks.release(pending)
            run.progress.tick("summarize", cost=f"${spent['cost']:.4f}")

        def on_signal(signum: int) -> None:
            run.stopped = run.stopped or stop_signal_name(signum)
            stop.set()

        async def main() -> object:
            loop = asyncio.get_running_loop()
            add_loop_stop_handlers(loop, on_signal)
            try:
                return await buyer.buy(jobs(), on_outcome, stop)
            finally:
                remove_loop_stop_handlers(loop)

        handlers = saved_stop_handlers()
        try:
            asyncio.run(main())  # returns when its threads are done: nothing is inside `prepared` now
        finally:  # the loop leaves SIGTERM at its default (die): give the stop handlers back
            restore_stop_handlers(handlers)
            prepared.close()  # a stopped run: the sessions prepared ahead are given up
            locks.release_unprepared()
        return self.abort_reason

    async def _complete(self, pending: PreparedSession, outcome: JobOutcome) -> None:
        """Apply the summaries, write, verify (a worker's `finish_file`), record: the outcome becomes the row."""
        run = self.run
        row = pending.row
        row.update(usage_fields(outcome.results, outcome.attempts, len(pending.branches),
                                default_model=run.options.summary_model,
                                reusable=run.summarizer.name != "builtin"))
        ended = self._not_bought(outcome)
        if ended is not None:
            run.finish(row, ended.status, ended.reason)
            return
        await self._write(pending, outcome)

    def _not_bought(self, outcome: JobOutcome) -> Outcome | None:
        """The session's outcome when the pool's job did not bring all its summaries back, or None when it did
        (the pool's job statuses, named in summarize/pool.py, turned into the run report's)."""
        # the pool is loaded already: phase 2 buys through it
        from batchcompact.summarize.pool import ABORTED, BUDGET, CANCELLED, OK
        from batchcompact.summarize.pool import SKIPPED as JOB_SKIPPED

        if outcome.status == ABORTED:
            # The first aborted job carries the error; the pool reports the jobs it then never
            # started with its stop message, which already reads "run aborted: ...".
            error = outcome.error or "run aborted"
            cause = error.removeprefix("run aborted: ")  # the same cause, whichever job reports it first
            reason = f"run aborted: {cause}"
            if self.abort_reason is None:
                self.abort_reason = cause
            if outcome.attempts == 0:  # never tried: it did not fail, the run stopped before it
                return Outcome(SKIPPED, f"not attempted: {reason}")
            return Outcome(FAILED, reason)
        if outcome.status == BUDGET:
            return Outcome(BUDGET_EXHAUSTED, outcome.error or "--max-cost reached")
        if outcome.status == JOB_SKIPPED:
            return Outcome(SKIPPED, outcome.error)
        if outcome.status in (BATCH_PENDING, CHANGED):  # batch_pending: a later run collects it
            return Outcome(BATCH_PENDING if outcome.status == BATCH_PENDING else CHANGED, outcome.error)
        if outcome.status == CANCELLED:
            by = f" by {self.run.stopped}" if self.run.stopped else ""
            return Outcome(SKIPPED, f"run stopped{by} before this session was summarized")
        if outcome.status != OK:
            return Outcome(FAILED, outcome.error)
        return None

    async def _write(self, pending: PreparedSession, outcome: JobOutcome) -> None:
        """The bought summaries to a worker's `finish_file` (apply, write, verify); the outcome recorded."""
        import asyncio

        run = self.run
        # the written entries record what their summaries cost, even those bought by an earlier run
        buyer = self.buyer
        paid = tuple(buyer.as_paid(r) if buyer is not None and r is not None else r for r in outcome.results)
        item = pending.item
        work = SessionWork(str(item.path), str(item.root), pending.fingerprint, target=str(run.output_path(item)),
                           plan=_without_prompts(pending.plan),
                           branches=tuple(dataclasses.replace(b, call=_lean(b.call)) for b in pending.branches),
                           results=paid)
        try:
            done = await asyncio.wrap_future(run.executor.submit(finish_file, work, run.task))
        except ExecutorLost as exc:  # written or not: the next run sees which (a changed file, or the same)
            run.finish(pending.row, FAILED, str(exc))
            return
        run.record_outcome(item, pending.row, done, self.ledger)


def _lean(call: SummaryCall) -> SummaryCall:
    """A summary call without what was sent (the writer needs only its kind): less to ship to a worker."""
    return dataclasses.replace(call, system_prompt="", user_prompt="", messages=())


def _without_prompts(plan: CompactionPlan | None) -> CompactionPlan | None:
    return None if plan is None else dataclasses.replace(plan, calls=[_lean(c) for c in plan.calls])
