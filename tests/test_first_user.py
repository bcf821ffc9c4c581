"""What a new user found on a fresh clone (#56, items 1-11): each from the CLI, as the user typed it."""

from __future__ import annotations

import json
import os
import shutil
from pathlib import Path

import pytest
from conftest import SAMPLES, cli_invoker, fixture_path, required_module


@pytest.fixture
def bc(capsys, monkeypatch):
    return cli_invoker(capsys, monkeypatch)


@pytest.fixture
def samples(tmp_path) -> Path:
    """A fresh copy of sample_sessions, as a clone has it (every file modified a moment ago)."""
    copy = tmp_path / "sample_sessions"
    shutil.copytree(SAMPLES, copy)
    for path in copy.rglob("*"):
        os.utime(path)  # a clone writes every file now
    return copy


# -- 2. a free summarizer and --max-cost ------------------------------------------------------------------
def test_a_budget_of_zero_never_refuses_the_free_built_in(bc, samples, tmp_path):
    code, out, err = bc("run", samples, "--output-dir", tmp_path / "out", "--min-age", "0", "--max-cost", "0",
                        "--jobs", "1")
    assert code == 0, err
    assert "6 compacted" in out and "budget of" not in out + err


# -- 7. --breakdown by period: each period's models by cost -----------------------------------------------
@pytest.mark.parametrize("fmt", ["table", "json"])
@pytest.mark.parametrize("by", ["day", "week", "month"])
def test_a_period_s_models_are_ordered_by_cost(bc, by, fmt):
    code, out, err = bc("report", SAMPLES, "--by", by, "--breakdown", "--format", "json", "--no-cache")
    assert code == 0, err
    rows = json.loads(out)["rows"]
    periods = [row[by if by != "day" else "date"] for row in rows]
    assert periods == sorted(periods)
    for period in set(periods):
        costs = [row["cost_usd"] for row in rows if row[by if by != "day" else "date"] == period]
        assert costs == sorted(costs, reverse=True), (period, costs)
    assert len(rows) > len(set(periods))  # some period has two models
    if fmt == "table":  # the table (the fast engine, then the stored result) in the same order
        code, table, err = bc("report", SAMPLES, "--by", by, "--breakdown")
        models = [line.split()[1] for line in table.splitlines()[2:] if line[:4].isdigit()]
        assert models == [row["model"] for row in rows]


# -- 9. eval counts what it scored ----------------------------------------------------------------------
def test_eval_does_not_call_skipped_rows_scored(bc):
    path = SAMPLES / "pi" / "small-fix.jsonl"  # at 5% nothing comes before the cut: both rows are skipped
    code, out, err = bc("eval", path, "--cut-at", "5")
    assert code == 0, err
    assert "0 compactions scored, 2 rows; not scored: 1 nothing to summarize" in err
    code, out, err = bc("eval", path, "--cut-at", "5", "--format", "json")
    doc = json.loads(out)
    assert {row["status"] for row in doc["rows"]} == {"skipped"}
    assert doc["scored"] == 0
    assert list(doc["not_scored"].values()) == [1] and "nothing to summarize" in next(iter(doc["not_scored"]))


def test_eval_existing_says_as_many_scored_as_the_pooled_table(bc, samples, tmp_path):
    code, _, err = bc("run", samples, "--output-dir", tmp_path / "out", "--min-age", "0", "--jobs", "1")
    assert code == 0, err
    code, out, err = bc("eval", tmp_path / "out", "--existing")
    assert code == 0, err
    pooled = int(out.split("Pooled over the cuts (")[1].split(" ")[0])
    assert f"eval: {pooled} compactions scored" in err


# -- 10. a file the report could not read makes it incomplete ---------------------------------------------
def test_a_zst_rollout_without_zstandard_makes_the_report_incomplete(bc, tmp_path, monkeypatch):
    import sys

    zstandard = required_module("zstandard", "zstd")
    rollout = next((SAMPLES / "codex").rglob("*.jsonl"))
    path = tmp_path / "rollout-x.jsonl.zst"
    path.write_bytes(zstandard.ZstdCompressor().compress(rollout.read_bytes()))
    monkeypatch.setitem(sys.modules, "zstandard", None)
    for cache in ("--no-cache", None):  # the cold report, then the cached one
        code, out, err = bc("report", path, *([cache] if cache else []))
        assert code == 1, err
        warning = next(line for line in err.splitlines() if "zstandard" in line)
        assert warning == (f"warning: {path}: zstd-compressed transcript: install the zstandard package "
                           "(pip install 'batchcompact[zstd]')")  # the path once
        assert "warning: the report is incomplete: 1 file not read or cut short (named above); exit 1" in err


