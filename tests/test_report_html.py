"""`report --html FILE`: the page's data is the report's (the same numbers as `--format json`), it is written
whole, and it works in a real browser: Debian's Chromium driven by Playwright (no browser download; in CI a
missing browser or Playwright fails, elsewhere the browser tests skip).
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import click
import pytest
from click.testing import CliRunner
from conftest import SAMPLES, unavailable

from batchcompact.cli import cli
from batchcompact.report.dimensions import PAGE

CHROMIUM = os.environ.get("BATCHCOMPACT_CHROMIUM", "/usr/bin/chromium")
DIMENSIONS = tuple(d.name for d in PAGE)  # the table's (report/dimensions.py)
HOSTILE_PROJECT = "/home/u/<script>window.__pwned=1</script>"
QUOTED_PROJECT = "/home/u/\"quo'te\" & ü 日本 </script><!--"
HOSTILE_MODEL = "<img src=x onerror=window.__pwned=2>"


def invoke(*args):
    return CliRunner().invoke(cli, ["report", *args], standalone_mode=False, catch_exceptions=False)


def report_json(*args) -> dict:
    result = invoke(*args, "--format", "json", "--no-cache")
    assert result.return_value == 0, result.stderr
    return json.loads(result.stdout)


def page(path: Path, *args) -> dict:
    """Write the page for `args` and return the data it embeds (read back from the file)."""
    result = invoke(*args, "--html", str(path), "--no-cache", "-q")
    assert result.return_value == 0, result.stderr
    return embedded(path.read_text(encoding="utf-8"))


def embedded(html: str) -> dict:
    start = html.index('<script type="application/json" id="report-data">') + len(
        '<script type="application/json" id="report-data">')
    return json.loads(html[start:html.index("</script>", start)])


def pi_session(path: Path, cwd: str, calls: list[tuple]) -> None:
    """A pi session whose assistant messages carry `calls`: (timestamp, provider, model, input, output, cost or None)."""
    lines = [{"type": "session", "version": 3, "id": f"s-{path.stem}", "timestamp": calls[0][0], "cwd": cwd}]
    parent = None
    for i, (ts, provider, model, inp, out, cost) in enumerate(calls):
        usage = {"input": inp, "output": out, "cacheRead": 0, "cacheWrite": 0, "totalTokens": inp + out}
        if cost is not None:
            usage["cost"] = {"input": 0, "output": 0, "cacheRead": 0, "cacheWrite": 0, "total": cost}
        lines.append({"type": "message", "id": f"m{i:06d}", "parentId": parent, "timestamp": ts,
                      "message": {"role": "assistant", "content": [{"type": "text", "text": "ok"}],
                                  "provider": provider, "model": model, "usage": usage, "stopReason": "stop"}})
        parent = f"m{i:06d}"
    path.write_text("".join(json.dumps(line) + "\n" for line in lines), encoding="utf-8")


@pytest.fixture
def hostile(tmp_path) -> Path:
    """Names that are markup, quotes and non-ASCII; one model no price table knows."""
    folder = tmp_path / "hostile"
    folder.mkdir()
    pi_session(folder / "a.jsonl", HOSTILE_PROJECT, [("2026-03-01T10:00:00.000Z", "openai", "gpt-4o", 1000, 200, None)])
    pi_session(folder / "b.jsonl", QUOTED_PROJECT, [("2026-03-03T10:00:00.000Z", "acme", HOSTILE_MODEL, 500, 50, None)])
    return folder


# ---- the data: one model for the page and --format json


def _summed(dimension: dict) -> dict[tuple, dict]:
    out: dict[tuple, dict] = {}
    for i, group in enumerate(dimension["group"]):
        acc = out.setdefault(tuple(dimension["names"][group]), {})
        for column in ("requests", "input_tokens", "output_tokens", "cache_read_tokens", "cache_write_tokens",
                       "reasoning_tokens", "total_tokens", "cost_usd", "unpriced_requests"):
            acc[column] = acc.get(column, 0) + dimension[column][i]
    return out


@pytest.mark.parametrize("more", [[], ["--agent", "pi"], ["--since", "2026-10-01", "--until", "2026-10-10"],
                                  ["--project", "webapp", "--timezone", "Asia/Tokyo"]])
def test_every_dimension_of_the_page_is_the_json_report_to_the_token_and_cent(tmp_path, more):
    data = page(tmp_path / "p.html", str(SAMPLES), *more)
    doc = report_json(str(SAMPLES), *more)
    assert data["totals"] == doc["totals"]  # the headline's numbers, as they are
    assert data["unpriced_models"] == doc["unpriced_models"]
    for dim in DIMENSIONS:
        by = report_json(str(SAMPLES), "--by", dim, *more)
        want = {tuple(row[k] or "(unknown)" for k in by["keys"]): row for row in by["rows"]}
        got = _summed(data["dimensions"][dim])
        assert set(got) == set(want), dim
        for key, row in want.items():
            for column, value in got[key].items():
                if column == "cost_usd":
                    assert f"{value:.2f}" == f"{row[column]:.2f}", (dim, key)
                else:
                    assert value == row[column], (dim, key, column)
    sessions = report_json(str(SAMPLES), "--by", "session", *more)
    assert data["sessions"]["count"] == len(sessions["rows"])
    want = {(row["session_id"], row["agent"], row["project"]): row for row in sessions["rows"]}
    got = _summed(data["sessions"])
    assert set(got) == set(want)
    for key, row in want.items():
        assert f"{got[key].pop('cost_usd'):.2f}" == f"{row['cost_usd']:.2f}"
        assert got[key] == {column: row[column] for column in got[key]}, key


def test_names_cannot_end_the_script_element(hostile, tmp_path):
    html_path = tmp_path / "p.html"
    data = page(html_path, str(hostile))
    html = html_path.read_text(encoding="utf-8")
    body = html[html.index('id="report-data">'):html.index("</script>", html.index('id="report-data">'))]
    assert "<" not in body[len('id="report-data">'):] and "&" not in body  # \u003c, \u0026
    projects = {name[0] for name in data["dimensions"]["project"]["names"]}
    assert projects == {HOSTILE_PROJECT, QUOTED_PROJECT}  # read back exactly
    assert data["unpriced_models"] == [HOSTILE_MODEL]


def test_a_page_into_a_folder_that_is_no_folder_is_one_error_line_and_nothing_written(tmp_path):
    blocker = tmp_path / "file"
    blocker.write_text("x")
    for target in (blocker / "p.html", tmp_path / "missing" / "p.html"):
        proc = subprocess.run([sys.executable, "-m", "batchcompact", "report", str(SAMPLES), "--no-cache",
                               "--html", str(target)], capture_output=True, text=True)
        assert proc.returncode == 2, proc.stderr
        lines = proc.stderr.strip().splitlines()
        assert len(lines) == 1 and lines[0].startswith("Error: ") and "--html" in lines[0], proc.stderr
        assert not target.exists()
    assert sorted(p.name for p in tmp_path.iterdir()) == ["file"]


def test_a_page_is_written_whole_over_the_old_one(tmp_path, monkeypatch):
    """The old page stays as it was when making the new one fails; no temp file is left beside it."""
    from batchcompact import outfile

    target = tmp_path / "p.html"
    target.write_text("old page")
    target.chmod(0o640)

    def full(tmp, before):  # the disk fills up once the new page is written, before it is renamed
        raise OSError(28, "No space left on device")

    monkeypatch.setattr(outfile, "_keep_mode", full)
    result = CliRunner().invoke(cli, ["report", str(SAMPLES), "--no-cache", "-q", "--html", str(target)])
    assert result.exit_code == 3  # the group maps the command's error (cli/__init__.py)
    assert result.stderr.strip() == f"Error: {target}: cannot write: No space left on device"
    assert target.read_text() == "old page"
    assert [p.name for p in tmp_path.iterdir()] == ["p.html"]
    monkeypatch.undo()
    page(target, str(SAMPLES))
    assert target.read_text().startswith("<!DOCTYPE html>") and oct(target.stat().st_mode & 0o777) == "0o640"
    assert [p.name for p in tmp_path.iterdir()] == ["p.html"]


def test_the_chart_option_s_html_file_is_the_page_and_the_options_that_do_not_apply_are_refused(tmp_path):
    data = page(tmp_path / "p.html", str(SAMPLES))
    result = invoke(str(SAMPLES), "--no-cache", "-q", "--chart", str(tmp_path / "c.html"))
    assert result.return_value == 0
    assert embedded((tmp_path / "c.html").read_text())["totals"] == data["totals"]
    with pytest.raises(click.UsageError, match="give one"):
        invoke(str(SAMPLES), "--chart", str(tmp_path / "c.html"), "--html", str(tmp_path / "d.html"))
    with pytest.raises(click.UsageError, match="--html does not apply to --by request"):
        invoke(str(SAMPLES), "--by", "request", "--format", "jsonl", "--html", str(tmp_path / "d.html"))


def test_the_page_is_the_same_bytes_for_the_same_archive(tmp_path):
    first, second = tmp_path / "a.html", tmp_path / "b.html"
    page(first, str(SAMPLES))
    result = invoke(str(SAMPLES), "--html", str(second), "--no-cache", "-q", "--jobs", "1")
    assert result.return_value == 0
    assert first.read_bytes() == second.read_bytes()


def test_the_vendored_library_is_the_published_one_with_its_licence():
    import hashlib
    from importlib import resources

    folder = resources.files("batchcompact.report").joinpath("page")
    library = folder.joinpath("chart.umd.min.js").read_bytes()
    assert hashlib.sha256(library).hexdigest() == "87364cc2b2a76a6684929e7d6b80b18a897794db38400caff1fcf1791c6925d2"
    assert b"Chart.js v4.6.1" in library[:200]
    assert "MIT License" in folder.joinpath("chart.js-LICENSE.md").read_text()


# ---- in Chromium


@pytest.fixture(scope="module")
def browser():
    if not Path(CHROMIUM).exists():
        unavailable(f"no Chromium at {CHROMIUM} (apt-get install chromium; .ci/run installs it)")
    try:
        from playwright.sync_api import sync_playwright
    except ImportError as exc:
        unavailable(f"playwright is not installed ({exc}; pip install -e '.[test]')")
    with sync_playwright() as p:
        launched = p.chromium.launch(executable_path=CHROMIUM, args=["--no-sandbox"])
        yield launched
        launched.close()


class Opened:
    """A page loaded from file://, with every console message, page error and request it made."""

    def __init__(self, browser, path: Path, width: int = 1280):
        self.console: list[str] = []
        self.requests: list[str] = []
        self.page = browser.new_page(viewport={"width": width, "height": 900})
        self.page.on("console", lambda m: self.console.append(f"{m.type}: {m.text}"))
        self.page.on("pageerror", lambda e: self.console.append(f"pageerror: {e}"))
        self.page.on("request", lambda r: self.requests.append(r.url))
        self.page.goto(path.as_uri())
        self.page.wait_for_selector("body[data-ready='1']", timeout=15000)

    def text(self, selector: str) -> str:
        return self.page.locator(selector).inner_text()

    def column(self, table: str, index: int) -> list[str]:
        return self.page.eval_on_selector_all(
            f"#{table} tbody > tr", f"rows => rows.map(r => r.cells[{index}] ? r.cells[{index}].textContent : '')")

    def clean(self, path: Path) -> None:
        assert self.console == [], self.console
        assert self.requests == [path.as_uri()], self.requests  # the page itself, nothing else


