"""Writing the run report: the rows of one run as `compactions-<run_id>.parquet`, atomically.

Each run writes its own file in the report folder, so runs accumulate and
`polars.read_parquet("reports/*.parquet")` reads them together (the schema: runreport/schema.py).
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING

from batchcompact.pipeline.runreport.schema import ReportRow, compactions_schema

if TYPE_CHECKING:
    import threading


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
    run can fork again (pipeline/run_plan.py `PlanPhase.plan_all`): a process forked while a thread is importing could
    inherit a module lock it never gets back.
    """

    def __init__(self) -> None:
        self._thread: threading.Thread | None = None

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


def write_compactions(rows: list[ReportRow], report_dir: Path, run_id: str) -> Path:
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
    schema = compactions_schema()
    # a name read from a damaged session (a number, a list where a session id or a model belongs) names
    # nothing: null in its string column
    texts = [field.name for field in schema if pa.types.is_string(field.type)]
    for row in rows:
        for name in texts:
            if row.get(name) is not None and not isinstance(row[name], str):
                row[name] = None
    table = pa.Table.from_pylist(rows, schema=schema)
    try:
        pq.write_table(table, tmp)
        os.replace(tmp, target)
    except BaseException:  # disk full: no partial report left behind
        tmp.unlink(missing_ok=True)
        raise
    return target
