"""The cold report without polars (report/fast.py) writes the same bytes as the polars path.

Both paths run over the shared fixtures (every agent's reader), the sample sessions and a run report, for every
grouping the fast path takes, with and without --breakdown, each order, two time zones, a week that
starts on Sunday and each cost mode, in every format it takes; the outputs must be byte-identical.
"""

from __future__ import annotations

import json
import random
import subprocess
import sys
from datetime import date, timedelta

import polars as pl
import pytest
from click.testing import CliRunner
from conftest import SAMPLES, shared_fixtures
from report_variants import VARIANTS, filter_variants, outputs
from run_reports import run_rows, write_run_report

from batchcompact.cli import cli
from batchcompact.report import fast, fast_collect, row_list
from batchcompact.report.aggregate import build_report
from batchcompact.report.collect import collect_usage
from batchcompact.report.dimensions import FAST_GROUPINGS
from batchcompact.report.settings import ReportSettings


@pytest.fixture(scope="module", params=["fixtures", "samples", "runs"])
def corpus(request, tmp_path_factory):
    if request.param == "runs":  # batchcompact's own run reports (Parquet) beside the sample sessions
        runs = tmp_path_factory.mktemp("runs")
        write_run_report(runs / "compactions-r1.parquet", run_rows())
        paths = [runs, SAMPLES]
    else:
        paths = [shared_fixtures()] if request.param == "fixtures" else [SAMPLES]
    slow = collect_usage(paths, use_cache=False)
    quick = fast_collect.collect_rows(paths)
    quick.paths = paths  # for the tests that extract again
    yield request.param, slow, quick
    slow.cleanup()


@pytest.mark.parametrize("by", FAST_GROUPINGS)
def test_fast_report_is_byte_identical_to_the_polars_report(corpus, by):
    name, slow, quick = corpus
    assert quick.files == slow.files and quick.extracted == slow.extracted > 0
    assert quick.warnings == slow.warnings
    assert len(quick.rows) == sum(s["rows"] for s in slow.stats) > 0
    checked = 0
    for variant in VARIANTS:
        settings = ReportSettings(by=by, **variant)
        assert fast.supported(settings, "json")
        expected = outputs(build_report(slow.parts, settings))
        got = outputs(fast.build_report(quick.rows, settings))
        for fmt, text in expected.items():
            assert got[fmt] == text, f"{name} --by {by} {variant} {fmt}"
        checked += len(json.loads(expected["json"])["rows"])
    assert checked > len(VARIANTS)  # real groups were compared, not empty reports


@pytest.mark.parametrize("by", FAST_GROUPINGS)
def test_fast_report_filters_are_byte_identical_to_the_polars_report(corpus, by):
    name, slow, quick = corpus
    selective = 0
    for variant in filter_variants(quick.rows):
        settings = ReportSettings(by=by, **variant)
        assert fast.supported(settings, "csv")
        expected = outputs(build_report(slow.parts, settings))
        got = outputs(fast.build_report(quick.rows, settings))
        for fmt, text in expected.items():
            assert got[fmt] == text, f"{name} --by {by} {variant} {fmt}"
        requests = json.loads(expected["json"])["totals"].get("requests", 0)
        selective += 0 < requests < len(quick.rows)
    assert selective >= 3  # the filters really kept some rows and left others out


def test_fast_report_keeps_row_order_independent_of_file_order(corpus):
    _, _, quick = corpus
    rows = quick.rows[:]
    random.Random(5).shuffle(rows)
    for by in FAST_GROUPINGS:
        settings = ReportSettings(by=by, breakdown=True)
        assert outputs(fast.build_report(rows, settings)) == outputs(fast.build_report(quick.rows, settings))


