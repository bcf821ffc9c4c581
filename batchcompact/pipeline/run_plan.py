"""`run`'s phase 1: every file planned on the executor (or compacted where it is planned); what is left
to summarize is queued, every other session's row finished here.

Only each file's `PlanRecord` comes back from the workers (pipeline/session_task.py `process_file`), so
memory stays flat; the estimates of what is queued are checked against --max-cost before anything is spent.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Iterator
from typing import Any, NamedTuple

from batchcompact.errors import RunAborted
from batchcompact.formats.scan import ScanItem
from batchcompact.formats.scan import oserror_text as _oserror
from batchcompact.pipeline.executor import LocalExecutor
from batchcompact.pipeline.run_ledger import RunLedger
from batchcompact.pipeline.runreport.rows import ReportRow, row_from_plan
from batchcompact.pipeline.runreport.write import ReportImports
from batchcompact.pipeline.session_task import FileWork, process_file
from batchcompact.pipeline.state import Fingerprint
from batchcompact.pipeline.statuses import BUDGET_EXHAUSTED, FAILED, PLAN_ERROR, PLAN_SKIP, SKIPPED, YOUNG
from batchcompact.pipeline.task_records import PlanRecord
from batchcompact.pipeline.writer import copy_file


class Queued(NamedTuple):
    """A session phase 1 left for phase 2: the bytes it planned and its report row so far."""

    item: ScanItem
    fingerprint: Fingerprint
    row: ReportRow


class PlanPhase:
    """Phase 1 of one run (`Runner` holds what the phases share: options, rows, ledger, budget, executor)."""

    # Any: the `Runner` (pipeline/run.py), which imports this module
    def __init__(self, run: Any, ledger: RunLedger) -> None:
        self.run = run
        self.options = run.options
        self.ledger = ledger

    def plan_all(self, items: list[ScanItem]) -> list[Queued]:
        run = self.run
        bar = run.progress.bar("plan", len(items), "compacting" if run.here else "planning")
        task = dataclasses.replace(run.task, summarizer=run.summarizer) if run.here else run.task
        queued: list[Queued] = []
        # With worker processes, the report's imports overlap their work (runreport.write.ReportImports): the
        # pool forks all its workers at its first task, so after the first result no fork comes until
        # this loop ends, and the thread is joined before anything else can fork.
        executor = run.executor
        forks = isinstance(executor, LocalExecutor) and executor.jobs > 1 and len(items) > 1
        if forks:  # as `plan` does: the forked workers share one tokenizer when they will count
            from batchcompact.pipeline.planning import warm_up_before_forking

            warm_up_before_forking(run.task.plan_options.summary_model)
            if run.here and getattr(run.summarizer, "name", None) == "builtin":
                from batchcompact.tokenizer import warm_up

                warm_up(None)  # the built-in counts its summaries against the budget (cl100k): load it once here
        imports = ReportImports() if isinstance(executor, LocalExecutor) and executor.jobs > 1 else None
        try:
            for item, record in zip(items, executor.map(process_file, self._work(items), task), strict=True):
                if imports is not None:
                    imports.start()
                if bar is not None:
                    bar.update(1)
                planned = self._planned(item, record, len(queued))
                if planned is not None:
                    queued.append(planned)
        finally:
            if imports is not None:
                imports.join()
        if self.options.max_cost_usd is not None:
            self._check_budget(queued)
        return queued

    def _work(self, items: list[ScanItem]) -> Iterator[FileWork]:
        """Each file's `FileWork`, made as the executor asks for it (state lookups stay lazy)."""
        for item in items:
            yield FileWork(str(item.path), str(item.root), str(self.run.output_path(item)),
                           self.ledger.finished_fingerprints(item))

    def _planned(self, item: ScanItem, record: PlanRecord, queued: int) -> Queued | None:
        """One file's phase-1 record: its row finished here, or queued to summarize."""
        run, ledger = self.run, self.ledger
        plan_row = record.plan_row
        row = row_from_plan(plan_row, item, run.run_id, run.started)
        if self.options.batch is not None:  # estimated at the price it will be bought at
            row["est_cost_usd"] = plan_row.get("est_batch_cost_usd")
        if record.status == YOUNG:
            run.finish(row, SKIPPED, record.reason)
            return None
        if record.status == PLAN_ERROR:
            run.finish(row, *ledger.invalid(item, record, self.options.strict))
            return None
        if record.compaction is not None:  # finished where it was planned
            run.record_outcome(item, row, record.compaction, ledger)
            return None
        done = ledger.finished(item, record.fingerprint)
        if done is not None:
            row["output_path"] = done.output_path
            run.finish(row, SKIPPED, f"finished in an earlier run ({done.status})")
            return None
        wants_branches = self.options.branch_summaries and bool(plan_row.get("branch_calls"))
        if record.status == PLAN_SKIP and not wants_branches:
            self._unchanged(item, row, record)
            return None
        if self.options.limit is not None and queued >= self.options.limit:
            run.finish(row, SKIPPED, f"--limit {self.options.limit} reached")
            return None
        run.budget.add(plan_row, wants_branches)
        run.prompt_tokens[str(item.path)] = record.prompt_tokens
        run.report.waiting[str(item.path)] = row
        return Queued(item, record.fingerprint, row)  # type: ignore[arg-type]  # a planned file has one

    def _unchanged(self, item: ScanItem, row: ReportRow, record: PlanRecord) -> None:
        """A session with nothing to do: copied to --output-dir with --copy-unchanged, recorded as skipped."""
        if self.options.copy_unchanged and not self.options.in_place:
            target = self.run.output_path(item)
            try:
                copy_file(item.path, target)
            except OSError as exc:
                self.run.finish(row, FAILED, f"copy failed: {_oserror(exc)}")
                return
            row["output_path"] = str(target)
        self.ledger.record(item, record.fingerprint, SKIPPED, row.get("output_path"), record.reason)
        self.run.finish(row, SKIPPED, record.reason)

    def _check_budget(self, queued: list[Queued]) -> None:
        """Refuse to start above --max-cost, or when the model's price is unknown (spend could not be counted)."""
        message = self.run.budget.refusal(q.row for q in queued)
        if message is None:
            return
        for q in queued:
            self.run.finish(q.row, BUDGET_EXHAUSTED, f"run refused: {message}")
        raise RunAborted(message)
