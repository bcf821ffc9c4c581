"""`Report`: what an aggregation hands to the renderers (rows per group, totals, unpriced models).

Its own module so the groupings (`aggregate.py`) and the billing blocks (`blocks.py`) both build one
without importing each other; no polars at import (the types are annotations only).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    import polars as pl

    from batchcompact.report.row_list import RowList
    from batchcompact.report.settings import ReportSettings


@dataclass
class Report:
    """Report rows (one per group), the totals and the models no price was found for."""

    settings: ReportSettings
    keys: list[str]
    rows: pl.DataFrame | RowList  # RowList: the cold report's (fast.py), read through the same two members
    totals: dict
    unpriced_models: list[str] = field(default_factory=list)
    pricing_source: str = ""
    dropped_zero: int = 0  # requests with no tokens at all, left out
    extra_columns: list[str] = field(default_factory=list)  # grouping-specific (blocks)
    # (bar label, cost per model) of each row, where the rows are no breakdown by model (blocks): the chart
    stacks: list[tuple[str, dict[str, float]]] | None = None
