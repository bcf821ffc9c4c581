"""The batch tables of the run state (`batches`, `batch_requests`, `batch_jobs`) and their states.

`BatchStore` adds them to the run state's database (same connection, same lock); the buyer
(`pipeline/batch.py`) records intents, submissions and settled results through it, and the operator
commands (`pipeline/batch_commands.py`) read and update it between runs. The state machine is in
docs/batch.md.
"""

from __future__ import annotations

import dataclasses
import json
import os
import sqlite3
import threading
import time
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from batchcompact.pipeline.state import RunState
    from batchcompact.summarize.batch_api import BatchClient, BatchInfo, BatchTarget, RequestResult

SCHEMA = """
CREATE TABLE IF NOT EXISTS batches (
    local_id TEXT PRIMARY KEY,
    provider TEXT NOT NULL,
    model TEXT NOT NULL,
    api_base TEXT NOT NULL,
    batch_id TEXT,
    state TEXT NOT NULL,
    status TEXT,
    requests INTEGER NOT NULL,
    succeeded INTEGER NOT NULL DEFAULT 0,
    errored INTEGER NOT NULL DEFAULT 0,
    expired INTEGER NOT NULL DEFAULT 0,
    cancelled INTEGER NOT NULL DEFAULT 0,
    est_cost_usd REAL,
    cost_usd REAL,
    run_id TEXT,
    created_at REAL NOT NULL,
    updated_at REAL NOT NULL
);
CREATE TABLE IF NOT EXISTS batch_requests (
    call_key TEXT PRIMARY KEY,
    local_id TEXT NOT NULL,
    job_key TEXT,
    state TEXT NOT NULL,
    attempts INTEGER NOT NULL,
    error TEXT,
    est_cost_usd REAL,
    updated_at REAL NOT NULL
);
CREATE INDEX IF NOT EXISTS batch_requests_by_batch ON batch_requests (local_id, state);
CREATE TABLE IF NOT EXISTS batch_jobs (
    job_key TEXT PRIMARY KEY,
    version TEXT,
    call_keys TEXT NOT NULL,
    updated_at REAL NOT NULL
);
"""

# batch states (ours): submitting -> submitted -> ended; submitting -> abandoned (never created)
SUBMITTING, SUBMITTED, ENDED, ABANDONED = "submitting", "submitted", "ended", "abandoned"
# request states: submitting -> submitted -> collected -> delivered | failed (resubmitted) | overflow
COLLECTED, DELIVERED, FAILED, OVERFLOW = "collected", "delivered", "failed", "overflow"
OPEN_STATES = (SUBMITTING, SUBMITTED)


@dataclass
class BatchRow:
    local_id: str
    provider: str
    model: str
    api_base: str
    batch_id: str | None
    state: str
    status: str | None
    requests: int
    succeeded: int
    errored: int
    expired: int
    cancelled: int
    est_cost_usd: float | None
    cost_usd: float | None
    run_id: str | None
    created_at: float
    updated_at: float

    @property
    def open(self) -> bool:
        return self.state in OPEN_STATES


