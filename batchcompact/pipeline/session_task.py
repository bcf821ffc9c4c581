"""The per-file units of `run` that workers execute (pipeline/executor.py: local processes or Ray nodes).

- `process_file` (phase 1): fingerprint, age check, read and plan one file; a plan record for the run loop.
  When the run's summarizer works where the session is (the built-in one: offline, deterministic, free,
  so no budget or rate limit to coordinate), the same call also takes the session's writer lock, makes
  the summaries, applies, writes and verifies: the file is read once, and the run loop only records.
- Otherwise the run loop buys the summaries from the model pool (it owns the rate limits, the budget and
  the state) while workers do the file work around them: `prepare_file` re-reads and re-plans a session
  the run loop has locked (its summary calls), `finish_file` applies the bought summaries, writes and
  verifies it.

Everything here is idempotent: a task repeated (a node lost) re-checks the fingerprint and the state's
answer it was given, so a file is never compacted from bytes other than those it planned.
"""

from __future__ import annotations

import logging
import os
import time
from dataclasses import dataclass
from datetime import datetime
from pathlib import Path
from typing import TYPE_CHECKING

from batchcompact.agents import get, store_agent
from batchcompact.core.handoff import is_handoff
from batchcompact.core.jsontypes import JsonObject
from batchcompact.core.planner import CompactionPlan, CompactionSettings, Skip
from batchcompact.errors import BatchCompactError, NotCompacted, UsageError, internal_error_reason
from batchcompact.formats.scan import ScanItem, missing_file_reason, unreadable_reason
from batchcompact.formats.scan import oserror_text as _oserror
from batchcompact.pipeline.outcome import (
    OutcomeWriter,
    PreparedSession,
    handed_off_already,
    usage_fields,
    write_outcome,
)
from batchcompact.pipeline.planning import PlanOptions, plan_session, read_session
from batchcompact.pipeline.session_lock import SessionLocked, lock_session
from batchcompact.pipeline.state import Fingerprint, fingerprint_file
from batchcompact.pipeline.statuses import (
    CHANGED,
    FAILED,
    PLAN_COMPACT,
    PLAN_ERROR,
    PLAN_SKIP,
    SKIPPED,
    YOUNG,
)
from batchcompact.pipeline.task_records import Outcome, PlanRecord, Prepared

if TYPE_CHECKING:
    from batchcompact.core.branches import BranchPlan
    from batchcompact.core.calls import InPlaceSummarizer, SummaryResult
    from batchcompact.core.session import Session
    from batchcompact.pipeline.session_lock import DatabaseSessionLock, SessionLock


log = logging.getLogger(__name__)

LOCKED = "locked by another run"


@dataclass(frozen=True)
class FileTask:
    """What the tasks need besides the file: the same for every file of a run (shipped once per map)."""

    settings: CompactionSettings
    plan_options: PlanOptions
    min_age_s: float = 0.0
    in_place: bool = False
    backup: bool = True
    pricing_file: str | None = None
    branch_summaries: bool = False
    now: datetime | None = None  # SOURCE_DATE_EPOCH, read by the run loop's process
    # a summarizer that works in any process (`summarize_now(call)`): phase 1 compacts where it plans;
    # None: plan only, the run loop buys the summaries
    summarizer: InPlaceSummarizer | None = None

    def writer(self) -> OutcomeWriter:
        return OutcomeWriter(self.settings, in_place=self.in_place, backup=self.backup,
                             pricing_file=self.pricing_file, now=self.now)


@dataclass(frozen=True)
class FileWork:
    """One file to process: where it is, where its output goes, and which of its fingerprints the run
    state already records as finished with these settings (never compacted again)."""

    path: str
    root: str
    target: str | None = None
    finished: frozenset[str] = frozenset()


