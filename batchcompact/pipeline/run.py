"""`run`: plan -> summarize -> apply -> write -> report over whole archives, safely and resumably.

Phase 1 plans every file in a process pool (rows only, no prompts kept), so the cost estimate is known
before any money is spent. Phase 2 re-reads each session to compact (checking it did not change),
plans it again and streams it through the summary pool; each finished job is applied and written
right away, so a kill loses at most the calls in flight, and those that were paid for are in the state.
"""

from __future__ import annotations

import asyncio
import dataclasses
import logging
import os
import secrets
import shutil
import signal
import time
from collections.abc import Iterable
from dataclasses import dataclass, field
from datetime import datetime
from pathlib import Path
from typing import Any

from batchcompact.core.planner import CompactionPlan, CompactionSettings
from batchcompact.errors import RunAborted, UsageError, VerificationError
from batchcompact.formats.scan import ScanItem, iter_session_files
from batchcompact.pipeline.buying import BATCH_PENDING, make_buyer
from batchcompact.pipeline.outcome import OutcomeWriter, now_utc
from batchcompact.pipeline.parallel import map_bounded
from batchcompact.pipeline.planning import PlanOptions, plan_session, read_session
from batchcompact.pipeline.runreport import empty_row, write_compactions
from batchcompact.pipeline.state import Fingerprint, RunState, fingerprint_file, settings_hash
from batchcompact.pipeline.writer import ChangedDuringRun
from batchcompact.summarize.redact import merge_counts

log = logging.getLogger(__name__)

COMPACTED = "compacted"
SKIPPED = "skipped"
FAILED = "failed"
BUDGET_EXHAUSTED = "budget_exhausted"
CHANGED = "changed_during_run"
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

    @property
    def exit_code(self) -> int:
        if self.aborted:
            return 3
        return 1 if self.by_status.get(FAILED) else 0


@dataclass
class _Pending:
    """A session between planning and writing (kept only while its job is in flight)."""

    item: ScanItem
    fingerprint: Fingerprint
    session: Any
    plan: CompactionPlan | None  # None: only branch summaries to write
    row: dict[str, Any]
    branches: list = field(default_factory=list)  # BranchPlans, written before the compaction

    @property
    def calls(self) -> list:
        """Branch-summary calls first, then the compaction's (1, or 2 for a split turn)."""
        return [b.call for b in self.branches] + (list(self.plan.calls) if self.plan is not None else [])


def _new_run_id(moment: datetime) -> str:
    return moment.strftime("%Y%m%dT%H%M%SZ") + "-" + secrets.token_hex(3)


def _state_key(item: ScanItem) -> str:
    """Sessions are remembered by absolute path, so `dir` and `./dir` or `/abs/dir` are the same input."""
    return str(item.path.resolve())


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


def _phase1(args: tuple[str, str, float], settings: CompactionSettings, options: PlanOptions) -> dict[str, Any]:
    """Fingerprint, age check, read and plan one file (runs in a worker process)."""
    path, root, min_age = args
    record: dict[str, Any] = {"path": path, "root": root}
    try:
        fingerprint = fingerprint_file(path)
    except OSError as exc:
        record.update(status="error", reason=f"cannot read: {exc}", fingerprint=None, plan_row={})
        return record
    record["fingerprint"] = fingerprint
    age = time.time() - fingerprint.mtime_ns / 1e9
    if min_age > 0 and age < min_age:
        record.update(status="young", reason=f"modified {age:.0f}s ago, under --min-age (live session?)", plan_row={})
        return record
    try:
        session = read_session(path)
        plan, row = plan_session(session, settings, options)
    except Exception as exc:  # one file's bug must not stop the archive
        log.exception("planning %s failed", path)
        record.update(status="error", reason=f"internal error: {exc!r}", plan_row={})
        return record
    record.update(status=row["status"], reason=row["reason"], plan_row=row)
    if isinstance(plan, CompactionPlan):
        record["prompt_tokens"] = [c.prompt_tokens for c in plan.calls]
    return record