def money(value: float) -> str:
    return f"${value:,.2f}"


def test_the_page_loads_with_no_error_and_no_request_and_its_headline_is_the_json_report(browser, tmp_path):
    path = tmp_path / "p.html"
    page(path, str(SAMPLES))
    doc = report_json(str(SAMPLES))
    opened = Opened(browser, path)
    opened.clean(path)
    totals = doc["totals"]
    assert opened.text("#cost-value") == money(totals["cost_usd"])
    assert opened.text("#requests-value") == f"{totals['requests']:,}"
    assert opened.text("#tokens-value") == f"{totals['total_tokens']:,}"
    detail = opened.text("#tokens-detail")
    for kind, name in (("input_tokens", "input"), ("output_tokens", "output"), ("cache_read_tokens", "cache read"),
                       ("cache_write_tokens", "cache write")):
        assert f"{name} {totals[kind]:,}" in detail
    rate = 100 * totals["cache_read_tokens"] / (totals["input_tokens"] + totals["cache_read_tokens"])
    assert opened.text("#cache-rate-value") == f"{rate:.1f}%"
    days = sorted({row["date"] for row in doc["rows"]})
    assert opened.text("#period-value") == f"{days[0]} – {days[-1]}"
    # the table's total row is the report's too
    foot = opened.page.eval_on_selector("#dim-table tfoot tr", "r => [...r.cells].map(c => c.textContent)")
    assert foot[0] == "TOTAL" and foot[1] == f"{totals['requests']:,}" and money(totals["cost_usd"]) in foot


