"""A session's final statuses in the run report (pipeline/run.py adds the run-level ones: budget, abort).

Their own module because every stage that decides one (the file tasks, the writer, both buyers, the run
loop) names them, and none of those may import the others for it.
"""

from __future__ import annotations

COMPACTED = "compacted"
SKIPPED = "skipped"
FAILED = "failed"
CHANGED = "changed_during_run"
# requested from a provider batch (`--batch`): a later run collects it
BATCH_PENDING = "batch_pending"
