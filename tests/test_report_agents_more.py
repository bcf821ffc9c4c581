"""The Copilot, Kimi, OpenClaw, Droid, Goose, Amp, Codebuff and Hermes readers: their counting rules on
files written here (each rule a case ccusage 20 or a naive reader gets wrong) and on the shared fixtures
laid out in a HOME (tests/agent_sessions.py)."""

from __future__ import annotations

import json
import shutil
import sqlite3
from pathlib import Path

import pytest
from agent_sessions import (
    GROK_SESSION,
    KIMI_CODE_FORK,
    KIMI_CODE_SESSION,
    OPENCLAW_DB_SESSION,
    ZCODE_SESSION,
    build_home,
)

from batchcompact.report import ReportSettings, build_report, collect_usage
from batchcompact.report.detect import detect_usage_source
from batchcompact.report.part_cache import extract_file


def rows_of(path: Path) -> list[dict]:
    table, stats = extract_file(path)
    return table.to_pylist()


def totals(paths: list[Path], tmp_path: Path, **settings) -> list[dict]:
    collected = collect_usage(paths, cache_dir=tmp_path / "cache", jobs=1)
    try:
        return build_report(collected.parts, ReportSettings(**settings)).rows.to_dicts()
    finally:
        collected.cleanup()


def write_jsonl(path: Path, records: list[dict]) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text("".join(json.dumps(r) + "\n" for r in records), encoding="utf-8")
    return path


@pytest.fixture(scope="module")
def home(tmp_path_factory) -> Path:
    return build_home(tmp_path_factory.mktemp("agents-more"))


def test_every_agent_place_is_found_and_read(home, tmp_path, monkeypatch):
    from batchcompact.discover import discover_sources

    sources = discover_sources(env={"HOME": str(home)}, home=home, report=True)
    found = {s.agent for s in sources}
    assert {"copilot", "kimi", "openclaw", "droid", "goose", "amp", "codebuff", "hermes", "grok", "zcode"} <= found
    rows = totals([s.path for s in sources], tmp_path, by="agent")
    by_agent = {r["agent"]: r["total_tokens"] for r in rows}
    assert by_agent == {"hermes": 1_580, "copilot": 19_943, "openclaw": 110_645 + 18_840, "kimi": 28_070,
                        "amp": 24_773, "droid": 515, "codebuff": 330, "goose": 180, "grok": 462_811,
                        "zcode": 23_180}


# --- Copilot --------------------------------------------------------------------------------------


def test_copilot_otel_keeps_the_chat_span_over_its_log_and_aggregate(home):
    rows = rows_of(home / ".copilot" / "otel" / "copilot-otel.jsonl")
    dupe = [r for r in rows if r["session_id"] == "conv-dupe"]
    # the invoke_agent span (100/30) and the inference log (80/20) describe the chat span's call (60/10)
    assert [(r["input_tokens"], r["output_tokens"], r["dedupe_key"]) for r in dupe] == [(60, 10, "copilot:resp-dupe:60:10:0:0")]
    assert dupe[0]["timestamp"] is not None  # the span has no end time: the same call's log time
    first = next(r for r in rows if r["session_id"] == "conv-1")
    # input_tokens 19,452 includes the 123 cache reads; reasoning (128) is inside output, not added
    assert (first["input_tokens"], first["cache_read_tokens"], first["output_tokens"], first["reasoning_tokens"]) == (
        19_329, 123, 281, 128)
    assert first["model"] == "claude-sonnet-4-20250514"


def test_copilot_session_log_without_per_call_usage_counts_its_last_shutdown(home):
    (row,) = rows_of(home / ".copilot" / "session-state" / "copilot_stage0_small.jsonl")
    assert (row["input_tokens"], row["cache_read_tokens"], row["output_tokens"]) == (95, 5, 15)
    assert row["project"] == "/tmp/repo"
    assert rows_of(home / ".copilot" / "session-state" / "aaaabbbb-1111-2222-3333-ccccddddeeee" / "events.jsonl") == []


# --- Kimi -----------------------------------------------------------------------------------------


