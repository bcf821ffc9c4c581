"""What `run`'s file tasks (pipeline/session_task.py) hand back to the run loop: typed, frozen records.

They cross process (and Ray node) boundaries, so they hold only plain values, fingerprints and plans.
The run loop turns each into the session's report row (pipeline/runreport/rows.py); the row itself stays
a mapping of the Parquet schema's columns (pipeline/runreport/schema.py), which is what is written.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from batchcompact.core.jsontypes import JsonValue
from batchcompact.pipeline.state import Fingerprint
from batchcompact.pipeline.statuses import PlanStatus, RunStatus

if TYPE_CHECKING:
    from batchcompact.core.branches import BranchPlan
    from batchcompact.core.planner import CompactionPlan


@dataclass(frozen=True)
class Outcome:
    """How one session ended, as a task (or the run loop) decided it: its run-report status and reason;
    when compacted, where it was written and the fingerprint of the bytes it was made from."""

    status: RunStatus
    reason: str | None = None
    output_path: str | None = None
    fingerprint: Fingerprint | None = None
    # the report columns the task filled: usage of the summaries, `branch_summaries`, `written_entries`
    columns: Mapping[str, JsonValue] = field(default_factory=dict)


@dataclass(frozen=True)
class PlanRecord:
    """Phase 1's answer for one file: its plan (as `plan`'s row) or why it has none, and, when the task
    also compacted it where it was read, that outcome."""

    path: str
    root: str
    status: PlanStatus
    reason: str | None
    plan_row: Mapping[str, JsonValue] = field(default_factory=dict)  # `plan`'s row; empty when the file was not planned
    fingerprint: Fingerprint | None = None
    invalid: bool = False  # its bytes are not a session (empty, compressed, binary): remembered like an invalid file
    prompt_tokens: list[int] | None = None  # the plan's exact prompt counts (phase 2 does not count again)
    compaction: Outcome | None = None  # compacted where it was read (a summarizer that works in any process)


@dataclass(frozen=True)
class Prepared:
    """A locked session re-read and re-planned by `prepare_file`: the calls to buy are in its plans."""

    fingerprint: Fingerprint  # now (the same bytes as planned: checked)
    plan: CompactionPlan | None  # None when only branch summaries are left to write
    branches: list[BranchPlan] = field(default_factory=list)
