"""`run`: plan -> summarize -> apply -> write -> report over whole archives, safely and resumably.

Phase 1 plans every file on the executor (rows only, no prompts kept), so the cost estimate is known
before any money is spent. Phase 2 re-reads each session to compact (checking it did not change),
plans it again and streams it through the summary pool; each finished job is applied and written
right away, so a kill loses at most the calls in flight, and those that were paid for are in the state.

With a summarizer that works where the session is (the built-in one) and nothing to enforce over the
whole archive first (no --limit, --max-cost or --batch), phase 1 finishes each session where it was
planned (pipeline/session_task.py): read once, written and verified by the worker, recorded here.
"""

from __future__ import annotations

import dataclasses
import logging
import os
import sqlite3
from collections.abc import Iterable
from dataclasses import dataclass, field
from datetime import datetime
from pathlib import Path
from typing import Any

from batchcompact.core.planner import CompactionPlan, CompactionSettings
from batchcompact.errors import RunAborted, UsageError, is_internal_error, outcome_exit_code
from batchcompact.folders import state_folder
from batchcompact.formats.scan import ScanItem, iter_session_files, resolved
from batchcompact.formats.scan import oserror_text as _oserror
from batchcompact.lifecycle import (
    add_loop_stop_handlers,
    remove_loop_stop_handlers,
    restore_stop_handlers,
    saved_stop_handlers,
    stop_signal_name,
)
from batchcompact.pipeline.buying import make_buyer
from batchcompact.pipeline.executor import Executor, ExecutorLost, LocalExecutor
from batchcompact.pipeline.outcome import (
    PreparedSession,
    now_utc,
    reproducible_now,
    usage_fields,
)
from batchcompact.pipeline.planning import PlanOptions
from batchcompact.pipeline.run_budget import RunBudget
from batchcompact.pipeline.run_ledger import RunLedger, run_settings_key
from batchcompact.pipeline.run_locks import SessionLocks
from batchcompact.pipeline.run_progress import Progress
from batchcompact.pipeline.runreport.rows import RunRows, row_from_plan
from batchcompact.pipeline.runreport.write import ReportImports, write_compactions
from batchcompact.pipeline.session_task import (
    FileTask,
    FileWork,
    SessionWork,
    finish_file,
    prepare_file,
    process_file,
)
from batchcompact.pipeline.state import Fingerprint, RunState
from batchcompact.pipeline.statuses import BATCH_PENDING, CHANGED, COMPACTED, FAILED, SKIPPED
from batchcompact.pipeline.writer import copy_file, sweep_stale_temps

log = logging.getLogger(__name__)

BUDGET_EXHAUSTED = "budget_exhausted"


@dataclass(frozen=True)
class RunOptions:
    output_dir: Path | None = None
    in_place: bool = False
    backup: bool = True
    copy_unchanged: bool = False
    min_age_s: float = 600.0
    state_path: Path | None = None
    report_dir: Path | None = None
    max_cost_usd: float | None = None
    limit: int | None = None
    jobs: int = 1
    summary_model: str = "builtin"
    pricing_file: str | None = None
    progress: bool = False
    branch_summaries: bool = False  # also summarize abandoned branches (pi sessions)
    min_branch_tokens: int = 0
    branch_reserve_tokens: int = 16384
    strict: bool = False  # a known invalid file fails the run again
    agent_settings: tuple[str, ...] = ()  # settings pi's settings.json may set for pi sessions (PlanOptions)
    batch: Any = None  # BatchOptions: buy summaries through a provider batch API (pipeline/batch.py)

    def resolved_state_path(self) -> Path:
        if self.state_path is not None:
            return self.state_path
        if self.output_dir is not None:
            return self.output_dir / ".batchcompact" / "state.sqlite"
        return state_folder() / "state.sqlite"

    def resolved_report_dir(self) -> Path:
        if self.report_dir is not None:
            return self.report_dir
        if self.output_dir is not None:
            return self.output_dir / ".batchcompact" / "reports"
        return state_folder() / "reports"