def test_kimi_code_counts_usage_records_once_and_skips_what_a_fork_copied(home, tmp_path):
    rows = totals([home / ".kimi-code"], tmp_path, by="session")
    got = {r["session_id"]: (r["input_tokens"], r["output_tokens"], r["cache_read_tokens"]) for r in rows}
    # parent: two turn calls (step.end copies not counted again), the compaction call, the sub-agent's call
    assert got[KIMI_CODE_SESSION] == (1_200 + 400 + 7_000 + 50, 300 + 80 + 500 + 20, 5_000 + 6_200)
    assert got[KIMI_CODE_FORK] == (30, 10, 7_000)
    main = next(p for p in (home / ".kimi-code").rglob("main/wire.jsonl") if KIMI_CODE_SESSION in str(p))
    assert {r["project"] for r in rows_of(main)} == {"/tmp/work"}  # its config.update record
    kinds = {r["kind"] for r in rows_of(next((home / ".kimi-code").rglob("agent-0/wire.jsonl")))}
    assert kinds == {"sidechain"}


def test_kimi_code_model_alias_is_priced_as_the_model_it_served(home):
    (row,) = rows_of(next((home / ".kimi-code").rglob("agent-0/wire.jsonl")))
    assert row["model"] == "kimi-k2.6" and row["provider"] == "moonshot"  # 2026-05, after the k2.6 switch


def test_kimi_cli_fork_copy_counts_once(home, tmp_path):
    sessions = home / ".kimi" / "sessions" / "group"
    shutil.copytree(sessions / "session-a", sessions / "session-a-fork")  # kimi-cli's fork copies the lines
    try:
        rows = totals([home / ".kimi"], tmp_path, by="agent")
        assert [(r["input_tokens"], r["output_tokens"], r["requests"]) for r in rows] == [(100, 50, 1)]
    finally:
        shutil.rmtree(sessions / "session-a-fork")


def test_kimi_cli_model_from_config_toml(tmp_path):
    share = tmp_path / ".kimi"
    (share / "config.toml").parent.mkdir(parents=True)
    (share / "config.toml").write_text('default_model = "k"\n[models.k]\nmodel = "kimi-k2.5"\n', encoding="utf-8")
    wire = write_jsonl(share / "sessions" / "g" / "s" / "wire.jsonl", [
        {"type": "metadata", "protocol_version": "1.3"},
        {"timestamp": 1770983427.5, "message": {"type": "StatusUpdate", "payload": {
            "token_usage": {"input_other": 7, "output": 3, "input_cache_read": 0, "input_cache_creation": 0},
            "message_id": "chatcmpl-1"}}},
    ])
    assert detect_usage_source(wire) == "kimi"
    (row,) = rows_of(wire)
    assert (row["model"], row["input_tokens"], row["dedupe_key"]) == ("kimi-k2.5", 7, "kimi:chatcmpl-1:7:3:0:0:0:1770983427.5")


# --- OpenClaw -------------------------------------------------------------------------------------


def test_openclaw_tree_is_openclaw_not_pi_and_archives_count_once(tmp_path):
    sessions = tmp_path / ".openclaw" / "agents" / "main" / "sessions"
    records = [
        {"type": "session", "version": 3, "id": "sess-1", "timestamp": "2026-01-30T06:18:00.000Z", "cwd": "/w"},
        {"type": "model_change", "id": "e1", "provider": "anthropic", "modelId": "claude-sonnet-4-5"},
        {"type": "message", "id": "e2", "timestamp": "2026-01-30T06:18:55.279Z", "message": {
            "role": "assistant", "usage": {"input": 10, "output": 5, "cacheRead": 100, "cacheWrite": 0,
                                           "cost": {"total": 0.01}}}},
    ]
    live = write_jsonl(sessions / "sess-1.jsonl", records)
    shutil.copy(live, sessions / "sess-1.jsonl.reset.2026-01-31T00-00-00")
    assert detect_usage_source(live) == "openclaw"  # a pi-format file, but under .openclaw
    rows = totals([tmp_path / ".openclaw"], tmp_path, by="agent")
    assert [(r["agent"], r["requests"], r["total_tokens"], r["cost_usd"]) for r in rows] == [
        ("openclaw", 1, 115, pytest.approx(0.01))]


