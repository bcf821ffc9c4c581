"""`batchcompact report` through click's CliRunner: exit codes, stdout, stderr."""

from __future__ import annotations

import csv
import io
import json

import polars as pl
import pytest
from click.testing import CliRunner
from conftest import fixture_path, required_module

from batchcompact.cli import cli


@pytest.fixture
def pi_dir():
    return fixture_path("pi", "large-session.jsonl").parent


def invoke(args):
    result = CliRunner().invoke(cli, ["report", *args], standalone_mode=False, catch_exceptions=False)
    return result


def test_json_rows_carry_required_fields(pi_dir, tmp_path):
    result = invoke([str(pi_dir), "--by", "model", "--format", "json", "--cache-dir", str(tmp_path)])
    assert result.return_value == 0
    doc = json.loads(result.stdout)
    assert doc["keys"] == ["model"]
    row = next(r for r in doc["rows"] if r["model"] == "claude-opus-4-5")
    for field in (
        "requests",
        "input_tokens",
        "output_tokens",
        "cache_read_tokens",
        "cache_write_tokens",
        "total_tokens",
        "cost_usd",
        "models",
    ):
        assert field in row
    # 13 and 14 aborted assistant messages carry no tokens at all and are left out
    assert row["requests"] == 484 - 13 and row["output_tokens"] == 187_895
    assert doc["totals"]["requests"] == (484 - 13) + (453 - 14)
    assert doc["dropped_zero_token_requests"] == 13 + 14
    assert "2 files: 2 parsed, 0 from cache" in result.stderr


def test_table_has_totals_row_and_second_run_uses_cache(pi_dir, tmp_path):
    first = invoke([str(pi_dir), "--by", "month", "--cache-dir", str(tmp_path)])
    assert first.return_value == 0
    lines = first.stdout.splitlines()
    assert lines[0].split()[:3] == ["month", "requests", "input"]
    assert lines[-1].startswith("TOTAL") and "910" in lines[-1]
    second = invoke([str(pi_dir), "--by", "month", "--cache-dir", str(tmp_path)])
    assert second.stdout == first.stdout
    assert "2 files: 0 parsed, 2 from cache" in second.stderr


def test_breakdown_csv_and_filters(tmp_path):
    codex = fixture_path("codex", "sessions")
    result = invoke(
        [
            str(codex),
            "--by",
            "day",
            "--breakdown",
            "--format",
            "csv",
            "--since",
            "2026-02-23",
            "--until",
            "20260223",
            "--no-cache",
        ]
    )
    assert result.return_value == 0
    rows = list(csv.DictReader(io.StringIO(result.stdout)))
    assert [(r["date"], r["model"]) for r in rows] == [("2026-02-23", "gpt-5.3-codex")]


def test_parquet_output_and_chart(tmp_path):
    claude = fixture_path("claude", "projects")
    out, chart = tmp_path / "r.parquet", tmp_path / "c.html"
    result = invoke(
        [
            str(claude),
            "--by",
            "project",
            "--format",
            "parquet",
            "--output",
            str(out),
            "--chart",
            str(chart),
            "--cache-dir",
            str(tmp_path / "cache"),
        ]
    )
    assert result.return_value == 0 and result.stdout == ""
    frame = pl.read_parquet(out)
    # projects are the sessions' working directories (from each line's cwd), not the folder slug
    worktree = frame.filter(pl.col("project") == "/home/USER/projects/spotter-worktrees/spotter-dov")
    assert worktree["requests"].to_list() == [139 + 11 + 1]  # main + Task sub-agent + compaction
    spotter = frame.filter(pl.col("project") == "/home/marco/projects/spotter")
    assert spotter["requests"].to_list() == [1 + 4]  # short + tool_heavy
    html = chart.read_text()  # --chart FILE.html is the page of --html
    assert html.startswith("<!DOCTYPE html>") and 'id="report-data"' in html and "claude-opus-4-6" in html


def test_source_filter_and_run_reports(tmp_path):
    from run_reports import run_rows, write_run_report

    write_run_report(tmp_path / "compactions-r1.parquet", run_rows())
    result = invoke(
        [
            str(tmp_path),
            "--source",
            "batchcompact",
            "--format",
            "json",
            "--cost-mode",
            "recorded",
            "--no-cache",
        ]
    )
    doc = json.loads(result.stdout)
    assert doc["totals"]["requests"] == 1 and doc["totals"]["cost_usd"] == pytest.approx(0.02)


