"""Buzz desktop's archive database as its `archived_events` table holds NIP-AM turn metrics: the events of
the Buzz tests and the fuzzer's seed (bench/fuzz.py), and the writer of the database."""

from __future__ import annotations

import json
import sqlite3
from pathlib import Path

AGENT_A, AGENT_B, OWNER = "a" * 64, "b" * 64, "c" * 64


def metric(session: str, seq: int, when: str, *, harness: str = "buzz-agent", model: str = "claude-sonnet-4-5",
           turn: dict | None = None, cumulative: dict | None = None, reliable: bool = True) -> dict:
    return {"harness": harness, "model": model, "channelId": None, "sessionId": session, "turnId": f"t{seq}",
            "turnSeq": seq, "timestamp": when, "turn": turn, "cumulative": cumulative, "deltaReliable": reliable,
            "stopReason": "end_turn"}


# (event id, agent, relays it was archived from, kind, raw_json)
EVENTS = [
    # session s1 (agent A): seq 1 has no baseline, so its `turn` counts (input 1,000 INCLUDES 600 cache
    # reads and 200 cache writes)
    ("e1", AGENT_A, ("wss://one",), 44200, metric(
        "s1", 1, "2026-07-01T10:00:00Z",
        turn={"inputTokens": 1000, "outputTokens": 100, "totalTokens": 1100, "costUsd": 0.01,
              "cacheReadTokens": 600, "cacheWriteTokens": 200},
        cumulative={"inputTokens": 1000, "outputTokens": 100, "totalTokens": 1100, "costUsd": 0.01,
                    "cacheReadTokens": 600, "cacheWriteTokens": 200})),
    # seq 2: the harness restarted (no `turn`, delta unreliable): the cumulative series gives its usage
    ("e2", AGENT_A, ("wss://one",), 44200, metric(
        "s1", 2, "2026-07-01T10:05:00Z", turn=None, reliable=False,
        cumulative={"inputTokens": 3000, "outputTokens": 350, "totalTokens": 3350, "costUsd": 0.03,
                    "cacheReadTokens": 2200, "cacheWriteTokens": 300})),
    # seq 3, archived from two relays: one event
    ("e3", AGENT_A, ("wss://one", "wss://two"), 44200, metric(
        "s1", 3, "2026-07-02T09:00:00Z",
        turn={"inputTokens": 500, "outputTokens": 50, "totalTokens": 550, "costUsd": 0.005},
        cumulative={"inputTokens": 3500, "outputTokens": 400, "totalTokens": 3900, "costUsd": 0.035,
                    "cacheReadTokens": 2200, "cacheWriteTokens": 300})),
    # session s2 (agent B, another harness): turn deltas only
    ("e4", AGENT_B, ("wss://one",), 44200, metric(
        "s2", 7, "2026-07-02T11:00:00Z", harness="goose", model="gpt-5",
        turn={"inputTokens": 400, "outputTokens": 40, "totalTokens": 440, "costUsd": 0.002})),
    # a chat message in the same archive: not a metric
    ("e5", AGENT_B, ("wss://one",), 9, {"content": "hello"}),
]


def write_archive(path: Path, events=EVENTS) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    with sqlite3.connect(path) as conn:
        conn.execute("CREATE TABLE IF NOT EXISTS archived_events (identity_pubkey TEXT NOT NULL, relay_url TEXT NOT "
                     "NULL, id TEXT NOT NULL, kind INTEGER NOT NULL, pubkey TEXT NOT NULL, created_at INTEGER NOT "
                     "NULL, raw_json TEXT NOT NULL, archived_at INTEGER NOT NULL, PRIMARY KEY (identity_pubkey, "
                     "relay_url, id))")
        for event_id, agent, relays, kind, payload in events:
            raw = payload if isinstance(payload, str) else json.dumps(payload)
            for relay in relays:
                conn.execute("INSERT INTO archived_events VALUES (?, ?, ?, ?, ?, ?, ?, ?)",
                             (OWNER, relay, event_id, kind, agent, 1_782_900_000, raw, 1_782_900_100))
    conn.close()
    return path
