"""What ccusage users expect from `report`: billing blocks, --last, --order, --start-of-week, --project,
--session, first/last activity, the compact table."""

from __future__ import annotations

import json
from datetime import UTC, date, datetime
from pathlib import Path

import pytest
from click.testing import CliRunner

from batchcompact.cli import cli
from batchcompact.report import ReportSettings, run_report
from batchcompact.report.render import render_table

USAGE = {"input_tokens": 100, "output_tokens": 50, "cache_read_input_tokens": 0, "cache_creation_input_tokens": 0}


def claude_session(path: Path, session: str, cwd: str, times: list[str], usage: dict = USAGE) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    with open(path, "a", encoding="utf-8") as fh:
        for when in times:
            fh.write(
                json.dumps(
                    {
                        "type": "assistant",
                        "sessionId": session,
                        "cwd": cwd,
                        "uuid": f"{session}-{when}",
                        "requestId": f"req-{session}-{when}",
                        "timestamp": when,
                        "message": {"id": f"msg-{session}-{when}", "model": "claude-sonnet-4-5", "usage": usage},
                    }
                )
                + "\n"
            )
    return path


@pytest.fixture
def archive(tmp_path) -> Path:
    root = tmp_path / "projects"
    claude_session(root / "-work-api" / "a.jsonl", "aaaa1111", "/work/api",
                   ["2026-03-02T08:10:00Z", "2026-03-02T09:10:00Z", "2026-03-02T14:00:00Z"])
    claude_session(root / "-work-web" / "b.jsonl", "bbbb2222", "/work/web",
                   ["2026-03-08T23:30:00Z", "2026-03-09T00:30:00Z"])
    claude_session(root / "-work-api" / "c.jsonl", "cccc3333", "/work/api", ["2026-03-16T12:00:00Z"])
    return root


def report(archive: Path, **settings):
    result, _ = run_report([archive], ReportSettings(**settings), use_cache=False)
    return result


def test_blocks_follow_the_five_hour_rules(archive):
    rows = report(archive, by="block").rows.to_dicts()
    summary = [(r["block_start"].isoformat(), r["status"], r["requests"]) for r in rows]
    assert summary == [
        # 08:10 opens a block at 08:00; 09:10 is inside; 14:00 is 6h after its start: a new block
        ("2026-03-02T08:00:00+00:00", "", 2),
        ("2026-03-02T14:00:00+00:00", "", 1),
        ("2026-03-02T19:00:00+00:00", "gap", 0),  # more than 5 hours without a request
        ("2026-03-08T23:00:00+00:00", "", 2),
        ("2026-03-09T05:30:00+00:00", "gap", 0),
        ("2026-03-16T12:00:00+00:00", "", 1),
    ]
    assert rows[0]["block_end"] == datetime(2026, 3, 2, 13, tzinfo=UTC)
    assert rows[2]["block_end"] == datetime(2026, 3, 8, 23, 30, tzinfo=UTC)


def test_active_block_has_burn_rate_projection_and_limit_status(archive):
    now = datetime(2026, 3, 16, 13, 0, tzinfo=UTC)
    claude_session(archive / "-work-api" / "c.jsonl", "cccc3333", "/work/api", ["2026-03-16T12:30:00Z"])
    result = report(archive, by="block", now=now, token_limit="max")
    active = [r for r in result.rows.to_dicts() if r["active"]]
    assert len(active) == 1
    block = active[0]
    assert (block["requests"], block["total_tokens"], block["remaining_minutes"]) == (2, 300, 240)
    assert block["burn_tokens_per_minute"] == pytest.approx(300 / 30)
    assert block["projected_total_tokens"] == 300 + 10 * 240
    assert block["burn_cost_per_hour"] == pytest.approx(block["cost_usd"] / 30 * 60)
    # "max" = the largest finished block: 2 requests of 150 tokens
    assert block["token_limit"] == 300 and block["limit_percent"] == pytest.approx(100.0)
    assert block["limit_status"] == "exceeds"
    text = render_table(result)
    assert "Active block since 2026-03-16 12:00: 240 min left" in text
    assert "burn rate   10 tokens/min" in text and "% limit" in text
    numeric = report(archive, by="block", now=now, token_limit="10000")
    assert [r for r in numeric.rows.to_dicts() if r["active"]][0]["limit_status"] == "ok"


def test_blocks_are_claude_only_unless_sources_are_given(archive, fixtures_dir):
    codex = fixtures_dir / "codex" / "sessions"
    result, _ = run_report([archive, codex], ReportSettings(by="block"), use_cache=False)
    assert result.totals["requests"] == 6