class Runner:
    def __init__(self, settings: CompactionSettings, options: RunOptions, summarizer: Any, pool_settings: Any,
                 *, clock=None, sleep=None) -> None:
        self.settings = settings
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
                "output_dir": str(options.output_dir) if options.output_dir else None,
                "branch_summaries": options.branch_summaries,
                "min_branch_tokens": options.min_branch_tokens,
                "branch_reserve_tokens": options.branch_reserve_tokens,
            }
        )
        self.rows: list[dict[str, Any]] = []
        self._prompt_tokens: dict[str, list[int] | None] = {}
        self.pending: dict[str, _Pending] = {}
        self.bars: dict[str, Any] = {}

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
        if self.options.in_place:
            return item.path
        assert self.options.output_dir is not None
        return self.options.output_dir / item.relative

    def finish(self, row: dict[str, Any], status: str, reason: str | None = None) -> None:
        row["status"] = status
        if reason is not None:
            row["reason"] = reason
        row["ended_at"] = now_utc()
        self.rows.append(row)
        log.info("%s: %s%s", row["input_path"], status, f" ({row['reason']})" if row.get("reason") else "")

    def run(self, paths: Iterable[str]) -> RunSummary:
        items = self._check_targets(list(iter_session_files(paths, require_any=True)))
        with RunState(self.options.resolved_state_path()) as state:
            try:
                to_compact = self._plan_all(items, state)
                aborted = self._summarize_all(to_compact, state)
            finally:
                self._close_bars()
                for pending in self.pending.values():  # interrupted before their job finished
                    self.finish(pending.row, SKIPPED, "run stopped before this session was summarized")
                self.pending.clear()
                report_path = write_compactions(self.rows, self.options.resolved_report_dir(), self.run_id)
        by_status: dict[str, int] = {}
        for row in self.rows:
            by_status[row["status"]] = by_status.get(row["status"], 0) + 1
        notes = list(self._buyer.notes) if self._buyer is not None else []
        return RunSummary(self.run_id, self.rows, report_path, self.started, now_utc(), aborted, by_status, notes)

    def _check_targets(self, items: list[ScanItem]) -> list[ScanItem]:
        """Refuse an --output-dir that would overwrite an original; leave out our own earlier outputs.

        With `--output-dir` inside the inputs (`run sessions --output-dir sessions/compacted`) a rerun finds the outputs of
        earlier runs: they are not inputs.
        """
        if self.options.in_place or self.options.output_dir is None:
            return items
        out = self.options.output_dir.resolve()
        kept = [item for item in items if not item.path.resolve().is_relative_to(out)]
        inputs = {item.path.resolve() for item in kept}
        for item in items:
            target = self.output_path(item).resolve()
            if target == item.path.resolve() or target in inputs:
                raise UsageError(
                    f"--output-dir {self.options.output_dir} would overwrite the original {item.path}; "
                    "choose another folder, or --in-place"
                )
        return kept

    def _plan_all(self, items: list[ScanItem], state: RunState) -> list[tuple[ScanItem, Fingerprint, dict]]:
        bar = self._bar("plan", len(items), "planning")
        args = ((str(i.path), str(i.root), self.options.min_age_s) for i in items)
        to_compact: list[tuple[ScanItem, Fingerprint, dict]] = []
        est_total = 0.0
        for item, record in zip(items, map_bounded(_phase1, args, self.options.jobs, self.settings, self.plan_options),
                                strict=True):
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
            done = state.finished(_state_key(item), fingerprint, self.settings_key)
            if done is not None:
                row["output_path"] = done["output_path"]
                self.finish(row, SKIPPED, f"finished in an earlier run ({done['status']})")
                continue
            wants_branches = self.options.branch_summaries and bool(plan_row.get("branch_calls"))
            if status == "skip" and not wants_branches:
                self._copy_unchanged(item, row)
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
            to_compact.append((item, fingerprint, row))
        if self.options.max_cost_usd is not None:
            self._check_budget(to_compact, est_total)
        return to_compact

    def _invalid(self, row: dict[str, Any], record: dict[str, Any], item: ScanItem, state: RunState) -> None:
        """Report an invalid file with file and line the first time; afterwards, while its bytes stay the
        same, as known invalid (exit 0 unless --strict), so a nightly run is not failed by it forever."""
        fingerprint = record.get("fingerprint")
        if fingerprint is None or not record.get("plan_row"):  # unreadable, or our own bug: always a failure
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
        target.parent.mkdir(parents=True, exist_ok=True)
        tmp = target.with_name(f".{target.name}.batchcompact-copy")
        shutil.copy2(item.path, tmp)
        os.replace(tmp, target)
        row["output_path"] = str(target)

    def _summarize_all(self, to_compact: list[tuple[ScanItem, Fingerprint, dict]], state: RunState) -> str | None:
        if not to_compact:
            return None
        buyer = self._buyer = make_buyer(self.options, self.summarizer, state, self.pool_settings, self.run_id,
                                         clock=self.clock, sleep=self.sleep)
        self._bar("summarize", len(to_compact), "compacting")
        stop = asyncio.Event()
        spent = {"cost": 0.0}

        async def jobs():
            from batchcompact.summarize.pool import SummaryJob

            for item, fingerprint, row in to_compact:
                pending = await asyncio.to_thread(self._prepare, item, fingerprint, row, state)
                if pending is None:
                    continue
                self.pending[str(item.path)] = pending
                yield SummaryJob(str(item.path), pending.calls, str(pending.fingerprint))

        async def on_outcome(outcome) -> None:
            pending = self.pending.pop(outcome.key, None)
            if pending is None:
                return
            spent["cost"] += outcome.cost_usd
            await asyncio.to_thread(self._complete, pending, outcome, state)
            self._tick("summarize", cost=f"${spent['cost']:.4f}")

        async def main():
            loop = asyncio.get_running_loop()
            try:
                loop.add_signal_handler(signal.SIGINT, stop.set)
                loop.add_signal_handler(signal.SIGTERM, stop.set)
            except (NotImplementedError, RuntimeError):  # not the main thread (tests)
                pass
            try:
                return await buyer.buy(jobs(), on_outcome, stop)
            finally:
                try:
                    loop.remove_signal_handler(signal.SIGINT)
                    loop.remove_signal_handler(signal.SIGTERM)
                except (NotImplementedError, RuntimeError):
                    pass

        asyncio.run(main())
        return self._abort_reason

    _abort_reason: str | None = None
    _buyer: Any = None  # how summaries are bought: on demand (the pool) or a provider batch API

    @property
    def _estimate_field(self) -> str:
        """The plan's estimate that --max-cost checks: at the batch price when buying by batch."""
        return "est_batch_cost_usd" if self.options.batch is not None else "est_cost_usd"

    def _prepare(self, item: ScanItem, fingerprint: Fingerprint, row: dict[str, Any], state: RunState):
        """Re-read and re-plan one session just before summarizing it (None when it is finished here)."""
        try:
            current = fingerprint_file(item.path)
        except OSError as exc:
            self.finish(row, FAILED, f"cannot read: {exc}")
            return None
        if (current.size, current.sha256) != (fingerprint.size, fingerprint.sha256):
            self.finish(row, CHANGED, "the file changed after it was planned")
            return None
        try:
            session = read_session(item.path)
            # Same bytes as in phase 1 (checked above): reuse its exact prompt token counts.
            known = self._prompt_tokens.pop(str(item.path), None)
            plan, plan_row = plan_session(session, self.settings, self.plan_options, prompt_tokens=known)
        except Exception as exc:  # as in phase 1: one file's bug must not stop the archive
            log.exception("planning %s failed", item.path)
            self.finish(row, FAILED, f"internal error: {exc!r}")
            return None
        branches = self._plan_branches(session, plan_row) if self.options.branch_summaries else []
        if not isinstance(plan, CompactionPlan):
            if not branches:
                self.finish(row, SKIPPED, plan_row.get("reason"))
                return None
            plan = None
        return _Pending(item, current, session, plan, row, branches)

    def _plan_branches(self, session: Any, plan_row: dict[str, Any]) -> list:
        """Branch-summary plans for the abandoned branches of a pi session (already summarized ones skip)."""
        if session.format != "pi" or not session.compactable:
            return []
        from batchcompact.core.branches import BranchPlan
        from batchcompact.pipeline.planning import plan_branches

        results = plan_branches(session, self.settings, self.plan_options, plan_row.get("context_window"))
        return [b for b in results if isinstance(b, BranchPlan)]

    def _writer(self) -> OutcomeWriter:
        return OutcomeWriter(self.settings, in_place=self.options.in_place, backup=self.options.backup,
                             pricing_file=self.options.pricing_file, caching=self._buyer)

    def _complete(self, pending: _Pending, outcome: Any, state: RunState) -> None:
        """Apply the summaries, write, verify, record: the session's outcome becomes its row."""
        row = pending.row
        results = [r for r in outcome.results if r is not None]
        row.update(
            calls=sum(r.calls for r in results),
            attempts=outcome.attempts,
            prompt_tokens=sum(r.prompt_tokens for r in results),
            completion_tokens=sum(r.completion_tokens for r in results),
            cache_read_tokens=sum(r.cache_read_tokens for r in results),
            cache_write_tokens=sum(r.cache_write_tokens for r in results),
            cost_usd=None if any(r.cost_usd is None for r in results) else sum(r.cost_usd for r in results),
            latency_s=max((r.latency_s for r in results), default=0.0),
            model=results[0].model if results else self.options.summary_model,
            redactions=sum(r.redaction_count for r in results),
            redaction_kinds=[{"kind": kind, "count": count}
                             for kind, count in sorted(merge_counts(*(r.redactions for r in results)).items())],
            unpriced=any(r.cost_usd is None for r in results),
            overflow_recovery=any(r.overflow_calls for r in results),
            reused_summaries=sum(1 for r in results if r.calls == 0 and self.summarizer.name != "builtin"),
            batch=any(r.batch for r in results),
        )
        branch = [r for r in outcome.results[: len(pending.branches)] if r is not None]
        row.update(  # the part of the totals above spent on branch summaries (report kind branch_summary)
            branch_calls=sum(r.calls for r in branch),
            branch_prompt_tokens=sum(r.prompt_tokens for r in branch),
            branch_completion_tokens=sum(r.completion_tokens for r in branch),
            branch_cost_usd=None if any(r.cost_usd is None for r in branch) else sum(r.cost_usd for r in branch),
        )
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
            self.finish(row, SKIPPED, "run stopped before this session was summarized")
            return
        if outcome.status != "ok":
            self.finish(row, FAILED, outcome.error)
            return
        try:
            output = self._writer().write(pending, outcome, self.output_path(pending.item))
        except ChangedDuringRun as exc:
            self.finish(row, CHANGED, str(exc))
            return
        except VerificationError as exc:
            self.finish(row, FAILED, f"verification failed: {exc}")
            return
        except OSError as exc:
            self.finish(row, FAILED, f"write failed: {exc}")
            return
        except Exception as exc:  # one session's bug must not stop the archive (nor lose the report)
            log.exception("writing %s failed", pending.item.path)
            self.finish(row, FAILED, f"internal error: {exc!r}")
            return
        row["output_path"] = output
        state.record(_state_key(pending.item), pending.fingerprint, self.settings_key, COMPACTED, output, None,
                     self.run_id)
        self.finish(row, COMPACTED, "")

def run_archive(paths: Iterable[str], settings: CompactionSettings, options: RunOptions, summarizer: Any,
                pool_settings: Any, **kwargs: Any) -> RunSummary:
    """Compact every session under `paths`; see the module docstring for the guarantees."""
    summary = Runner(settings, options, summarizer, pool_settings, **kwargs).run(paths)
    return summary
