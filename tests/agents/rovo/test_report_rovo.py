"""Rovo Dev CLI (batchcompact/agents/rovo): ccusage's Rovo Dev test sessions written out as files
(tests/data/rovo, with their licence notice; the CLI is on neither npm nor PyPI, so nothing here was
recorded with it), laid out in a HOME and read from the CLI in every --by and format: the `details`
split over the prompt totals, a fork's copied responses counted once, a legacy session (no model, no
response id), a response without details, the session time for a response without one."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest
from agent_reports import FIELDS, agent_report, agent_rows, every_format, summed

DATA = Path(__file__).parents[2] / "data" / "rovo" / "rovodev"
# per session (ccusage's expected token fields for the same documents, and the fork's own response)
SESSIONS = {
    "session-a": {"requests": 2, "input_tokens": 3 + 12, "output_tokens": 249 + 34, "cache_read_tokens": 6_395,
                  "cache_write_tokens": 1_535, "total_tokens": 8_228},
    "session-a-fork": {"requests": 1, "input_tokens": 20, "output_tokens": 50, "cache_read_tokens": 6_380,
                       "cache_write_tokens": 100, "total_tokens": 6_550},
    "session-b": {"requests": 1, "input_tokens": 4, "output_tokens": 240, "cache_read_tokens": 0,
                  "cache_write_tokens": 20_803, "total_tokens": 21_047},
    "session-c": {"requests": 1, "input_tokens": 3, "output_tokens": 249, "cache_read_tokens": 6_395,
                  "cache_write_tokens": 1_535, "total_tokens": 8_182},
    "session-e": {"requests": 1, "input_tokens": 5, "output_tokens": 7, "cache_read_tokens": 0,
                  "cache_write_tokens": 0, "total_tokens": 12},
}
TOTAL = {k: sum(s[k] for s in SESSIONS.values()) for k in ("requests", *FIELDS)}


def sonnet_45(row: dict) -> float:
    """claude-sonnet-4-5 list prices per million: 3 input, 15 output, 3.75 cache write, 0.30 cache read."""
    return (row["input_tokens"] * 3 + row["output_tokens"] * 15 + row["cache_write_tokens"] * 3.75
            + row["cache_read_tokens"] * 0.3) / 1e6


@pytest.fixture
def home(tmp_path, monkeypatch) -> Path:
    home = tmp_path / "home"
    shutil.copytree(DATA, home / ".rovodev")
    monkeypatch.setenv("HOME", str(home))
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "cache"))
    monkeypatch.delenv("ROVO_DATA_DIR", raising=False)
    return home


def report(*args: str) -> tuple[str, str]:
    return agent_report("rovo", *args)


def rows_by(by: str, *args: str) -> list[dict]:
    return agent_rows("rovo", by, *args)[0]


def test_sessions_as_ccusage_counts_them(home):
    out, err = report("--by", "session", "--format", "json")
    assert f"reading rovo: {home / '.rovodev'}" in err
    rows = {r["session_id"]: r for r in json.loads(out)["rows"]}
    assert {k: {f: r[f] for f in ("requests", *FIELDS)} for k, r in rows.items()} == SESSIONS
    assert rows["session-a"]["project"] == "/home/user/project" and rows["session-b"]["project"] == "/home/user/legacy"
    assert rows["session-a"]["cost_usd"] == pytest.approx(sonnet_45(rows["session-a"]), abs=1e-9)
    # the legacy session records no model: counted, unpriced and flagged, named as such (issue 50)
    assert rows["session-b"]["models"] == ["(unknown model)"] and rows["session-b"]["unpriced_requests"] == 1
    assert "no price for (unknown model)" in err


@pytest.mark.parametrize("by", ["day", "week", "month", "session", "project", "branch", "model", "provider",
                                "agent", "machine", "block", "request"])
def test_every_by_counts_each_response_once(home, by):
    assert summed(rows_by(by)) == TOTAL


def test_every_format_and_the_period_filters(home, tmp_path):
    every_format("rovo", tmp_path, TOTAL, *SESSIONS, "44,019")
    # the legacy session is the only one of 2025
    assert summed(rows_by("session", "--until", "2025-12-31"))["total_tokens"] == 21_047
    # a response's own time, not the session's: session-a's second call is on the 24th
    days = {r["date"]: r["total_tokens"] for r in rows_by("day", "--since", "2026-02-24")}
    assert days == {"2026-02-24": 12 + 34 + 6_550}


def test_a_fork_keyed_by_response_id_and_rovo_data_dir(home, tmp_path, monkeypatch):
    requests = {r["request_id"]: r["session_id"] for r in rows_by("request")}
    # the fork's copy of session-a's first response is the same response: once, in one session
    assert list(requests).count("rovo:response:msg_vrtx_014rqTwZTSMNrU4g6HcjDpQp") == 1
    assert requests["rovo:response:msg_vrtx_01ForkOwnResponse"] == "session-a-fork"
    # ROVO_DATA_DIR (comma-separated) replaces ~/.rovodev; an archive of the same sessions counts once
    archive = tmp_path / "archive"
    shutil.copytree(DATA / "sessions" / "session-a", archive / "sessions" / "session-a")
    monkeypatch.setenv("ROVO_DATA_DIR", f"{archive},{home / '.rovodev'}")
    out, err = report("--by", "session", "--format", "json")
    assert f"reading rovo: {archive}" in err
    assert summed(json.loads(out)["rows"]) == TOTAL


def test_a_broken_session_file_is_named_and_the_rest_reported(home):
    folder = home / ".rovodev" / "sessions" / "broken"
    folder.mkdir()
    (folder / "session_context.json").write_text('{"message_history": [')
    other = home / ".rovodev" / "sessions" / "other"
    other.mkdir()
    (other / "session_context.json").write_text('{"message_history": {}}')
    notime = home / ".rovodev" / "sessions" / "notime"
    notime.mkdir()
    (notime / "session_context.json").write_text(json.dumps({"message_history": [
        {"kind": "response", "model_name": "claude-sonnet-4-5-20250929", "usage": {"input_tokens": 5}}]}))
    out, err = report("--by", "session", "--format", "json")
    assert f"{folder / 'session_context.json'}: invalid JSON" in err
    assert f"{other / 'session_context.json'}: no `message_history` list" in err
    assert f"{notime / 'session_context.json'}: response 1 has usage but no time" in err
    assert summed(json.loads(out)["rows"]) == TOTAL


def test_sessions_moved_by_config_yml_are_found(home, tmp_path):
    from batchcompact.agents.rovo import persistence_dir

    moved = tmp_path / "work" / ".rovodev" / "sessions"
    shutil.move(str(home / ".rovodev" / "sessions"), str(moved))
    (home / ".rovodev" / "config.yml").write_text(
        f"version: 1\nlogging:\n  persistenceDir: /wrong\nsessions:  # where sessions go\n"
        f"  persistenceDir: \"{moved}\" # moved\n  retentionDays: 30\n")
    out, err = report("--by", "session", "--format", "json")
    assert f"reading rovo: {moved}" in err
    assert summed(json.loads(out)["rows"]) == TOTAL
    assert persistence_dir("sessions:\n  other: 1\n") is None
    assert persistence_dir("sessionsOld:\n  persistenceDir: /data/c\n") is None
    assert persistence_dir("sessions:\n  persistenceDir: ~/rovo\n") == "~/rovo"