def process_file(work: FileWork, task: FileTask) -> PlanRecord:
    """Plan one file (and compact it here when the task says so); a record, never an exception."""
    path = work.path
    # compacting a pi session here: the read itself gives the fingerprint (adapters/pi/read.py SourceDigest)
    here = task.summarizer is not None and _reads_with_digest(path)
    try:
        fingerprint = _stat_fingerprint(path) if here else fingerprint_file(path)
    except FileNotFoundError:  # listed by the driver, not visible here (another node) or removed since
        return PlanRecord(path, work.root, PLAN_ERROR, missing_file_reason(path))
    except OSError as exc:
        return PlanRecord(path, work.root, PLAN_ERROR, f"cannot read: {_oserror(exc)}")
    age = time.time() - fingerprint.mtime_ns / 1e9
    if task.min_age_s > 0 and age < task.min_age_s:
        return PlanRecord(path, work.root, YOUNG, _young_reason(age),
                          fingerprint=fingerprint if not here else fingerprint_file(path))
    try:
        # compacting here: the writer's verify can then parse only what it appended (adapters/pi/read.py)
        session = read_session(path, digest=task.summarizer is not None)
        if here:
            fingerprint, session = _read_fingerprint(path, fingerprint, session)
        plan, row = plan_session(session, task.settings, task.plan_options)
    except UsageError:  # the command's settings (a broken price map), not this file: stops the command
        raise
    except NotCompacted as exc:  # an agent batchcompact only reports: skipped, as plan says (planning.py)
        return PlanRecord(path, work.root, PLAN_SKIP, str(exc), fingerprint=_fingerprint_or_none(path, fingerprint))
    except (OSError, BatchCompactError, UnicodeError) as exc:  # a file we cannot read as a session
        # its bytes are the problem (empty, compressed, binary): remembered like any invalid file
        return PlanRecord(path, work.root, PLAN_ERROR, unreadable_reason(path, exc),
                          invalid=not isinstance(exc, OSError), fingerprint=_fingerprint_or_none(path, fingerprint))
    except Exception as exc:  # one file's bug must not stop the archive
        log.debug("planning %s failed", path, exc_info=True)  # the row says it in one line; -vv shows where
        return PlanRecord(path, work.root, PLAN_ERROR, internal_error_reason(exc),
                          fingerprint=_fingerprint_or_none(path, fingerprint))
    prompt_tokens = [c.prompt_tokens for c in plan.calls] if isinstance(plan, CompactionPlan) else None
    compaction = None
    wanted = row["status"] == PLAN_COMPACT or (task.branch_summaries and row.get("branch_calls"))
    if task.summarizer is not None and wanted and str(fingerprint) not in work.finished:
        try:
            compaction = _compact_here(work, task, fingerprint, session, plan, row)
        except Exception as exc:  # as for planning: one session's bug must not stop the archive
            log.debug("compacting %s failed", path, exc_info=True)  # the row says it in one line; -vv shows where
            compaction = Outcome(FAILED, internal_error_reason(exc))
    return PlanRecord(path, work.root, row["status"], row["reason"], row, fingerprint,
                      prompt_tokens=prompt_tokens, compaction=compaction)


def _reads_with_digest(path: str) -> bool:
    """Whether the reader of `path`'s format records the digest of what it read (`Agent.read_appended`;
    not zstd files)."""
    from batchcompact.agents import find
    from batchcompact.formats.compressed import is_zstd
    from batchcompact.formats.detect import detect_session_agent

    try:
        agent = None if is_zstd(path) else find(detect_session_agent(path))
        return agent is not None and agent.read_appended is not None
    except (OSError, BatchCompactError):  # the usual path reports it
        return False


def _young_reason(age: float) -> str:
    """Why a file under --min-age is left alone; a time ahead of this machine's clock (a file copied from a
    machine whose clock runs ahead) is said as such: it stays under --min-age until the clock gets there."""
    if age < -1:
        return (f"modified {-age:.0f}s in the future (a clock ahead of this machine's?), under --min-age "
                "until then (live session?)")
    return f"modified {max(age, 0):.0f}s ago, under --min-age (live session?)"


def _stat_fingerprint(path: str) -> Fingerprint:
    """Size and mtime now, no hash yet (`_read_fingerprint` adds the read's)."""
    stat = os.stat(path)
    return Fingerprint(stat.st_size, stat.st_mtime_ns, "")


def _read_fingerprint(path: str, before: Fingerprint, session: Session) -> tuple[Fingerprint, Session]:
    """(fingerprint, session): the SHA-256 the reader computed of the bytes it parsed, when it read exactly
    the file stat'ed before (as many bytes, and the same size and mtime after the read). Else (a format
    read without a digest, a file that changed meanwhile) as before: `fingerprint_file`, then a new read,
    so the session never holds less than the fingerprinted bytes."""
    source = session.source
    if source is not None and source.size == before.size:
        after = os.stat(path)
        if (after.st_size, after.st_mtime_ns) == (before.size, before.mtime_ns):
            return Fingerprint(before.size, before.mtime_ns, source.sha256), session
    fingerprint = fingerprint_file(path)
    return fingerprint, read_session(path, digest=True)