# -- 11. a --pricing file's bad value is said, by entry and field ------------------------------------------
@pytest.mark.parametrize("command", ["report", "plan"])
def test_a_bad_price_in_a_pricing_file_is_named(bc, tmp_path, command):
    prices = tmp_path / "prices.json"
    prices.write_text('{\n  "my-model": {\n    "input_cost_per_token": "free",\n    "output_cost_per_token": 0\n  }\n}\n')
    code, out, err = bc(command, SAMPLES / "pi" / "small-fix.jsonl", "--pricing", prices)
    assert code == 2, err
    assert err.strip().splitlines()[-1] == (
        f"Error: pricing file {prices}:3: 'my-model': input_cost_per_token is \"free\", not a number of USD "
        "(per token) >= 0")
    assert out == ""


# -- 4. every unknown key and section of the config file, with the nearest name -----------------------------
@pytest.mark.parametrize("command", [["config"], ["config", "run"], ["validate", str(SAMPLES / "pi" / "small-fix.jsonl")]])
def test_unknown_config_keys_and_sections_are_each_a_warning(bc, tmp_path, command):
    config = tmp_path / "config.toml"
    config.write_text('summary_budjet = 1500\nmin-age = "0"\n\n[reprot]\nby = "day"\n\n[run]\nsummary_budjet = 1500\n'
                      '\n[report]\nby = "day"\n\n[report.projcts]\na = "b"\n')
    code, out, err = bc("--config", config, *command)
    assert code == 0, err
    warnings = [line for line in err.splitlines() if line.startswith("warning:")]
    assert warnings == [
        f"warning: {config}: no command has an option 'summary_budjet'; did you mean 'summary-budget'?",
        f"warning: {config}: unknown section [reprot]; did you mean [report]? (the sections are the commands: "
        "batches, config, eval, plan, report, run, show, validate)",
        f"warning: {config}: [run] has no option 'summary_budjet'; did you mean 'summary-budget'? "
        "(see `batchcompact run --help`)",
        f"warning: {config}: [report] has no table [report.projcts]; did you mean [report.projects]?",
    ]


def test_a_config_file_every_command_knows_says_nothing(bc, tmp_path):
    config = tmp_path / "config.toml"
    config.write_text('min-age = "0"\nsummary_budget = 1500\n[report]\nby = "day"\n[report.projects]\na = "b"\n'
                      '[run]\nmax-cost = 2.0\n')
    code, out, err = bc("--config", config, "config")
    assert code == 0 and "warning" not in err, err


# -- 5. Droid's transcripts are reported, not compacted -------------------------------------------------------
def test_droid_transcripts_are_skipped_by_run_and_passed_over_by_report(bc, tmp_path):
    sessions = fixture_path("agents", "droid", "sessions")
    factory = tmp_path / "home" / ".factory"
    factory.mkdir(parents=True)
    shutil.copytree(sessions, factory / "sessions")
    code, out, err = bc("run", factory / "sessions", "--output-dir", tmp_path / "out", "--min-age", "0",
                        "--format", "json")
    assert code == 0, err
    rows = json.loads(out)["rows"]
    assert sorted(Path(r["input_path"]).name for r in rows) == ["droid_large.jsonl", "session-b.jsonl"]
    assert {(r["status"], r["reason"]) for r in rows} == {("skipped", "a Droid transcript: reported, not compacted")}
    for cache in ("--no-cache", None):
        code, out, err = bc("report", factory / "sessions", "--format", "json", *([cache] if cache else []))
        assert code == 0, err
        assert "warning" not in err, err  # Droid's own files, each known
        assert json.loads(out)["totals"]["requests"] == 3  # the three settings files