def test_switching_the_dimension_and_sorting_a_column_change_the_table(browser, tmp_path):
    path = tmp_path / "p.html"
    page(path, str(SAMPLES))
    opened = Opened(browser, path)
    models = report_json(str(SAMPLES), "--by", "model")["rows"]
    assert opened.column("dim-table", 0) == [row["model"] for row in models]  # costliest first, as --by model
    opened.page.select_option("#dimension", "agent")
    agents = report_json(str(SAMPLES), "--by", "agent")["rows"]
    assert opened.text("#table-title") == "By agent"
    assert opened.page.inner_text("#dim-table thead th:first-child").startswith("agent")
    assert opened.column("dim-table", 0) == [row["agent"] for row in agents]
    assert opened.column("dim-table", 1) == [f"{row['requests']:,}" for row in agents]
    assert "by agent" in opened.text("#chart-title")
    legend = opened.page.evaluate("Chart.getChart(document.getElementById('chart')).data.datasets.map(d => d.label)")
    assert legend == [row["agent"] for row in agents]
    opened.page.click("#dim-table thead th[data-key='requests']")  # most requests first
    by_requests = sorted(agents, key=lambda r: -r["requests"])
    assert opened.column("dim-table", 1) == [f"{row['requests']:,}" for row in by_requests]
    opened.page.click("#dim-table thead th[data-key='requests']")  # then fewest
    assert opened.column("dim-table", 1) == [f"{row['requests']:,}" for row in reversed(by_requests)]
    opened.page.fill("#dim-filter", agents[0]["agent"])
    assert opened.column("dim-table", 0) == [agents[0]["agent"]]
    # a session opens to its days
    first = opened.page.locator("#session-table tbody tr.session").first
    first.click()
    days = opened.page.locator("#session-table table.session-days tbody tr")
    assert days.count() >= 1
    opened.clean(path)