def check_destination(in_place: bool, output_dir: str | Path | None) -> None:
    """A run writes either beside the originals (--in-place) or to an output folder, never both or neither."""
    if in_place and output_dir:
        raise UsageError("--output-dir and --in-place cannot be combined: the run writes either to the folder or "
                         "over the originals; drop one")
    if not in_place and not output_dir:
        raise UsageError("choose where to write: --output-dir DIR, or --in-place")


@dataclass
class RunSummary:
    run_id: str
    rows: list[dict[str, Any]]
    report_path: Path | None
    started_at: datetime
    ended_at: datetime
    aborted: str | None = None
    by_status: dict[str, int] = field(default_factory=dict)
    notes: list[str] = field(default_factory=list)  # what the summary buyer has to say (batches submitted)
    stopped: str | None = None  # the signal (SIGINT, SIGTERM) that stopped the run early

    @property
    def exit_code(self) -> int:
        """3 aborted; 4 a session failed on a bug (an internal error; the others were still processed);
        1 some sessions failed; else 0 (docs/reliability.md)."""
        if self.aborted:
            return 3
        bugs = sum(row["status"] == FAILED and is_internal_error(row.get("reason")) for row in self.rows)
        return outcome_exit_code(self.by_status.get(FAILED, 0), bugs)


def _new_run_id(moment: datetime) -> str:
    return moment.strftime("%Y%m%dT%H%M%SZ") + "-" + os.urandom(3).hex()  # secrets.token_hex(3), unimported


