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

import asyncio
import dataclasses
import logging
import os
import secrets
import shutil
import signal
import sqlite3
from collections import deque
from collections.abc import Iterable
from dataclasses import dataclass, field
from datetime import datetime
from pathlib import Path
from typing import Any

from batchcompact.core.planner import CompactionPlan, CompactionSettings
from batchcompact.errors import INTERNAL_ERROR_EXIT, RunAborted, UsageError, is_internal_error
from batchcompact.formats.scan import ScanItem, iter_session_files, printable, resolved
from batchcompact.formats.scan import oserror_text as _oserror
from batchcompact.pipeline.buying import make_buyer
from batchcompact.pipeline.executor import Executor, ExecutorLost, LocalExecutor
from batchcompact.pipeline.outcome import (
    PreparedSession,
    now_utc,
    reproducible_now,
    usage_fields,
)
from batchcompact.pipeline.planning import PlanOptions
from batchcompact.pipeline.runreport import ReportImports, empty_row, write_compactions
from batchcompact.pipeline.session_task import (
    FileTask,
    FileWork,
    SessionWork,
    finish_file,
    prepare_file,
    process_file,
    take_lock,
)
from batchcompact.pipeline.state import Fingerprint, RunState, settings_hash
from batchcompact.pipeline.statuses import BATCH_PENDING, CHANGED, COMPACTED, FAILED, SKIPPED
from batchcompact.pipeline.writer import sweep_stale_temps, temp_name

log = logging.getLogger(__name__)

BUDGET_EXHAUSTED = "budget_exhausted"
# An invalid file already reported by an earlier run, unchanged since: not a failure unless --strict.
KNOWN_INVALID = "known_invalid"


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
        return default_state_home() / "state.sqlite"

    def resolved_report_dir(self) -> Path:
        if self.report_dir is not None:
            return self.report_dir
        if self.output_dir is not None:
            return self.output_dir / ".batchcompact" / "reports"
        return default_state_home() / "reports"


def default_state_home() -> Path:
    base = os.environ.get("XDG_STATE_HOME") or os.path.join(os.path.expanduser("~"), ".local", "state")
    return Path(base) / "batchcompact"


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
        if any(row["status"] == FAILED and is_internal_error(row.get("reason")) for row in self.rows):
            return INTERNAL_ERROR_EXIT
        return 1 if self.by_status.get(FAILED) else 0


def _new_run_id(moment: datetime) -> str:
    return moment.strftime("%Y%m%dT%H%M%SZ") + "-" + secrets.token_hex(3)


def _state_key(item: ScanItem) -> str:
    """Sessions are remembered by absolute path, so `dir` and `./dir` or `/abs/dir` are the same input."""
    return str(resolved(item.path))


def _row_from_plan(plan_row: dict[str, Any], item: ScanItem, run_id: str, started: datetime) -> dict[str, Any]:
    row = empty_row()
    row.update(
        run_id=run_id,
        started_at=started,
        input_path=str(item.path),
        session_id=plan_row.get("session_id"),
        format=plan_row.get("format"),
        entries=plan_row.get("entries"),
        tokens_before=plan_row.get("tokens_before"),
        tokens_after_est=plan_row.get("tokens_after_est"),
        first_kept_entry_id=plan_row.get("first_kept_entry_id"),
        messages_summarized=plan_row.get("messages_to_summarize") or 0,
        split_turn=bool(plan_row.get("split_turn")),
        est_cost_usd=plan_row.get("est_cost_usd"),
        session_model=plan_row.get("model"),
    )
    return row