def test_source_is_agent_under_its_older_name():
    """`--source` is `--agent` (docs/cli.md, "One word: agent"): the same rows; both given, the rows of
    either (one repeatable flag); its config key and environment variable still read."""
    from conftest import SAMPLES

    def rows(*args, env=None):
        result = CliRunner().invoke(cli, ["report", str(SAMPLES), "--by", "agent", "--format", "json",
                                          "--no-cache", "-q", *args], env=env)
        assert result.exit_code == 0, result.output
        return {row["agent"]: row["requests"] for row in json.loads(result.stdout)["rows"]}

    every = rows()
    one, other = sorted(every)[:2]
    assert rows("--source", one) == rows("--agent", one) == {one: every[one]}
    assert rows("--agent", one, "--source", other) == {one: every[one], other: every[other]}
    assert rows(env={"BATCHCOMPACT_REPORT_SOURCE": one}) == {one: every[one]}


def test_a_request_refuses_contradicting_options_when_it_is_built():
    """The library checks its own request (`ReportRequest`), as the command did: a caller of
    `produce_report` gets the same usage errors as `batchcompact report`."""
    from datetime import date

    from batchcompact.errors import UsageError
    from batchcompact.report.produce import ReportRequest
    from batchcompact.report.settings import ReportSettings

    with pytest.raises(UsageError, match="--by request writes one row per request: use --format"):
        ReportRequest(settings=ReportSettings(by="request"), fmt="table")
    with pytest.raises(UsageError, match="--last does not apply to --by request"):
        ReportRequest(settings=ReportSettings(by="request", last=2), fmt="jsonl")
    with pytest.raises(UsageError, match="--since 2026-02-02 is after --until 2026-01-01"):
        ReportRequest(settings=ReportSettings(since=date(2026, 2, 2), until=date(2026, 1, 1)))
    request = ReportRequest(paths=("a",), settings=ReportSettings(by="request"), fmt="jsonl")
    with pytest.raises(AttributeError):  # frozen: a value, as the command built it
        request.fmt = "table"  # type: ignore[misc]


def test_run_reports_narrow_no_discovery():
    """`--agent batchcompact` (the run reports, which have no places of their own) keeps every agent's places
    for discovery; a name with places narrows it to those."""
    from batchcompact.report.readers import RUN_REPORTS, agent_names, place_agents

    assert RUN_REPORTS in agent_names()
    assert place_agents((RUN_REPORTS,)) is None and place_agents(()) is None
    assert place_agents(("claude", RUN_REPORTS)) == ("claude",)


def test_usage_errors_exit_2(tmp_path, pi_dir):
    result = CliRunner().invoke(cli, ["report", str(pi_dir), "--since", "yesterday"])
    assert result.exit_code == 2 and "is not a date" in result.output
    result = CliRunner().invoke(cli, ["report", str(pi_dir), "--since", "2026-01-02", "--until", "2026-01-01"])
    assert result.exit_code == 2
    assert result.output.strip().splitlines()[-1] == (
        "Error: --since 2026-01-02 is after --until 2026-01-01: no day is in both; swap them?")
    assert CliRunner().invoke(cli, ["report", str(pi_dir), "--since", "2026-01-01", "--until", "2026-01-01",
                                    "--no-cache"]).exit_code == 0  # one day is a range
    result = CliRunner().invoke(cli, ["report", str(pi_dir), "--timezone", "Mars/Olympus"])
    assert result.exit_code == 2 and "unknown time zone" in result.output
    result = CliRunner().invoke(cli, ["report", str(pi_dir), "--format", "parquet", "--no-cache"])
    assert result.exit_code == 2 and "--format parquet needs --output FILE" in result.output
    empty = tmp_path / "empty"
    empty.mkdir()
    result = CliRunner().invoke(cli, ["report", str(empty), "--no-cache"])  # the group maps the error
    assert result.exit_code == 2 and "Error: no session files found" in result.stderr


def test_png_chart_without_matplotlib_names_the_extra(pi_dir, tmp_path, monkeypatch):
    import sys

    monkeypatch.setitem(sys.modules, "matplotlib", None)
    result = CliRunner().invoke(cli, ["report", str(pi_dir), "--chart", str(tmp_path / "c.png"), "--no-cache"])
    assert result.exit_code == 2
    assert "pip install 'batchcompact[chart]'" in result.stderr