def test_only_the_supported_options_take_the_fast_path():
    assert fast.supported(ReportSettings(by="day"), "table")
    assert not fast.supported(ReportSettings(by="block"), "table")
    assert not fast.supported(ReportSettings(by="day"), "parquet")
    assert not fast.supported(ReportSettings(by="day"), "jsonl")
    assert fast.supported(ReportSettings(by="day", since=date(2026, 1, 1), agents=("claude",)), "json")
    assert fast.supported(ReportSettings(by="session", last=3), "json")
    assert not fast.supported(ReportSettings(by="block", last=2), "json")


@pytest.mark.parametrize("recorded", [float("nan"), float("inf"), -float("inf"), 1e10])
def test_an_unpriceable_cost_falls_back_to_polars(tmp_path, recorded):
    """A recorded cost that is not a finite number, or beyond Int64 picodollars: fast.py will not guess what
    polars makes of it; the CLI takes the polars path."""
    rows = [("pi", "pi", "s", "/p", None, "openai", "gpt-4o-mini", "main", None, 0, 1, 1, 0, 0, 0, 0, 2, recorded, None, None, None)]
    with pytest.raises(fast.Unsupported, match="not a finite number" if recorded != 1e10 else "beyond Int64"):
        fast.build_report(rows, ReportSettings(by="day"))


def test_csv_floats_are_written_as_polars_writes_them():
    rng = random.Random(3)
    values = [rng.random() * 10 ** rng.randint(-12, 22) * rng.choice((1, -1)) for _ in range(5000)]
    values += [0.0, 1.0, 1e-5, 1.5e-5, 9.99e-5, 1e-4, 1e-6, 1e16, 1e15, 5e-324]
    expected = pl.DataFrame({"c": values}).write_csv().splitlines()[1:]
    assert [row_list.csv_float(v) for v in values] == expected


def test_cold_cli_report_imports_neither_polars_nor_pyarrow(tmp_path):
    script = (
        "import sys\n"
        "from batchcompact.cli import cli\n"
        "try:\n"
        f"    cli(['report', '--no-cache', {str(SAMPLES)!r}, '--by', 'model', '--format', 'json'])\n"
        "except SystemExit as exc:\n"
        "    assert not exc.code, exc.code\n"
        "loaded = sorted(m for m in ('polars', 'pyarrow', 'numpy') if m in sys.modules)\n"
        "print('LOADED', loaded, file=sys.stderr)\n"
    )
    done = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    assert "LOADED []" in done.stderr
    assert json.loads(done.stdout)["rows"]


def report_both_ways(tmp_path, paths, *args) -> tuple:
    """The CLI report of `paths` (json unless `args` say) from the path without polars (`--no-cache`) and
    from the polars path: the parts, written by a first report with other options (the first report of an
    archive takes the path without polars and writes them), then read (`0 parsed, N from cache`)."""
    runner = CliRunner()
    args = tuple(map(str, args))
    cache = ["--cache-dir", str(tmp_path / "cache"), "--cache-above", "0"]
    cold = runner.invoke(cli, ["report", *map(str, paths), *args, "--no-cache"], catch_exceptions=False)
    first = runner.invoke(cli, ["report", *map(str, paths), "--by", "month", "--format", "csv", *cache],
                          catch_exceptions=False)
    parts = runner.invoke(cli, ["report", *map(str, paths), *args, *cache], catch_exceptions=False)
    assert cold.exit_code == first.exit_code == parts.exit_code == 0, parts.output
    assert " 0 from cache" in first.stderr and " 0 parsed, " in parts.stderr and "stored report" not in parts.stderr
    return cold.stdout, parts.stdout


def test_cold_cli_report_matches_the_cached_report(tmp_path):
    """The CLI end to end: --no-cache (the path without polars) and the parts (polars) print the same bytes.
    (Both runs took fast.py before: a fresh cache's first report is made without polars too.)"""
    cold, cached = report_both_ways(tmp_path, [SAMPLES], "--by", "session", "--format", "table")
    assert cold == cached and cold.count("\n") > 4