def _fingerprint_or_none(path: str, fingerprint: Fingerprint) -> Fingerprint | None:
    """A full fingerprint for the record of a file that failed (the state remembers invalid files by it)."""
    if fingerprint.sha256:
        return fingerprint
    try:
        return fingerprint_file(path)
    except OSError:
        return None


def branch_plans(session: Session, settings: CompactionSettings, options: PlanOptions,
                 context_window: int | None) -> list[BranchPlan]:
    """Branch-summary plans for the abandoned branches of a session whose agent has them (pi; already
    summarized ones skip)."""
    if not get(session.agent).branch_summaries or not session.compactable:
        return []
    from batchcompact.core.branches import BranchPlan
    from batchcompact.pipeline.planning import plan_branches

    results = plan_branches(session, settings, options, context_window)
    return [b for b in results if isinstance(b, BranchPlan)]


def take_lock(path: str | Path) -> tuple[SessionLock | DatabaseSessionLock | None, Outcome | None]:
    """The session's writer lock: (lock, None), or (None, the session's outcome) when another run holds it
    or replaced the file since it was listed, or it cannot be opened."""
    try:
        lock = lock_session(path)
    except SessionLocked:
        return None, Outcome(SKIPPED, LOCKED)
    except OSError as exc:
        return None, Outcome(FAILED, f"cannot read: {_oserror(exc)}")
    if not lock.still_current():  # another run replaced it between our open and our lock
        lock.release()
        return None, Outcome(CHANGED, "the file changed after it was planned (another run wrote it)")
    return lock, None


def unchanged(path: str | Path, fingerprint: Fingerprint) -> Fingerprint | Outcome:
    """The current fingerprint when the file still holds the bytes that were planned; else the session's
    outcome (changed, gone, unreadable)."""
    try:
        current = fingerprint_file(path)
    except FileNotFoundError:  # gone since it was planned, or not visible on this node
        return Outcome(FAILED, missing_file_reason(path))
    except OSError as exc:
        return Outcome(FAILED, f"cannot read: {_oserror(exc)}")
    if (current.size, current.sha256) != (fingerprint.size, fingerprint.sha256):
        return Outcome(CHANGED, "the file changed after it was planned")
    return current


def lock_same_size(path: str | Path, fingerprint: Fingerprint
                   ) -> tuple[SessionLock | DatabaseSessionLock | None, Fingerprint | Outcome | None]:
    """The writer lock of a session this task has just read and hashed (`_compact_here`), then the file's
    size against the planned one, without hashing its bytes a second time before the writer does. The writer copies exactly the planned bytes and checks their hash as it copies, checks the
    copy in the temp file, and hashes the whole file again before the rename (pipeline/writer.py), so a
    change after the read is still reported as `changed_during_run`, never written; a summary bought for
    a file that changed meanwhile is lost, so phase 2 (paid summaries) hashes the file again after the
    lock (`prepare_file`: `unchanged`) before anything is bought.

    (lock, fingerprint: the size and mtime now with the hash of the planned bytes) or (None, the session's
    outcome)."""
    lock, refused = take_lock(path)
    if lock is None:
        return None, refused
    if store_agent(path) is not None:  # a session in a database: its store checks the rows in its transaction
        return lock, fingerprint
    try:
        now = os.stat(path)
    except FileNotFoundError:
        lock.release()
        return None, Outcome(FAILED, missing_file_reason(path))
    except OSError as exc:
        lock.release()
        return None, Outcome(FAILED, f"cannot read: {_oserror(exc)}")
    if now.st_size != fingerprint.size:
        lock.release()
        return None, Outcome(CHANGED, "the file changed after it was planned")
    return lock, Fingerprint(now.st_size, now.st_mtime_ns, fingerprint.sha256)


