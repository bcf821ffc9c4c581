"""Usage and cost across session archives: extraction, per-file Parquet cache, aggregation, chart.

Library entry point: `run_report(paths, settings, cache_dir=..., use_cache=..., jobs=...)` ->
`(Report, CollectResult)`.
"""

from __future__ import annotations

import importlib
from pathlib import Path
from typing import TYPE_CHECKING, Any

from batchcompact.adapters.common.usage_rows import USAGE_SCHEMA_VERSION
from batchcompact.report.dimensions import GROUPINGS
from batchcompact.report.settings import ReportSettings

if TYPE_CHECKING:
    from batchcompact.report.collect import CollectResult
    from batchcompact.report.result import Report

# Loaded on first use, so `batchcompact.report.<light module>` does not import polars or pyarrow.
_LAZY = {
    "USAGE_SCHEMA": "batchcompact.adapters.common.usage_rows",
    "Report": "batchcompact.report.result",
    "build_report": "batchcompact.report.aggregate",
    "CollectResult": "batchcompact.report.collect",
    "collect_usage": "batchcompact.report.collect",
}


def __getattr__(name: str) -> Any:  # Any: a lazily imported module attribute (a class, a function, a schema)
    if name in _LAZY:
        return getattr(importlib.import_module(_LAZY[name]), name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


__all__ = [
    "GROUPINGS",
    "USAGE_SCHEMA",
    "USAGE_SCHEMA_VERSION",
    "CollectResult",
    "Report",
    "ReportSettings",
    "build_report",
    "collect_usage",
    "run_report",
]


def run_report(
    paths: list[str | Path],
    settings: ReportSettings,
    *,
    cache_dir: str | Path | None = None,
    use_cache: bool = True,
    jobs: int | None = None,
) -> tuple[Report, CollectResult]:
    """Collect usage for `paths` (cache-aware) and aggregate it per `settings`."""
    from batchcompact.report.aggregate import build_report
    from batchcompact.report.collect import collect_usage

    collected = collect_usage(paths, cache_dir=cache_dir, use_cache=use_cache, jobs=jobs)
    try:
        report = build_report(collected.parts, settings)
    finally:
        collected.cleanup()
    return report, collected
