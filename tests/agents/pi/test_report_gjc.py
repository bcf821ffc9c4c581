"""GJC (Gajae Code, an oh-my-pi fork) writes pi's session format in its own folders: a `Place` of the pi
agent labelled `gjc` (batchcompact/agents/pi). ccusage's GJC test sessions written out as files
(tests/data/gjc, with their licence notice; GJC is not on npm or PyPI, so nothing here was recorded with
it), laid out under `~/.gjc/agent/sessions`, `$GJC_CODING_AGENT_DIR` and `$XDG_DATA_HOME/gjc`, and read
from the CLI: discovery, every --by and format, the tokens and recorded cost ccusage's tests expect,
an entry id repeated across sessions, a copy counted once, a torn line and a usage of the wrong type
named."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest
from agent_reports import FIELDS, agent_report, agent_rows, every_format, summed
from click.testing import CliRunner

from batchcompact.cli import cli
from batchcompact.discover import discover_sources

DATA = Path(__file__).parents[2] / "data" / "gjc" / "agent"
# per session: what ccusage's GJC tests expect for the same records (session-a: its loader test; session-b:
# its parser test's record, whose entry id `assistant-1` session-a uses too)
SESSIONS = {
    "session-a": {"requests": 1, "input_tokens": 100, "output_tokens": 50, "cache_read_tokens": 20,
                  "cache_write_tokens": 10, "total_tokens": 180},
    "session-b": {"requests": 1, "input_tokens": 954, "output_tokens": 25, "cache_read_tokens": 11_008,
                  "cache_write_tokens": 7, "total_tokens": 11_994},
}
COSTS = {"session-a": 0.25, "session-b": 0.01106775}  # usage.cost.total, GJC's own dollars
TOTAL = {k: sum(s[k] for s in SESSIONS.values()) for k in ("requests", *FIELDS)}


@pytest.fixture
def home(tmp_path, monkeypatch) -> Path:
    home = tmp_path / "home"
    shutil.copytree(DATA, home / ".gjc" / "agent")
    for name in ("GJC_CODING_AGENT_DIR", "XDG_DATA_HOME", "PI_CODING_AGENT_DIR", "PI_AGENT_DIR"):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv("HOME", str(home))
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "cache"))
    return home


def test_discovered_as_gjc_and_read_with_pis_rules(home):
    found = [(s.agent, s.path, s.origin) for s in discover_sources()]
    assert found == [("gjc", home / ".gjc" / "agent" / "sessions", "default")]
    out, err = agent_report("gjc", "--by", "session", "--format", "json")
    assert f"reading gjc: {home / '.gjc' / 'agent' / 'sessions'}" in err
    rows = {r["session_id"]: r for r in json.loads(out)["rows"]}
    assert {k: {f: r[f] for f in ("requests", *FIELDS)} for k, r in rows.items()} == SESSIONS
    assert {k: r["cost_usd"] for k, r in rows.items()} == pytest.approx(COSTS)
    assert {r["project"] for r in rows.values()} == {"/workspace/project", "/workspace/sol"}
    # the rows are pi's (one format); `--agent gjc` selects them through GJC's folders
    assert {r["agent"] for r in rows.values()} == {"pi"}
    requests = rows_by("request")
    # keyed by the entry's and the message's times and the counts (`schema.PiEntryKeys`): a fork's copy is the same
    assert sorted(r["request_id"] for r in requests) == ["pi-entry:2026-08-28T01:02:03.000Z::100:50:20:10",
                                                         "pi-entry:2026-08-28T05:57:30.059Z::954:25:11008:7"]
    (b,) = [r for r in requests if r["session_id"] == "session-b"]
    assert b["provider"] == "openai-codex" and b["model"] == "gpt-5.6-sol"
    assert b["timestamp"].startswith("2026-08-28T05:57:30.059")


def test_plan_finds_gjc_sessions_too(home):
    """GJC's files are pi sessions: plan and validate discover them as they do oh-my-pi's."""
    result = CliRunner().invoke(cli, ["plan", "--format", "json"])
    assert result.exit_code == 0, result.output
    assert "reading gjc:" in result.stderr
    assert len(json.loads(result.stdout)["rows"]) == 2


def rows_by(by: str, *args: str) -> list[dict]:
    return agent_rows("gjc", by, *args)[0]


@pytest.mark.parametrize("by", ["day", "week", "month", "session", "project", "model", "provider", "agent",
                                "machine", "request"])
def test_every_by_counts_each_message_once(home, by):
    assert summed(rows_by(by)) == TOTAL


def test_by_agent_model_and_day(home):
    (agent,) = rows_by("agent")
    assert agent["agent"] == "pi" and agent["cost_usd"] == pytest.approx(sum(COSTS.values()))
    (model,) = rows_by("model")
    assert model["model"] == "gpt-5.6-sol" and model["requests"] == 2
    (day,) = rows_by("day")
    assert day["date"] == "2026-08-28" and day["total_tokens"] == TOTAL["total_tokens"]


def test_every_format(home, tmp_path):
    every_format("gjc", tmp_path, TOTAL, "session-a", "session-b", "12,174")


def test_gjc_coding_agent_dir_replaces_home_and_xdg_copy_counts_once(home, tmp_path, monkeypatch):
    agent_dir = tmp_path / "elsewhere" / "agent"
    shutil.copytree(DATA, agent_dir)
    monkeypatch.setenv("GJC_CODING_AGENT_DIR", str(agent_dir))
    out, err = agent_report("gjc", "--by", "session", "--format", "json")
    assert f"reading gjc: {agent_dir / 'sessions'}" in err and str(home / ".gjc") not in err
    assert summed(json.loads(out)["rows"]) == TOTAL
    monkeypatch.delenv("GJC_CODING_AGENT_DIR")
    # GJC's migrated data folder ($XDG_DATA_HOME/gjc/sessions) beside the home one: both are read, and
    # the same sessions in both count once (rows are keyed by session and entry id)
    data = tmp_path / "data"
    shutil.copytree(DATA / "sessions", data / "gjc" / "sessions")
    monkeypatch.setenv("XDG_DATA_HOME", str(data))
    assert {(s.agent, s.path) for s in discover_sources()} == {
        ("gjc", home / ".gjc" / "agent" / "sessions"), ("gjc", data / "gjc" / "sessions")}
    out, err = agent_report("gjc", "--by", "session", "--format", "json")
    assert f"reading gjc: {data / 'gjc' / 'sessions'}" in err
    assert summed(json.loads(out)["rows"]) == TOTAL


def test_a_torn_line_and_a_usage_of_the_wrong_type_are_named(home):
    folder = home / ".gjc" / "agent" / "sessions" / "--workspace-c--"
    folder.mkdir()
    broken = folder / "session-c.jsonl"
    broken.write_text(
        '{"type":"session","id":"session-c","timestamp":"2026-08-29T01:00:00.000Z","cwd":"/workspace/c"}\n'
        '{"type":"message","id":"a1","timestamp":"2026-08-29T01:02:03.000Z","message":{"role":"assistant",'
        '"model":"gpt-5.6-sol","usage":[954,25]}}\n'
        '{"type":"message","id":"a2","timestamp":"2026-08-29T01:02:05.000Z","message":{"role":"assistant",'
        '"model":"gpt-5.6-sol","usage":{"input":7,"output":3,"cacheRead":0,"cacheWrite":0,"totalTokens":10}}}\n'
        '{"type":"message","id":"a3","timestamp":"2026-08-29T01:02:07.000Z","message":{"role":"assistant",'
        '"model":"gpt-5.6-sol","usage":{"input":12,"outp')
    out, err = agent_report("gjc", "--by", "session", "--format", "json")
    assert f"{broken}:2: assistant message without usage; not counted" in err
    assert f"{broken}:4: invalid JSON (torn last line?)" in err
    rows = {r["session_id"]: r for r in json.loads(out)["rows"]}
    assert rows["session-c"]["requests"] == 1 and rows["session-c"]["total_tokens"] == 10
    assert summed([r for k, r in rows.items() if k != "session-c"]) == TOTAL
