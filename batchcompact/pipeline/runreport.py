"""The `run` report: one row per session seen, as Parquet with an explicit, versioned schema.

Each run writes its own file `compactions-<run_id>.parquet` in the report folder, so runs accumulate
and `polars.read_parquet("reports/*.parquet")` reads them together. Columns are added, never repurposed.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

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


def compactions_schema():
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


def empty_row() -> dict[str, Any]:
    row: dict[str, Any] = dict.fromkeys(name for name, _ in COLUMNS)
    for name, kind in COLUMNS:
        if kind == "int64" and name not in ("entries", "tokens_before", "tokens_after_est"):
            row[name] = 0
    row["split_turn"] = False
    row["overflow_recovery"] = False
    row["batch"] = False
    row["unpriced"] = False
    return row


def import_pyarrow() -> None:
    """Import pyarrow and pyarrow.parquet for the report.

    In the command line's process (`lifecycle.is_command_process`), with neither loaded yet, pyarrow is
    imported as if numpy were not installed (optional to pyarrow since 16): a Parquet write never uses it,
    and numpy is ~60% of pyarrow's import (0.06-0.1 CPU s of a run). A pyarrow loaded so keeps no numpy
    bridge for the rest of the process, which only a process that ends with its command can accept, so a
    library caller's process imports both as usual. The bytes written are the same either way
    (`tests/test_run_imports.py`). With a pyarrow that needs numpy (15), the second import below
    loads it as usual.
    """
    import sys

    from batchcompact.lifecycle import is_command_process

    if is_command_process() and "numpy" not in sys.modules and "pyarrow" not in sys.modules:
        sys.modules["numpy"] = None  # type: ignore[assignment]  # `import numpy` raises ImportError
        try:
            import pyarrow  # noqa: F401
            import pyarrow.parquet  # noqa: F401
        except ImportError:
            pass
        finally:
            if "numpy" in sys.modules and sys.modules["numpy"] is None:
                del sys.modules["numpy"]
    import pyarrow  # noqa: F401, F811
    import pyarrow.parquet  # noqa: F401, F811


class ReportImports:
    """pyarrow (`import_pyarrow`) imported in a thread while worker processes do the run's file work.

    The report is written after every file is done, and importing pyarrow there (0.1-0.3 s) would run
    alone, after the workers. `start` is called only once the workers are forked and `join` before the
    run can fork again (pipeline/run.py `_plan_all`): a process forked while a thread is importing could
    inherit a module lock it never gets back.
    """

    def __init__(self) -> None:
        self._thread: Any = None

    def start(self) -> None:
        import sys
        import threading

        if self._thread is None and "pyarrow.parquet" not in sys.modules:
            self._thread = threading.Thread(target=_import_pyarrow, name="batchcompact-report-imports",
                                            daemon=True)
            self._thread.start()

    def join(self) -> None:
        if self._thread is not None:
            self._thread.join()
            self._thread = None


def _import_pyarrow() -> None:
    try:
        import_pyarrow()
    except ImportError:  # write_compactions imports them again and says what is missing
        pass


def write_compactions(rows: list[dict[str, Any]], report_dir: Path, run_id: str) -> Path:
    """Write the run's rows atomically as `compactions-<run_id>.parquet`; returns its path."""
    import os

    import_pyarrow()
    import pyarrow as pa
    import pyarrow.parquet as pq

    report_dir.mkdir(parents=True, exist_ok=True)
    target = report_dir / f"compactions-{run_id}.parquet"
    tmp = report_dir / f".compactions-{run_id}.parquet.tmp"
    from batchcompact.formats.scan import printable

    # file names that are not UTF-8 are written with \xNN escapes
    rows = [{k: printable(v) if isinstance(v, str) else v for k, v in row.items()} for row in rows]
    table = pa.Table.from_pylist(rows, schema=compactions_schema())
    try:
        pq.write_table(table, tmp)
        os.replace(tmp, target)
    except BaseException:  # disk full: no partial report left behind
        tmp.unlink(missing_ok=True)
        raise
    return target
