"""A small report of the `run` command (compactions-<run_id>.parquet, its columns) with two rows, a compacted
session and a skipped one, for the report tests that read run reports."""

from __future__ import annotations

from datetime import UTC, datetime

import pyarrow as pa
import pyarrow.parquet as pq


def write_run_report(path, rows: list[dict]) -> None:
    """A small compactions-<run_id>.parquet shaped like the `run` command's."""
    schema = pa.schema(
        [
            ("run_id", pa.string()),
            ("started_at", pa.timestamp("us", "UTC")),
            ("ended_at", pa.timestamp("us", "UTC")),
            ("input_path", pa.string()),
            ("session_id", pa.string()),
            ("status", pa.string()),
            ("calls", pa.int64()),
            ("prompt_tokens", pa.int64()),
            ("completion_tokens", pa.int64()),
            ("cache_read_tokens", pa.int64()),
            ("cache_write_tokens", pa.int64()),
            ("cost_usd", pa.float64()),
            ("model", pa.string()),
        ]
    )
    pq.write_table(pa.Table.from_pylist(rows, schema=schema), path)


def run_rows() -> list[dict]:
    t = datetime(2026, 3, 1, 12, 0, tzinfo=UTC)
    base = {"run_id": "r1", "started_at": t, "ended_at": t, "status": "compacted", "cache_write_tokens": 0}
    return [
        {
            **base,
            "input_path": "/a/one.jsonl",
            "session_id": "one",
            "calls": 2,
            "prompt_tokens": 10_000,
            "completion_tokens": 1_000,
            "cache_read_tokens": 2_000,
            "cost_usd": 0.02,
            "model": "gpt-4o-mini",
        },
        {
            **base,
            "input_path": "/a/two.jsonl",
            "session_id": "two",
            "calls": 0,
            "prompt_tokens": 0,
            "completion_tokens": 0,
            "cache_read_tokens": 0,
            "cost_usd": None,
            "model": None,
            "status": "skipped",
        },
    ]