def test_last_periods_count_back_from_today(archive):
    now = datetime(2026, 3, 16, 18, 0, tzinfo=UTC)
    days = report(archive, by="day", last=8, now=now)
    assert days.rows["date"].to_list() == ["2026-03-09", "2026-03-16"]
    weeks = report(archive, by="week", last=2, now=now)  # this week (from Mon 16th) and the one before
    assert weeks.rows["week"].to_list() == ["2026-03-09", "2026-03-16"]
    assert weeks.totals["requests"] == 2
    months = report(archive, by="month", last=1, now=now)
    assert months.totals["requests"] == 6


def test_last_on_groups_keeps_the_latest_and_totals_follow(archive):
    result = report(archive, by="session", last=2)
    assert sorted(result.rows["session_id"].to_list()) == ["bbbb2222", "cccc3333"]
    assert result.totals["requests"] == 3


def test_start_of_week(archive):
    monday = report(archive, by="week")
    sunday = report(archive, by="week", start_of_week="sunday")
    assert monday.rows["week"].to_list() == ["2026-03-02", "2026-03-09", "2026-03-16"]
    # Sun 8 March 23:30 starts a Sunday week; Mon 9 00:30 belongs to it too
    assert sunday.rows["week"].to_list() == ["2026-03-01", "2026-03-08", "2026-03-15"]
    assert sunday.rows["requests"].to_list() == [3, 2, 1]


def test_order(archive):
    assert report(archive, by="day", order="desc").rows["date"].to_list()[0] == "2026-03-16"
    sessions = report(archive, by="session", order="asc").rows["session_id"].to_list()
    assert sessions == ["aaaa1111", "bbbb2222", "cccc3333"]  # by last activity
    assert report(archive, by="session", order="desc").rows["session_id"].to_list() == sessions[::-1]


def test_project_and_session_filters(archive):
    by_name = report(archive, by="session", projects=("api",))
    by_path = report(archive, by="session", projects=("/work/api/",))
    assert sorted(by_name.rows["session_id"].to_list()) == ["aaaa1111", "cccc3333"]
    assert by_path.rows.equals(by_name.rows)
    assert report(archive, projects=("ap",)).totals["requests"] == 0  # not a substring match
    assert report(archive, by="session", sessions=("bbbb",)).rows["session_id"].to_list() == ["bbbb2222"]


def test_session_rows_show_real_directories_and_activity(archive):
    result = report(archive, by="session", timezone="Europe/Berlin")
    row = result.rows.filter(result.rows["session_id"] == "aaaa1111").to_dicts()[0]
    assert row["project"] == "/work/api"
    assert (row["first_timestamp"], row["last_timestamp"]) == (
        datetime(2026, 3, 2, 8, 10, tzinfo=UTC),
        datetime(2026, 3, 2, 14, 0, tzinfo=UTC),
    )
    text = render_table(result)
    assert "first" in text.splitlines()[0] and "2026-03-02 09:10" in text  # shown in the report's zone


def test_compact_table_is_narrow(archive):
    result = report(archive, by="session")
    wide, narrow = render_table(result), render_table(result, compact=True)
    assert max(map(len, narrow.splitlines())) < 80 < max(map(len, wide.splitlines()))
    assert narrow.splitlines()[0].split() == ["session_id", "agent", "project", "input", "output", "total", "cost", "USD"]


def test_cli_options_end_to_end(archive, tmp_path):
    args = ["report", str(archive), "--no-cache", "--by", "session", "--order", "desc", "--last", "2",
            "--project", "api", "--format", "json"]
    result = CliRunner().invoke(cli, args)
    assert result.exit_code == 0, result.output
    doc = json.loads(result.stdout)
    assert [r["session_id"] for r in doc["rows"]] == ["cccc3333", "aaaa1111"]
    blocks = CliRunner().invoke(cli, ["report", str(archive), "--no-cache", "--by", "block", "--token-limit", "max",
                                      "--compact"])
    assert blocks.exit_code == 0, blocks.output
    assert blocks.stdout.splitlines()[0].split()[:3] == ["block", "start", "end"]
    bad = CliRunner().invoke(cli, ["report", str(archive), "--by", "block", "--token-limit", "lots"])
    assert bad.exit_code == 2 and "--token-limit" in bad.output


def test_zero_token_requests_are_counted_under_verbose(tmp_path):
    path = claude_session(tmp_path / "p" / "z.jsonl", "zero", "/w", ["2026-01-01T00:00:00Z"],
                          usage={"input_tokens": 0, "output_tokens": 0})
    claude_session(path, "zero", "/w", ["2026-01-02T00:00:00Z"])
    result = CliRunner().invoke(cli, ["-v", "report", str(path), "--no-cache"])
    assert result.exit_code == 0, result.output
    assert "1 request with no tokens left out" in result.stderr
    assert "2026-01-01" not in result.stdout and "2026-01-02" in result.stdout


def test_since_is_a_date(archive):
    assert report(archive, since=date(2026, 3, 8)).totals["requests"] == 3
