"""`RunOptions`: how one `run` writes, what it remembers and where, what it may spend (`pipeline/run.py`).

Its own module so that the run's phases and helpers (`run_targets.py`, `run_ledger.py`, `buying.py`) name the type
without importing the run that imports them."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

from batchcompact.folders import state_folder

if TYPE_CHECKING:
    from batchcompact.pipeline.batch import BatchOptions


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
    batch: BatchOptions | None = None  # buy summaries through a provider batch API (pipeline/batch.py)

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
