"""Buzz (batchcompact/agents/buzz): the desktop app's archive database, built here with the columns of
Buzz desktop's `archived_events` table and NIP-AM turn metrics written after the NIP (block/buzz
`docs/nips/NIP-AM.md`; Buzz is a desktop app on neither npm nor PyPI, so no archive here was recorded with
it), laid out under ~/.buzz and read from the CLI in every --by and format: a turn's counters from the
session's cumulative series (a turn whose `turn` is null counted all the same), the `turn` delta where no
baseline exists, cache reads and writes taken out of the inclusive input, an event archived from two
relays counted once, an unreliable delta, a non-metric payload and wrong types named."""

from __future__ import annotations

import json
import sqlite3
from pathlib import Path

import pytest
from agent_reports import FIELDS, agent_report, agent_rows, every_format, summed
from buzz_archive import AGENT_B, metric, write_archive
from click.testing import CliRunner

from batchcompact.cli import cli
from batchcompact.discover import discover_sources

SESSIONS = {
    "s1": {"requests": 3, "input_tokens": 200 + 300 + 500, "output_tokens": 100 + 250 + 50,
           "cache_read_tokens": 600 + 1600, "cache_write_tokens": 200 + 100, "total_tokens": 3900},
    "s2": {"requests": 1, "input_tokens": 400, "output_tokens": 40, "cache_read_tokens": 0,
           "cache_write_tokens": 0, "total_tokens": 440},
}
COSTS = {"s1": 0.035, "s2": 0.002}
TOTAL = {k: sum(s[k] for s in SESSIONS.values()) for k in ("requests", *FIELDS)}


@pytest.fixture
def home(tmp_path, monkeypatch) -> Path:
    home = tmp_path / "home"
    write_archive(home / ".buzz" / "archive" / "archive.db")
    for name in ("BUZZ_PATH_ROOT", "BUZZ_ARCHIVE_PATH"):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv("HOME", str(home))
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "cache"))
    return home


def rows_by(by: str, *args: str) -> list[dict]:
    return agent_rows("buzz", by, *args)[0]


def test_sessions_models_and_recorded_cost(home):
    assert [(s.agent, s.path) for s in discover_sources(report=True) if s.agent == "buzz"] == [
        ("buzz", home / ".buzz" / "archive")]
    out, err = agent_report("buzz", "--by", "session", "--format", "json")
    assert f"reading buzz: {home / '.buzz' / 'archive'}" in err
    rows = {r["session_id"]: r for r in json.loads(out)["rows"]}
    assert {k: {f: r[f] for f in ("requests", *FIELDS)} for k, r in rows.items()} == SESSIONS
    assert {k: r["cost_usd"] for k, r in rows.items()} == pytest.approx(COSTS)
    assert rows["s1"]["models"] == ["claude-sonnet-4-5"] and rows["s2"]["models"] == ["gpt-5"]
    requests = {r["request_id"]: r for r in rows_by("request")}
    assert set(requests) == {"buzz:e1", "buzz:e2", "buzz:e3", "buzz:e4"}
    assert requests["buzz:e2"]["timestamp"].startswith("2026-07-01T10:05:00")
    assert requests["buzz:e2"]["input_tokens"] == 300 and requests["buzz:e2"]["cache_read_tokens"] == 1600


@pytest.mark.parametrize("by", ["day", "week", "month", "session", "project", "model", "provider", "agent",
                                "machine", "request"])
def test_every_by_counts_each_turn_once(home, by):
    assert summed(rows_by(by)) == TOTAL


def test_by_agent_model_and_day(home):
    (agent,) = rows_by("agent")
    assert agent["agent"] == "buzz" and agent["cost_usd"] == pytest.approx(sum(COSTS.values()))
    assert {r["model"]: r["requests"] for r in rows_by("model")} == {"claude-sonnet-4-5": 3, "gpt-5": 1}
    assert {r["date"]: r["total_tokens"] for r in rows_by("day")} == {"2026-07-01": 1100 + 2250,
                                                                      "2026-07-02": 550 + 440}


def test_every_format(home, tmp_path):
    every_format("buzz", tmp_path, TOTAL, "s1", "s2", "4,340")


