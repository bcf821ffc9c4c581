"""The one convention every bench script follows: a line `FIGURE {json}` per measured figure.

`python -m bench` runs the scripts and turns those lines into one table; a script run on its own prints
them too (they are readable), after its own human-oriented output.
"""

from __future__ import annotations

import json


def emit(stage: str, figure: str, value: float, unit: str, baseline: str | None = None,
         baseline_value: float | None = None, note: str = "") -> None:
    """Print one figure, with the baseline it is compared with (same run, same machine) when there is one."""
    ratio = value / baseline_value if baseline_value else None
    print("FIGURE " + json.dumps({
        "stage": stage, "figure": figure, "value": round(value, 3), "unit": unit, "baseline": baseline,
        "baseline_value": None if baseline_value is None else round(baseline_value, 3),
        "ratio": None if ratio is None else round(ratio, 3), "note": note,
    }), flush=True)
