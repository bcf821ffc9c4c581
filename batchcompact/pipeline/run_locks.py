"""The writer locks of the sessions phase 2 summarizes (`pipeline/session_lock.py` `lock_session`).

A session is locked just before a worker re-reads it (`prepare_file`) and stays locked until it is written
or given up, so another run, whatever its state file, skips it meanwhile. `SessionLocks` holds the
sessions locked but not yet prepared (in order) and those prepared and waiting for their summaries.
"""

from __future__ import annotations

from collections import deque
from collections.abc import Callable, Iterator

from batchcompact.pipeline.outcome import PreparedSession
from batchcompact.pipeline.session_task import SessionWork, take_lock
from batchcompact.pipeline.task_records import Outcome, Prepared


class SessionLocks:
    def __init__(self) -> None:
        self.locked: deque = deque()  # (item, row, lock) of the sessions `prepare_file` is working on, in order
        self.pending: dict[str, PreparedSession] = {}  # prepared, waiting for their summaries, by input path

    def work(self, to_compact: list, prompt_tokens: dict[str, list[int] | None],
             finish: Callable[..., None]) -> Iterator[SessionWork]:
        """Each session to summarize as a worker's `SessionWork`, locked as it is asked for. Sessions that
        cannot be locked are finished through `finish(row, status, reason)`."""
        for item, fingerprint, row in to_compact:
            lock, refused = take_lock(item.path)
            if lock is None:
                assert refused is not None  # no lock: the session's outcome says why
                finish(row, refused.status, refused.reason)
                continue
            self.locked.append((item, row, lock))
            # same bytes as in phase 1 (the worker checks): its exact prompt token counts are reused
            yield SessionWork(str(item.path), str(item.root), fingerprint, prompt_tokens.pop(str(item.path), None))

    def prepared(self, record: Prepared | Outcome, finish: Callable[..., None]) -> PreparedSession | None:
        """The next locked session as `prepare_file` returned it, held until its summaries come back; None
        when the worker finished it (unlocked here, its row finished)."""
        item, row, lock = self.locked.popleft()
        if isinstance(record, Outcome):
            lock.release()
            finish(row, record.status, record.reason)
            return None
        pending = PreparedSession(item, record.fingerprint, None, record.plan, row, record.branches, lock)
        self.pending[str(item.path)] = pending
        return pending

    def take(self, key: str) -> PreparedSession | None:
        """The prepared session of a job whose summaries came back (still locked), or None."""
        return self.pending.pop(key, None)

    @staticmethod
    def release(pending: PreparedSession) -> None:
        if pending.lock is not None:
            pending.lock.release()

    def release_unprepared(self) -> None:
        """A stopped run: the sessions locked ahead of the summaries are given up."""
        while self.locked:
            self.locked.popleft()[2].release()

    def release_pending(self) -> list[PreparedSession]:
        """Every prepared session unlocked (the run ended before their summaries came back); returned so
        their rows can be finished."""
        given_up = list(self.pending.values())
        for pending in given_up:
            self.release(pending)
        self.pending.clear()
        return given_up
