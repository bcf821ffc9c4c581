"""Muse Code (batchcompact/agents/muse): ccusage's Muse test logs written out as files (tests/data/muse,
with their licence notice; Muse Code is on neither npm nor PyPI, so nothing here was recorded with it),
laid out under XDG_DATA_HOME and read from the CLI in every --by and format: `input_tokens` holding the
cache reads, the `cached_tokens` fallback, a zero-usage call and tombstones left out, a child agent's log
counted on its own with its parent's project, a copy counted once."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest
from agent_reports import FIELDS, agent_report, agent_rows, every_format, summed
from click.testing import CliRunner

from batchcompact.cli import cli

DATA = Path(__file__).parents[2] / "data" / "muse" / "sessions"
# per session, with the tokens ccusage's tests expect for the same records
SESSIONS = {
    "11111111-1111-1111-1111-111111111111": {"requests": 1, "input_tokens": 100, "output_tokens": 10,
                                             "cache_read_tokens": 0, "cache_write_tokens": 0, "total_tokens": 110},
    "sess-a": {"requests": 1, "input_tokens": 259, "output_tokens": 355, "cache_read_tokens": 15_665,
               "cache_write_tokens": 0, "total_tokens": 16_279},
    "sess-c": {"requests": 1, "input_tokens": 100, "output_tokens": 10, "cache_read_tokens": 0,
               "cache_write_tokens": 0, "total_tokens": 110},
    "sess-d": {"requests": 1, "input_tokens": 5, "output_tokens": 2, "cache_read_tokens": 0,
               "cache_write_tokens": 0, "total_tokens": 7},
}
TOTAL = {k: sum(s[k] for s in SESSIONS.values()) for k in ("requests", *FIELDS)}


@pytest.fixture
def home(tmp_path, monkeypatch) -> Path:
    home = tmp_path / "home"
    shutil.copytree(DATA, home / ".local" / "share" / "muse" / "sessions")
    monkeypatch.setenv("HOME", str(home))
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "cache"))
    monkeypatch.delenv("XDG_DATA_HOME", raising=False)
    return home


def rows_by(by: str, *args: str) -> list[dict]:
    return agent_rows("muse", by, *args)[0]


def test_sessions_projects_and_models(home):
    out, err = agent_report("muse", "--by", "session", "--format", "json")
    assert f"reading muse: {home / '.local/share/muse/sessions'}" in err
    rows = {r["session_id"]: r for r in json.loads(out)["rows"]}
    assert {k: {f: r[f] for f in ("requests", *FIELDS)} for k, r in rows.items()} == SESSIONS
    # the child agent's log records no workspace: its parent's (two folders up)
    assert {r["project"] for r in rows.values()} == {"/home/user/projects/ccusage", "unknown"}
    assert rows["sess-c"]["project"] == "/home/user/projects/ccusage"
    assert rows["sess-c"]["models"] == ["muse-spark-1.2-contributor"]
    # Muse records no cost and no map prices muse-spark: counted, unpriced and flagged
    assert "no price for muse-spark-1.2, muse-spark-1.2-contributor" in err
    assert all(r["unpriced_requests"] == r["requests"] for r in rows.values())
    (request,) = [r for r in rows_by("request") if r["session_id"] == "sess-a"]
    assert request["reasoning_tokens"] == 111 and request["request_id"] == "muse:sess-a:rec-2"
    assert request["timestamp"].startswith("2026-08-05T20:47:07.173")  # recorded_at is in microseconds


@pytest.mark.parametrize("by", ["day", "week", "month", "session", "project", "branch", "model", "provider",
                                "agent", "machine", "block", "request"])
def test_every_by_counts_each_call_once(home, by):
    assert summed(rows_by(by)) == TOTAL


def test_every_format(home, tmp_path):
    every_format("muse", tmp_path, TOTAL, *SESSIONS, "16,506")


def test_xdg_data_home_and_a_copy_counted_once(home, tmp_path, monkeypatch):
    data = tmp_path / "data"
    shutil.copytree(DATA, data / "muse" / "sessions")
    monkeypatch.setenv("XDG_DATA_HOME", str(data))
    out, err = agent_report("muse", "--by", "session", "--format", "json")
    assert f"reading muse: {data / 'muse' / 'sessions'}" in err and str(home) not in err
    assert summed(json.loads(out)["rows"]) == TOTAL
    # the same logs given twice (a backup beside the live folder), and detected outside Muse's folders
    backup = tmp_path / "backup"
    shutil.copytree(DATA, backup)
    result = CliRunner().invoke(cli, ["report", str(data), str(backup), "--by", "session", "--format", "json"])
    assert result.exit_code == 0, result.output
    assert summed(json.loads(result.stdout)["rows"]) == TOTAL


def test_a_broken_log_is_named_and_the_rest_reported(home):
    folder = home / ".local" / "share" / "muse" / "sessions" / "2026" / "08" / "06" / "broken"
    folder.mkdir(parents=True)
    (folder / "session.jsonl").write_text(
        '{"schema_version":1,"id":"r1","stream":{"kind":"session","id":"broken"},"recorded_at":1785962827173826,'
        '"payload_type":"runtime.session","payload":{"event":{"kind":"model_completed","model":"m"\n'
        '{"schema_version":1,"id":"r2","stream":{"kind":"session","id":"broken"},"payload_type":"runtime.session",'
        '"payload":{"event":{"kind":"model_completed","model":"m","usage":{"input_tokens":3}}}}\n')
    out, err = agent_report("muse", "--by", "session", "--format", "json")
    assert f"{folder / 'session.jsonl'}:1: invalid JSON" in err
    assert f"{folder / 'session.jsonl'}:2: a model call without a time; not counted" in err
    assert summed(json.loads(out)["rows"]) == TOTAL
