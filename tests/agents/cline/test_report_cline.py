"""Cline (batchcompact/agents/cline): the sessions the real Cline CLI 3.0.65 wrote against a loopback
OpenAI-compatible provider (tests/data/recorded/cline, two sessions of one call each: 1,200 prompt tokens
of which 1,000 cached, 30 completion tokens), laid out in a HOME and read from the CLI in every --by and
format; the counting rules on documents written here (each one a case ccusage's Cline reader or a naive
reader gets wrong)."""

from __future__ import annotations

import csv
import io
import json
import shutil
from pathlib import Path

import polars as pl
import pytest
from agent_reports import agent_report, agent_rows
from agent_reports import summed as sum_fields
from click.testing import CliRunner

from batchcompact.cli import cli

RECORDED = Path(__file__).parents[2] / "data" / "recorded" / "cline"
SESSIONS = sorted(p.name for p in RECORDED.iterdir() if p.is_dir())
# per call, as the CLI recorded it: inputTokens 1,200 INCLUDES cacheReadTokens 1,000
CALL = {"input_tokens": 200, "output_tokens": 30, "cache_read_tokens": 1_000, "cache_write_tokens": 0,
        "total_tokens": 1_230}
CALL_COST = (200 * 0.4 + 1_000 * 0.1 + 30 * 1.6) / 1e6  # gpt-4.1-mini per million: 0.40 in, 0.10 cached, 1.60 out


@pytest.fixture
def home(tmp_path, monkeypatch) -> Path:
    home = tmp_path / "home"
    sessions = home / ".cline" / "data" / "sessions"
    for name in SESSIONS:
        shutil.copytree(RECORDED / name, sessions / name)
    monkeypatch.setenv("HOME", str(home))
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "cache"))
    for name in ("XDG_CONFIG_HOME", "XDG_DATA_HOME", "CLINE_HOME"):
        monkeypatch.delenv(name, raising=False)
    return home


def report(*args: str) -> tuple[str, str]:
    return agent_report("cline", *args)


def rows_by(by: str, *args: str) -> tuple[list[dict], str]:
    return agent_rows("cline", by, *args)


def summed(rows: list[dict]) -> dict:
    return sum_fields(rows, tuple(CALL))


def test_the_recorded_transcripts_have_the_shape_the_reader_relies_on():
    for name in SESSIONS:
        doc = json.loads((RECORDED / name / f"{name}.messages.json").read_text())
        (call,) = [m for m in doc["messages"] if m["role"] == "assistant"]
        assert doc["sessionId"] == name and doc["origin"]["version"] == "3.0.65"
        assert call["modelInfo"] == {"id": "gpt-4.1-mini", "provider": "openai-compatible"}
        assert call["metrics"] == {"inputTokens": 1_200, "outputTokens": 30, "cacheReadTokens": 1_000,
                                   "cacheWriteTokens": 0}


@pytest.mark.parametrize("by", ["day", "week", "month", "session", "project", "branch", "model", "provider",
                                "agent", "machine", "block", "request"])
def test_every_by_counts_each_call_once(home, by):
    rows, err = rows_by(by)
    assert f"reading cline: {home / '.cline' / 'data'}" in err
    assert summed(rows) == {k: 2 * v for k, v in CALL.items()} | {"requests": 2}
    if by == "session":
        assert sorted(r["session_id"] for r in rows) == SESSIONS
        assert {r["project"] for r in rows} == {"/tmp/batchcompact-record/cline/project"}
        assert all(r["cost_usd"] == pytest.approx(CALL_COST, abs=1e-9) for r in rows)
    if by == "provider":
        assert [r["provider"] for r in rows] == ["openai-compatible"]
    if by == "request":
        assert sorted(r["request_id"].split(":")[1] for r in rows) == SESSIONS
        assert {r["provider"] for r in rows} == {"openai-compatible"} and {r["kind"] for r in rows} == {"main"}


def test_every_format(home, tmp_path):
    table, _ = report("--by", "session")
    assert all(name in table for name in SESSIONS) and "gpt-4.1-mini" in table and "2,460" in table
    lines = [json.loads(line) for line in report("--by", "session", "--format", "jsonl")[0].splitlines()]
    assert summed(lines)["total_tokens"] == 2_460
    rows = list(csv.DictReader(io.StringIO(report("--by", "day", "--format", "csv")[0])))
    assert summed(rows)["total_tokens"] == 2_460
    out = tmp_path / "cline.parquet"
    report("--by", "model", "--format", "parquet", "-o", str(out))
    frame = pl.read_parquet(out)
    assert frame["total_tokens"].sum() == 2_460
    assert frame["cost_usd"].sum() == pytest.approx(2 * CALL_COST, abs=1e-9)


