"""Cost per group of the report's table, stacked by model: self-contained HTML (inline SVG, no
dependency) or PNG (matplotlib).

Input is the table's groups broken down by model (its keys + `model`; `produce.chart_report`), or a
report's own `stacks` (billing blocks): one bar per row of the table, in time order for periods and
blocks, in the table's order otherwise (sessions, projects, models, agents); models stack in a stable
order (largest total cost at the bottom).
"""

from __future__ import annotations

from html import escape
from pathlib import Path

from batchcompact.errors import UsageError
from batchcompact.report.result import Report
from batchcompact.report.settings import model_name

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
    "#bab0ac",
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


def _label(value) -> str:
    return "(unknown)" if value is None else str(value)


def _title(report: Report) -> str:
    by = report.settings.by
    return "Cost per model" if by == "model" else f"Cost per {by} by model"


def write_chart(report: Report, path: str | Path) -> None:
    path = Path(path)
    suffix = path.suffix.lower()
    from batchcompact.outfile import replacing, write_text

    if suffix in (".html", ".htm"):
        write_text(path, render_html(report))
    elif suffix == ".png":
        with replacing(path) as where:  # written whole or not at all (outfile.py)
            write_png(report, where)
    else:
        raise UsageError(f"--chart {path}: use a .png or .html file name")


def render_html(report: Report) -> str:
    periods, models, series = chart_series(report)
    width, height, left, bottom, top = 900, 420, 70, 60, 20
    plot_w, plot_h = width - left - 20, height - bottom - top
    stacks = [sum(series[m][i] for m in models) for i in range(len(periods))]
    peak = max(stacks, default=0.0) or 1.0
    bar_w = plot_w / max(len(periods), 1)
    parts = [
        f'<svg xmlns="http://www.w3.org/2000/svg" width="{width}" height="{height}" font-family="sans-serif" font-size="11">'
    ]
    for i in range(5):  # grid lines and y labels
        value = peak * i / 4
        y = top + plot_h - plot_h * i / 4
        parts.append(f'<line x1="{left}" x2="{width - 20}" y1="{y:.1f}" y2="{y:.1f}" stroke="#ddd"/>')
        parts.append(f'<text x="{left - 6}" y="{y + 4:.1f}" text-anchor="end">${value:,.2f}</text>')
    for i, period in enumerate(periods):
        base = top + plot_h
        x = left + i * bar_w + bar_w * 0.1
        for j, model in enumerate(models):
            h = plot_h * series[model][i] / peak
            if h <= 0:
                continue
            base -= h
            tip = escape(f"{period} {model}: ${series[model][i]:,.4f}")
            parts.append(
                f'<rect x="{x:.1f}" y="{base:.1f}" width="{bar_w * 0.8:.1f}" height="{h:.1f}" '
                f'fill="{PALETTE[j % len(PALETTE)]}"><title>{tip}</title></rect>'
            )
        if len(periods) <= 40 or i % max(len(periods) // 20, 1) == 0:
            parts.append(
                f'<text x="{x + bar_w * 0.4:.1f}" y="{top + plot_h + 14}" text-anchor="end" '
                f'transform="rotate(-40 {x + bar_w * 0.4:.1f} {top + plot_h + 14})">{escape(period)}</text>'
            )
    parts.append("</svg>")
    legend = "".join(
        f'<li><span style="background:{PALETTE[j % len(PALETTE)]}"></span>{escape(m)}</li>'
        for j, m in enumerate(models)
    )
    title = escape(_title(report))
    return (
        '<!DOCTYPE html>\n<html><head><meta charset="utf-8"><title>batchcompact report</title><style>'
        "body{font-family:sans-serif;margin:2em}ul{list-style:none;padding:0}li{display:inline-block;margin-right:1em}"
        "li span{display:inline-block;width:12px;height:12px;margin-right:4px}</style></head><body>"
        f"<h1>{title}</h1>{''.join(parts)}<ul>{legend}</ul>"
        f"<p>Total: ${sum(stacks):,.2f}</p></body></html>\n"
    )


def write_png(report: Report, path: str | Path) -> None:
    try:
        import matplotlib

        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:
        raise UsageError(
            "--chart FILE.png needs matplotlib: pip install 'batchcompact[chart]' (or use a .html file)"
        ) from None
    periods, models, series = chart_series(report)
    fig, ax = plt.subplots(figsize=(10, 4.5))
    bottom = [0.0] * len(periods)
    places = list(range(len(periods)))  # by position: two bars may share a label (one session id, two agents)
    for j, model in enumerate(models):
        ax.bar(places, series[model], bottom=bottom, label=model, color=PALETTE[j % len(PALETTE)])
        bottom = [b + v for b, v in zip(bottom, series[model], strict=True)]
    ax.set_xticks(places, periods)
    ax.set_ylabel("cost (USD)")
    top = max(bottom, default=0.0)
    ax.set_ylim(0, top * 1.08 if top > 0 else 1)  # stacks start at 0 and the tallest one is not clipped
    ax.set_title(_title(report))
    ax.legend(fontsize="small")
    fig.autofmt_xdate()
    fig.tight_layout()
    fig.savefig(path, dpi=120, format="png")
    plt.close(fig)
