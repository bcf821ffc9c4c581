"""Eval's rows pooled over the cuts each summarizer scored (`mean_rows`, the tables of `eval` and
bench/eval_table.py), and the lift of a row over its baseline (`lift`)."""

from __future__ import annotations

from batchcompact.core.jsontypes import JsonObject
from batchcompact.eval.baselines import BASELINE, FIRST, LIST, WORDS
from batchcompact.eval.hindsight import KINDS as HINDSIGHT_KINDS
from batchcompact.eval.scoring import KINDS, NAME_KINDS, mean_recall


def lift(row: JsonObject, base: JsonObject) -> float | None:
    """How much `row`'s overall recall is above its baseline's (None when either has none)."""
    if row["overall"] is None or base["overall"] is None:
        return None
    return round(row["overall"] - base["overall"], 4)


def mean_rows(rows: list[JsonObject]) -> list[JsonObject]:
    """One row per summarizer (and baseline at its length) pooled over every cut it scored: each kind's
    recall is kept / probes summed over the cuts, `overall` the mean of those recalls over the kinds with a
    probe (not pooled by probe count: docs/eval.md), `summary_tokens` the mean and `max_summary_tokens`
    the largest, `carryover` carried / items summed over the rows that have a previous summary's items."""
    groups: dict[tuple[str, str | None], list[JsonObject]] = {}
    carried: dict[tuple[str, str | None], list[int]] = {}  # [carried, items] over the rows with a previous summary
    for row in rows:
        key = (row["summarizer"], row["baseline_for"])
        if row["status"] == "ok" and row["overall"] is not None:
            groups.setdefault(key, []).append(row)
        if row["status"] == "ok" and row.get("carryover_items"):
            sums = carried.setdefault(key, [0, 0])
            sums[0] += round(row["carryover"] * row["carryover_items"])
            sums[1] += row["carryover_items"]
    means = []
    for (label, baseline_for), members in groups.items():
        mean: JsonObject = {"summarizer": label, "baseline_for": baseline_for, "cuts": len(members)}
        pools = {"names_recall": NAME_KINDS, "hindsight_recall": HINDSIGHT_KINDS}
        totals: dict[str, tuple[int, int]] = {}  # kind -> (kept, probes)
        for kind in KINDS:
            probes = sum(r[f"{kind}_probes"] or 0 for r in members)
            kept = sum(round((r[f"{kind}_recall"] or 0) * (r[f"{kind}_probes"] or 0)) for r in members)
            totals[kind] = (kept, probes)
            mean[f"{kind}_probes"] = probes
            mean[f"{kind}_recall"] = round(kept / probes, 4) if probes else None
        for column, kinds in pools.items():
            total = sum(totals[k][1] for k in kinds)
            mean[column] = round(sum(totals[k][0] for k in kinds) / total, 4) if total else None
        mean["overall"] = mean_recall({kind: mean[f"{kind}_recall"] for kind in KINDS})
        mean["summary_tokens"] = round(sum(r["summary_tokens"] or 0 for r in members) / len(members))
        mean["max_summary_tokens"] = max(r["summary_tokens"] or 0 for r in members)
        kept, items = carried.get((label, baseline_for), (0, 0))
        mean["carryover"] = round(kept / items, 4) if items else None  # docs/eval.md, "Carry-over"
        mean["carryover_items"] = items or None
        means.append(mean)
    by_key = {(m["summarizer"], m["baseline_for"]): m for m in means}
    for mean in means:
        for kind in (FIRST, WORDS, LIST):
            base = by_key.get((BASELINE + kind, mean["summarizer"]))
            mean[f"lift_{kind}"] = lift(mean, base) if base else None
    return means