def test_openclaw_database_and_its_jsonl_export_count_once(home, tmp_path):
    agent = home / ".openclaw" / "agents" / "work"
    database = agent / "agent" / "openclaw-agent.sqlite"
    assert detect_usage_source(database) == "openclaw"
    rows = rows_of(database)
    assert [(r["session_id"], r["model"], r["input_tokens"], r["cache_read_tokens"], r["recorded_cost_usd"])
            for r in rows] == [(OPENCLAW_DB_SESSION, "claude-sonnet-4-5", 1_200, 8_000, 0.0105),
                               (OPENCLAW_DB_SESSION, "claude-sonnet-4-5", 150, 9_100, 0.00453)]
    assert {r["project"] for r in rows} == {"/srv/claw"}
    both = totals([agent], tmp_path, by="agent")
    assert [(r["requests"], r["total_tokens"], r["cost_usd"]) for r in both] == [(2, 18_840, pytest.approx(0.01503))]


# --- session counters: Droid, Goose, Hermes ---------------------------------------------------------


def test_droid_keeps_the_latest_snapshot_and_adds_thinking_to_output(home):
    rows = totals([home / ".factory" / "sessions"], home.parent / "t", by="session")
    got = {r["session_id"]: (r["input_tokens"], r["output_tokens"]) for r in rows}
    assert got == {"session-a": (100, 55), "session-b": (10, 20), "session-c": (100, 200)}
    (row,) = rows_of(home / ".factory" / "sessions" / "-tmp-project" / "session-b.settings.json")
    assert row["model"] == "claude-opus-4-5"  # from the transcript beside it: "Claude Opus 4.5 Thinking"


def test_goose_accumulated_counters_are_never_added_to_the_last_call(tmp_path):
    db = tmp_path / "goose" / "sessions" / "sessions.db"
    db.parent.mkdir(parents=True)
    with sqlite3.connect(db) as con:
        con.execute("CREATE TABLE sessions (id TEXT, model_config_json TEXT, provider_name TEXT, created_at TEXT,"
                    " input_tokens INT, output_tokens INT, total_tokens INT, accumulated_input_tokens INT,"
                    " accumulated_output_tokens INT, accumulated_total_tokens INT)")
        con.execute("INSERT INTO sessions VALUES ('s1', '{\"model_name\": \"gpt-5\"}', 'openai',"
                    " '2026-05-01 01:02:03', 40, 5, 45, 900, 70, 970)")
    con.close()
    (row,) = rows_of(db)
    assert (row["input_tokens"], row["output_tokens"], row["reasoning_tokens"]) == (900, 70, 0)
    assert row["timestamp"].isoformat() == "2026-05-01T01:02:03+00:00"


def test_hermes_uses_the_actual_cost_and_adds_reasoning_to_output(home):
    (row,) = rows_of(home / ".hermes" / "state.db")
    assert (row["output_tokens"], row["reasoning_tokens"], row["recorded_cost_usd"]) == (310, 10, 0.34)


# --- documents: Amp, Codebuff -----------------------------------------------------------------------


def test_amp_ledger_takes_its_cache_split_from_the_message(home):
    (row,) = rows_of(home / ".local" / "share" / "amp" / "threads" / "T-ledger-a.json")
    assert (row["input_tokens"], row["output_tokens"], row["cache_write_tokens"], row["cache_read_tokens"]) == (
        100, 50, 20, 10)


def test_codebuff_openai_prompt_tokens_include_the_cache(home):
    chat = home / ".config" / "manicode" / "projects" / "project-a" / "chats" / "2026-01-02T04-00-00.000Z"
    (row,) = rows_of(chat / "chat-messages.json")
    assert (row["input_tokens"], row["cache_read_tokens"], row["model"]) == (90, 10, "openai/gpt-5")
    assert row["session_id"] == "manicode/project-a/2026-01-02T04-00-00.000Z"


