"""Every status name of `plan` and `run`, written once.

Their own module because every stage that decides one (the planner, the file tasks, the writer, both
buyers, the run loop, the command line's summary) names them, and none of those may import the others
for it. The summary pool's job statuses (`ok`, `aborted`, `cancelled`, ...) are the pool's own words,
named once in summarize/pool.py; the run loop turns them into these (pipeline/run_summarize.py).
"""

from __future__ import annotations

from typing import Final, Literal

# -- a plan row's status (`plan`, and each file's phase-1 record in `run`) ------------------------------
PLAN_COMPACT: Final = "compact"
PLAN_SKIP: Final = "skip"
PLAN_ERROR: Final = "error"
# a branch plan's row (`plan` lists abandoned branches it would summarize)
PLAN_SUMMARIZE: Final = "summarize"
# phase 1 of `run` only: modified within --min-age, left alone unread (a live session?)
YOUNG: Final = "young"

PlanStatus = Literal["compact", "skip", "error", "young"]

# -- a session's final status in the run report (`compactions-<run>.parquet`) ---------------------------
COMPACTED: Final = "compacted"
SKIPPED: Final = "skipped"
FAILED: Final = "failed"
CHANGED: Final = "changed_during_run"
# requested from a provider batch (`--batch`): a later run collects it
BATCH_PENDING: Final = "batch_pending"
# --max-cost: refused before the start, or reached while buying
BUDGET_EXHAUSTED: Final = "budget_exhausted"
# an invalid file already reported by an earlier run, unchanged since: not a failure unless --strict
KNOWN_INVALID: Final = "known_invalid"

RunStatus = Literal["compacted", "skipped", "failed", "changed_during_run", "batch_pending", "budget_exhausted",
                    "known_invalid"]

# the statuses the run's summary lists as failures (file and reason, first 20)
FAILED_STATUSES: tuple[str, ...] = (FAILED, CHANGED, BUDGET_EXHAUSTED)
