"""The run's report rows: one per session given, finished once each, in order (they become
`compactions-<run>.parquet`: runreport/write.py)."""

from __future__ import annotations

import logging
from collections.abc import Iterable, Mapping
from datetime import datetime

from batchcompact.core.jsontypes import JsonValue
from batchcompact.formats.scan import ScanItem, printable
from batchcompact.pipeline.outcome import now_utc
from batchcompact.pipeline.runreport.schema import ReportRow, empty_row

log = logging.getLogger("batchcompact.pipeline.run")  # the run's log lines, as before the rows had a module


def row_from_plan(plan_row: Mapping[str, JsonValue], item: ScanItem, run_id: str, started: datetime) -> ReportRow:
    """A session's report row as phase 1 planned it (its status and outcome come later)."""
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


class RunRows:
    """Every session's report row of this run, each finished once, in order."""

    def __init__(self, run_id: str, started: datetime) -> None:
        self.run_id = run_id
        self.started = started
        self.rows: list[ReportRow] = []
        self.reported: set[str] = set()  # input paths that have their row (printable)
        self.waiting: dict[str, ReportRow] = {}  # rows of sessions planned for compaction, by input path

    def add(self, row: ReportRow, status: str, reason: str | None = None) -> None:
        row["status"] = status
        if reason is not None:
            row["reason"] = reason
        row["ended_at"] = now_utc()
        for key, value in row.items():  # file names that are not UTF-8: \xNN escapes (printable, storable)
            if isinstance(value, str):
                row[key] = printable(value)
        self.rows.append(row)
        self.reported.add(row["input_path"])
        log.info("%s: %s%s", row["input_path"], status, f" ({row['reason']})" if row.get("reason") else "")

    def has(self, path: str) -> bool:
        return printable(path) in self.reported

    def unreached(self, items: list[ScanItem]) -> Iterable[tuple[ReportRow, str]]:
        """(row, what was not done: "summarized" / "planned") of every item that has no row yet."""
        for item in items:
            key = str(item.path)
            if self.has(key):
                continue
            row = self.waiting.get(key)
            if row is not None:
                yield row, "summarized"
            else:
                row = empty_row()
                row.update(run_id=self.run_id, started_at=self.started, input_path=key)
                yield row, "planned"

    def sort(self, items: list[ScanItem]) -> None:
        """Rows in the order the sessions were found, not the order they finished (which varies with
        --jobs and the executor): the report and every sum over the rows come out the same."""
        order = {printable(str(item.path)): n for n, item in enumerate(items)}
        self.rows.sort(key=lambda row: (order.get(row["input_path"], len(order)), row["input_path"]))

    def by_status(self) -> dict[str, int]:
        counts: dict[str, int] = {}
        for row in self.rows:
            counts[row["status"]] = counts.get(row["status"], 0) + 1
        return counts
