"""Claude Science (batchcompact/agents/science): its metadata database `operon-cli.db`, built here as ccusage's
own tests build it (tests/data/science/NOTICE: the `frames` and `projects` tables of ccusage's
`create_fixture` and the fourth frame of its session snapshot; Claude Science is a desktop app on neither npm
nor PyPI and no real database is public), laid out under ~/.claude-science and read from the CLI in every
--by and format: one row per frame, the conversation (`root_frame_id`) as its session, `input_tokens` read
as including the cache, the routing prefix dropped from the model, `total_cost` the recorded cost, the
auxiliary counters as a row of their own, `$CLAUDE_SCIENCE_DB`, and bad input named with its table and
rowid. The totals are compared with the ones ccusage's snapshots assert."""

from __future__ import annotations

import json
import sqlite3
from pathlib import Path

import pytest
from agent_reports import FIELDS, agent_report, agent_rows, every_format, summed
from click.testing import CliRunner
from science_db import COLUMNS, SCHEMA, add_frames, write_db

from batchcompact.cli import cli
from batchcompact.discover import discover_sources

# ours: input_tokens includes the cache reads and writes, so input = input - cache read - cache write
SESSIONS = {
    "frame-1": {"requests": 2, "input_tokens": 60 + 130, "output_tokens": 30, "cache_read_tokens": 65,
                "cache_write_tokens": 45, "total_tokens": 330},
    "frame-3": {"requests": 1, "input_tokens": 40, "output_tokens": 5, "cache_read_tokens": 10,
                "cache_write_tokens": 0, "total_tokens": 55},
    "frame-4": {"requests": 1, "input_tokens": 35, "output_tokens": 4, "cache_read_tokens": 5,
                "cache_write_tokens": 0, "total_tokens": 44},
}
TOTAL = {k: sum(s[k] for s in SESSIONS.values()) for k in ("requests", *FIELDS)}
# what ccusage's snapshots assert (claude_science_cli__claude_science_cli_{daily,session}_table.snap):
# (input, output, cache create, cache read, total); its input is `input_tokens` as written
CCUSAGE_DAILY = {"2099-01-02": (100, 10, 15, 25, 150), "2099-01-15": (200, 20, 30, 40, 290),
                 "2099-02-01": (50, 5, 0, 10, 65)}
CCUSAGE_SESSIONS = {"frame-1": (300, 30, 45, 65, 440), "frame-3": (50, 5, 0, 10, 65), "frame-4": (40, 4, 0, 5, 49)}


@pytest.fixture
def home(tmp_path, monkeypatch) -> Path:
    home = tmp_path / "home"
    write_db(home / ".claude-science" / "cs-switch-proxy" / "orgs" / "test-org" / "operon-cli.db")
    monkeypatch.delenv("CLAUDE_SCIENCE_DB", raising=False)
    monkeypatch.setenv("HOME", str(home))
    for name in ("XDG_CONFIG_HOME", "XDG_DATA_HOME"):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "cache"))
    return home


def rows_by(by: str, *args: str) -> list[dict]:
    return agent_rows("science", by, *args)[0]


def test_sessions_projects_models_and_recorded_cost(home):
    orgs = home / ".claude-science" / "cs-switch-proxy" / "orgs"
    assert [(s.agent, s.path) for s in discover_sources(report=True) if s.agent == "science"] == [("science", orgs)]
    out, err = agent_report("science", "--by", "session", "--format", "json")
    assert f"reading science: {orgs}" in err and "warning" not in err.lower()
    rows = {r["session_id"]: r for r in json.loads(out)["rows"]}
    assert {k: {f: r[f] for f in ("requests", *FIELDS)} for k, r in rows.items()} == SESSIONS
    assert {k: r["cost_usd"] for k, r in rows.items() if k != "frame-4"} == pytest.approx({"frame-1": 1.5,
                                                                                           "frame-3": 0.25})
    assert {k: r["project"] for k, r in rows.items()} == {"frame-1": "alpha", "frame-3": "beta", "frame-4": "unknown"}
    # the routing prefix is dropped: frame-2 is priced and grouped as claude-sonnet-4-5
    assert rows["frame-1"]["models"] == ["claude-sonnet-4-5"]
    requests = {r["request_id"]: r for r in rows_by("request")}
    assert set(requests) == {"science:frame-1", "science:frame-2", "science:frame-3", "science:frame-4"}
    assert requests["science:frame-2"]["timestamp"].startswith("2099-01-15T12:00:00")
    assert requests["science:frame-2"]["recorded_cost_usd"] == 1.0


@pytest.mark.parametrize("by", ["day", "week", "month", "session", "project", "model", "provider", "agent",
                                "machine", "branch", "request"])
def test_every_by_counts_each_frame_once(home, by):
    assert summed(rows_by(by)) == TOTAL


