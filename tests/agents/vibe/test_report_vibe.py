"""Mistral Vibe (batchcompact/agents/vibe): the sessions the real CLI (mistral-vibe 2.26.1 from PyPI) wrote
against a loopback OpenAI-compatible provider (tests/data/recorded/vibe: a Unified Harness session and a
legacy-harness one, each of two prompts, the second `--continue`; every call 1,200 prompt tokens of which
1,000 cached and 30 completion tokens), laid out in a HOME and read from the CLI in every --by and format;
the counting rules on meta.json documents written here."""

from __future__ import annotations

import csv
import io
import json
import shutil
from pathlib import Path

import polars as pl
import pytest
from agent_reports import agent_report, agent_rows, summed
from click.testing import CliRunner

from batchcompact.cli import cli

RECORDED = Path(__file__).parents[2] / "data" / "recorded" / "vibe" / ".vibe"
SESSIONS_DIR = RECORDED / "logs" / "session"
UNIFIED = next(p for p in (SESSIONS_DIR / "unified").iterdir() if p.is_dir())
LEGACY = next(SESSIONS_DIR.glob("session_*"))
# per session (two calls, Vibe's running totals): the prompt count 2,400 INCLUDES the 2,000 cached
SESSION = {"input_tokens": 400, "output_tokens": 60, "cache_read_tokens": 2_000, "cache_write_tokens": 0,
           "total_tokens": 2_460, "requests": 1}
SESSION_COST = (400 * 0.4 + 2_000 * 0.1 + 60 * 1.6) / 1e6  # gpt-4.1-mini per million: 0.40 in, 0.10 cached, 1.60 out


@pytest.fixture
def home(tmp_path, monkeypatch) -> Path:
    home = tmp_path / "home"
    shutil.copytree(RECORDED, home / ".vibe")
    monkeypatch.setenv("HOME", str(home))
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "cache"))
    monkeypatch.delenv("VIBE_HOME", raising=False)
    return home


def rows_by(by: str, *args: str) -> tuple[list[dict], str]:
    return agent_rows("vibe", by, *args)


def test_the_recorded_sessions_have_the_shape_the_reader_relies_on():
    legacy = json.loads((LEGACY / "meta.json").read_text())
    assert (legacy["stats"]["session_prompt_tokens"], legacy["stats"]["session_cached_tokens"],
            legacy["stats"]["session_completion_tokens"]) == (2_400, 2_000, 60)
    assert legacy["config"]["active_model"] == "judge"
    assert legacy["config"]["models"]["judge"] == {**legacy["config"]["models"]["judge"], "name": "gpt-4.1-mini",
                                                   "provider": "judge"}
    meta = json.loads((UNIFIED / "meta.json").read_text())
    assert "stats" not in meta and meta["config"] is None
    current = json.loads((UNIFIED / "CURRENT").read_text())
    state = json.loads((UNIFIED / "generations" / current["generation"] / "projection-state.json").read_text())
    assert state["snapshot"]["session"]["tokenUsage"] == {"cachedInputTokens": 2_000, "inputTokens": 2_400,
                                                          "outputTokens": 60, "totalTokens": 2_460}
    # the first turn's recovery journal (with that call's own usage) is gone once the second is saved
    assert not (UNIFIED / "journal" / "0000000000000001.jsonl").exists()


@pytest.mark.parametrize("by", ["day", "week", "month", "session", "project", "branch", "model", "provider",
                                "agent", "machine", "block", "request"])
def test_every_by_counts_each_session_once(home, by):
    rows, err = rows_by(by)
    assert f"reading vibe: {home / '.vibe' / 'logs' / 'session'}" in err
    assert "warning" not in err  # the transcripts and journals beside meta.json are claimed, not offered around
    assert summed(rows) == {k: 2 * v for k, v in SESSION.items()}
    if by == "session":
        assert sorted(r["session_id"] for r in rows) == sorted(
            json.loads((folder / "meta.json").read_text())["session_id"] for folder in (UNIFIED, LEGACY))
        assert {r["project"] for r in rows} == {"/tmp/batchcompact-record/vibe/project"}
        assert all(r["cost_usd"] == pytest.approx(SESSION_COST, abs=1e-9) and r["models"] == ["gpt-4.1-mini"]
                   for r in rows)
    if by == "provider":
        assert [r["provider"] for r in rows] == ["judge"]
    if by == "request":
        assert sorted(r["request_id"] for r in rows) == sorted(f"vibe:{r['session_id']}" for r in rows)


def test_every_format(home, tmp_path):
    table, _ = agent_report("vibe", "--by", "session")
    assert "gpt-4.1-mini" in table and "4,920" in table
    lines = [json.loads(line) for line in agent_report("vibe", "--by", "session", "--format", "jsonl")[0].splitlines()]
    assert summed(lines)["total_tokens"] == 4_920
    rows = list(csv.DictReader(io.StringIO(agent_report("vibe", "--by", "day", "--format", "csv")[0])))
    assert summed(rows)["total_tokens"] == 4_920
    out = tmp_path / "vibe.parquet"
    agent_report("vibe", "--by", "model", "--format", "parquet", "-o", str(out))
    frame = pl.read_parquet(out)
    assert frame["total_tokens"].sum() == 4_920
    assert frame["cost_usd"].sum() == pytest.approx(2 * SESSION_COST, abs=1e-9)


