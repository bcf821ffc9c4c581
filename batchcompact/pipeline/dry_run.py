"""`run --dry-run` (and `plan --min-age`): the plan's rows decided as the run would decide them, before any
file is written or any call made: files modified within `--min-age` (`session_task._young_reason`),
sessions a run with the same settings already finished (read from the run state, never written: the state
is opened read-only and no lock is taken), and the sessions past `--limit`, in the run's order of
decisions (`run_plan.PlanPhase._planned`)."""

from __future__ import annotations

import os
import sqlite3
import time
from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from pathlib import Path

from batchcompact.core.jsontypes import JsonObject
from batchcompact.pipeline.statuses import PLAN_COMPACT, PLAN_ERROR, PLAN_SKIP


@dataclass(frozen=True)
class DryRun:
    """What of a run's options decides beyond the plan. `state_path`/`settings_key`: the run state the run
    would use and the hash of its settings (None: no earlier runs are looked up, as `plan`)."""

    min_age_s: float = 0.0
    limit: int | None = None
    state_path: Path | None = None
    settings_key: str | None = None


def decided(rows: Iterable[JsonObject], dry: DryRun) -> Iterator[JsonObject]:
    """Each plan row, turned to `skip` with the run's reason where the run would not compact it."""
    from batchcompact.pipeline.session_task import _young_reason

    state = _read_only(dry.state_path) if dry.settings_key else None
    compacting = 0
    try:
        for row in rows:
            path = str(row["path"])
            age = _age(path)
            if dry.min_age_s > 0 and age is not None and age < dry.min_age_s:
                _skip(row, _young_reason(age))
            elif row["status"] != PLAN_ERROR and state is not None and (done := _finished(state, path, dry)):
                _skip(row, f"finished in an earlier run ({done})")
            elif row["status"] == PLAN_COMPACT:
                if dry.limit is not None and compacting >= dry.limit:
                    _skip(row, f"--limit {dry.limit} reached")
                else:
                    compacting += 1
            yield row
    finally:
        if state is not None:
            state.close()


def _skip(row: JsonObject, reason: str) -> None:
    row.update(status=PLAN_SKIP, reason=reason, calls=0, prompt_tokens=0, est_output_tokens=0, branch_calls=0,
               branch_est_cost_usd=None)


def _age(path: str) -> float | None:
    """Seconds since the file (a database's, for `<db>#<id>`) was modified; None when it cannot be seen."""
    from batchcompact.agents import file_of, store_agent

    try:
        return time.time() - os.stat(file_of(path) if store_agent(path) else path).st_mtime
    except OSError:
        return None


def _read_only(path: Path | None) -> sqlite3.Connection | None:
    if path is None or not Path(path).is_file():
        return None
    try:
        return sqlite3.connect(f"{Path(path).resolve().as_uri()}?mode=ro", uri=True)
    except sqlite3.Error:
        return None


def _finished(db: sqlite3.Connection, path: str, dry: DryRun) -> str | None:
    """The final status an earlier run recorded for these bytes under these settings, or None."""
    from batchcompact.formats.scan import resolved
    from batchcompact.pipeline.state import FINAL_STATUSES, _text, fingerprint_file

    key = _text(str(resolved(Path(path))))
    try:
        rows = db.execute("SELECT fingerprint, status FROM sessions WHERE input_path=? AND settings_hash=?",
                          (key, dry.settings_key)).fetchall()
    except sqlite3.Error:
        return None
    statuses = {fingerprint: status for fingerprint, status in rows if status in FINAL_STATUSES}
    if not statuses:
        return None
    try:
        return statuses.get(str(fingerprint_file(path)))
    except OSError:
        return None