def test_malformed_line_warning_goes_to_stderr(tmp_path):
    path = tmp_path / "proj" / "s.jsonl"
    path.parent.mkdir()
    good = {
        "type": "assistant",
        "sessionId": "s",
        "uuid": "u",
        "timestamp": "2026-01-01T00:00:00Z",
        "requestId": "r",
        "message": {
            "id": "m",
            "model": "claude-haiku-4-5",
            "usage": {"input_tokens": 10, "output_tokens": 5},
        },
    }
    path.write_text(json.dumps(good) + "\n" + '{"type":"assistant","usage":\n')
    result = invoke([str(path), "--format", "json", "--no-cache"])
    assert result.return_value == 0
    assert f"warning: {path}:2: invalid JSON" in result.stderr
    assert json.loads(result.stdout)["totals"]["requests"] == 1


def test_png_chart_with_matplotlib(pi_dir, tmp_path):
    """The real matplotlib (the `chart` extra, also in the `test` extra) draws a PNG."""
    required_module("matplotlib", "chart")
    out = tmp_path / "c.png"
    result = invoke([str(pi_dir), "--by", "month", "--chart", str(out), "--no-cache"])
    assert result.return_value == 0
    data = out.read_bytes()
    assert data[:8] == b"\x89PNG\r\n\x1a\n" and len(data) > 10_000


def _files_no_agent_wrote(folder):
    """An empty, a binary, a gzip and a JSON-lines file of no agent: what `validate` names one by one."""
    import gzip

    folder.mkdir(parents=True, exist_ok=True)
    (folder / "empty.jsonl").write_bytes(b"")
    (folder / "binary.jsonl").write_bytes(b"\x00\x01\xfe\xff" * 64)
    (folder / "packed.jsonl").write_bytes(gzip.compress(b'{"type": "session"}\n'))
    (folder / "other.jsonl").write_text('{"hello": "world"}\n{"x": 2}\n')
    return folder


@pytest.mark.parametrize("args", [
    ("--format", "json", "--no-cache"),  # the path without polars
    ("--format", "json", "--cache-above", "0"),  # the parts
    ("--by", "block", "--format", "json"),
])
def test_files_the_report_cannot_read_are_named_and_counted(pi_dir, tmp_path, args):
    """A report over files it cannot read used to print an empty table, exit 0, not a word even with -v."""
    import shutil

    archive = tmp_path / "archive"
    shutil.copytree(pi_dir, archive / "pi")
    _files_no_agent_wrote(archive / "odd")
    result = invoke([str(archive), *args, "--cache-dir", str(tmp_path / "cache")])
    alone = invoke([str(archive / "pi"), *args, "--no-cache"])
    assert result.return_value == 0 and json.loads(result.stdout)["totals"] == json.loads(alone.stdout)["totals"]
    odd = archive / "odd"
    assert [line for line in result.stderr.splitlines() if str(odd) in line] == [
        f"warning: {odd / 'binary.jsonl'}: binary, not UTF-8 JSONL text (byte 2)",
        f"warning: {odd / 'empty.jsonl'}: empty file: no session entries",
        f"warning: {odd / 'other.jsonl'}: not a session file of any agent batchcompact reports on",
        f"warning: {odd / 'packed.jsonl'}: gzip-compressed: decompress it first (gunzip), then run again",
    ]
    assert "6 files: 2 parsed, 0 from cache, 4 not read (named above)" in result.stderr
    again = invoke([str(archive), *args, "--cache-dir", str(tmp_path / "cache")])  # from the cache: the same
    assert again.stderr.splitlines()[-1].startswith("6 files: ")
    assert again.stderr.splitlines()[-1].endswith(", 4 not read (named above)")
    assert [w for w in again.stderr.splitlines() if w.startswith("warning")] == [
        w for w in result.stderr.splitlines() if w.startswith("warning")]