def test_bad_documents_warn_without_rows(tmp_path):
    thread = tmp_path / "threads" / "T-broken.json"
    thread.parent.mkdir()
    thread.write_text('{"id": "T-broken", "messages": [', encoding="utf-8")
    table, stats = extract_file(thread)
    assert table.num_rows == 0
    assert stats.warnings and "invalid JSON" in stats.warnings[0] and str(thread) in stats.warnings[0]


def test_copilot_home_replaces_the_default_folder(home, tmp_path):
    from batchcompact.discover import discover_sources

    elsewhere = tmp_path / "copilot-home"
    shutil.copytree(home / ".copilot", elsewhere)
    sources = discover_sources(env={"HOME": str(home), "COPILOT_HOME": str(elsewhere)}, home=home, report=True)
    copilot = [(s.path, s.origin) for s in sources if s.agent == "copilot"]
    assert copilot == [(elsewhere / "otel", "COPILOT_HOME"), (elsewhere / "session-state", "COPILOT_HOME")]
    rows = totals([s.path for s in sources if s.agent == "copilot"], tmp_path, by="agent")
    assert [(r["agent"], r["total_tokens"]) for r in rows] == [("copilot", 19_943)]


def test_grok_turns_are_summed_cache_taken_out_of_input_cost_from_ticks(home, tmp_path):
    log = next((home / ".grok").rglob("updates.jsonl"))
    assert detect_usage_source(log) == "grok"
    rows = rows_of(log)  # the cancelled turn (usage null) is no row
    assert [(r["input_tokens"], r["cache_read_tokens"], r["output_tokens"], r["reasoning_tokens"]) for r in rows] == [
        (55_777, 376_576, 9_958, 6_134), (5_000, 15_000, 500, 100)]
    assert [r["recorded_cost_usd"] for r in rows] == [pytest.approx(0.2842748), pytest.approx(0.012)]
    assert {(r["model"], r["project"], r["session_id"]) for r in rows} == {("grok-4.5", "/tmp/work", GROK_SESSION)}
    copy = tmp_path / "elsewhere" / "updates.jsonl"  # the same log somewhere else: the same events
    copy.parent.mkdir()
    shutil.copy(log, copy)
    summed = totals([log, copy], tmp_path, by="agent")
    assert [(r["requests"], r["total_tokens"]) for r in summed] == [(2, 462_811)]


def test_openclaw_state_dir_is_openclaws_own_override(home, tmp_path):
    from batchcompact.discover import discover_sources

    state = tmp_path / "claw-state"
    shutil.copytree(home / ".openclaw" / "agents" / "work", state / "agents" / "work")
    found = [(s.agent, s.path, s.origin) for s in discover_sources(
        env={"HOME": str(home), "OPENCLAW_STATE_DIR": str(state)}, home=home, report=True) if s.agent == "openclaw"]
    assert ("openclaw", state, "OPENCLAW_STATE_DIR") in found  # besides ~/.openclaw (records count once)
    # the database is OpenClaw's by its name wherever the state folder is
    assert detect_usage_source(state / "agents" / "work" / "agent" / "openclaw-agent.sqlite") == "openclaw"


def test_zcode_counts_completed_calls_with_the_cache_taken_out_of_input(home, tmp_path):
    db = home / ".zcode" / "cli" / "db" / "db.sqlite"
    assert detect_usage_source(db) == "zcode"
    rows = rows_of(db)  # the failed and the cancelled call are not rows
    assert [(r["dedupe_key"], r["input_tokens"], r["cache_read_tokens"], r["cache_write_tokens"], r["output_tokens"],
             r["reasoning_tokens"]) for r in rows] == [("zcode:mu_1", 2_000, 6_000, 2_000, 600, 100),
                                                      ("zcode:mu_3", 1_500, 11_000, 0, 80, 0)]
    assert {(r["session_id"], r["project"], r["provider"], r["model"]) for r in rows} == {
        (ZCODE_SESSION, "/srv/zproj", "zai", "glm-4.6")}