def test_a_date_range_changes_the_totals_to_those_of_the_range(browser, tmp_path):
    path = tmp_path / "p.html"
    page(path, str(SAMPLES))
    opened = Opened(browser, path)
    whole = opened.text("#cost-value")
    day = "2026-10-05"
    one = report_json(str(SAMPLES), "--since", day, "--until", day)["totals"]
    opened.page.fill("#from", day)
    opened.page.dispatch_event("#from", "change")
    opened.page.fill("#to", day)
    opened.page.dispatch_event("#to", "change")
    assert opened.text("#cost-value") == money(one["cost_usd"]) != whole
    assert opened.text("#requests-value") == f"{one['requests']:,}"
    assert opened.text("#period-value") == f"{day} – {day}"
    opened.page.click("#reset-range")
    assert opened.text("#cost-value") == whole
    opened.clean(path)


def _pixels(png: bytes):
    from io import BytesIO

    from PIL import Image

    image = Image.open(BytesIO(png)).convert("RGB")
    return image, image.getcolors(maxcolors=1 << 20)


@pytest.mark.parametrize(("dimension", "bucket"), [("model", "day"), ("agent", "week"), ("project", "month")])
def test_a_screenshot_of_each_view_shows_a_chart_in_distinct_colours(browser, tmp_path, dimension, bucket):
    path = tmp_path / "p.html"
    page(path, str(SAMPLES))
    opened = Opened(browser, path)
    opened.page.select_option("#dimension", dimension)
    opened.page.select_option("#bucket", bucket)
    shot = tmp_path / f"{dimension}-{bucket}.png"
    opened.page.screenshot(path=str(shot), full_page=True)
    assert shot.stat().st_size > 50_000
    chart = opened.page.locator("#chart-box").screenshot()
    image, colours = _pixels(chart)
    assert image.width > 600 and image.height > 300
    counts = dict((rgb, n) for n, rgb in colours)
    white = counts.get((255, 255, 255), 0)
    assert white < 0.97 * image.width * image.height  # the plot is not blank
    series = opened.page.evaluate(
        "Chart.getChart(document.getElementById('chart')).data.datasets.map(d => d.backgroundColor)")
    assert len(series) == len(set(series)) >= 2  # a colour per series
    for colour in series:  # each drawn, as bars and in the legend
        rgb = tuple(int(colour[i:i + 2], 16) for i in (1, 3, 5))
        assert counts.get(rgb, 0) > 20, colour
    opened.clean(path)


