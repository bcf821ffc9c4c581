"""`--max-cost` before anything is spent: the sum of the planned sessions' estimates, at the price they
will be bought at (the batch price with `--batch`), checked against the limit once phase 1 is done."""

from __future__ import annotations

from collections.abc import Iterable

from batchcompact.core.jsontypes import JsonObject


class RunBudget:
    """The estimates of the sessions planned for compaction, and whether the run may start."""

    def __init__(self, max_cost_usd: float | None, summary_model: str, batch: bool) -> None:
        self.max_cost_usd = max_cost_usd
        self.summary_model = summary_model
        # the plan's estimate that --max-cost checks: at the batch price when buying by batch
        self.estimate_field = "est_batch_cost_usd" if batch else "est_cost_usd"
        self.total = 0.0

    def add(self, plan_row: JsonObject, with_branches: bool) -> None:
        """Count one planned session (and its branch summaries when they are bought too)."""
        self.total += plan_row.get(self.estimate_field) or 0.0
        if with_branches:
            self.total += plan_row.get("branch_est_cost_usd") or 0.0

    def refusal(self, rows: Iterable[JsonObject]) -> str | None:
        """Why the run must not start (above --max-cost, or a model whose price is unknown, so spend could
        not be counted), or None. `rows` are the planned sessions' rows."""
        if self.max_cost_usd is None:
            return None
        model = self.summary_model
        priced = model == "builtin" or model.startswith("custom:")  # these report their own cost
        if not priced and any(row.get("est_cost_usd") is None for row in rows):
            return (f"--max-cost cannot be enforced: {model} has no known price (pass --pricing FILE with "
                    "its prices); nothing was summarized")
        if self.total > self.max_cost_usd:
            return (f"the estimated cost ${self.total:.4f} exceeds --max-cost ${self.max_cost_usd:.4f}; "
                    "nothing was summarized (raise --max-cost or use --limit)")
        return None
