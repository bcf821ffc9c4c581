"""The operator's batch commands, between runs (`batchcompact batches`, `run --batch --wait`): wait for the
open batches, refresh their status, list them, cancel one. They open the state's batch tables without the
run lock (`batch_store.open_store`); collecting results is left to the next run (docs/batch.md).
"""

from __future__ import annotations

import time
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING

from batchcompact.core.jsontypes import JsonObject
from batchcompact.pipeline.batch_store import BatchRow, client_for_row, open_store
from batchcompact.pipeline.statuses import BATCH_PENDING

if TYPE_CHECKING:
    from batchcompact.pipeline.run import RunSummary
    from batchcompact.summarize.batch_api import BatchClient

POLL_START_S = 10.0
POLL_MAX_S = 300.0


def wait_for_batches(state_path: Path, *, api_key: str | None = None, progress: bool = False,
                     sleep: Callable[[float], None] = time.sleep, poll_start: float | None = None,
                     poll_max: float | None = None) -> int:
    """Poll the open batches with backoff until every one has ended; returns how many were open."""
    db, store = open_store(state_path)
    delay = POLL_START_S if poll_start is None else poll_start
    ceiling = POLL_MAX_S if poll_max is None else poll_max
    bar = None
    clients: dict[str, BatchClient] = {}
    try:
        rows = [r for r in store.open_batches() if r.batch_id]
        if not rows:
            return 0
        if progress:
            from tqdm import tqdm

            total = sum(r.requests for r in rows)
            bar = tqdm(total=total, desc="batch requests", unit="request", leave=False)
        while True:
            pending = done = 0
            for row in rows:
                client = clients.get(row.local_id) or client_for_row(row, api_key)
                clients[row.local_id] = client
                assert row.batch_id is not None  # the open batches with an id (above)
                info = client.retrieve(row.batch_id)
                store.update_status(row.local_id, info)
                done += info.succeeded + info.errored + info.expired + info.cancelled if not info.ended else row.requests
                pending += 0 if info.ended else 1
            if bar is not None:
                bar.n = min(done, total)
                bar.set_postfix({"open batches": pending}, refresh=True)
            if not pending:
                return len(rows)
            sleep(delay)
            delay = min(delay * 1.5, ceiling)
    finally:
        if bar is not None:
            bar.close()
        for client in clients.values():
            client.close()
        db.close()


def refresh_batches(state_path: Path, api_key: str | None = None) -> int:
    """Ask the providers for the status of every open batch (collecting is left to the next run)."""
    db, store = open_store(state_path)
    try:
        rows = [r for r in store.open_batches() if r.batch_id]
        for row in rows:
            client = client_for_row(row, api_key)
            assert row.batch_id is not None  # the open batches with an id (above)
            try:
                store.update_status(row.local_id, client.retrieve(row.batch_id))
            finally:
                client.close()
        return len(rows)
    finally:
        db.close()


def list_batches(state_path: Path, limit: int = 50) -> list[JsonObject]:
    """Open batches and the most recent others, newest first, as plain dicts."""
    db, store = open_store(state_path)
    try:
        rows = store.batches()
    finally:
        db.close()
    shown = [r for r in rows if r.open] + [r for r in rows if not r.open][:limit]
    shown.sort(key=lambda r: r.created_at, reverse=True)
    return [_as_dict(r) for r in shown]


def _as_dict(row: BatchRow) -> JsonObject:
    from datetime import UTC, datetime

    return {
        "id": row.batch_id or f"(intent {row.local_id})",
        "local_id": row.local_id,
        "provider": row.provider,
        "model": row.model,
        "created": datetime.fromtimestamp(row.created_at, UTC).strftime("%Y-%m-%d %H:%M:%SZ"),
        "state": row.state,
        "status": row.status,
        "requests": row.requests,
        "done": row.succeeded,
        "failed": row.errored,
        "expired": row.expired + row.cancelled,
        "est_cost_usd": row.est_cost_usd,
        "cost_usd": row.cost_usd,
    }


def cancel_batch(state_path: Path, ident: str, api_key: str | None = None) -> JsonObject:
    """Ask the provider to cancel a batch (its finished requests are still collected by the next run)."""
    from batchcompact.errors import UsageError

    db, store = open_store(state_path)
    try:
        row = store.batch(ident)
        if row is None or not row.batch_id:
            raise UsageError(f"no submitted batch {ident!r} in {state_path} (see `batchcompact batches`)")
        if not row.open:
            raise UsageError(f"batch {row.batch_id} has already ended ({row.status})")
        client = client_for_row(row, api_key)
        try:
            info = client.cancel(row.batch_id)
        finally:
            client.close()
        store.update_status(row.local_id, info)
        cancelled = store.batch(row.local_id)
        assert cancelled is not None  # the row just updated
        return _as_dict(cancelled)
    finally:
        db.close()


def run_until_collected(run: Callable[[], RunSummary], state_path: Path, *, rounds: int, api_key: str | None = None,
                        progress: bool = False, on_round: Callable[[RunSummary], None] | None = None) -> RunSummary:
    """`run --batch --wait`: `run()` (a `RunSummary`), then, while sessions wait for batches, wait for every
    open batch and run again (collect, write, resubmit what failed), at most `rounds` times. `on_round`
    sees each summary that is followed by a wait. Ctrl-C while waiting ends the loop: the batches stay open
    for a later run. Returns the last run's summary."""
    summary = run()
    for _ in range(rounds):
        if summary.aborted or not summary.by_status.get(BATCH_PENDING):
            break
        if on_round is not None:
            on_round(summary)
        try:
            wait_for_batches(state_path, api_key=api_key, progress=progress)
        except KeyboardInterrupt:  # stopped while waiting: the batches stay open for a later run
            break
        summary = run()
    return summary