def test_hostile_names_are_shown_as_text_and_an_unpriced_model_as_unpriced(browser, tmp_path, hostile):
    path = tmp_path / "p.html"
    page(path, str(hostile))
    opened = Opened(browser, path)
    assert opened.page.evaluate("window.__pwned") is None
    assert opened.column("dim-table", 0) == ["gpt-4o", HOSTILE_MODEL]
    assert opened.column("dim-table", 7) == ["$0.00", "unpriced"]  # unknown, not $0
    legend = opened.page.evaluate("Chart.getChart(document.getElementById('chart')).data.datasets.map(d => d.label)")
    assert legend == ["gpt-4o", HOSTILE_MODEL + " (unpriced)"]
    assert "unpriced" in opened.text("#cost-value") and HOSTILE_MODEL in opened.text("#cost-detail")
    opened.page.select_option("#dimension", "project")
    assert sorted(opened.column("dim-table", 0)) == sorted([HOSTILE_PROJECT, QUOTED_PROJECT])
    assert opened.page.locator("img").count() == 0 and opened.page.locator("script").count() == 3
    opened.clean(path)


@pytest.mark.parametrize(("more", "period", "requests"), [
    (["--since", "2030-01-01"], "no use", "0"),
    (["--since", "2026-10-05", "--until", "2026-10-05"], "2026-10-05 – 2026-10-05", None),
])
def test_an_empty_archive_and_a_single_day_render_a_clear_page(browser, tmp_path, more, period, requests):
    path = tmp_path / "p.html"
    page(path, str(SAMPLES), *more)
    opened = Opened(browser, path)
    assert opened.text("#period-value") == period
    if requests is not None:  # nothing: said, no empty chart
        assert opened.text("#requests-value") == requests
        assert opened.text("#cost-detail") == "no requests"
        assert opened.text("#chart-empty") == "No spend in this period."
        assert opened.page.locator("#chart-empty").is_visible()
        assert not opened.page.locator("#chart-box").is_visible()
        assert opened.column("dim-table", 0) == []
    else:  # one day: one bar per series
        assert opened.page.locator("#chart-box").is_visible()
        labels = opened.page.evaluate("Chart.getChart(document.getElementById('chart')).data.labels")
        assert labels == ["2026-10-05"]
        image, colours = _pixels(opened.page.locator("#chart-box").screenshot())
        assert len(colours) > 20
    opened.page.screenshot(path=str(tmp_path / "shot.png"), full_page=True)
    opened.clean(path)