def test_a_plan_table_named_like_a_run_report_is_not_spend(tmp_path):
    """`plan -o compactions-x.parquet` (or a plan table renamed so) was read as a run report: its estimated
    cost was counted as spend. The schema decides, not the name."""
    from conftest import SAMPLES

    (tmp_path / "runs").mkdir()
    plan = CliRunner().invoke(cli, ["plan", str(SAMPLES / "claude"), "--force", "--summary-model", "gpt-4o-mini",
                                    "--format", "parquet", "-o", str(tmp_path / "runs" / "compactions-x.parquet")])
    assert plan.exit_code == 0, plan.output
    assert pl.read_parquet(tmp_path / "runs" / "compactions-x.parquet")["calls"].sum() > 0
    result = invoke([str(tmp_path / "runs"), "--format", "json", "--no-cache"])
    assert result.return_value == 0 and json.loads(result.stdout)["totals"]["requests"] == 0
    assert result.stderr.splitlines()[0] == (
        f"warning: {tmp_path / 'runs' / 'compactions-x.parquet'}: not a run report: batchcompact's 'plan' table, "
        "not `run`'s compactions (its numbers are not spend)")
    assert "1 file: 0 parsed, 0 from cache, 1 not read (named above)" in result.stderr


def test_a_retired_claude_id_is_priced_from_its_bedrock_v2_entry(tmp_path):
    """OpenCode's `claude-3-5-sonnet-20241022` is in litellm's map only as Bedrock's `...-v2:0`: it was
    unpriced ($0, flagged) because only -v1:0 and -v1 were tried; ccusage 20 prices it at $0.010935."""
    from conftest import shared_fixtures

    fixture = shared_fixtures() / "agents" / "opencode" / "tokscale-basic"
    result = invoke([str(fixture), "--by", "model", "--format", "json", "--no-cache"])
    assert result.return_value == 0 and "no price for" not in result.stderr
    (row,) = json.loads(result.stdout)["rows"]
    assert row["model"] == "claude-3-5-sonnet-20241022" and row["cost_usd"] == pytest.approx(0.010935, abs=1e-12)


@pytest.mark.parametrize(("by", "more"), [
    ("week", []), ("session", []), ("session", ["--last", "2"]), ("model", []), ("project", ["--order", "asc"]),
    ("agent", []), ("block", []), ("block", ["--agent", "codex"]), ("day", ["--breakdown", "--agent", "pi"]),
])
def test_the_chart_draws_the_table_s_rows(tmp_path, by, more, monkeypatch):
    """--chart drew per-day bars whatever --by said, over every agent while `--by block` reports Claude's:
    now a bar per row of the table, the same scope and total (what the PNG is drawn from)."""
    from conftest import SAMPLES

    from batchcompact.report import chart as chart_module

    drawn = []
    monkeypatch.setattr(chart_module, "write_png", lambda report, path: drawn.append(chart_module.chart_series(report)))
    chart = tmp_path / "c.png"
    result = invoke([str(SAMPLES), "--by", by, *more, "--format", "json", "--chart", str(chart),
                     "--cache-dir", str(tmp_path / "cache")])
    assert result.return_value == 0, result.stderr
    doc = json.loads(result.stdout)
    [(labels, models, series)] = drawn
    keys = [row[doc["keys"][0]] for row in doc["rows"] if not row.get("gap")]
    if by in ("week", "block", "day"):  # time left to right
        keys = sorted({k.replace("T", " ")[:16] if by == "block" else k for k in keys})
    else:
        keys = list(dict.fromkeys(keys))
    if by == "block":
        labels = [label.replace("T", " ")[:16] for label in labels]
    assert labels == keys and len(labels) >= 1
    total = sum(sum(values) for values in series.values())
    assert f"{total:,.2f}" == f"{doc['totals']['cost_usd']:,.2f}"


@pytest.mark.parametrize("args", [["--by", "block"], ["--format", "jsonl"], ["--format", "parquet"],
                                  ["--by", "model", "--chart", "c.html"]])
def test_cache_above_is_honoured_by_every_report(tmp_path, args, monkeypatch):
    """A small archive under --cache-above keeps no usage parts, whichever path makes the report (blocks,
    jsonl, parquet and a chart wrote one part per file); above it, they are kept."""
    from conftest import SAMPLES

    monkeypatch.chdir(tmp_path)
    out = ["-o", "r.parquet"] if "parquet" in args else []
    for above, kept in (("10GB", 0), ("0", len(list(SAMPLES.rglob("*.jsonl"))))):
        cache = tmp_path / f"cache-{above}"
        result = invoke([str(SAMPLES), *args, *out, "--cache-dir", str(cache), "--cache-above", above])
        assert result.return_value == 0, result.stderr
        assert len(list(cache.glob("usage-v*/*.parquet"))) == kept
