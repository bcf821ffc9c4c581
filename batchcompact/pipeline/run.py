"""`run`: plan -> summarize -> apply -> write -> report over whole archives, safely and resumably.

`Runner` coordinates one run, phase by phase, each in its own module:
- select (`run_targets.py`): the files found, less our own earlier outputs; where each is written; stale
  temp files swept;
- plan (`run_plan.py`, phase 1): every file planned on the executor (records only, no prompts kept), so
  the cost estimate is known before any money is spent. With a summarizer that works where the session
  is (the built-in one) and nothing to enforce over the whole archive first (no --limit, --max-cost or
  --batch), phase 1 finishes each session where it was planned (pipeline/session_task.py): read once,
  written and verified by the worker, recorded here;
- summarize (`run_summarize.py`, phase 2): each session left re-read (checking it did not change),
  planned again and streamed through the buyer; each finished job applied and written right away, so a
  kill loses at most the calls in flight, and those that were paid for are in the state;
- report (`runreport/`): every session given has a row, written as `compactions-<run>.parquet`.
Every session's end passes through `Runner.finish` (its row final) and, for a task's `Outcome`, through
`Runner.record_outcome` (the same tail wherever the session was written).
"""

from __future__ import annotations

import logging
import os
import sqlite3
from collections.abc import Awaitable, Callable, Iterable
from dataclasses import dataclass, field
from datetime import datetime
from pathlib import Path
from typing import TYPE_CHECKING

from batchcompact.core.planner import CompactionSettings
from batchcompact.errors import UsageError, is_internal_error, outcome_exit_code
from batchcompact.formats.scan import ScanItem, iter_session_files
from batchcompact.formats.scan import oserror_text as _oserror
from batchcompact.lifecycle import stop_signal_name
from batchcompact.pipeline.executor import Executor, ExecutorLost, LocalExecutor
from batchcompact.pipeline.outcome import now_utc, reproducible_now
from batchcompact.pipeline.planning import PlanOptions
from batchcompact.pipeline.run_budget import RunBudget
from batchcompact.pipeline.run_ledger import RunLedger, run_settings_key
from batchcompact.pipeline.run_locks import SessionLocks
from batchcompact.pipeline.run_options import RunOptions
from batchcompact.pipeline.run_plan import PlanPhase
from batchcompact.pipeline.run_progress import Progress
from batchcompact.pipeline.run_summarize import SummarizePhase
from batchcompact.pipeline.run_targets import check_targets, output_path, sweep
from batchcompact.pipeline.runreport.rows import RunRows
from batchcompact.pipeline.runreport.schema import ReportRow
from batchcompact.pipeline.runreport.write import write_compactions
from batchcompact.pipeline.session_task import FileTask
from batchcompact.pipeline.state import RunState
from batchcompact.pipeline.statuses import BUDGET_EXHAUSTED, COMPACTED, FAILED, SKIPPED
from batchcompact.pipeline.task_records import Outcome

if TYPE_CHECKING:
    from batchcompact.core.calls import Summarizer
    from batchcompact.summarize.pool_settings import PoolSettings

log = logging.getLogger(__name__)


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
    rows: list[ReportRow]
    report_path: Path | None
    started_at: datetime
    ended_at: datetime
    aborted: str | None = None
    by_status: dict[str, int] = field(default_factory=dict)
    notes: list[str] = field(default_factory=list)  # what the summary buyer has to say (batches submitted)
    stopped: str | None = None  # the signal (SIGINT, SIGTERM) that stopped the run early
    wall_s: float = 0.0  # seconds of the run's rounds (set by run_request.compact)

    @property
    def exit_code(self) -> int:
        """3 aborted; 4 a session failed on a bug (an internal error; the others were still processed);
        1 some sessions failed (also: left uncompacted by --max-cost reached mid-run); else 0
        (docs/reliability.md)."""
        if self.aborted:
            return 3
        bugs = sum(row["status"] == FAILED and is_internal_error(row.get("reason")) for row in self.rows)
        failed = self.by_status.get(FAILED, 0) + self.by_status.get(BUDGET_EXHAUSTED, 0)
        return outcome_exit_code(failed, bugs)


def _new_run_id(moment: datetime) -> str:
    return moment.strftime("%Y%m%dT%H%M%SZ") + "-" + os.urandom(3).hex()  # secrets.token_hex(3), unimported


