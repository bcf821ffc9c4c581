"""Buzz usage: the NIP-AM agent turn metrics (kind 44200) in the desktop app's archive database.

Where the file is: `~/.buzz/archive/archive.db` (the dev build's nest is `~/.buzz-dev`), a SQLite database
the Buzz desktop app fills from its relays. Table `archived_events(identity_pubkey, relay_url, id, kind,
pubkey, created_at, raw_json, archived_at)`, one row per (identity, relay, event): the same event fetched
from two relays is two rows. For kind 44200 rows `raw_json` is the decrypted payload (NIP-AM, block/buzz
`docs/nips/NIP-AM.md`): `harness`, `model`, `sessionId`, `turnSeq`, `timestamp` (end of the turn),
`turn` and `cumulative` (`inputTokens`, `outputTokens`, `totalTokens`, `costUsd`, optional
`cacheReadTokens` / `cacheWriteTokens`), `deltaReliable`. A null is unknown, never zero.

Counting, as NIP-AM asks of exact accounting and as Buzz's own usage view counts (desktop
`archive/agent_usage.rs`): one row per event, keyed by the event id (`buzz:<id>`: a copy from another relay
counts once). Each counter of a turn is the difference between its `cumulative` value and the one of the
same agent and session at `turnSeq − 1` (when both are known, and the session has exactly one event at
each of the two sequence numbers); a counter that went down is unknown. Without such a baseline, the
`turn` value, when `deltaReliable`; else unknown. An event whose input and output are both unknown, or
with `cumulative` but no `sessionId` and `turnSeq` (NIP-AM requires both: Buzz holds it invalid), is named
in a warning and not counted. `inputTokens` INCLUDES the cache reads and writes (NIP-AM folds them
in; `cacheReadTokens` / `cacheWriteTokens` are subsets): input = input − cache read − cache write (a count
below its cache counters is taken as uncached). Reasoning is inside the output count. `totalTokens` is not
read (the report's total is the sum of its parts). `costUsd` (the harness's estimate) is the recorded
cost. There is no project: the row's session is `sessionId`, its model `model`.
"""

from __future__ import annotations

import json
import math
import sqlite3
from contextlib import closing
from pathlib import Path

from batchcompact.adapters.common.documents import columns, connect
from batchcompact.adapters.common.lines import ExtractStats, parse_timestamp
from batchcompact.adapters.common.usage_rows import UsageRows

AGENT = "buzz"
KIND = 44200
COUNTERS = ("inputTokens", "outputTokens", "cacheReadTokens", "cacheWriteTokens")
FIELDS = (*COUNTERS, "costUsd")


def _warn(stats: ExtractStats, rowid: int, message: str) -> None:
    stats.warn(None, f"archived_events rowid {rowid}: {message}")


def _value(block: object, name: str, stats: ExtractStats, rowid: int | None) -> float | int | None:
    """A counter (a non-negative integer) or `costUsd` (a finite non-negative number) of `turn` or
    `cumulative`; None when unknown (absent, null, or not a number: the last named in a warning, unless
    `rowid` is None: a baseline, already named when its own event was read)."""
    if not isinstance(block, dict):
        return None
    value = block.get(name)
    if value is None:
        return None
    if name == "costUsd":
        ok = isinstance(value, (int, float)) and not isinstance(value, bool) and math.isfinite(value) and value >= 0
    else:
        ok = type(value) is int and value >= 0
    if not ok:
        if rowid is not None:
            kind = "cost" if name == "costUsd" else "token count"
            _warn(stats, rowid, f"`{name}` is {json.dumps(value)[:40]}, not a {kind}; taken as unknown")
        return None
    return value