def test_by_day_model_and_project(home):
    assert {r["date"]: r["total_tokens"] for r in rows_by("day")} == {"2099-01-02": 110, "2099-01-15": 220,
                                                                      "2099-02-01": 55, "2099-03-01": 44}
    assert {r["model"]: r["requests"] for r in rows_by("model")} == {"claude-sonnet-4-5": 3, "claude-opus-4-6": 1}
    assert {r["provider"]: r["requests"] for r in rows_by("provider")} == {"anthropic": 4}
    assert {r["project"]: r["total_tokens"] for r in rows_by("project")} == {"alpha": 330, "beta": 55, "unknown": 44}


def test_parity_with_the_totals_ccusage_asserts(home):
    """Output and both cache counters equal ccusage's per day and per session; its input is `input_tokens` as
    written, cache included, so ours plus the cache is its input, and its total counts the cache twice."""
    days = {r["date"]: r for r in rows_by("day", "--until", "2099-02-28")}
    sessions = {r["session_id"]: r for r in rows_by("session")}
    for ours, theirs in ((days, CCUSAGE_DAILY), (sessions, CCUSAGE_SESSIONS)):
        assert set(ours) == set(theirs)
        for key, (c_input, c_output, c_write, c_read, c_total) in theirs.items():
            row = ours[key]
            assert (row["output_tokens"], row["cache_write_tokens"], row["cache_read_tokens"]) == (
                c_output, c_write, c_read)
            assert row["input_tokens"] + c_read + c_write == c_input
            assert row["total_tokens"] == c_total - c_read - c_write
    assert summed(list(days.values()))["total_tokens"] == 505 - 75 - 45  # ccusage's daily total: 505
    assert summed(list(sessions.values()))["total_tokens"] == 554 - 80 - 45  # its session total: 554


def test_cost_modes(home):
    recorded = {r["date"]: r["cost_usd"] for r in rows_by("day", "--cost-mode", "recorded")}
    assert recorded["2099-01-15"] == pytest.approx(1.0) and recorded["2099-02-01"] == pytest.approx(0.25)
    calculated = {r["date"]: r for r in rows_by("day", "--cost-mode", "calculate")}
    # from the price map, on input without the cache: 130 input, 20 output, 40 read, 30 written at Sonnet 4.5's
    # $3 / $15 / $0.30 / $3.75 per million
    assert calculated["2099-01-15"]["cost_usd"] == pytest.approx((130 * 3 + 20 * 15 + 40 * 0.3 + 30 * 3.75) / 1e6)
    assert all(r["unpriced_requests"] == 0 for r in calculated.values())


def test_every_format(home, tmp_path):
    every_format("science", tmp_path, TOTAL, "frame-1", "frame-4", "429")


def test_other_places_and_the_env_variable(home, tmp_path, monkeypatch):
    root = home / ".claude-science"
    write_db(root / "operon-cli.db", [("frame-9", None, None, "claude-opus-4-6", None, 10, 1, 0, 0, 0.01,
                                       "2099-04-01T00:00:00Z")])
    write_db(root / "orgs" / "old-org" / "operon.db", [("frame-8", None, None, "claude-opus-4-6", None, 20, 2, 0,
                                                       0, 0.02, "2099-04-02T00:00:00Z")])
    out, err = agent_report("science", "--by", "session", "--format", "json")
    assert f"reading science: {root / 'operon-cli.db'}" in err and f"reading science: {root / 'orgs'}" in err
    assert summed(json.loads(out)["rows"])["requests"] == TOTAL["requests"] + 2
    # $CLAUDE_SCIENCE_DB names files of any name (ccusage's tests: custom/metadata.db) and replaces the places;
    # a copy of a database counts once
    custom = write_db(tmp_path / "custom" / "metadata.db")
    copy = tmp_path / "backup" / "operon-cli.db"
    copy.parent.mkdir()
    copy.write_bytes(custom.read_bytes())
    monkeypatch.setenv("CLAUDE_SCIENCE_DB", f"{custom}, {copy}")
    out, err = agent_report("science", "--by", "session", "--format", "json")
    assert f"reading science: {custom}" in err and f"reading science: {copy}" in err and str(root) not in err
    assert summed(json.loads(out)["rows"]) == TOTAL
    # the same file given as a path
    result = CliRunner().invoke(cli, ["report", str(custom), "--by", "agent", "--format", "json"])
    assert result.exit_code == 0, result.output
    assert summed(json.loads(result.stdout)["rows"]) == TOTAL


AUX_SCHEMA = SCHEMA.replace("updated_at INTEGER NOT NULL)", "updated_at INTEGER NOT NULL, aux_cost REAL, "
                            "aux_input_tokens INTEGER, aux_output_tokens INTEGER, aux_cache_read_tokens INTEGER, "
                            "aux_cache_write_tokens INTEGER)")


