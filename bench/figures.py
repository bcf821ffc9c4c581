"""The one convention every bench script follows: a line `FIGURE {json}` per measured figure.

`python -m bench` runs the scripts and turns those lines into one table; a script run on its own prints
them too (they are readable), after its own human-oriented output.

A figure may carry a goal, written `"ratio >= 0.8"` (the figure over its baseline) or `"value <= 0.15"`
(the figure itself); its status is then written out in full, met or not: `met: 0.94x vs >= 0.8`,
`not met: 1.84x vs <= 1.0`. A goal's figure that cannot be measured (its baseline tool is missing) is
still a row, `not measured: why` (`not_measured`), and the script then exits `NOT_MEASURED_EXIT`
(`finish`): a goal never vanishes from the table.
"""

from __future__ import annotations

import json
import operator
import sys

_OPS = {">=": operator.ge, "<=": operator.le}
NOT_MEASURED_EXIT = 3  # a stage that ran but could not measure a goal's figure (`python -m bench` says which)
UNMEASURED: list[str] = []  # this script's goal figures not measured


def goal_status(goal: str, value: float, ratio: float | None, unit: str) -> str:
    """`met: ...` or `not met: ...` for a goal such as `ratio <= 1.0` (see the module docstring)."""
    subject, op, threshold = goal.split()
    if op not in _OPS or subject not in ("ratio", "value"):
        raise ValueError(f"goal {goal!r}: write 'ratio|value >=|<= NUMBER'")
    limit = float(threshold)
    measured = ratio if subject == "ratio" else value
    measured = None if measured is None else round(measured, 3)  # as the table shows it
    if measured is None:
        return f"not measured (no baseline) vs {op} {threshold}"
    met = _OPS[op](measured, limit)
    digits = 3 if f"{measured:.2f}" == f"{limit:.2f}" and not met else 2  # 0.796 is not shown as 0.80
    shown = f"{measured:.{digits}f}x" if subject == "ratio" else f"{measured:.{digits}f} {unit}"
    return f"{'met' if met else 'not met'}: {shown} vs {op} {threshold}"


def emit(stage: str, figure: str, value: float, unit: str, baseline: str | None = None,
         baseline_value: float | None = None, note: str = "", goal: str | None = None,
         runs: int | None = None, ratio: float | None = None) -> None:
    """Print one figure, with the baseline it is compared with (same run, same machine) when there is one,
    the goal it is held to (status written out) and how many runs its median is of. `ratio`: when it is
    not value / baseline (the median of paired rounds' own ratios, not a ratio of two medians)."""
    if ratio is None:
        ratio = value / baseline_value if baseline_value else None
    print("FIGURE " + json.dumps({
        "stage": stage, "figure": figure, "value": round(value, 3), "unit": unit, "baseline": baseline,
        "baseline_value": None if baseline_value is None else round(baseline_value, 3),
        "ratio": None if ratio is None else round(ratio, 3), "note": note, "runs": runs,
        "goal": goal, "status": goal_status(goal, value, ratio, unit) if goal else "no goal",
    }), flush=True)


def not_measured(stage: str, figure: str, unit: str, baseline: str, goal: str, why: str) -> None:
    """Print a goal's figure that could not be measured as a row saying why (it used to be left out:
    the table then read as if every goal had been checked); `finish` makes the script exit non-zero."""
    UNMEASURED.append(f"{stage}: {figure}")
    print("FIGURE " + json.dumps({
        "stage": stage, "figure": figure, "value": None, "unit": unit, "baseline": baseline,
        "baseline_value": None, "ratio": None, "note": "", "runs": 0, "goal": goal,
        "status": f"not measured: {why}",
    }), flush=True)


def finish() -> int:
    """The script's exit status: `NOT_MEASURED_EXIT` (each such figure named on stderr) or 0."""
    for figure in UNMEASURED:
        print(f"bench: not measured: {figure}", file=sys.stderr)
    return NOT_MEASURED_EXIT if UNMEASURED else 0


def merge_repeats(figures: list[dict]) -> list[dict]:
    """Figures of a stage run several times (`python -m bench --repeat N`) as one row each, in the order
    first seen: the median value, baseline and ratio (the ratio's median over the runs, each run's ratio
    taken against its own baseline), the goal's status from those, and the spread in the note
    (`3 runs of the stage: ratio 0.71-0.84`), so a figure near its goal is read with the spread it came from."""
    import statistics

    groups: dict[tuple[str, str], list[dict]] = {}
    for figure in figures:
        groups.setdefault((figure["stage"], figure["figure"]), []).append(figure)
    merged = []
    for same in groups.values():
        first = same[0]
        if len(same) == 1:
            merged.append(first)
            continue

        def median(key: str, runs: list[dict]) -> float | None:
            values = [f[key] for f in runs if f[key] is not None]
            return statistics.median(values) if values else None

        value, ratio = median("value", same), median("ratio", same)
        if value is None:  # not measured in any run: the first run's row says why
            merged.append(first)
            continue
        by_value = ratio is None or (first.get("goal") or "").startswith("value")
        spread_of = "value" if by_value else "ratio"  # what the goal is about
        low = min(f[spread_of] for f in same if f[spread_of] is not None)
        high = max(f[spread_of] for f in same if f[spread_of] is not None)
        unmeasured = sum(1 for f in same if f["value"] is None)
        spread = (f"{len(same)} runs of the stage: {spread_of} {low:.3g}-{high:.3g}"
                  + (f", {unmeasured} not measured" if unmeasured else ""))
        merged.append(dict(
            first, value=value, baseline_value=median("baseline_value", same), ratio=ratio,
            note="; ".join(filter(None, [_first_note(same), spread])),
            runs=sum(f.get("runs") or 1 for f in same if f["value"] is not None),
            status=goal_status(first["goal"], value, ratio, first["unit"]) if first.get("goal") else "no goal",
        ))
    return merged


def _first_note(runs: list[dict]) -> str:
    """The runs' note when they agree, else the first run's, said to be that."""
    notes = {f.get("note") or "" for f in runs}
    first = runs[0].get("note") or ""
    return first if len(notes) == 1 or not first else f"first run: {first}"