def _events(path: Path, stats: ExtractStats) -> list[tuple[int, str, str, dict]]:
    """(rowid, event id, agent pubkey, payload) of every kind-44200 event, each event once, in rowid order."""
    out: list[tuple[int, str, str, dict]] = []
    seen: set[str] = set()
    with closing(connect(path)) as conn:
        if not columns(conn, "archived_events"):
            stats.refuse("no `archived_events` table: not a Buzz archive")
            return out
        conn.text_factory = lambda raw: raw.decode("utf-8", "replace")
        query = "SELECT rowid, id, pubkey, raw_json FROM archived_events WHERE kind = ? ORDER BY rowid"
        for rowid, event_id, pubkey, raw in conn.execute(query, (KIND,)):
            stats.lines += 1
            if not isinstance(event_id, str) or event_id in seen:
                continue
            seen.add(event_id)
            try:
                payload = json.loads(raw) if isinstance(raw, (str, bytes)) else None
            except (ValueError, RecursionError):
                payload = None
            if not isinstance(payload, dict):
                stats.malformed += 1
                _warn(stats, rowid, "`raw_json` is not a JSON object; not counted")
                continue
            stats.parsed += 1
            out.append((rowid, event_id, pubkey if isinstance(pubkey, str) else "", payload))
    return out


def _is_metric(payload: dict) -> bool:
    """NIP-AM's two required fields: `harness` and an RFC 3339 `timestamp`."""
    return isinstance(payload.get("harness"), str) and parse_timestamp(payload.get("timestamp")) is not None


def _sequence(payload: dict) -> int | None:
    seq = payload.get("turnSeq")
    return seq if type(seq) is int and seq >= 0 else None


def extract_buzz(path: str | Path, rows: UsageRows, stats: ExtractStats) -> None:
    path = Path(path)
    try:
        events = _events(path, stats)
    except sqlite3.DatabaseError as exc:
        stats.refuse(f"not a readable Buzz archive ({exc})")
        return
    # (agent, session, turnSeq) -> the valid events there: a baseline must be the only event at its sequence
    at: dict[tuple[str, str, int], list[dict]] = {}
    for _, _, pubkey, payload in events:
        session, seq = payload.get("sessionId"), _sequence(payload)
        if isinstance(session, str) and seq is not None and _is_metric(payload):
            at.setdefault((pubkey, session, seq), []).append(payload)
    for rowid, event_id, pubkey, payload in events:
        if not _is_metric(payload):
            _warn(stats, rowid, "not a NIP-AM turn metric (no `harness` or `timestamp`); not counted")
            continue
        when = parse_timestamp(payload.get("timestamp"))
        session, seq = payload.get("sessionId"), _sequence(payload)
        if payload.get("cumulative") is not None and (not isinstance(session, str) or seq is None):
            _warn(stats, rowid, "`cumulative` without `sessionId` and `turnSeq` (NIP-AM requires both); not counted")
            continue
        baseline = None
        if isinstance(session, str) and seq is not None and seq > 0 and len(at[(pubkey, session, seq)]) == 1:
            before = at.get((pubkey, session, seq - 1), [])
            baseline = before[0] if len(before) == 1 else None
        reliable = payload.get("deltaReliable") is True
        turn, cumulative = payload.get("turn"), payload.get("cumulative")
        values: dict[str, float | int | None] = {}
        for name in FIELDS:
            now = _value(cumulative, name, stats, rowid)
            then = _value(baseline.get("cumulative"), name, stats, None) if baseline is not None else None
            if now is not None and then is not None:
                values[name] = now - then if now >= then else None
            else:
                values[name] = _value(turn, name, stats, rowid) if reliable else None
        total_input, output = values["inputTokens"], values["outputTokens"]
        if total_input is None and output is None:
            _warn(stats, rowid, "turn usage unknown (no cumulative baseline and `deltaReliable` is not true, "
                                "or a counter went down); not counted")
            continue
        total_input, output = int(total_input or 0), int(output or 0)
        cache_read, cache_write = int(values["cacheReadTokens"] or 0), int(values["cacheWriteTokens"] or 0)
        if cache_read + cache_write > total_input:
            cache_read = cache_write = 0
        cost = values["costUsd"]
        model = payload.get("model")
        rows.add(
            source=AGENT,
            file=str(path),
            line=rowid,
            session_id=session if isinstance(session, str) and session else None,
            project=None,
            timestamp=when,
            provider=None,
            model=model if isinstance(model, str) and model else None,
            kind="main",
            dedupe_key=f"{AGENT}:{event_id}",
            input_tokens=total_input - cache_read - cache_write,
            output_tokens=output,
            cache_read_tokens=cache_read,
            cache_write_tokens=cache_write,
            recorded_cost_usd=float(cost) if cost is not None else None,
        )