def test_buzz_path_root_archive_path_and_a_copy_counted_once(home, tmp_path, monkeypatch):
    root = tmp_path / "nest"
    write_archive(root / "archive" / "archive.db")
    monkeypatch.setenv("BUZZ_PATH_ROOT", str(root))
    out, err = agent_report("buzz", "--by", "session", "--format", "json")
    assert f"reading buzz: {root / 'archive'}" in err and str(home / ".buzz") not in err
    assert summed(json.loads(out)["rows"]) == TOTAL
    monkeypatch.delenv("BUZZ_PATH_ROOT")
    # $BUZZ_ARCHIVE_PATH names a file; the same events in it and in ~/.buzz count once
    monkeypatch.setenv("BUZZ_ARCHIVE_PATH", str(root / "archive" / "archive.db"))
    out, err = agent_report("buzz", "--by", "session", "--format", "json")
    assert f"reading buzz: {root / 'archive' / 'archive.db'}" in err
    assert summed(json.loads(out)["rows"]) == TOTAL


def test_unknown_usage_bad_payloads_and_wrong_types_are_named(home):
    db = home / ".buzz" / "archive" / "archive.db"
    write_archive(db, [
        # no cumulative baseline and an unreliable delta: unknown, not counted (NIP-AM: never zero)
        ("e6", AGENT_B, ("wss://one",), 44200, metric("s2", 8, "2026-07-02T11:05:00Z", reliable=False,
                                                      turn={"inputTokens": 10, "outputTokens": 1})),
        ("e7", AGENT_B, ("wss://one",), 44200, '{"harness":"goose","turn":{"inputTokens":'),
        ("e8", AGENT_B, ("wss://one",), 44200, {"model": "gpt-5", "turn": {"inputTokens": 5}}),
        # a token count of the wrong type is unknown: the output still counts
        ("e9", AGENT_B, ("wss://one",), 44200, metric("s3", 1, "2026-07-03T08:00:00Z", model="gpt-5",
                                                      turn={"inputTokens": "1200", "outputTokens": 30})),
        ("e10", AGENT_B, ("wss://one",), 44200, {"harness": "goose", "timestamp": "2026-07-03T09:00:00Z",
                                                 "cumulative": {"inputTokens": 9}, "deltaReliable": True}),
    ])
    out, err = agent_report("buzz", "--by", "session", "--format", "json")
    rows = {r["session_id"]: r for r in json.loads(out)["rows"]}
    # rowids 1-6 are the archive's first events (e3 twice)
    assert f"{db}: archived_events rowid 7: turn usage unknown" in err
    assert f"{db}: archived_events rowid 8: `raw_json` is not a JSON object; not counted" in err
    assert f"{db}: archived_events rowid 9: not a NIP-AM turn metric (no `harness` or `timestamp`)" in err
    assert f'{db}: archived_events rowid 10: `inputTokens` is "1200", not a token count; taken as unknown' in err
    assert f"{db}: archived_events rowid 11: `cumulative` without `sessionId` and `turnSeq`" in err
    assert rows["s3"]["input_tokens"] == 0 and rows["s3"]["output_tokens"] == 30
    assert summed([r for k, r in rows.items() if k != "s3"]) == TOTAL


def test_an_archive_db_of_another_program_is_named_not_read(tmp_path, monkeypatch):
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "cache"))
    other = tmp_path / "backup" / "archive" / "archive.db"
    other.parent.mkdir(parents=True)
    with sqlite3.connect(other) as conn:
        conn.execute("CREATE TABLE things (id INTEGER)")
    conn.close()
    broken = tmp_path / "backup2" / "archive" / "archive.db"
    broken.parent.mkdir(parents=True)
    broken.write_bytes(b"not a database at all, just bytes" * 10)
    result = CliRunner().invoke(cli, ["report", str(other), str(broken), "--by", "session", "--format", "json"])
    assert result.exit_code == 0, result.output
    assert f"{other}: no `archived_events` table: not a Buzz archive" in result.stderr
    assert str(broken) in result.stderr and "2 not read" in result.stderr