class BatchStore:
    """The batch tables, added to the run state's database (same connection, same lock)."""

    def __init__(self, db: sqlite3.Connection, lock: threading.Lock) -> None:
        self.db = db
        self.lock = lock
        with self.lock:
            self.db.executescript(SCHEMA)
            self.db.commit()

    @classmethod
    def of(cls, state: RunState) -> BatchStore:
        return cls(state.db, state._db_lock)

    # -- batches ---------------------------------------------------------------------------------
    def batches(self, where: str = "", args: tuple = ()) -> list[BatchRow]:
        with self.lock:
            rows = self.db.execute(f"SELECT * FROM batches {where} ORDER BY created_at DESC", args).fetchall()
        return [BatchRow(*row) for row in rows]

    def open_batches(self) -> list[BatchRow]:
        return self.batches("WHERE state IN (?, ?)", OPEN_STATES)

    def batch(self, ident: str) -> BatchRow | None:
        found = self.batches("WHERE local_id=? OR batch_id=?", (ident, ident))
        return found[0] if found else None

    def known_batch_ids(self) -> frozenset[str]:
        with self.lock:
            return frozenset(r[0] for r in self.db.execute("SELECT batch_id FROM batches WHERE batch_id IS NOT NULL"))

    def intend(self, local_id: str, target: BatchTarget, run_id: str, requests: list[tuple[str, str, float | None]],
               est_cost: float | None) -> None:
        """Record a batch about to be created and its requests (state `submitting`), before any upload."""
        now = time.time()
        with self.lock:
            self.db.execute(
                "INSERT INTO batches (local_id, provider, model, api_base, batch_id, state, status, requests, "
                "est_cost_usd, run_id, created_at, updated_at) VALUES (?, ?, ?, ?, NULL, ?, NULL, ?, ?, ?, ?, ?)",
                (local_id, target.provider, target.model, target.api_base, SUBMITTING, len(requests), est_cost,
                 run_id, now, now))
            for key, job_key, est in requests:
                previous = self.db.execute("SELECT attempts FROM batch_requests WHERE call_key=?", (key,)).fetchone()
                attempts = (previous[0] if previous else 0) + 1
                self.db.execute("INSERT OR REPLACE INTO batch_requests VALUES (?, ?, ?, ?, ?, NULL, ?, ?)",
                                (key, local_id, job_key, SUBMITTING, attempts, est, now))
            self.db.commit()

    def mark_submitted(self, local_id: str, batch_id: str) -> None:
        with self.lock:
            self.db.execute("UPDATE batches SET batch_id=?, state=?, status=?, updated_at=? WHERE local_id=?",
                            (batch_id, SUBMITTED, "submitted", time.time(), local_id))
            self.db.execute("UPDATE batch_requests SET state=? WHERE local_id=? AND state=?",
                            (SUBMITTED, local_id, SUBMITTING))
            self.db.commit()

    def abandon(self, local_id: str) -> None:
        """The provider never created this batch: its requests go again (this did not count as an attempt)."""
        with self.lock:
            self.db.execute("UPDATE batches SET state=?, status=?, updated_at=? WHERE local_id=?",
                            (ABANDONED, "never created", time.time(), local_id))
            self.db.execute("UPDATE batch_requests SET state=?, error=?, attempts=attempts-1 WHERE local_id=? "
                            "AND state=?", (FAILED, "the batch was never created", local_id, SUBMITTING))
            self.db.commit()

    def update_status(self, local_id: str, info: BatchInfo) -> None:
        with self.lock:
            self.db.execute(
                "UPDATE batches SET status=?, succeeded=?, errored=?, expired=?, cancelled=?, updated_at=? "
                "WHERE local_id=?",
                (info.status, info.succeeded, info.errored, info.expired, info.cancelled, time.time(), local_id))
            self.db.commit()

    def settle(self, row: BatchRow, info: BatchInfo, results: Iterable[RequestResult],
               price: Callable[[RequestResult], float | None]) -> tuple[int, float | None]:
        """An ended batch's results into the cache and the request states, in one transaction."""
        from batchcompact.core.calls import SummaryResult

        now = time.time()
        collected, total, unpriced = 0, 0.0, False
        with self.lock:
            try:
                for res in results:
                    request = self.db.execute(
                        "SELECT attempts FROM batch_requests WHERE call_key=? AND local_id=? AND state=?",
                        (res.custom_id, row.local_id, SUBMITTED)).fetchone()
                    if request is None:  # not ours, or already settled
                        continue
                    if res.kind == "succeeded":
                        cost = price(res)
                        assert res.text is not None  # a succeeded result has its text (summarize/batch_api.py)
                        result = SummaryResult(
                            text=res.text, model=row.model, prompt_tokens=res.prompt_tokens,
                            completion_tokens=res.completion_tokens, cache_read_tokens=res.cache_read_tokens,
                            cache_write_tokens=res.cache_write_tokens, cost_usd=cost, latency_s=0.0,
                            attempts=request[0], batch=True)
                        self.db.execute("INSERT OR REPLACE INTO summaries VALUES (?, ?, ?)",
                                        (res.custom_id, json.dumps(dataclasses.asdict(result)), now))
                        state, error = COLLECTED, None
                        collected += 1
                        if cost is None:
                            unpriced = True
                        else:
                            total += cost
                    else:
                        state = OVERFLOW if res.kind == "too_long" else FAILED
                        error = f"{res.kind}: {res.error}" if res.error and res.error != res.kind else res.kind
                    self.db.execute("UPDATE batch_requests SET state=?, error=?, updated_at=? WHERE call_key=?",
                                    (state, error, now, res.custom_id))
                self.db.execute(
                    "UPDATE batch_requests SET state=?, error=?, updated_at=? WHERE local_id=? AND state=?",
                    (FAILED, f"no result returned (batch {info.status})", now, row.local_id, SUBMITTED))
                self.db.execute(
                    "UPDATE batches SET state=?, status=?, succeeded=?, errored=?, expired=?, cancelled=?, "
                    "cost_usd=?, updated_at=? WHERE local_id=?",
                    (ENDED, info.status, info.succeeded, info.errored, info.expired, info.cancelled,
                     None if unpriced else total, now, row.local_id))
                self.db.commit()
            except BaseException:
                self.db.rollback()
                raise
        return collected, None if unpriced else total

    # -- requests and jobs -----------------------------------------------------------------------
    def request(self, key: str) -> tuple[str, str, int, str | None] | None:
        """(local_id, state, attempts, error) of the request for this cache key, if any."""
        with self.lock:
            return self.db.execute("SELECT local_id, state, attempts, error FROM batch_requests WHERE call_key=?",
                                   (key,)).fetchone()

    def mark_delivered(self, keys: list[str]) -> None:
        with self.lock:
            self.db.executemany("UPDATE batch_requests SET state=?, updated_at=? WHERE call_key=? AND state=?",
                                [(DELIVERED, time.time(), key, COLLECTED) for key in keys])
            self.db.commit()

    def job(self, job_key: str) -> tuple[str | None, list[str]] | None:
        with self.lock:
            row = self.db.execute("SELECT version, call_keys FROM batch_jobs WHERE job_key=?", (job_key,)).fetchone()
        return (row[0], json.loads(row[1])) if row else None

    def remember_job(self, job_key: str, version: str | None, keys: list[str]) -> None:
        with self.lock:
            self.db.execute("INSERT OR REPLACE INTO batch_jobs VALUES (?, ?, ?, ?)",
                            (job_key, version, json.dumps(keys), time.time()))
            self.db.commit()

    def forget_job(self, job_key: str) -> None:
        with self.lock:
            self.db.execute("DELETE FROM batch_jobs WHERE job_key=?", (job_key,))
            self.db.commit()

def open_store(state_path: Path) -> tuple[sqlite3.Connection, BatchStore]:
    """The batch tables of a state database, without taking the run lock (listing, cancelling)."""
    if not state_path.exists():
        from batchcompact.errors import UsageError

        raise UsageError(f"no run state at {state_path} (pass --state, or the --output-dir of the runs)")
    db = sqlite3.connect(str(state_path), timeout=30, check_same_thread=False)
    return db, BatchStore(db, threading.Lock())


def env_key(provider: str) -> str | None:
    """The API key the environment holds for a provider's batch API (a batch of an earlier run's settings)."""
    variable = {"anthropic": "ANTHROPIC_API_KEY", "azure": "AZURE_API_KEY"}.get(provider, "OPENAI_API_KEY")
    return os.environ.get(variable)


def client_for_row(row: BatchRow, api_key: str | None, timeout: float = 120.0) -> BatchClient:
    """A batch API client for the provider a stored batch was submitted to."""
    from batchcompact.summarize.batch_api import BatchTarget, client_for

    bare = row.model.partition("/")[2] or row.model
    return client_for(BatchTarget(row.provider, row.model, bare, row.api_base, api_key or env_key(row.provider)),
                      timeout)