def test_a_copy_in_vs_code_and_an_archive_in_cline_home_count_once(home, tmp_path, monkeypatch):
    vscode = home / ".config" / "Code" / "User" / "globalStorage" / "saoudrizwan.claude-dev" / "tasks"
    shutil.copytree(RECORDED / SESSIONS[0], vscode / SESSIONS[0])
    out, err = report("--by", "session", "--format", "json")
    assert "saoudrizwan.claude-dev" in err
    assert summed(json.loads(out)["rows"])["requests"] == 2
    # CLINE_HOME (comma-separated, ccusage's variable) replaces ~/.cline and is searched whole
    archive = tmp_path / "archive"
    shutil.copytree(RECORDED / SESSIONS[1], archive / "old" / SESSIONS[1])
    monkeypatch.setenv("CLINE_HOME", f"{tmp_path / 'missing'}, {archive}")
    out, err = report("--by", "session", "--format", "json")
    assert f"reading cline: {archive}" in err and f"{home / '.cline'}" not in err
    assert sorted(r["session_id"] for r in json.loads(out)["rows"]) == SESSIONS


def message(n: int, **metrics) -> dict:
    return {"id": f"msg_{n}", "role": "assistant", "ts": 1_790_000_000_000 + n * 1000,
            "modelInfo": {"id": "claude-sonnet-4-5-20250929", "provider": "anthropic"},
            "content": [{"type": "text", "text": "ok"}], "metrics": metrics}


def test_counting_rules(tmp_path, monkeypatch):
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "cache"))
    doc = {"version": 1, "sessionId": "s1", "messages": [
        {"id": "u1", "role": "user", "ts": 1_790_000_000_000, "content": "hi"},
        # the whole prompt: 50 uncached + 1,000 cache reads + 200 cache writes
        message(1, inputTokens=1_250, outputTokens=40, cacheReadTokens=1_000, cacheWriteTokens=200),
        # below its cache counters: cannot include them, taken as uncached
        message(2, inputTokens=50, outputTokens=10, cacheReadTokens=1_000, cacheWriteTokens=0),
        # a recorded cost (Cline's own, from its provider's prices) is the cost in auto mode
        message(3, inputTokens=100, outputTokens=10, cost=0.5),
        # an error Cline shows in the chat: no metrics, nothing counted
        {"id": "error_1", "role": "assistant", "ts": 1_790_000_004_000, "metadata": {"displayRole": "error"},
         "modelInfo": {"id": "claude-sonnet-4-5-20250929", "provider": "anthropic"}},
        {**message(5, inputTokens=10, outputTokens=1), "modelInfo": {}},
    ]}
    folder = tmp_path / "s1"
    folder.mkdir()
    path = folder / "s1.messages.json"
    path.write_text(json.dumps(doc))
    (folder / "s1.json").write_text(json.dumps({"session_id": "s1", "cwd": "/work/shop"}))
    result = CliRunner().invoke(cli, ["report", str(path), "--by", "request", "--format", "jsonl"])
    assert result.exit_code == 0, result.output
    assert f"{path}: message 6 has usage but no model; not counted" in result.stderr
    rows = {r["request_id"]: r for r in map(json.loads, result.stdout.splitlines())}
    assert set(rows) == {"cline:s1:msg_1", "cline:s1:msg_2", "cline:s1:msg_3"}
    first, second, third = rows["cline:s1:msg_1"], rows["cline:s1:msg_2"], rows["cline:s1:msg_3"]
    assert (first["input_tokens"], first["cache_read_tokens"], first["cache_write_tokens"]) == (50, 1_000, 200)
    assert (second["input_tokens"], second["cache_read_tokens"]) == (50, 1_000)
    assert third["cost_usd"] == 0.5 and first["project"] == "/work/shop" and first["agent"] == "cline"
    calculated = CliRunner().invoke(cli, ["report", str(path), "--by", "request", "--format", "jsonl",
                                          "--cost-mode", "calculate"])
    assert calculated.exit_code == 0, calculated.output
    recomputed = {r["request_id"]: r for r in map(json.loads, calculated.stdout.splitlines())}["cline:s1:msg_3"]
    assert recomputed["cost_usd"] == pytest.approx((100 * 3 + 10 * 15) / 1e6)


def test_a_broken_transcript_is_named_and_the_rest_reported(home, tmp_path):
    folder = home / ".cline" / "data" / "sessions" / "broken"
    folder.mkdir()
    (folder / "broken.messages.json").write_text('{"sessionId": "broken", "messages": [')
    (folder / "other.messages.json").write_text('{"sessionId": "other", "messages": {}}')
    out, err = report("--by", "session", "--format", "json")
    assert f"{folder / 'broken.messages.json'}: invalid JSON" in err
    assert f"{folder / 'other.messages.json'}: no `messages` list" in err
    assert summed(json.loads(out)["rows"])["requests"] == 2