class Runner:
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
        self.settings_key = settings_hash(
            {
                "settings": dataclasses.asdict(settings),
                "summary_model": options.summary_model,
                "summarizer": getattr(summarizer, "name", None),
                "in_place": options.in_place,
                # resolved: `out`, `./out` and `/abs/out` are the same settings
                "output_dir": str(resolved(options.output_dir)) if options.output_dir else None,
                "branch_summaries": options.branch_summaries,
                "min_branch_tokens": options.min_branch_tokens,
                "branch_reserve_tokens": options.branch_reserve_tokens,
            }
        )
        self.rows: list[dict[str, Any]] = []
        self._prompt_tokens: dict[str, list[int] | None] = {}
        self.pending: dict[str, PreparedSession] = {}
        self.bars: dict[str, Any] = {}
        self._reported: set[str] = set()  # input paths that have their row
        self._waiting: dict[str, dict[str, Any]] = {}  # rows of sessions planned for compaction, by input path
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

    # -- progress ------------------------------------------------------------------------------------
    def _bar(self, name: str, total: int | None, desc: str):
        if not self.options.progress:
            return None
        from tqdm import tqdm

        bar = tqdm(total=total, desc=desc, unit="session", leave=False, dynamic_ncols=True)
        self.bars[name] = bar
        return bar

    def _tick(self, name: str, **postfix: Any) -> None:
        bar = self.bars.get(name)
        if bar is not None:
            bar.update(1)
            if postfix:
                bar.set_postfix(postfix, refresh=False)

    def _close_bars(self) -> None:
        for bar in self.bars.values():
            bar.close()
        self.bars.clear()

    # -- the run -------------------------------------------------------------------------------------
    def output_path(self, item: ScanItem) -> Path:
        if self.options.in_place:  # a symlinked session: compact the file it points to, keep the link
            return Path(os.path.realpath(item.path))
        assert self.options.output_dir is not None
        return self.options.output_dir / item.relative

    def finish(self, row: dict[str, Any], status: str, reason: str | None = None) -> None:
        row["status"] = status
        if reason is not None:
            row["reason"] = reason
        row["ended_at"] = now_utc()
        for key, value in row.items():  # file names that are not UTF-8: \xNN escapes (printable, storable)
            if isinstance(value, str):
                row[key] = printable(value)
        self.rows.append(row)
        self._reported.add(row["input_path"])
        log.info("%s: %s%s", row["input_path"], status, f" ({row['reason']})" if row.get("reason") else "")

    def run(self, paths: Iterable[str]) -> RunSummary:
        items = self._check_targets(list(iter_session_files(paths, require_any=True)))
        aborted = None
        notes: list[str] = []
        report_path = None
        with RunState(self.options.resolved_state_path()) as state:
            self._sweep(items)
            if state.moved_aside is not None:
                notes.append(f"the run state was unreadable: moved aside to {state.moved_aside}, a new one was made")
            try:
                try:
                    to_compact = self._plan_all(items, state)
                    aborted = self._summarize_all(to_compact, state)
                except KeyboardInterrupt:  # Ctrl-C or SIGTERM outside the summary loop (lifecycle.py)
                    from batchcompact.lifecycle import stop_signal_name

                    self.stopped = stop_signal_name()
                except ExecutorLost as exc:  # the cluster lost a task more often than it retries
                    aborted = str(exc)
                except sqlite3.Error as exc:  # disk full (or the database broke) while recording
                    aborted = (f"the run state {state.path} could not be updated: {exc} (free space and rerun; "
                               "what was recorded stays)")
            finally:
                self._close_bars()
                if self._owns_executor:
                    self.executor.close()
                self._account_for_all(items, aborted)
                self._sort_rows(items)
                report_dir = self.options.resolved_report_dir()
                try:
                    report_path = write_compactions(self.rows, report_dir, self.run_id)
                except OSError as exc:
                    problem = (f"the report could not be written to {report_dir}: {_oserror(exc)} (the sessions "
                               "themselves were written and recorded; --report-dir chooses another folder)")
                    aborted = f"{aborted}; {problem}" if aborted else problem
        by_status: dict[str, int] = {}
        for row in self.rows:
            by_status[row["status"]] = by_status.get(row["status"], 0) + 1
        notes += list(self._buyer.notes) if self._buyer is not None else []
        return RunSummary(self.run_id, self.rows, report_path, self.started, now_utc(), aborted, by_status, notes,
                          self.stopped)

    def _sort_rows(self, items: list[ScanItem]) -> None:
        """Rows in the order the sessions were found, not the order they finished (which varies with
        --jobs and the executor): the report and every sum over the rows come out the same."""
        order = {printable(str(item.path)): n for n, item in enumerate(items)}
        self.rows.sort(key=lambda row: (order.get(row["input_path"], len(order)), row["input_path"]))

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
        for pending in self.pending.values():  # interrupted before their job finished
            if pending.lock is not None:
                pending.lock.release()
            if printable(pending.row["input_path"]) not in self._reported:
                self.finish(pending.row, SKIPPED, f"{why} summarized")
        self.pending.clear()
        for item in items:
            key = str(item.path)
            if printable(key) in self._reported:
                continue
            row = self._waiting.get(key)
            if row is not None:
                self.finish(row, SKIPPED, f"{why} summarized")
            else:
                row = empty_row()
                row.update(run_id=self.run_id, started_at=self.started, input_path=key)
                self.finish(row, SKIPPED, f"{why} planned")

    def _check_targets(self, items: list[ScanItem]) -> list[ScanItem]:
        """Refuse an --output-dir that would overwrite an original; leave out our own earlier outputs.

        With `--output-dir` inside the inputs (`run sessions --output-dir sessions/compacted`) a rerun finds the outputs of
        earlier runs: they are not inputs.
        """
        if self.options.in_place or self.options.output_dir is None:
            return items
        out = self.options.output_dir.resolve()
        kept = [item for item in items if not resolved(item.path).is_relative_to(out)]
        inputs = {resolved(item.path) for item in kept}
        for item in items:
            target = resolved(self.output_path(item))
            if target == resolved(item.path) or target in inputs:
                raise UsageError(
                    f"--output-dir {self.options.output_dir} would overwrite the original {item.path}; "
                    "choose another folder, or --in-place"
                )
        return kept

    def _work(self, items: list[ScanItem], state: RunState):
        """Each file's `FileWork`, made as the executor asks for it (state lookups stay lazy)."""
        for item in items:
            if self.here is None:
                yield FileWork(str(item.path), str(item.root))
            else:
                yield FileWork(str(item.path), str(item.root), str(self.output_path(item)),
                               state.finished_fingerprints(_state_key(item), self.settings_key))

    def _plan_all(self, items: list[ScanItem], state: RunState) -> list[tuple[ScanItem, Fingerprint, dict]]:
        bar = self._bar("plan", len(items), "compacting" if self.here else "planning")
        task = dataclasses.replace(self.task, summarizer=self.summarizer) if self.here else self.task
        to_compact: list[tuple[ScanItem, Fingerprint, dict]] = []
        # With worker processes, the report's imports overlap their work (runreport.ReportImports): the
        # pool forks all its workers at its first task, so after the first result no fork comes until
        # this loop ends, and the thread is joined before anything else can fork.
        imports = ReportImports()
        overlap = isinstance(self.executor, LocalExecutor) and self.executor.jobs > 1
        try:
            est_total = self._plan_records(items, state, task, bar, to_compact, imports if overlap else None)
        finally:
            imports.join()
        if self.options.max_cost_usd is not None:
            self._check_budget(to_compact, est_total)
        return to_compact

    def _plan_records(self, items: list[ScanItem], state: RunState, task: Any, bar: Any,
                      to_compact: list[tuple[ScanItem, Fingerprint, dict]], imports: ReportImports | None) -> float:
        """Record each file's outcome from the executor; the sessions left to summarize go to `to_compact`.
        Returns the estimated cost of those."""
        est_total = 0.0
        for item, record in zip(items, self.executor.map(process_file, self._work(items, state), task),
                                strict=True):
            if imports is not None:
                imports.start()
            if bar is not None:
                bar.update(1)
            plan_row = record["plan_row"]
            row = _row_from_plan(plan_row, item, self.run_id, self.started)
            if self.options.batch is not None:  # estimated at the price it will be bought at
                row["est_cost_usd"] = plan_row.get("est_batch_cost_usd")
            status = record["status"]
            fingerprint = record.get("fingerprint")
            if status == "young":
                self.finish(row, SKIPPED, record["reason"])
                continue
            if status == "error":
                self._invalid(row, record, item, state)
                continue
            if "compaction" in record:  # finished where it was planned
                self._compacted_here(item, row, record["compaction"], state)
                continue
            done = state.finished(_state_key(item), fingerprint, self.settings_key)
            if done is not None:
                row["output_path"] = done["output_path"]
                self.finish(row, SKIPPED, f"finished in an earlier run ({done['status']})")
                continue
            wants_branches = self.options.branch_summaries and bool(plan_row.get("branch_calls"))
            if status == "skip" and not wants_branches:
                try:
                    self._copy_unchanged(item, row)
                except OSError as exc:
                    self.finish(row, FAILED, f"copy failed: {_oserror(exc)}")
                    continue
                state.record(_state_key(item), fingerprint, self.settings_key, SKIPPED, row.get("output_path"),
                             record["reason"], self.run_id)
                self.finish(row, SKIPPED, record["reason"])
                continue
            if self.options.limit is not None and len(to_compact) >= self.options.limit:
                self.finish(row, SKIPPED, f"--limit {self.options.limit} reached")
                continue
            est_total += plan_row.get(self._estimate_field) or 0.0
            if wants_branches:
                est_total += plan_row.get("branch_est_cost_usd") or 0.0
            self._prompt_tokens[str(item.path)] = record.get("prompt_tokens")
            self._waiting[str(item.path)] = row
            to_compact.append((item, fingerprint, row))
        return est_total

    def _compacted_here(self, item: ScanItem, row: dict[str, Any], outcome: dict[str, Any], state: RunState) -> None:
        row.update(outcome.get("row") or {})
        if outcome["status"] != COMPACTED:
            self.finish(row, outcome["status"], outcome["reason"])
            return
        row["output_path"] = outcome["output_path"]
        state.record(_state_key(item), outcome["fingerprint"], self.settings_key, COMPACTED, outcome["output_path"],
                     None, self.run_id)
        self.finish(row, COMPACTED, "")

    def _invalid(self, row: dict[str, Any], record: dict[str, Any], item: ScanItem, state: RunState) -> None:
        """Report an invalid file with file and line the first time; afterwards, while its bytes stay the
        same, as known invalid (exit 0 unless --strict), so a nightly run is not failed by it forever."""
        fingerprint = record.get("fingerprint")
        if fingerprint is None or not (record.get("plan_row") or record.get("invalid")):
            # unreadable, or our own bug: always a failure
            self.finish(row, FAILED, record["reason"])
            return
        since = state.known_invalid(_state_key(item), fingerprint)
        if since is None:
            state.record_invalid(_state_key(item), fingerprint, self.run_id, record["reason"])
            self.finish(row, FAILED, record["reason"])
        elif self.options.strict:
            self.finish(row, FAILED, f"known invalid since {since}: {record['reason']}")
        else:
            self.finish(row, KNOWN_INVALID, f"known invalid since {since}: {record['reason']}")

    def _check_budget(self, to_compact: list[tuple[ScanItem, Fingerprint, dict]], est_total: float) -> None:
        """Refuse to start above --max-cost, or when the model's price is unknown (spend could not be counted)."""
        model = self.options.summary_model
        priced = model == "builtin" or model.startswith("custom:")  # these report their own cost
        if not priced and any(row.get("est_cost_usd") is None for _, _, row in to_compact):
            message = (f"--max-cost cannot be enforced: {model} has no known price (pass --pricing FILE with "
                       "its prices); nothing was summarized")
        elif est_total > self.options.max_cost_usd:
            message = (f"the estimated cost ${est_total:.4f} exceeds --max-cost ${self.options.max_cost_usd:.4f}; "
                       "nothing was summarized (raise --max-cost or use --limit)")
        else:
            return
        for _, _, row in to_compact:
            self.finish(row, BUDGET_EXHAUSTED, f"run refused: {message}")
        raise RunAborted(message)

    def _copy_unchanged(self, item: ScanItem, row: dict[str, Any]) -> None:
        if not self.options.copy_unchanged or self.options.in_place:
            return
        target = self.output_path(item)
        tmp = temp_name(target)
        try:
            target.parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(item.path, tmp)
            os.replace(tmp, target)
        except BaseException:
            tmp.unlink(missing_ok=True)
            raise
        row["output_path"] = str(target)

    def _summarize_all(self, to_compact: list[tuple[ScanItem, Fingerprint, dict]], state: RunState) -> str | None:
        if not to_compact:
            return None
        buyer = self._buyer = make_buyer(self.options, self.summarizer, state, self.pool_settings, self.run_id,
                                         clock=self.clock, sleep=self.sleep)
        self._bar("summarize", len(to_compact), "compacting")
        stop = asyncio.Event()
        spent = {"cost": 0.0}

        locked: deque = deque()  # the sessions `prepared` yields for, in order
        prepared = self.executor.map(prepare_file, self._locked_work(to_compact, locked), self.task)

        async def jobs():
            from batchcompact.summarize.pool import SummaryJob

            while (record := await asyncio.to_thread(next, prepared, None)) is not None:
                pending = self._prepared(*locked.popleft(), record)
                if pending is not None:
                    self.pending[str(pending.item.path)] = pending
                    yield SummaryJob(str(pending.item.path), pending.calls, str(pending.fingerprint))

        async def on_outcome(outcome) -> None:
            pending = self.pending.pop(outcome.key, None)
            if pending is None:
                return
            spent["cost"] += outcome.cost_usd
            try:
                await self._complete(pending, outcome, state)
            finally:
                if pending.lock is not None:
                    pending.lock.release()
            self._tick("summarize", cost=f"${spent['cost']:.4f}")

        def on_signal(signum: int) -> None:
            from batchcompact.lifecycle import stop_signal_name

            self.stopped = self.stopped or stop_signal_name(signum)
            stop.set()

        async def main():
            loop = asyncio.get_running_loop()
            try:
                loop.add_signal_handler(signal.SIGINT, on_signal, signal.SIGINT)
                loop.add_signal_handler(signal.SIGTERM, on_signal, signal.SIGTERM)
            except (NotImplementedError, RuntimeError, ValueError):  # not the main thread (tests)
                pass
            try:
                return await buyer.buy(jobs(), on_outcome, stop)
            finally:
                try:
                    loop.remove_signal_handler(signal.SIGINT)
                    loop.remove_signal_handler(signal.SIGTERM)
                except (NotImplementedError, RuntimeError):
                    pass

        handlers = _current_handlers()
        try:
            asyncio.run(main())  # returns when its threads are done: nothing is inside `prepared` now
        finally:  # the loop leaves SIGTERM at its default (die): give the stop handlers back
            _restore_handlers(handlers)
            prepared.close()  # a stopped run: the sessions prepared ahead are given up
            while locked:
                locked.popleft()[2].release()
        return self._abort_reason

    _abort_reason: str | None = None
    _buyer: Any = None  # how summaries are bought: on demand (the pool) or a provider batch API

    @property
    def _estimate_field(self) -> str:
        """The plan's estimate that --max-cost checks: at the batch price when buying by batch."""
        return "est_batch_cost_usd" if self.options.batch is not None else "est_cost_usd"

    def _locked_work(self, to_compact: list[tuple[ScanItem, Fingerprint, dict]], locked: deque):
        """Each session to summarize, locked just before a worker re-reads it (`prepare_file`).

        The session's writer lock is held from here until it is written (or given up), so another run,
        whatever its state file, skips it meanwhile. Sessions that cannot be locked are finished here."""
        for item, fingerprint, row in to_compact:
            lock, status, reason = take_lock(item.path)
            if lock is None:
                self.finish(row, status, reason)
                continue
            locked.append((item, row, lock))
            # same bytes as in phase 1 (the worker checks): its exact prompt token counts are reused
            yield SessionWork(str(item.path), str(item.root), fingerprint, self._prompt_tokens.pop(str(item.path), None))

    def _prepared(self, item: ScanItem, row: dict[str, Any], lock: Any, record: dict[str, Any]):
        """The session as prepared for its summaries, or None when it was finished (and unlocked) here."""
        if record["status"] is not None:
            lock.release()
            self.finish(row, record["status"], record["reason"])
            return None
        return PreparedSession(item, record["fingerprint"], None, record["plan"], row, record["branches"], lock)

    async def _complete(self, pending: PreparedSession, outcome: Any, state: RunState) -> None:
        """Apply the summaries, write, verify (a worker's `finish_file`), record: the outcome becomes the row."""
        row = pending.row
        row.update(usage_fields(outcome.results, outcome.attempts, len(pending.branches),
                                default_model=self.options.summary_model,
                                reusable=self.summarizer.name != "builtin"))
        if outcome.status == "aborted":
            # The first aborted job carries the error; the pool reports the jobs it then never
            # started with its stop message, which already reads "run aborted: ...".
            error = outcome.error or "run aborted"
            cause = error.removeprefix("run aborted: ")  # the same cause, whichever job reports it first
            reason = f"run aborted: {cause}"
            if self._abort_reason is None:
                self._abort_reason = cause
            if outcome.attempts == 0:  # never tried: it did not fail, the run stopped before it
                self.finish(row, SKIPPED, f"not attempted: {reason}")
            else:
                self.finish(row, FAILED, reason)
            return
        if outcome.status == "budget_exhausted":
            self.finish(row, BUDGET_EXHAUSTED, outcome.error or "--max-cost reached")
            return
        if outcome.status == "skipped":
            self.finish(row, SKIPPED, outcome.error)
            return
        if outcome.status == BATCH_PENDING:  # requested from a provider batch: a later run collects it
            self.finish(row, BATCH_PENDING, outcome.error)
            return
        if outcome.status == CHANGED:
            self.finish(row, CHANGED, outcome.error)
            return
        if outcome.status == "cancelled":
            by = f" by {self.stopped}" if self.stopped else ""
            self.finish(row, SKIPPED, f"run stopped{by} before this session was summarized")
            return
        if outcome.status != "ok":
            self.finish(row, FAILED, outcome.error)
            return
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
        state.record(_state_key(item), pending.fingerprint, self.settings_key, COMPACTED, done["output_path"], None,
                     self.run_id)
        self.finish(row, COMPACTED, "")


def _lean(call: Any) -> Any:
    """A summary call without what was sent (the writer needs only its kind): less to ship to a worker."""
    return dataclasses.replace(call, system_prompt="", user_prompt="", messages=())


def _without_prompts(plan: CompactionPlan | None) -> CompactionPlan | None:
    return None if plan is None else dataclasses.replace(plan, calls=[_lean(c) for c in plan.calls])


def _current_handlers() -> dict[int, Any]:
    try:
        return {sig: signal.getsignal(sig) for sig in (signal.SIGINT, signal.SIGTERM)}
    except ValueError:
        return {}


def _restore_handlers(handlers: dict[int, Any]) -> None:
    for sig, handler in handlers.items():
        if handler is None:
            continue
        try:
            signal.signal(sig, handler)
        except (ValueError, OSError):  # not the main thread
            pass


def run_archive(paths: Iterable[str], settings: CompactionSettings, options: RunOptions, summarizer: Any,
                pool_settings: Any, **kwargs: Any) -> RunSummary:
    """Compact every session under `paths`; see the module docstring for the guarantees."""
    summary = Runner(settings, options, summarizer, pool_settings, **kwargs).run(paths)
    return summary