def _claude_line(message: str, request: str, side: bool, cache_read: int, output: int, *, when: str,
                 inputs: int = 0, model: str = "claude-sonnet-4-5") -> str:
    return json.dumps({
        "type": "assistant", "sessionId": "s", "uuid": f"{message}{request}", "isSidechain": side,
        "requestId": request, "timestamp": when, "cwd": "/w",
        "message": {"id": message, "model": model, "usage": {
            "input_tokens": inputs, "output_tokens": output, "cache_read_input_tokens": cache_read}},
    }) + "\n"


def test_a_sidechain_replay_counts_once_on_both_paths(tmp_path):
    """A /btw side conversation replays the parent's message under a new request id: only the main-line
    copy counts (rules.REPLAY_ORDER: fast.deduplicated and aggregate's collapse). Keeping
    every copy gives 3 requests and 50,720 cache-read tokens."""
    folder = tmp_path / "projects" / "-w"
    (folder / "s" / "subagents").mkdir(parents=True)
    (folder / "s.jsonl").write_text(_claude_line("msg-parent", "req-parent", False, 20, 10, when="2026-03-29T07:00:00Z"))
    (folder / "s" / "subagents" / "agent-aside.jsonl").write_text(
        _claude_line("msg-parent", "req-replay", True, 50_000, 10, when="2026-03-29T07:01:00Z")
        + _claude_line("msg-answer", "req-answer", True, 700, 30, when="2026-03-29T07:02:00Z"))
    for out in report_both_ways(tmp_path, [tmp_path / "projects"], "--by", "session", "--format", "json"):
        totals = json.loads(out)["totals"]
        assert (totals["requests"], totals["cache_read_tokens"], totals["output_tokens"]) == (2, 720, 40)


def test_a_prompt_exactly_at_a_tier_threshold_takes_the_base_price(tmp_path):
    """A tier applies when the prompt EXCEEDS its threshold (`*_above_200k_tokens`): 200,000 prompt tokens
    cost the base rate, 200,001 the tier's, on both paths."""
    prices = tmp_path / "prices.json"
    prices.write_text(json.dumps({"tier-model": {
        "litellm_provider": "anthropic", "input_cost_per_token": 1e-6, "output_cost_per_token": 2e-6,
        "cache_read_input_token_cost": 1e-7, "input_cost_per_token_above_200k_tokens": 3e-6,
        "output_cost_per_token_above_200k_tokens": 4e-6, "cache_read_input_token_cost_above_200k_tokens": 5e-7}}))
    session = tmp_path / "projects" / "-w" / "s.jsonl"
    session.parent.mkdir(parents=True)
    session.write_text(  # prompt = input + cache read
        _claude_line("m-at", "r-at", False, 150_000, 10, inputs=50_000, when="2026-03-29T07:00:00Z",
                     model="tier-model")
        + _claude_line("m-over", "r-over", False, 150_000, 10, inputs=50_001, when="2026-03-29T07:01:00Z",
                       model="tier-model"))
    at = 50_000 * 1e-6 + 150_000 * 1e-7 + 10 * 2e-6
    over = 50_001 * 3e-6 + 150_000 * 5e-7 + 10 * 4e-6
    for out in report_both_ways(tmp_path, [session], "--by", "session", "--format", "json", "--pricing", prices,
                                "--cost-mode", "calculate"):
        (row,) = json.loads(out)["rows"]
        assert row["requests"] == 2 and row["cost_usd"] == pytest.approx(at + over, abs=1e-12)