def test_vibe_home_and_a_copy_counted_once(home, tmp_path, monkeypatch):
    moved = tmp_path / "elsewhere"
    shutil.copytree(RECORDED, moved)
    monkeypatch.setenv("VIBE_HOME", str(moved))
    rows, err = rows_by("session")
    assert f"reading vibe: {moved / 'logs' / 'session'}" in err and str(home) not in err
    assert summed(rows) == {k: 2 * v for k, v in SESSION.items()}
    # the same sessions given twice (a backup beside the live folder): each counts once
    out = CliRunner().invoke(cli, ["report", str(moved), str(home / ".vibe"), "--by", "session", "--format", "json"])
    assert out.exit_code == 0, out.output
    assert summed(json.loads(out.stdout)["rows"]) == {k: 2 * v for k, v in SESSION.items()}


def meta(session_id: str, **fields) -> dict:
    return {"session_id": session_id, "start_time": "2026-09-01T10:00:00+00:00",
            "end_time": "2026-09-01T11:00:00+00:00", "git_branch": "main",
            "environment": {"working_directory": "/work/shop"}, **fields}


def write(folder: Path, doc: dict) -> Path:
    folder.mkdir(parents=True)
    (folder / "meta.json").write_text(json.dumps(doc))
    return folder / "meta.json"


def test_counting_rules(tmp_path, monkeypatch):
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "cache"))
    monkeypatch.delenv("VIBE_HOME", raising=False)
    logs = tmp_path / ".vibe" / "logs" / "session"
    stats = {"session_prompt_tokens": 1_000, "session_completion_tokens": 50, "session_cached_tokens": 600}
    # older Vibe: `models` a list; Vibe's own cost is the recorded cost in auto mode
    write(logs / "session_a", meta("a", stats={**stats, "session_cost": 0.25}, config={
        "active_model": "dev", "models": [{"name": "devstral-medium-2507", "provider": "mistral", "alias": "dev"}]}))
    # no active model (unpinned): Vibe's default model
    write(logs / "session_b", meta("b", stats=stats, config={"active_model": ""}))
    # a copy of session a at an earlier point (fewer tokens): the later one is kept
    write(logs / "old" / "session_a", meta("a", stats={**stats, "session_prompt_tokens": 700}, config={
        "active_model": "dev", "models": [{"name": "devstral-medium-2507", "provider": "mistral", "alias": "dev"}]}))
    # a sub-agent's session, under its parent's agents/
    write(logs / "session_b" / "agents" / "explore_1", meta("c", stats={**stats, "session_cached_tokens": 5_000},
                                                             config={"active_model": "ghost"}))
    write(logs / "session_d", meta("d", stats=stats, end_time=None, start_time=None))
    # no config snapshot: no alias recorded, so no model (not Vibe's default)
    write(logs / "session_e", meta("e", stats=stats))
    result = CliRunner().invoke(cli, ["report", str(tmp_path / ".vibe"), "--by", "request", "--format", "jsonl"])
    assert result.exit_code == 0, result.output
    assert f"{logs / 'session_d' / 'meta.json'}: session d has usage but no time; not counted" in result.stderr
    rows = {r["request_id"]: r for r in map(json.loads, result.stdout.splitlines())}
    assert set(rows) == {"vibe:a", "vibe:b", "vibe:c", "vibe:e"}
    assert rows["vibe:e"]["model"] is None and rows["vibe:e"]["provider"] is None
    a, b, c = rows["vibe:a"], rows["vibe:b"], rows["vibe:c"]
    assert (a["input_tokens"], a["cache_read_tokens"], a["output_tokens"]) == (400, 600, 50)
    assert a["model"] == "devstral-medium-2507" and a["provider"] == "mistral" and a["cost_usd"] == 0.25
    assert a["branch"] == "main" and a["project"] == "/work/shop" and a["timestamp"].startswith("2026-09-01T11:00")
    assert (b["model"], b["provider"]) == ("mistral-vibe-cli-latest", "mistral")
    # cached above the prompt count is clamped to it (Vibe's own cost does the same); an unknown alias is the model
    assert (c["input_tokens"], c["cache_read_tokens"], c["model"]) == (0, 1_000, "ghost")


def test_a_broken_session_is_named_and_the_rest_reported(home):
    logs = home / ".vibe" / "logs" / "session"
    write(logs / "session_broken", {}).write_text('{"session_id": "x", "stats": {')
    write(logs / "session_other", {"title": "no id"})
    unified = logs / "unified" / "no-current"
    write(unified, meta("u"))
    (unified / "CURRENT").write_text('{"generation": "0000000000000099"}')
    out, err = agent_report("vibe", "--by", "session", "--format", "json")
    assert f"{logs / 'session_broken' / 'meta.json'}: invalid JSON" in err
    assert f"{logs / 'session_other' / 'meta.json'}: no `session_id`" in err
    assert f"{unified / 'meta.json'}: generation 0000000000000099 has no readable projection-state.json" in err
    assert summed(json.loads(out)["rows"]) == {k: 2 * v for k, v in SESSION.items()}


def test_another_agents_transcript_under_a_logs_session_folder_is_not_taken(tmp_path, monkeypatch):
    """Only Vibe's own names are claimed: a Claude Code transcript named by its id (a digit first) in an
    archive under `logs/session/` is still Claude's."""
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "cache"))
    folder = tmp_path / "logs" / "session"
    folder.mkdir(parents=True)
    line = {"type": "assistant", "sessionId": "0f0e", "timestamp": "2026-09-01T10:00:00Z", "requestId": "req_1",
            "message": {"id": "msg_1", "role": "assistant", "model": "claude-sonnet-4-5-20250929",
                        "usage": {"input_tokens": 10, "output_tokens": 5}}}
    (folder / "0123456789abcdef.jsonl").write_text(json.dumps(line) + "\n")
    result = CliRunner().invoke(cli, ["report", str(tmp_path), "--by", "agent", "--format", "json"])
    assert result.exit_code == 0, result.output
    assert [(r["agent"], r["total_tokens"]) for r in json.loads(result.stdout)["rows"]] == [("claude", 15)]
