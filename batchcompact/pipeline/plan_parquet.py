"""Plan rows as Parquet, with an explicit schema (columns are added, never repurposed)."""

from __future__ import annotations

from collections.abc import Iterable

import pyarrow as pa
import pyarrow.parquet as pq

from batchcompact.core.jsontypes import JsonObject

PLAN_SCHEMA_VERSION = "1"
PLAN_SCHEMA = pa.schema(
    [
        ("path", pa.string()),
        ("format", pa.string()),
        ("session_id", pa.string()),
        ("status", pa.string()),
        ("reason", pa.string()),
        ("model", pa.string()),
        ("context_window", pa.int64()),
        ("tokens_before", pa.int64()),
        ("tokens_after_est", pa.int64()),
        ("first_kept_entry_id", pa.string()),
        ("first_kept_line", pa.int64()),
        ("turn_start_line", pa.int64()),
        ("split_turn", pa.bool_()),
        ("messages_to_summarize", pa.int64()),
        ("turn_prefix_messages", pa.int64()),
        ("read_files", pa.list_(pa.string())),
        ("modified_files", pa.list_(pa.string())),
        ("calls", pa.int64()),
        ("prompt_tokens", pa.int64()),
        ("est_output_tokens", pa.int64()),
        ("summary_model", pa.string()),
        ("est_cost_usd", pa.float64()),
        ("est_batch_cost_usd", pa.float64()),
        ("entries", pa.int64()),
        ("problems", pa.int64()),
        ("prune_results", pa.int64()),
        ("prune_tokens", pa.int64()),
        (
            "branches",
            pa.list_(
                pa.struct(
                    [
                        ("leaf_id", pa.string()),
                        ("leaf_line", pa.int64()),
                        ("ancestor_id", pa.string()),
                        ("ancestor_line", pa.int64()),
                        ("entries", pa.int64()),
                        ("tokens", pa.int64()),
                        ("status", pa.string()),
                        ("reason", pa.string()),
                        ("prompt_tokens", pa.int64()),
                        ("est_cost_usd", pa.float64()),
                    ]
                )
            ),
        ),
        ("branch_calls", pa.int64()),
        ("branch_prompt_tokens", pa.int64()),
        ("branch_est_cost_usd", pa.float64()),
        ("window_source", pa.string()),
        ("threshold", pa.int64()),
    ],
    metadata={"batchcompact_table": "plan", "schema_version": PLAN_SCHEMA_VERSION},
)


def write_plan_parquet(rows: Iterable[JsonObject], path: str, batch_size: int = 2000) -> int:
    """Stream rows into a Parquet file in batches; returns the number of rows."""
    from batchcompact.outfile import replacing

    count = 0
    with replacing(path) as where, pq.ParquetWriter(where, PLAN_SCHEMA) as writer:
        batch: list[JsonObject] = []
        for row in rows:
            batch.append(row)
            if len(batch) >= batch_size:
                writer.write_table(pa.Table.from_pylist(batch, schema=PLAN_SCHEMA))
                count += len(batch)
                batch = []
        if batch or count == 0:
            writer.write_table(pa.Table.from_pylist(batch, schema=PLAN_SCHEMA))
            count += len(batch)
    return count