class Runner:
    """One run: what its phases share (options, the task every file gets, the rows, the state's ledger,
    the session locks, the budget, the progress bars), the phases in order, and the one place a session's
    row is finished. The phases: `run_targets.py`, `run_plan.py`, `run_summarize.py`; the work on the
    files: `session_task.py`."""

    def __init__(self, settings: CompactionSettings, options: RunOptions, summarizer: Summarizer,
                 pool_settings: PoolSettings, *, clock: Callable[[], float] | None = None,
                 sleep: Callable[[float], Awaitable[None]] | None = None, executor: Executor | None = None) -> None:
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
        self.prompt_tokens: dict[str, list[int] | None] = {}  # phase 1's exact counts, for phase 2
        self.stopped: str | None = None  # SIGINT / SIGTERM when a stop signal ended the run early
        self.here = self._compacts_here(options, summarizer)
        # what every file task needs (pipeline/session_task.py); SOURCE_DATE_EPOCH is read here, once
        self.task = FileTask(settings, self.plan_options, options.min_age_s, options.in_place, options.backup,
                             options.pricing_file, options.branch_summaries, reproducible_now())

    @staticmethod
    def _compacts_here(options: RunOptions, summarizer: Summarizer) -> bool:
        """Whether phase 1 finishes each session where it planned it: the summarizer works in any process
        (the built-in one) and nothing needs the whole archive's plan first (--limit, --max-cost, --batch)."""
        if not callable(getattr(summarizer, "summarize_now", None)):
            return False
        return options.limit is None and options.max_cost_usd is None and options.batch is None

    def output_path(self, item: ScanItem) -> Path:
        return output_path(self.options, item)

    # -- a session's end: the one place its row is finished ------------------------------------------
    def finish(self, row: ReportRow, status: str, reason: str | None = None) -> None:
        """The session's outcome: its row is final."""
        self.report.add(row, status, reason)

    def record_outcome(self, item: ScanItem, row: ReportRow, outcome: Outcome, ledger: RunLedger) -> None:
        """A file task's outcome (compacted where it was planned, or written after phase 2 bought its
        summaries) into the row, the state (when compacted) and the report."""
        row.update(outcome.columns)
        if outcome.status != COMPACTED:
            self.finish(row, outcome.status, outcome.reason)
            return
        row["output_path"] = outcome.output_path
        ledger.record(item, outcome.fingerprint, COMPACTED, outcome.output_path, None)
        self.finish(row, COMPACTED, outcome.reason or "")  # "handed off ..." for a handoff

    # -- the run, phase by phase -----------------------------------------------------------------------
    def run(self, paths: Iterable[str]) -> RunSummary:
        items = check_targets(list(iter_session_files(paths, require_any=True)), self.options)
        aborted = None
        notes: list[str] = []
        report_path = None
        summarize = None
        with RunState(self.options.resolved_state_path()) as state:
            ledger = RunLedger(state, self.settings_key, self.run_id)
            sweep(items, self.options, self.output_path)
            if state.moved_aside is not None:
                notes.append(f"the run state was unreadable: moved aside to {state.moved_aside}, a new one was made")
            try:
                try:
                    queued = PlanPhase(self, ledger).plan_all(items)
                    summarize = SummarizePhase(self, ledger)
                    aborted = summarize.summarize_all(queued)
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
        if summarize is not None and summarize.buyer is not None:
            notes += list(summarize.buyer.notes)
        return RunSummary(self.run_id, self.rows, report_path, self.started, now_utc(), aborted,
                          self.report.by_status(), notes, self.stopped)

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

    def _write_report(self, aborted: str | None) -> tuple[Path | None, str | None]:
        """`compactions-<run>.parquet` (None when it could not be written: then the abort reason says why)."""
        report_dir = self.options.resolved_report_dir()
        try:
            return write_compactions(self.rows, report_dir, self.run_id), aborted
        except OSError as exc:
            problem = (f"the report could not be written to {report_dir}: {_oserror(exc)} (the sessions "
                       "themselves were written and recorded; --report-dir chooses another folder)")
            return None, f"{aborted}; {problem}" if aborted else problem


def run_archive(paths: Iterable[str], settings: CompactionSettings, options: RunOptions, summarizer: Summarizer,
                pool_settings: PoolSettings, *, clock: Callable[[], float] | None = None,
                sleep: Callable[[float], Awaitable[None]] | None = None,
                executor: Executor | None = None) -> RunSummary:
    """Compact every session under `paths`; see the module docstring for the guarantees."""
    return Runner(settings, options, summarizer, pool_settings, clock=clock, sleep=sleep, executor=executor).run(paths)