@pytest.mark.parametrize("by", ["day", "session", "model"])
def test_rows_priced_by_the_workers_give_the_report_priced_here(corpus, by):
    """`collect_rows(settings=...)`: two worker processes price and key their own rows (Builder.prepare);
    the report equals the one from rows priced in this process, byte for byte."""
    from batchcompact.pricing import PriceTable

    name, _, quick = corpus
    paths = quick.paths
    for variant in VARIANTS[:3]:
        settings = ReportSettings(by=by, **variant)
        table = PriceTable.load(settings.pricing_file)
        builder = fast.Builder(settings, table)
        fed = []

        def take(rows, unpriced, builder=builder, fed=fed):
            fed.append(unpriced is not None)
            builder.feed(rows) if unpriced is None else builder.absorb(rows, unpriced)

        fast_collect.collect_rows(paths, jobs=2, on_rows=take, settings=settings)
        assert fed and all(fed)  # every file's rows came priced from a worker
        expected = outputs(fast.build_report(quick.rows, settings, table))
        assert outputs(builder.report()) == expected, f"{name} --by {by} {variant}"
        assert builder.report().unpriced_models == fast.build_report(quick.rows, settings, table).unpriced_models


_PARENT: list[int] = []


def _dies_in_a_worker(path: str, *more):
    """fast_collect.file_rows, except that a worker process dies on the fourth file (a top-level function: the
    pool sends it to the workers by name)."""
    import os

    if os.getpid() not in _PARENT and os.path.basename(path).startswith("03-"):
        os._exit(9)
    return _REAL_FILE_ROWS(path, *more)


_REAL_FILE_ROWS = fast_collect.file_rows


def test_a_worker_that_dies_leaves_its_files_to_this_process(monkeypatch, tmp_path):
    """A killed extraction worker breaks the pool: the files not yet returned are extracted here, and the
    report is the one a single process makes."""
    import os

    from batchcompact.pricing import PriceTable

    archive = tmp_path / "archive"
    for n, source in enumerate(sorted(SAMPLES.rglob("*.jsonl"))):
        target = archive / f"{n:02d}-{source.name}"
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_bytes(source.read_bytes())
    _PARENT[:] = [os.getpid()]
    monkeypatch.setattr(fast_collect, "file_rows", _dies_in_a_worker)
    settings = ReportSettings(by="day")
    table = PriceTable.load(None)
    builder = fast.Builder(settings, table)
    fed = []

    def take(rows, unpriced):
        fed.append(unpriced is not None)
        builder.feed(rows) if unpriced is None else builder.absorb(rows, unpriced)

    collected = fast_collect.collect_rows([archive], jobs=2, settings=settings, on_rows=take)
    alone = fast_collect.collect_rows([archive], jobs=1)
    assert collected.extracted == alone.extracted == len(list(archive.iterdir()))
    assert not all(fed)  # some files were extracted (and priced) here after the pool broke
    assert outputs(builder.report()) == outputs(fast.build_report(alone.rows, settings, table))


@pytest.mark.parametrize(("zone", "by"), [
    *((zone, "day") for zone in ("UTC", "Asia/Kolkata", "Asia/Kathmandu", "America/St_Johns", "Australia/Lord_Howe",
                                 "America/Santiago", "Pacific/Chatham", "Europe/Berlin", "America/Havana")),
    ("America/Santiago", "week"), ("Australia/Lord_Howe", "month"),
])
def test_period_labels_cached_per_quarter_hour_are_each_timestamps_own(zone, by):
    """Every 20 minutes and 13 seconds across a year (DST starts and ends, half- and quarter-hour offsets,
    a 30-minute DST shift, transitions at midnight), in time order and shuffled: the cached label is the
    one computed from the timestamp alone."""
    from datetime import UTC, datetime

    periods = fast.Periods(zone, by, "monday")
    start = datetime(2025, 1, 1, tzinfo=UTC)
    times = [start + timedelta(seconds=1213 * i) for i in range(365 * 24 * 3600 // 1213)]
    shuffled = random.Random(7).sample(times, len(times))
    assert [periods.label(t) for t in times] == [periods._label(t) for t in times]
    assert [periods.label(t) for t in shuffled] == [periods._label(t) for t in shuffled]
    assert zone == "UTC" or len(periods.buckets) > 20_000  # the cache was used
