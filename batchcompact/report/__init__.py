"""Usage and cost across session archives: extraction, per-file Parquet cache, aggregation, chart.

Library entry point: `run_report(paths, settings, cache_dir=..., use_cache=...)` -> `Report`.
"""

from __future__ import annotations

from pathlib import Path

from batchcompact.report.aggregate import GROUPINGS, Report, ReportSettings, build_report
from batchcompact.report.collect import CollectResult, collect_usage
from batchcompact.report.schema import USAGE_SCHEMA, USAGE_SCHEMA_VERSION

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
    collected = collect_usage(paths, cache_dir=cache_dir, use_cache=use_cache, jobs=jobs)
    try:
        report = build_report(collected.parts, settings)
    finally:
        collected.cleanup()
    return report, collected
