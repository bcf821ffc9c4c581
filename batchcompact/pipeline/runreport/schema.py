"""The run report's schema: `compactions-<run_id>.parquet`, one row per session a run was given.

One explicit, versioned Arrow schema; columns are added, never repurposed. A row is a mapping of these
columns (`ReportRow`): what pyarrow writes and `run --format json` prints, so its names are written once,
here. `not_a_run_report` is the same schema's rule for reading: what makes a Parquet file a run report.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from batchcompact.core.jsontypes import JsonObject

if TYPE_CHECKING:
    import pyarrow as pa

# one session's row: the columns below by name (a mapping, since that is what pyarrow writes and JSON prints)
ReportRow = JsonObject

COMPACTIONS_SCHEMA_VERSION = "3"

COLUMNS: tuple[tuple[str, str], ...] = (
    ("run_id", "string"),
    ("started_at", "timestamp"),
    ("ended_at", "timestamp"),
    ("input_path", "string"),
    ("output_path", "string"),
    ("session_id", "string"),
    ("format", "string"),
    ("status", "string"),
    ("reason", "string"),
    ("entries", "int64"),
    ("tokens_before", "int64"),
    ("tokens_after_est", "int64"),
    ("first_kept_entry_id", "string"),
    ("messages_summarized", "int64"),
    ("split_turn", "bool"),
    ("branch_summaries", "int64"),
    ("calls", "int64"),
    ("attempts", "int64"),
    ("reused_summaries", "int64"),
    ("prompt_tokens", "int64"),
    ("completion_tokens", "int64"),
    ("cache_read_tokens", "int64"),
    ("cache_write_tokens", "int64"),
    ("cost_usd", "float64"),
    ("est_cost_usd", "float64"),
    ("latency_s", "float64"),
    ("model", "string"),
    ("session_model", "string"),
    ("redactions", "int64"),
    ("overflow_recovery", "bool"),
    # Added in schema version 1 before release: the branch-summary share of the totals above.
    ("branch_calls", "int64"),
    ("branch_prompt_tokens", "int64"),
    ("branch_completion_tokens", "int64"),
    ("branch_cost_usd", "float64"),
    # The entries written with a `usage` (pi): reports count each once, here or in the session file.
    ("written_entries", "entries"),
    # Added in schema version 2: the summaries were bought through a provider batch API (batch prices).
    ("batch", "bool"),
    # Added in schema version 3: secrets redacted per kind (their sum is `redactions`), and whether the
    # summary model had no price (then `cost_usd` is null: unknown, not free).
    ("redaction_kinds", "kinds"),
    ("unpriced", "bool"),
)


def compactions_schema() -> pa.Schema:
    import pyarrow as pa

    types = {
        "string": pa.string(),
        "int64": pa.int64(),
        "float64": pa.float64(),
        "bool": pa.bool_(),
        "timestamp": pa.timestamp("us", tz="UTC"),
        "kinds": pa.list_(pa.struct([("kind", pa.string()), ("count", pa.int64())])),
        "entries": pa.list_(
            pa.struct(
                [
                    ("entry_id", pa.string()),
                    ("kind", pa.string()),
                    ("input", pa.int64()),
                    ("output", pa.int64()),
                    ("cache_read", pa.int64()),
                    ("cache_write", pa.int64()),
                    ("cost_usd", pa.float64()),
                ]
            )
        ),
    }
    return pa.schema(
        [(name, types[kind]) for name, kind in COLUMNS],
        metadata={"batchcompact_table": "compactions", "schema_version": COMPACTIONS_SCHEMA_VERSION},
    )


def empty_row() -> ReportRow:
    """A row with every column: counts 0, flags false, the rest null."""
    row: ReportRow = dict.fromkeys(name for name, _ in COLUMNS)
    for name, kind in COLUMNS:
        if kind == "int64" and name not in ("entries", "tokens_before", "tokens_after_est"):
            row[name] = 0
    row["split_turn"] = False
    row["overflow_recovery"] = False
    row["batch"] = False
    row["unpriced"] = False
    return row


# What makes a Parquet file a run report: a file named compactions-*.parquet may be anything (a `plan -o`
# table renamed, whose estimates are no spend), so its schema decides.
REQUIRED = ("run_id", "input_path", "calls", "prompt_tokens", "completion_tokens", "cost_usd", "model")


def not_a_run_report(schema: pa.Schema) -> str | None:
    """Why an Arrow schema is not a `run` report's (another batchcompact table, a column missing), or None.
    A table that names itself (`batchcompact_table`) must be `compactions`; one that does not (written by
    another tool, or by a test) needs the columns a run report has."""
    table = (schema.metadata or {}).get(b"batchcompact_table")
    if table is not None and table != b"compactions":
        return (f"not a run report: batchcompact's {table.decode('utf-8', 'replace')!r} table, not `run`'s "
                "compactions (its numbers are not spend)")
    missing = [name for name in REQUIRED if name not in schema.names]
    if missing:
        return f"not a run report: no column {', '.join(missing)}"
    return None