def test_auxiliary_counters_are_a_row_of_their_own(home, tmp_path, monkeypatch):
    db = tmp_path / "aux" / "operon-cli.db"
    columns = (*COLUMNS[:-1], "aux_cost", "aux_input_tokens", "aux_output_tokens", "aux_cache_read_tokens",
               "aux_cache_write_tokens", "updated_at")
    write_db(db, [("frame-a", None, None, "claude-opus-4-6", None, 1200, 340, 900, 50, 1.25, 0.05, 100, 20, 30,
                   40, "2099-05-01T00:00:00Z")], schema=AUX_SCHEMA, columns=columns)
    monkeypatch.setenv("CLAUDE_SCIENCE_DB", str(db))
    requests = {r["request_id"]: r for r in rows_by("request")}
    assert set(requests) == {"science:frame-a", "science:frame-a:aux"}
    main, aux = requests["science:frame-a"], requests["science:frame-a:aux"]
    assert (main["input_tokens"], main["cache_read_tokens"], main["cache_write_tokens"]) == (250, 900, 50)
    assert (aux["input_tokens"], aux["output_tokens"], aux["cache_read_tokens"], aux["cache_write_tokens"]) == (
        30, 20, 30, 40)
    assert aux["model"] is None and aux["recorded_cost_usd"] == 0.05 and aux["session_id"] == "frame-a"
    (day,) = rows_by("day")
    assert day["cost_usd"] == pytest.approx(1.30)
    (day,) = rows_by("day", "--cost-mode", "calculate")
    assert day["unpriced_requests"] == 1  # the auxiliary model is not recorded


def test_wrong_types_and_missing_times_are_named(home):
    db = home / ".claude-science" / "cs-switch-proxy" / "orgs" / "test-org" / "operon-cli.db"
    with sqlite3.connect(db) as conn:
        add_frames(conn, [
            ("frame-5", None, None, "claude-opus-4-6", None, "many", 7, None, None, "free", "2099-03-02T00:00:00Z"),
            ("frame-6", None, None, "claude-opus-4-6", None, 5, 1.5, -3, None, -1.0, "2099-03-02T00:00:00Z"),
            ("frame-7", None, None, "claude-opus-4-6", None, 5, 1, None, None, None, 0),
        ])
    conn.close()
    out, err = agent_report("science", "--by", "session", "--format", "json")
    rows = {r["session_id"]: r for r in json.loads(out)["rows"]}
    # rowids 1-5 are the fixture's frames
    assert f'{db}: frames rowid 6: `input_tokens` is "many", not a token count; counted as 0' in err
    assert f'{db}: frames rowid 6: `total_cost` is "free", not a cost; no recorded cost' in err
    assert f"{db}: frames rowid 7: `output_tokens` is 1.5, not a token count; counted as 0" in err
    assert f"{db}: frames rowid 7: `cache_read_tokens` is -3, not a token count; counted as 0" in err
    assert f"{db}: frames rowid 7: `total_cost` is -1.0, not a cost; no recorded cost" in err
    assert f"{db}: frames rowid 8: frame frame-7 has no time (`updated_at`, `created_at`); not counted" in err
    assert (rows["frame-5"]["input_tokens"], rows["frame-5"]["output_tokens"]) == (0, 7)
    assert (rows["frame-6"]["input_tokens"], rows["frame-6"]["output_tokens"]) == (5, 0)
    assert "frame-7" not in rows and "uploads" not in rows
    assert summed([r for k, r in rows.items() if k in SESSIONS]) == TOTAL


def test_cache_counters_above_the_input_are_read_as_exclusive(home, tmp_path, monkeypatch):
    db = write_db(tmp_path / "x" / "operon-cli.db", [("frame-x", None, None, "claude-opus-4-6", None, 10, 1, 500,
                                                      20, None, "2099-06-01T00:00:00Z")])
    monkeypatch.setenv("CLAUDE_SCIENCE_DB", str(db))
    (row,) = rows_by("request")
    assert (row["input_tokens"], row["cache_read_tokens"], row["cache_write_tokens"]) == (10, 500, 20)


def test_databases_of_another_program_and_files_that_are_no_database(tmp_path, monkeypatch):
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "cache"))
    other = tmp_path / "a" / "operon-cli.db"
    other.parent.mkdir()
    with sqlite3.connect(other) as conn:
        conn.execute("CREATE TABLE unrelated (value TEXT)")
    conn.close()
    frames_only = tmp_path / "b" / "operon-cli.db"  # ccusage's env_override_skips_incompatible_database
    frames_only.parent.mkdir()
    with sqlite3.connect(frames_only) as conn:
        conn.execute("CREATE TABLE frames (id TEXT)")
    conn.close()
    broken = tmp_path / "c" / "operon-cli.db"
    broken.parent.mkdir()
    broken.write_bytes(b"not a database at all, just bytes" * 10)
    named = tmp_path / "d" / "metadata.db"  # another name: not a Claude Science database by its content
    named.parent.mkdir()
    named.write_bytes(other.read_bytes())
    result = CliRunner().invoke(cli, ["report", str(other), str(frames_only), str(broken), str(named), "--by",
                                      "session", "--format", "json"])
    assert result.exit_code == 0, result.output
    refusal = "no `frames` table with `id`, `input_tokens` and `output_tokens`: not a Claude Science database"
    assert f"{other}: {refusal}" in result.stderr and f"{frames_only}: {refusal}" in result.stderr
    assert f"{broken}: not a readable Claude Science database" in result.stderr
    assert str(named) in result.stderr and "4 not read" in result.stderr
    assert json.loads(result.stdout)["rows"] == []