class Runner:
    """The run loop: coordinates the file tasks on the executor, the run state (`run_ledger.py`), the session
    locks (`run_locks.py`), the budget (`run_budget.py`), the buyer (`buying.py`), the progress bars
    (`run_progress.py`) and the report rows; the work itself is in `session_task.py`."""

    def __init__(self, settings: CompactionSettings, options: RunOptions, summarizer: Any, pool_settings: Any,
                 *, clock=None, sleep=None, executor: Executor | None = None) -> None:
        self.settings = settings
        self._owns_executor = executor is None  # closed at the end of the run; one given is the caller's
        self.executor = executor or LocalExecutor(options.jobs)
        self.options = options
        self.summarizer = summarizer
        self.pool_settings = pool_settings
        self.clock = clock
        self.sleep = sleep
        self.started = now_utc()
        self.run_id = _new_run_id(self.started)
        self.plan_options = PlanOptions(
            summary_model=options.summary_model,
            pricing_file=options.pricing_file,
            min_branch_tokens=options.min_branch_tokens,
            branch_reserve_tokens=options.branch_reserve_tokens,
            agent_settings=options.agent_settings,
        )
        self.settings_key = run_settings_key(settings, options, summarizer)
        self.report = RunRows(self.run_id, self.started)
        self.rows = self.report.rows
        self.progress = Progress(options.progress)
        self.locks = SessionLocks()
        self.budget = RunBudget(options.max_cost_usd, options.summary_model, options.batch is not None)
        self._prompt_tokens: dict[str, list[int] | None] = {}
        self.stopped: str | None = None  # SIGINT / SIGTERM when a stop signal ended the run early
        self.here = self._compacts_here(options, summarizer)
        # what every file task needs (pipeline/session_task.py); SOURCE_DATE_EPOCH is read here, once
        self.task = FileTask(settings, self.plan_options, options.min_age_s, options.in_place, options.backup,
                             options.pricing_file, options.branch_summaries, reproducible_now())

    @staticmethod
    def _compacts_here(options: RunOptions, summarizer: Any) -> bool:
        """Whether phase 1 finishes each session where it planned it: the summarizer works in any process
        (the built-in one) and nothing needs the whole archive's plan first (--limit, --max-cost, --batch)."""
        if not callable(getattr(summarizer, "summarize_now", None)):
            return False
        return options.limit is None and options.max_cost_usd is None and options.batch is None

    # -- the run -------------------------------------------------------------------------------------
    def output_path(self, item: ScanItem) -> Path:
        if self.options.in_place:  # a symlinked session: compact the file it points to, keep the link
            return Path(os.path.realpath(item.path))
        assert self.options.output_dir is not None
        return self.options.output_dir / item.relative

    def finish(self, row: dict[str, Any], status: str, reason: str | None = None) -> None:
        """The session's outcome: its row is final."""
        self.report.add(row, status, reason)

    def run(self, paths: Iterable[str]) -> RunSummary:
        items = self._check_targets(list(iter_session_files(paths, require_any=True)))
        aborted = None
        notes: list[str] = []
        report_path = None
        with RunState(self.options.resolved_state_path()) as state:
            ledger = RunLedger(state, self.settings_key, self.run_id)
            self._sweep(items)
            if state.moved_aside is not None:
                notes.append(f"the run state was unreadable: moved aside to {state.moved_aside}, a new one was made")
            try:
                try:
                    to_compact = self._plan_all(items, ledger)
                    aborted = self._summarize_all(to_compact, ledger)
                except KeyboardInterrupt:  # Ctrl-C or SIGTERM outside the summary loop (lifecycle.py)
                    self.stopped = stop_signal_name()
                except ExecutorLost as exc:  # the cluster lost a task more often than it retries
                    aborted = str(exc)
                except sqlite3.Error as exc:  # disk full (or the database broke) while recording
                    aborted = (f"the run state {state.path} could not be updated: {exc} (free space and rerun; "
                               "what was recorded stays)")
            finally:
                self.progress.close()
                if self._owns_executor:
                    self.executor.close()
                self._account_for_all(items, aborted)
                self.report.sort(items)
                report_path, aborted = self._write_report(aborted)
        notes += list(self._buyer.notes) if self._buyer is not None else []
        return RunSummary(self.run_id, self.rows, report_path, self.started, now_utc(), aborted,
                          self.report.by_status(), notes, self.stopped)

    def _write_report(self, aborted: str | None) -> tuple[Path | None, str | None]:
        """`compactions-<run>.parquet` (None when it could not be written: then the abort reason says why)."""
        report_dir = self.options.resolved_report_dir()
        try:
            return write_compactions(self.rows, report_dir, self.run_id), aborted
        except OSError as exc:
            problem = (f"the report could not be written to {report_dir}: {_oserror(exc)} (the sessions "
                       "themselves were written and recorded; --report-dir chooses another folder)")
            return None, f"{aborted}; {problem}" if aborted else problem

    def _sweep(self, items: list[ScanItem]) -> None:
        """Temp files of runs that died (beside the inputs and the outputs) go before anything is written."""
        folders = {os.path.dirname(os.path.realpath(item.path)) for item in items}
        if not self.options.in_place and self.options.output_dir is not None:
            folders |= {str(self.output_path(item).parent) for item in items}
        for path in sweep_stale_temps(folders):
            log.info("removed %s, left by a run that is gone", path)

    def _account_for_all(self, items: list[ScanItem], aborted: str | None) -> None:
        """A run that stopped early still reports every session it was given: those not reached are skipped."""
        if self.stopped:
            why = f"run stopped by {self.stopped} before this session was"
        elif aborted:
            why = f"not attempted: run aborted: {aborted}; not"
        else:
            why = "run ended before this session was"
        for pending in self.locks.release_pending():  # interrupted before their job finished
            if not self.report.has(pending.row["input_path"]):
                self.finish(pending.row, SKIPPED, f"{why} summarized")
        for row, undone in list(self.report.unreached(items)):
            self.finish(row, SKIPPED, f"{why} {undone}")

    def _check_targets(self, items: list[ScanItem]) -> list[ScanItem]:
        """Refuse an --output-dir that would overwrite an original; leave out our own earlier outputs.

        With `--output-dir` inside the inputs (`run sessions --output-dir sessions/compacted`) a rerun finds the outputs of
        earlier runs: they are not inputs. Inputs named inside the output folder (`run archive/pi --output-dir
        archive`) are inputs all the same: only a file found under a PATH that holds the output folder is one.
        """
        if self.options.in_place or self.options.output_dir is None:
            return items
        out = self.options.output_dir.resolve()
        real = {item.path: resolved(item.path) for item in items}  # each input resolved once
        roots_inside = {root for root in {item.root for item in items} if resolved(root).is_relative_to(out)}
        kept = [item for item in items if item.root in roots_inside or not real[item.path].is_relative_to(out)]
        inputs = {real[item.path] for item in kept}
        targets: dict[Path, Path] = {}
        outputs = set(kept)
        for item in items:
            target = resolved(self.output_path(item))
            if target == real[item.path] or target in inputs:
                raise UsageError(
                    f"--output-dir {self.options.output_dir} would overwrite the original {item.path}; "
                    "choose another folder, or --in-place"
                )
            if item in outputs and targets.setdefault(target, item.path) != item.path:
                # files named alike (Copilot CLI's `<id>/events.jsonl`) given one by one
                raise UsageError(
                    f"--output-dir {self.options.output_dir}: {targets[target]} and {item.path} would both be "
                    f"written to {target}; name the folder that holds them instead"
                )
        return kept

    # -- phase 1: plan (or compact where planned) ----------------------------------------------------
    def _work(self, items: list[ScanItem], ledger: RunLedger):
        """Each file's `FileWork`, made as the executor asks for it (state lookups stay lazy)."""
        for item in items:
            yield FileWork(str(item.path), str(item.root), str(self.output_path(item)),
                           ledger.finished_fingerprints(item))

    def _plan_all(self, items: list[ScanItem], ledger: RunLedger) -> list[tuple[ScanItem, Fingerprint, dict]]:
        bar = self.progress.bar("plan", len(items), "compacting" if self.here else "planning")
        task = dataclasses.replace(self.task, summarizer=self.summarizer) if self.here else self.task
        to_compact: list[tuple[ScanItem, Fingerprint, dict]] = []
        # With worker processes, the report's imports overlap their work (runreport.write.ReportImports): the
        # pool forks all its workers at its first task, so after the first result no fork comes until
        # this loop ends, and the thread is joined before anything else can fork.
        forks = isinstance(self.executor, LocalExecutor) and self.executor.jobs > 1 and len(items) > 1
        if forks:  # as `plan` does: the forked workers share one tokenizer when they will count
            from batchcompact.pipeline.planning import warm_up_before_forking

            warm_up_before_forking(self.task.plan_options.summary_model)
            if self.here and getattr(self.summarizer, "name", None) == "builtin":
                from batchcompact.tokenizer import warm_up

                warm_up(None)  # the built-in counts its summaries against the budget (cl100k): load it once here
        imports = ReportImports() if isinstance(self.executor, LocalExecutor) and self.executor.jobs > 1 else None
        try:
            for item, record in zip(items, self.executor.map(process_file, self._work(items, ledger), task),
                                    strict=True):
                if imports is not None:
                    imports.start()
                if bar is not None:
                    bar.update(1)
                planned = self._planned(item, record, ledger, len(to_compact))
                if planned is not None:
                    to_compact.append(planned)
        finally:
            if imports is not None:
                imports.join()
        if self.options.max_cost_usd is not None:
            self._check_budget(to_compact)
        return to_compact

    def _planned(self, item: ScanItem, record: dict[str, Any], ledger: RunLedger,
                 queued: int) -> tuple[ScanItem, Fingerprint, dict] | None:
        """One file's phase-1 record: its row finished here, or (item, fingerprint, row) to summarize."""
        plan_row = record["plan_row"]
        row = row_from_plan(plan_row, item, self.run_id, self.started)
        if self.options.batch is not None:  # estimated at the price it will be bought at
            row["est_cost_usd"] = plan_row.get("est_batch_cost_usd")
        status = record["status"]
        fingerprint = record.get("fingerprint")
        if status == "young":
            self.finish(row, SKIPPED, record["reason"])
            return None
        if status == "error":
            self.finish(row, *ledger.invalid(item, record, self.options.strict, FAILED))
            return None
        if "compaction" in record:  # finished where it was planned
            self._compacted_here(item, row, record["compaction"], ledger)
            return None
        done = ledger.finished(item, fingerprint)
        if done is not None:
            row["output_path"] = done["output_path"]
            self.finish(row, SKIPPED, f"finished in an earlier run ({done['status']})")
            return None
        wants_branches = self.options.branch_summaries and bool(plan_row.get("branch_calls"))
        if status == "skip" and not wants_branches:
            self._unchanged(item, row, record, ledger)
            return None
        if self.options.limit is not None and queued >= self.options.limit:
            self.finish(row, SKIPPED, f"--limit {self.options.limit} reached")
            return None
        self.budget.add(plan_row, wants_branches)
        self._prompt_tokens[str(item.path)] = record.get("prompt_tokens")
        self.report.waiting[str(item.path)] = row
        return item, fingerprint, row

    def _unchanged(self, item: ScanItem, row: dict[str, Any], record: dict[str, Any], ledger: RunLedger) -> None:
        """A session with nothing to do: copied to --output-dir with --copy-unchanged, recorded as skipped."""
        if self.options.copy_unchanged and not self.options.in_place:
            target = self.output_path(item)
            try:
                copy_file(item.path, target)
            except OSError as exc:
                self.finish(row, FAILED, f"copy failed: {_oserror(exc)}")
                return
            row["output_path"] = str(target)
        ledger.record(item, record.get("fingerprint"), SKIPPED, row.get("output_path"), record["reason"])
        self.finish(row, SKIPPED, record["reason"])

    def _compacted_here(self, item: ScanItem, row: dict[str, Any], outcome: dict[str, Any],
                        ledger: RunLedger) -> None:
        row.update(outcome.get("row") or {})
        if outcome["status"] != COMPACTED:
            self.finish(row, outcome["status"], outcome["reason"])
            return
        row["output_path"] = outcome["output_path"]
        ledger.record(item, outcome["fingerprint"], COMPACTED, outcome["output_path"], None)
        self.finish(row, COMPACTED, outcome.get("reason") or "")  # "handed off ..." for a handoff

    def _check_budget(self, to_compact: list[tuple[ScanItem, Fingerprint, dict]]) -> None:
        """Refuse to start above --max-cost, or when the model's price is unknown (spend could not be counted)."""
        message = self.budget.refusal(row for _, _, row in to_compact)
        if message is None:
            return
        for _, _, row in to_compact:
            self.finish(row, BUDGET_EXHAUSTED, f"run refused: {message}")
        raise RunAborted(message)

    # -- phase 2: buy the summaries, write each session as they come ---------------------------------
    def _summarize_all(self, to_compact: list[tuple[ScanItem, Fingerprint, dict]], ledger: RunLedger) -> str | None:
        if not to_compact:
            return None
        import asyncio  # only runs that buy summaries here (a model, a custom summarizer) get this far

        buyer = self._buyer = make_buyer(self.options, self.summarizer, ledger.state, self.pool_settings,
                                         self.run_id, clock=self.clock, sleep=self.sleep)
        self.progress.bar("summarize", len(to_compact), "compacting")
        stop = asyncio.Event()
        spent = {"cost": 0.0}
        locks = self.locks
        # no lookahead: a prepared session holds its calls' prompts and its lock until the pool takes it
        prepared = self.executor.map(prepare_file, locks.work(to_compact, self._prompt_tokens, self.finish), self.task,
                                     lookahead=False)

        async def jobs():
            from batchcompact.summarize.pool import SummaryJob

            while (record := await asyncio.to_thread(next, prepared, None)) is not None:
                pending = locks.prepared(record, self.finish)
                if pending is not None:
                    yield SummaryJob(str(pending.item.path), pending.calls, str(pending.fingerprint))

        async def on_outcome(outcome) -> None:
            pending = locks.take(outcome.key)
            if pending is None:
                return
            spent["cost"] += outcome.cost_usd
            try:
                await self._complete(pending, outcome, ledger)
            finally:
                locks.release(pending)
            self.progress.tick("summarize", cost=f"${spent['cost']:.4f}")

        def on_signal(signum: int) -> None:
            self.stopped = self.stopped or stop_signal_name(signum)
            stop.set()

        async def main():
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
        return self._abort_reason

    _abort_reason: str | None = None
    _buyer: Any = None  # how summaries are bought: on demand (the pool) or a provider batch API

    async def _complete(self, pending: PreparedSession, outcome: Any, ledger: RunLedger) -> None:
        """Apply the summaries, write, verify (a worker's `finish_file`), record: the outcome becomes the row."""
        row = pending.row
        row.update(usage_fields(outcome.results, outcome.attempts, len(pending.branches),
                                default_model=self.options.summary_model,
                                reusable=self.summarizer.name != "builtin"))
        ended = self._not_bought(outcome)
        if ended is not None:
            self.finish(row, *ended)
            return
        await self._write(pending, outcome, ledger)

    def _not_bought(self, outcome: Any) -> tuple[str, str | None] | None:
        """(status, reason) of a job whose summaries did not all come back, or None when they did."""
        if outcome.status == "aborted":
            # The first aborted job carries the error; the pool reports the jobs it then never
            # started with its stop message, which already reads "run aborted: ...".
            error = outcome.error or "run aborted"
            cause = error.removeprefix("run aborted: ")  # the same cause, whichever job reports it first
            reason = f"run aborted: {cause}"
            if self._abort_reason is None:
                self._abort_reason = cause
            if outcome.attempts == 0:  # never tried: it did not fail, the run stopped before it
                return SKIPPED, f"not attempted: {reason}"
            return FAILED, reason
        if outcome.status == "budget_exhausted":
            return BUDGET_EXHAUSTED, outcome.error or "--max-cost reached"
        if outcome.status == "skipped":
            return SKIPPED, outcome.error
        if outcome.status in (BATCH_PENDING, CHANGED):  # batch_pending: a later run collects it
            return outcome.status, outcome.error
        if outcome.status == "cancelled":
            by = f" by {self.stopped}" if self.stopped else ""
            return SKIPPED, f"run stopped{by} before this session was summarized"
        if outcome.status != "ok":
            return FAILED, outcome.error
        return None

    async def _write(self, pending: PreparedSession, outcome: Any, ledger: RunLedger) -> None:
        """The bought summaries to a worker's `finish_file` (apply, write, verify); the outcome recorded."""
        import asyncio

        row = pending.row
        # the written entries record what their summaries cost, even those bought by an earlier run
        buyer = self._buyer
        paid = tuple(buyer.as_paid(r) if buyer is not None and r is not None else r for r in outcome.results)
        item = pending.item
        work = SessionWork(str(item.path), str(item.root), pending.fingerprint, target=str(self.output_path(item)),
                           plan=_without_prompts(pending.plan),
                           branches=tuple(dataclasses.replace(b, call=_lean(b.call)) for b in pending.branches),
                           results=paid)
        try:
            done = await asyncio.wrap_future(self.executor.submit(finish_file, work, self.task))
        except ExecutorLost as exc:  # written or not: the next run sees which (a changed file, or the same)
            self.finish(row, FAILED, str(exc))
            return
        row.update(done.get("row") or {})
        if done["status"] != COMPACTED:
            self.finish(row, done["status"], done["reason"])
            return
        row["output_path"] = done["output_path"]
        ledger.record(item, pending.fingerprint, COMPACTED, done["output_path"], None)
        self.finish(row, COMPACTED, done.get("reason") or "")  # "handed off ..." for a handoff


def _lean(call: Any) -> Any:
    """A summary call without what was sent (the writer needs only its kind): less to ship to a worker."""
    return dataclasses.replace(call, system_prompt="", user_prompt="", messages=())


def _without_prompts(plan: CompactionPlan | None) -> CompactionPlan | None:
    return None if plan is None else dataclasses.replace(plan, calls=[_lean(c) for c in plan.calls])


def run_archive(paths: Iterable[str], settings: CompactionSettings, options: RunOptions, summarizer: Any,
                pool_settings: Any, **kwargs: Any) -> RunSummary:
    """Compact every session under `paths`; see the module docstring for the guarantees."""
    summary = Runner(settings, options, summarizer, pool_settings, **kwargs).run(paths)
    return summary