def test_the_page_works_offline_from_a_copy_anywhere(browser, tmp_path):
    """A mail attachment: the file alone, elsewhere, with every request refused."""
    path = tmp_path / "p.html"
    page(path, str(SAMPLES))
    elsewhere = tmp_path / "attachment" / "spend report.html"
    elsewhere.parent.mkdir()
    shutil.copy(path, elsewhere)
    context = browser.new_context(offline=True)
    try:
        seen: list[str] = []
        tab = context.new_page()
        tab.on("request", lambda r: seen.append(r.url))
        errors: list[str] = []
        tab.on("pageerror", lambda e: errors.append(str(e)))
        tab.goto(elsewhere.as_uri())
        tab.wait_for_selector("body[data-ready='1']", timeout=15000)
        assert errors == [] and seen == [elsewhere.as_uri()]
        assert tab.locator("#chart").is_visible()
    finally:
        context.close()


# ---- the PNG chart (--chart FILE.png)


def test_the_png_keeps_its_legend_beside_the_plot_and_a_colour_per_series(tmp_path, monkeypatch):
    """22 models: the ten costliest drawn in ten distinct colours (9 + a grey "other (13 models)"), the
    legend outside the axes, the tallest stack not clipped (main drew all 22, colours repeating after 10,
    the legend over the bars)."""
    from conftest import required_module

    required_module("matplotlib", "chart")
    from batchcompact.report import chart as chart_module

    folder = tmp_path / "many"
    folder.mkdir()
    for i in range(22):
        pi_session(folder / f"s{i:02d}.jsonl", f"/p/{i}", [
            (f"2026-03-0{1 + i % 3}T10:00:00.000Z", "openai", f"model-{i:02d}", 1000, 100, 0.01 * (22 - i))])
    figures = []
    real = chart_module.draw_png
    monkeypatch.setattr(chart_module, "draw_png", lambda report: figures.append(real(report)) or figures[-1])
    out = tmp_path / "c.png"
    result = invoke(str(folder), "--no-cache", "-q", "--chart", str(out))
    assert result.return_value == 0, result.stderr
    [fig] = figures
    ax = fig.axes[0]
    legend = ax.get_legend()
    labels = [t.get_text() for t in legend.get_texts()]
    assert labels == [f"model-{i:02d}" for i in range(9)] + ["other (13 models)"]
    colours = [tuple(h.get_facecolor()) for h in legend.legend_handles]
    assert len(set(colours)) == 10
    from matplotlib.backends.backend_agg import FigureCanvasAgg

    renderer = FigureCanvasAgg(fig).get_renderer()  # the figure was closed once saved
    assert legend.get_window_extent(renderer).x0 >= ax.get_window_extent(renderer).x1  # beside, not over
    image, found = _pixels(out.read_bytes())
    counts = {rgb: n for n, rgb in found}
    for colour in colours:  # every series' colour is drawn
        rgb = tuple(round(c * 255) for c in colour[:3])
        assert counts.get(rgb, 0) > 50, rgb


def test_what_batchcompact_s_runs_did_is_in_the_headline(browser, tmp_path):
    """Run reports among PATHS: sessions compacted, context before -> after, the batch API's saving (the
    on-demand price of the same tokens minus the batch price paid), the summary calls' latency and speed,
    the failed share; within the page's date range."""
    from datetime import UTC, datetime

    from batchcompact.pipeline.runreport.schema import empty_row
    from batchcompact.pipeline.runreport.write import write_compactions
    from batchcompact.pricing import PriceTable

    on_demand = PriceTable.load(None).cost("gpt-4o", input_tokens=50_000, output_tokens=2_000)
    done = empty_row()
    done.update(run_id="r1", started_at=datetime(2026, 10, 5, 9, tzinfo=UTC), ended_at=datetime(2026, 10, 5, 10, tzinfo=UTC),
                input_path="/s/a.jsonl", session_id="a", status="compacted", tokens_before=100_000,
                tokens_after_est=20_000, calls=1, prompt_tokens=50_000, completion_tokens=2_000,
                cost_usd=on_demand / 2, latency_s=4.0, model="gpt-4o", batch=True)
    failed = empty_row()
    failed.update(run_id="r1", started_at=datetime(2026, 10, 5, 9, tzinfo=UTC), ended_at=datetime(2026, 10, 5, 10, tzinfo=UTC),
                  input_path="/s/b.jsonl", session_id="b", status="failed")
    runs = tmp_path / "runs"
    runs.mkdir()
    write_compactions([done, failed], runs, "r1")
    path = tmp_path / "p.html"
    data = page(path, str(SAMPLES), str(runs))
    assert data["runs"]["files"] == 1
    opened = Opened(browser, path)
    assert opened.text("#batchcompact-value") == "1 session"
    detail = opened.text("#batchcompact-detail")
    assert "context 100,000 → 20,000 tokens (−80%)" in detail
    assert f"batch API saved {money(on_demand / 2)}" in detail
    assert "summary calls: 4.0 s each, 500 output tokens/s" in detail
    assert "failed: 1 of 2 (50.0%)" in detail
    opened.page.fill("#from", "2026-10-06")
    opened.page.dispatch_event("#from", "change")
    assert opened.text("#batchcompact-value") == "0 sessions"
    opened.clean(path)


