"""Cost per group of the report's table, stacked by model, as a PNG (matplotlib): the ten costliest
models one by one in ten distinct colours, the rest as one grey "other", the legend beside the plot.
(The HTML chart is the page of `report --html`, report/html.py.)

Input is the table's groups broken down by model (its keys + `model`; `produce.chart_report`), or a
report's own `stacks` (billing blocks): one bar per row of the table, in time order for periods and
blocks, in the table's order otherwise (sessions, projects, models, agents); models stack in a stable
order (largest total cost at the bottom).
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING

from batchcompact.errors import UsageError
from batchcompact.report.result import Report
from batchcompact.report.rules import model_name

if TYPE_CHECKING:
    from matplotlib.figure import Figure

PALETTE = (
    "#4e79a7",
    "#f28e2b",
    "#e15759",
    "#76b7b2",
    "#59a14f",
    "#edc948",
    "#b07aa1",
    "#ff9da7",
    "#9c755f",
    "#bcbd22",  # no grey: grey is "other"
)


TIME_KEYS = ("date", "week", "month", "block_start")  # bars left to right in time order


def chart_series(report: Report) -> tuple[list[str], list[str], dict[str, list[float]]]:
    """(bar labels, models, cost per model per bar): a bar per group of the table (`report.keys` without
    `model`, labelled by the first), or the report's `stacks`."""
    if report.stacks is not None:
        bars = list(report.stacks)
    else:
        group = [k for k in report.keys if k != "model"] or ["model"]
        found: dict[tuple, tuple[str, dict[str, float]]] = {}
        for row in report.rows.iter_rows(named=True):
            label, costs = found.setdefault(tuple(row[k] for k in group), (_label(row[group[0]]), {}))
            model = model_name(row["model"])
            costs[model] = costs.get(model, 0.0) + (row["cost_usd"] or 0.0)
        bars = list(found.values())
    if report.keys[0] in TIME_KEYS:
        bars.sort(key=lambda bar: bar[0])
    totals: dict[str, float] = {}
    for _, costs in bars:
        for m, c in costs.items():
            totals[m] = totals.get(m, 0.0) + c
    models = sorted(totals, key=lambda m: (-totals[m], m))
    return [label for label, _ in bars], models, {m: [costs.get(m, 0.0) for _, costs in bars] for m in models}


def _label(value: object) -> str:
    return "(unknown)" if value is None else str(value)


def _title(report: Report) -> str:
    by = report.settings.by
    return "Cost per model" if by == "model" else f"Cost per {by} by model"


def write_chart(report: Report, path: str | Path) -> None:
    """The PNG chart (`--chart FILE.png`); `--chart FILE.html` is the page of `--html` (report/html.py)."""
    path = Path(path)
    from batchcompact.outfile import replacing

    if path.suffix.lower() != ".png":
        raise UsageError(f"--chart {path}: use a .png file name (or --html FILE for the page)")
    with replacing(path) as where:  # written whole or not at all (outfile.py)
        write_png(report, where)


TOP = len(PALETTE)  # series drawn one by one; the rest stack as one "other"
OTHER_COLOUR = "#b4b4b4"


def top_series(models: list[str], series: dict[str, list[float]], top: int = TOP
               ) -> tuple[list[tuple[str, list[float], str]], int]:
    """(label, costs, colour) of each series drawn: the `top` costliest as they are, each in its own colour,
    or the `top - 1` costliest and the rest summed as "other (N)" in grey; and N (0: no other)."""
    if len(models) <= top:
        return [(m, series[m], PALETTE[j]) for j, m in enumerate(models)], 0
    kept, rest = models[:top - 1], models[top - 1:]
    other = [sum(series[m][i] for m in rest) for i in range(len(series[models[0]]))]
    drawn = [(m, series[m], PALETTE[j]) for j, m in enumerate(kept)]
    return [*drawn, (f"other ({len(rest)} models)", other, OTHER_COLOUR)], len(rest)


def write_png(report: Report, path: str | Path) -> None:
    fig = draw_png(report)
    import matplotlib.pyplot as plt

    fig.savefig(path, dpi=120, format="png", bbox_inches="tight")  # the legend beside the plot included
    plt.close(fig)


def draw_png(report: Report) -> Figure:
    """The matplotlib figure of `write_png`."""
    try:
        import matplotlib

        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:
        raise UsageError(
            "--chart FILE.png needs matplotlib: pip install 'batchcompact[chart]' (or use --html FILE)"
        ) from None
    periods, models, series = chart_series(report)
    drawn, _ = top_series(models, series)
    fig, ax = plt.subplots(figsize=(12, 4.8))
    bottom = [0.0] * len(periods)
    places = list(range(len(periods)))  # by position: two bars may share a label (one session id, two agents)
    for label, costs, colour in drawn:
        ax.bar(places, costs, bottom=bottom, label=label, color=colour)
        bottom = [b + v for b, v in zip(bottom, costs, strict=True)]
    ax.set_xticks(places, periods)
    ax.set_ylabel("cost (USD)")
    top = max(bottom, default=0.0)
    ax.set_ylim(0, top * 1.08 if top > 0 else 1)  # stacks start at 0 and the tallest one is not clipped
    ax.set_title(_title(report))
    # Beside the plot, never over the bars; largest first, as stacked from the bottom.
    ax.legend(fontsize="small", loc="upper left", bbox_to_anchor=(1.01, 1.0), borderaxespad=0.0)
    fig.autofmt_xdate()
    fig.tight_layout()
    return fig