def _compact_here(work: FileWork, task: FileTask, fingerprint: Fingerprint, session: Session,
                  plan: CompactionPlan | Skip | None,
                  row: JsonObject) -> Outcome:
    """Lock, summarize, apply, write and verify a session planned in this process: its outcome."""
    assert work.target is not None
    summarizer = task.summarizer
    assert summarizer is not None  # asked only of a task that compacts where it plans
    lock, current = lock_same_size(work.path, fingerprint)
    if lock is None:
        assert isinstance(current, Outcome)  # no lock: the session's outcome says why
        return current
    assert isinstance(current, Fingerprint)  # locked: the fingerprint now
    try:
        branches = (branch_plans(session, task.settings, task.plan_options, row.get("context_window"))
                    if task.branch_summaries and not is_handoff(plan) else [])
        if not isinstance(plan, CompactionPlan):
            if not branches:
                return Outcome(SKIPPED, row.get("reason"))
            plan = None
        done = handed_off_already(session, plan, Path(work.target))
        if done is not None:
            return Outcome(SKIPPED, done)
        # the written row is the run loop's; this one only collects what the writer adds to it
        written: JsonObject = {}
        pending = PreparedSession(ScanItem(Path(work.path), Path(work.root)), current,
                                  session, plan, written, branches)
        try:
            results = [summarizer.summarize_now(call) for call in pending.calls]
        except Exception as exc:  # the built-in summarizer does not fail on what the reader accepted
            log.debug("summarizing %s failed", work.path, exc_info=True)  # the row says it in one line; -vv shows where
            return Outcome(FAILED, internal_error_reason(exc))
        status, reason, output = write_outcome(task.writer(), pending, results, Path(work.target))
        fields = usage_fields(results, len(results), len(branches), default_model=summarizer.name,
                              reusable=False)
        return Outcome(status, reason, output, current, {**fields, **written})
    finally:
        lock.release()


@dataclass(frozen=True)
class SessionWork:
    """A session the run loop has locked for phase 2: the bytes it planned, and what the worker needs."""

    path: str
    root: str
    fingerprint: Fingerprint  # of the bytes phase 1 planned
    prompt_tokens: list[int] | None = None  # phase 1's exact counts of the same prompts (not counted again)
    target: str | None = None
    plan: CompactionPlan | None = None  # finish_file: the plan prepare_file made
    branches: tuple[BranchPlan, ...] = ()
    results: tuple[SummaryResult | None, ...] = ()  # finish_file: the summaries, as paid for (their usage)


def prepare_file(work: SessionWork, task: FileTask) -> Prepared | Outcome:
    """Re-read and re-plan a session the run loop has locked: its plan and branch plans (the calls to buy),
    or the outcome that finishes it here (it changed, it cannot be read, nothing is left to summarize)."""
    current = unchanged(work.path, work.fingerprint)
    if isinstance(current, Outcome):
        return current
    try:
        session = read_session(work.path)
        # Same bytes as in phase 1 (checked above): reuse its exact prompt token counts.
        plan, row = plan_session(session, task.settings, task.plan_options, prompt_tokens=work.prompt_tokens)
        branches = (branch_plans(session, task.settings, task.plan_options, row.get("context_window"))
                    if task.branch_summaries and not is_handoff(plan) else [])
    except UsageError:  # the command's settings (a broken price map), not this file: stops the command
        raise
    except (OSError, BatchCompactError, UnicodeError) as exc:
        return Outcome(FAILED, unreadable_reason(work.path, exc))
    except Exception as exc:  # as in phase 1: one file's bug must not stop the archive
        log.debug("planning %s failed", work.path, exc_info=True)  # the row says it in one line; -vv shows where
        return Outcome(FAILED, internal_error_reason(exc))
    if not isinstance(plan, CompactionPlan):
        if not branches:
            return Outcome(SKIPPED, row.get("reason"))
        plan = None
    done = handed_off_already(session, plan, Path(work.target)) if work.target else None
    if done is not None:
        return Outcome(SKIPPED, done)
    return Prepared(current, plan, branches)


def finish_file(work: SessionWork, task: FileTask) -> Outcome:
    """Apply a locked session's bought summaries, write and verify it: its outcome (never an exception).
    A compacted session's fingerprint is that of the bytes phase 1 planned (what the state records)."""
    assert work.target is not None
    try:
        current = unchanged(work.path, work.fingerprint)
        if isinstance(current, Outcome):
            return current
        session = read_session(work.path, digest=True)
        written: JsonObject = {}
        pending = PreparedSession(ScanItem(Path(work.path), Path(work.root)), current, session, work.plan, written,
                                  list(work.branches))
        status, reason, output = write_outcome(task.writer(), pending, list(work.results), Path(work.target))
    except UsageError:  # the command's settings (a broken price map), not this file: stops the command
        raise
    except (OSError, BatchCompactError, UnicodeError) as exc:
        return Outcome(FAILED, unreadable_reason(work.path, exc))
    except Exception as exc:
        log.debug("writing %s failed", work.path, exc_info=True)  # the row says it in one line; -vv shows where
        return Outcome(FAILED, internal_error_reason(exc))
    return Outcome(status, reason, output, work.fingerprint, written)
