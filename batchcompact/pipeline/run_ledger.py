"""What the run state (`pipeline/state.py`) remembers across runs, as one run uses it: the sessions
finished under these settings (not redone), the outcomes it records, the invalid files already reported."""

from __future__ import annotations

import dataclasses
from typing import TYPE_CHECKING

from batchcompact.formats.scan import ScanItem, resolved
from batchcompact.pipeline.state import Fingerprint, Finished, RunState, settings_hash
from batchcompact.pipeline.statuses import FAILED, KNOWN_INVALID
from batchcompact.pipeline.task_records import PlanRecord

if TYPE_CHECKING:
    from pathlib import Path

    from batchcompact.core.calls import Summarizer
    from batchcompact.core.planner import CompactionSettings
    from batchcompact.pipeline.run_options import RunOptions


def state_key(item: ScanItem) -> str:
    """Sessions are remembered by absolute path, so `dir` and `./dir` or `/abs/dir` are the same input."""
    return str(resolved(item.path))


def run_settings_key(settings: CompactionSettings, options: RunOptions, summarizer: Summarizer) -> str:
    """The hash of everything that makes an outcome reusable: a rerun with other settings redoes a session."""
    return settings_hash(
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


class RunLedger:
    """The run state seen through one run's settings and id."""

    def __init__(self, state: RunState, settings_key: str, run_id: str) -> None:
        self.state = state
        self.settings_key = settings_key
        self.run_id = run_id
        self._keys: dict[Path, str] = {}  # state_key per input path: resolved once per run, not per lookup

    def key(self, item: ScanItem) -> str:
        found = self._keys.get(item.path)
        if found is None:
            found = self._keys[item.path] = state_key(item)
        return found

    def finished_fingerprints(self, item: ScanItem) -> frozenset[str]:
        return self.state.finished_fingerprints(self.key(item), self.settings_key)

    def finished(self, item: ScanItem, fingerprint: Fingerprint | None) -> Finished | None:
        """The earlier outcome of these bytes under these settings, if any."""
        return self.state.finished(self.key(item), fingerprint, self.settings_key)

    def record(self, item: ScanItem, fingerprint: Fingerprint | None, status: str, output_path: str | None,
               reason: str | None) -> None:
        self.state.record(self.key(item), fingerprint, self.settings_key, status, output_path, reason, self.run_id)

    def invalid(self, item: ScanItem, record: PlanRecord, strict: bool) -> tuple[str, str | None]:
        """(status, reason) of an invalid file: failed with file and line the first time; afterwards,
        while its bytes stay the same, known invalid (exit 0 unless --strict), so a nightly run is not failed
        by it forever. Unreadable files and our own bugs are always failed."""
        fingerprint = record.fingerprint
        if fingerprint is None or not (record.plan_row or record.invalid):
            return FAILED, record.reason
        since = self.state.known_invalid(self.key(item), fingerprint)
        if since is None:
            self.state.record_invalid(self.key(item), fingerprint, self.run_id, record.reason)
            return FAILED, record.reason
        return (FAILED if strict else KNOWN_INVALID), f"known invalid since {since}: {record.reason}"