# -- 6. a session no cut can bring under its threshold is said so by plan, before any call ------------------
def test_a_last_message_above_the_window_is_skipped_by_plan_and_run(bc, tmp_path):
    from factories import Builder

    builder = Builder()
    for i in range(6):
        builder.user(f"step {i} " + "word " * 400)
        builder.assistant(f"done {i} " + "ok " * 400, usage=1000)
    builder.user("here is the log: " + "x1 y2 z3 " * 40_000)  # ~90k tokens alone, the window is 50k
    (tmp_path / "in").mkdir()
    path = builder.write(tmp_path / "in" / "huge.jsonl")
    window = ("--context-window", "50000")
    code, out, err = bc("plan", path, *window, "--format", "json")
    assert code == 0, err
    [row] = json.loads(out)["rows"]
    assert row["status"] == "skip" and row["calls"] == 0
    assert row["reason"].startswith("no cut brings it under the threshold (what it must keep, from line 14, is ~")
    assert row["reason"].endswith("tokens alone; threshold 33,616): nothing is summarized")
    code, out, err = bc("run", path, *window, "--output-dir", tmp_path / "out", "--min-age", "0", "--format", "json")
    assert code == 0, err
    [row] = json.loads(out)["rows"]
    assert row["status"] == "skipped" and row["calls"] == 0 and "no cut brings it under" in row["reason"]


# -- 8. report tables fit the terminal; piped, every value is whole ---------------------------------------
@pytest.mark.parametrize("by", ["session", "project", "day", "model"])
@pytest.mark.parametrize("columns", [72, 80, 100])
def test_report_tables_fit_the_terminal_width(bc, monkeypatch, by, columns):
    monkeypatch.setenv("COLUMNS", str(columns))  # what a terminal of that width says (stdout here is no tty)
    code, out, err = bc("report", SAMPLES, "--by", by)
    assert code == 0, err
    lines = out.rstrip("\n").splitlines()
    assert max(len(line) for line in lines) <= columns, out
    assert lines[-1].startswith("TOTAL") and lines[-1].endswith("$68.78")  # every number whole


def test_piped_report_tables_keep_every_value_whole(bc, monkeypatch):
    monkeypatch.delenv("COLUMNS", raising=False)
    code, out, err = bc("report", SAMPLES, "--by", "session")
    rows = json.loads(bc("report", SAMPLES, "--by", "session", "--format", "json")[1])["rows"]
    assert code == 0 and "…" not in out
    assert all(row["session_id"] in out and row["project"] in out for row in rows)


# -- 3. run --dry-run says what the run would do ---------------------------------------------------------
def _to_compact(out: str) -> int:
    line = next(line for line in out.splitlines() if line.startswith("to compact: "))
    return int(line.split()[2])


def test_the_dry_run_says_what_the_run_does(bc, samples, tmp_path):
    out_dir = ("--output-dir", tmp_path / "out")
    # a fresh clone: every file was modified a moment ago, under run's default --min-age of 10m
    code, out, err = bc("run", samples, *out_dir, "--dry-run")
    assert code == 0, err
    assert _to_compact(out) == 0 and "9 modified within --min-age 10m (live?)" in out
    code, out, err = bc("run", samples, *out_dir)
    assert code == 0 and "nothing compacted: all 9 sessions were modified within --min-age 10m" in out, out + err
    # --limit: the dry run compacts as many as the run
    code, out, err = bc("run", samples, *out_dir, "--min-age", "0", "--limit", "2", "--dry-run")
    assert _to_compact(out) == 2 and "4 --limit N reached" in out, out
    code, out, err = bc("run", samples, *out_dir, "--min-age", "0", "--limit", "2", "--format", "json")
    assert code == 0 and json.loads(out)["by_status"]["compacted"] == 2, err
    # earlier runs: what they finished is not compacted again
    code, out, err = bc("run", samples, *out_dir, "--min-age", "0", "--dry-run")
    assert _to_compact(out) == 4 and "2 finished in an earlier run (compacted)" in out, out
    code, out, err = bc("run", samples, *out_dir, "--min-age", "0", "--format", "json")
    assert json.loads(out)["by_status"]["compacted"] == 4, err
    code, out, err = bc("run", samples, *out_dir, "--min-age", "0", "--dry-run")
    assert _to_compact(out) == 0, out


def test_plan_takes_min_age(bc, samples):
    code, out, err = bc("plan", samples, "--min-age", "1h", "--format", "json")
    assert code == 0, err
    rows = json.loads(out)["rows"]
    assert len(rows) == 9 and {r["status"] for r in rows} == {"skip"}
    assert all(r["reason"].endswith("under --min-age (live session?)") for r in rows)
    code, out, err = bc("plan", samples)  # plan's default: 0, every file planned
    assert _to_compact(out) == 6