def test_a_dimension_of_many_groups_keeps_the_costliest_and_sums_the_rest_per_day(tmp_path, monkeypatch):
    from batchcompact.report import html as html_module

    monkeypatch.setattr(html_module, "MAX_KEYS", 3)
    data = page(tmp_path / "p.html", str(SAMPLES))
    rows = report_json(str(SAMPLES), "--by", "model")["rows"]
    got = _summed(data["dimensions"]["model"])
    assert [key for key in got if key != ("(other)",)] == sorted((row["model"],) for row in rows[:2])
    rest = rows[2:]
    assert got[("(other)",)]["requests"] == sum(row["requests"] for row in rest)
    assert got[("(other)",)]["total_tokens"] == sum(row["total_tokens"] for row in rest)
    assert f"{got[('(other)',)]['cost_usd']:.2f}" == f"{sum(row['cost_usd'] for row in rest):.2f}"


def test_a_run_after_the_last_day_of_use_counts_in_the_whole_period(browser, tmp_path):
    """The README's own `run` happens today, after the sample sessions' last day of use: the page's whole
    period (and "Whole period") counts it; a range that ends before the last day of use does not (#56)."""
    from datetime import UTC, datetime

    from batchcompact.pipeline.runreport.schema import empty_row
    from batchcompact.pipeline.runreport.write import write_compactions

    done = empty_row()
    done.update(run_id="r1", started_at=datetime(2030, 1, 2, 9, tzinfo=UTC), ended_at=datetime(2030, 1, 2, 10, tzinfo=UTC),
                input_path="/s/a.jsonl", session_id="a", status="compacted", tokens_before=100_000,
                tokens_after_est=20_000, calls=1, cost_usd=0.0, model="builtin")
    runs = tmp_path / "runs"
    runs.mkdir()
    write_compactions([done], runs, "r1")
    path = tmp_path / "p.html"
    page(path, str(SAMPLES), str(runs))
    opened = Opened(browser, path)
    assert opened.text("#batchcompact-value") == "1 session"
    last = opened.page.eval_on_selector("#to", "e => e.value")
    opened.page.fill("#to", "2026-10-05")
    opened.page.dispatch_event("#to", "change")
    assert last > "2026-10-05" and opened.text("#batchcompact-value") == "0 sessions"
    opened.page.click("#reset-range")
    assert opened.text("#batchcompact-value") == "1 session"
    opened.clean(path)


def test_at_a_phone_s_width_only_the_tables_scroll_sideways(browser, tmp_path):
    path = tmp_path / "p.html"
    page(path, str(SAMPLES))
    opened = Opened(browser, path, width=390)
    width = opened.page.evaluate("[document.documentElement.scrollWidth, document.documentElement.clientWidth]")
    assert width[0] <= width[1] == 390, width  # the page itself does not scroll sideways
    for table in ("dim-table", "session-table"):
        box = opened.page.eval_on_selector(f"#{table}", "t => [t.parentElement.scrollWidth, "
                                           "t.parentElement.clientWidth, getComputedStyle(t.parentElement).overflowX]")
        assert box[0] > box[1] and box[2] == "auto", (table, box)  # its own box scrolls
    opened.clean(path)
