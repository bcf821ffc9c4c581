"""OpenClaw sessions compacted natively: its SQLite store (2026.9+: `openclaw-agent.sqlite`, a session
`<db>#<id>`) and its older JSONL transcripts, from the command line. The database is one recorded with
`openclaw` 2026.9.6 against a loopback model (tests/data/recorded/openclaw, three prompts)."""

from __future__ import annotations

import gzip
import hashlib
import json
import shutil
import sqlite3
import time
from pathlib import Path

import pytest
from click.testing import CliRunner
from conftest import required_module

from batchcompact.adapters.openclaw import store
from batchcompact.adapters.openclaw.trigger import openclaw_trigger
from batchcompact.agents import get, tool_table
from batchcompact.cli import cli as main
from batchcompact.errors import SessionReadError, VerificationError
from batchcompact.formats.detect import detect_session_agent

RECORDED = Path(__file__).parents[2] / "data" / "recorded" / "openclaw" / "openclaw-agent.sqlite.gz"
SESSION = "s1"  # the recorded session: 22 events (seq 0-21), prompts alpha, beta, gamma, each with a read call
LAST = 21  # its last seq
KEEP = "15"  # --keep-recent-tokens that keeps the gamma turn whole (cut at seq 15)


def make_home(tmp_path: Path, window: int = 200000) -> Path:
    """An OpenClaw state folder with the recorded database and an openclaw.json naming the model's window."""
    state = tmp_path / ".openclaw"
    agent = state / "agents" / "main" / "agent"
    agent.mkdir(parents=True)
    (agent / store.DATABASE).write_bytes(gzip.decompress(RECORDED.read_bytes()))
    model = {"id": "claude-judge", "contextWindow": window, "maxTokens": 8192}
    (state / "openclaw.json").write_text(json.dumps({
        "models": {"providers": {"fake": {"api": "anthropic-messages", "models": [model]}}},
        "agents": {"defaults": {"model": {"primary": "fake/claude-judge"}}},
    }))
    return state


def db_of(state: Path) -> Path:
    return state / "agents" / "main" / "agent" / store.DATABASE


def digest(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def rows(db: Path, sql: str, *args) -> list[tuple]:
    conn = sqlite3.connect(db)
    conn.create_function("octet_length", 1, lambda v: None if v is None else len(str(v).encode()))
    try:
        return conn.execute(sql, args).fetchall()
    finally:
        conn.close()


def plan_rows(*args: str, exit_code: int = 0) -> list[dict]:
    result = CliRunner().invoke(main, ["plan", "--format", "jsonl", *args])
    assert result.exit_code == exit_code, result.output
    return [json.loads(line) for line in result.stdout.splitlines() if line.startswith("{")]


def run(*args: str):
    return CliRunner().invoke(main, ["run", "--min-age", "0", *args])


def test_a_database_is_listed_session_by_session_and_planned_with_openclaws_window(tmp_path):
    state = make_home(tmp_path)
    db = db_of(state)
    assert detect_session_agent(f"{db}#{SESSION}") == "openclaw" and detect_session_agent(db) == "openclaw"
    [row] = plan_rows("--force", "--keep-recent-tokens", KEEP, str(state))
    assert row["path"] == f"{db}#{SESSION}" and row["format"] == "openclaw" and row["session_id"] == SESSION
    assert row["status"] == "compact" and row["entries"] == 21 and row["first_kept_line"] == 15  # line = seq
    assert not row["split_turn"] and row["messages_to_summarize"] == 8
    assert (row["context_window"], row["window_source"]) == (200000, "openclaw.json contextWindow")
    assert row["threshold"] == 200000 - 16384
    [globbed] = plan_rows(f"{state}/agents/*/agent/*.sqlite")  # a glob naming the database lists its sessions
    assert globbed["path"] == f"{db}#{SESSION}"
    [preset] = plan_rows("--preset", "openclaw", f"{db}#{SESSION}")
    assert preset["threshold"] == 180000 and preset["status"] == "skip"  # 20,000 reserve, a quarter at most
    assert openclaw_trigger(recorded_window=32768, reserve_tokens=20000).threshold == 32768 - 8192


def test_openclaws_own_settings_are_followed(tmp_path):
    state = make_home(tmp_path)
    config = json.loads((state / "openclaw.json").read_text())
    config["agents"]["defaults"]["compaction"] = {"enabled": False, "keepRecentTokens": 15}
    (state / "openclaw.json").write_text(json.dumps(config))
    [row] = plan_rows(str(state))
    assert row["status"] == "skip" and row["reason"].startswith("compaction disabled in OpenClaw settings")
    [forced] = plan_rows("--force", str(state))
    assert forced["status"] == "compact" and forced["first_kept_line"] == 15  # keepRecentTokens from the file
    assert tool_table()["exec"] == "command" and tool_table()["apply_patch"] == "patch"
    assert get("openclaw").compactable


def test_output_dir_writes_a_copy_of_the_database_with_the_compaction_appended(tmp_path):
    state = make_home(tmp_path)
    db = db_of(state)
    before = digest(db)
    original = store.read_session(f"{db}#{SESSION}")
    [planned] = plan_rows("--force", "--keep-recent-tokens", KEEP, str(state))
    out = tmp_path / "out"
    result = run("--force", "--keep-recent-tokens", KEEP, "--output-dir", str(out), str(state))
    assert result.exit_code == 0, result.output
    assert digest(db) == before  # the original database is not touched
    copy = out / "agents" / "main" / "agent" / store.DATABASE
    [(seq, event)] = rows(copy, "SELECT seq, event_json FROM transcript_events WHERE seq > ?", LAST)
    event = json.loads(event)
    assert seq == LAST + 1 and event["type"] == "compaction"
    assert event["firstKeptEntryId"] == planned["first_kept_entry_id"]
    assert event["parentId"] == original.path_entries()[-1].id and event["summary"].startswith("## Goal")
    assert "<read-files>\nalpha.txt\nbeta.txt\n</read-files>" in event["summary"]  # OpenClaw's read tool
    # OpenClaw's identity row and its projection of the active path carried forward
    assert rows(copy, "SELECT seq, event_type, parent_id FROM transcript_event_identities WHERE event_id = ?",
                event["id"]) == [(LAST + 1, "compaction", event["parentId"])]
    assert rows(copy, "SELECT indexed_seq, leaf_event_id, needs_rebuild, active_event_count, active_message_count FROM "
                "session_transcript_index_state") == [(LAST + 1, event["id"], 0, LAST + 1, 12)]
    assert rows(copy, "SELECT event_seq, message_position, context_eligible FROM session_transcript_active_events "
                "WHERE active_position = ?", LAST) == [(LAST + 1, None, 1)]
    written = store.read_session(f"{copy}#{SESSION}")
    assert not written.problems and written.path_entries()[-1].data == event
    # the same usage is counted before and after
    before_usage = CliRunner().invoke(main, ["report", "--no-cache", "--format", "json", "--by", "session", str(db)])
    after_usage = CliRunner().invoke(main, ["report", "--no-cache", "--format", "json", "--by", "session", str(copy)])
    assert before_usage.exit_code == after_usage.exit_code == 0
    strip = lambda text: [{k: v for k, v in r.items() if k not in ("file", "files", "path")}  # noqa: E731
                          for r in json.loads(text)["rows"]]
    assert strip(before_usage.stdout) == strip(after_usage.stdout) and json.loads(after_usage.stdout)["rows"]


def test_in_place_keeps_a_backup_and_a_rerun_finds_it_compacted(tmp_path):
    state = make_home(tmp_path)
    db = db_of(state)
    everything = "SELECT session_id, seq, event_json, created_at FROM transcript_events ORDER BY 1, 2"
    before = rows(db, everything)
    result = run("--force", "--keep-recent-tokens", KEEP, "--in-place", str(state))
    assert result.exit_code == 0, result.output
    assert rows(Path(f"{db}.bak"), everything) == before  # a consistent copy (SQLite's backup) of the original
    assert rows(db, "SELECT MAX(seq) FROM transcript_events") == [(LAST + 1,)]
    again = plan_rows("--force", "--keep-recent-tokens", KEEP, str(state))
    assert again[0]["status"] == "skip" and again[0]["reason"] == "already compacted"


def test_a_session_changed_within_min_age_is_left_alone(tmp_path):
    state = make_home(tmp_path)
    db = db_of(state)
    conn = sqlite3.connect(db)
    conn.execute("UPDATE transcript_events SET created_at = ? WHERE seq = ?", (int(time.time() * 1000), LAST))
    conn.commit()
    conn.close()
    before = digest(db)
    result = CliRunner().invoke(main, ["run", "--force", "--in-place", "--format", "jsonl", str(state)])
    assert result.exit_code == 0, result.output
    assert "under --min-age" in result.output and digest(db) == before


def test_a_busy_database_fails_the_session_and_writes_nothing(tmp_path):
    state = make_home(tmp_path)
    db = db_of(state)
    session = store.read_session(f"{db}#{SESSION}")
    holder = sqlite3.connect(db, isolation_level=None)
    holder.execute("BEGIN IMMEDIATE")  # a live OpenClaw writing
    try:
        with pytest.raises(store.StoreBusy, match="database is locked by another writer.*nothing written"):
            store.append_events(db, SESSION, [{"type": "custom", "id": "x", "parentId": None}],
                                last_seq=session.extra.last_seq, attempts=2, busy_timeout_s=0.05)
    finally:
        holder.execute("ROLLBACK")
        holder.close()
    assert rows(db, "SELECT MAX(seq) FROM transcript_events") == [(LAST,)]


def test_a_database_busy_during_run_fails_that_session_with_the_reason(tmp_path, monkeypatch):
    monkeypatch.setattr(store, "BUSY_TIMEOUT_S", 0.05)  # OpenClaw's 5 s, three times, in a test: too slow
    state = make_home(tmp_path)
    db = db_of(state)
    holder = sqlite3.connect(db, isolation_level=None)
    holder.execute("BEGIN IMMEDIATE")
    try:
        result = CliRunner().invoke(main, ["run", "--force", "--keep-recent-tokens", KEEP, "--in-place", "--min-age", "0",
                                           "--jobs", "1", "--format", "jsonl", str(state)])
    finally:
        holder.execute("ROLLBACK")
        holder.close()
    assert result.exit_code == 1
    [row] = [json.loads(line) for line in result.stdout.splitlines() if line.startswith("{")]
    assert row["status"] == "failed" and "database is locked by another writer" in row["reason"], row["reason"]
    assert rows(db, "SELECT MAX(seq) FROM transcript_events") == [(LAST,)]


def test_a_changed_session_or_a_failed_verify_writes_nothing(tmp_path):
    state = make_home(tmp_path)
    db = db_of(state)
    session = store.read_session(f"{db}#{SESSION}")
    event = {"type": "custom", "customType": "x", "id": "new-1", "parentId": session.path_entries()[-1].id}
    with pytest.raises(store.StoreChanged, match="changed while it was being compacted"):
        store.append_events(db, SESSION, [event], last_seq=LAST - 1)
    with pytest.raises(store.StoreChanged, match="changed while it was being compacted"):
        store.append_events(db, SESSION, [event], last_seq=LAST, expect=(1, "0" * 64))
    with pytest.raises(VerificationError, match="bad"):
        store.append_events(db, SESSION, [event], last_seq=LAST, verify=lambda written: ["bad"])
    assert rows(db, "SELECT COUNT(*) FROM transcript_event_identities WHERE event_id = 'new-1'") == [(0,)]
    assert rows(db, "SELECT MAX(seq) FROM transcript_events") == [(LAST,)]
    assert len(store.read_session(f"{db}#{SESSION}").entries) == len(session.entries)


def test_an_unknown_schema_version_is_named_and_nothing_is_written(tmp_path):
    state = make_home(tmp_path)
    db = db_of(state)
    conn = sqlite3.connect(db)
    conn.execute("PRAGMA user_version = 99")
    conn.close()
    before = digest(db)
    result = CliRunner().invoke(main, ["run", "--force", "--in-place", "--min-age", "0", "--format", "jsonl", str(state)])
    assert result.exit_code == 1
    assert "OpenClaw database schema version 99 is not one batchcompact knows (23)" in result.output
    assert digest(db) == before and not Path(f"{db}.bak").exists()


def test_a_corrupt_database_is_one_error_line(tmp_path):
    state = make_home(tmp_path)
    db = db_of(state)
    db.write_bytes(b"this is not a database" * 100)
    [row] = plan_rows(str(state), exit_code=1)  # an error row: exit 1, as validate says it
    assert row["status"] == "error" and "not a readable SQLite database" in row["reason"]
    with pytest.raises(SessionReadError, match="not a readable SQLite database"):
        store.read_session(f"{db}#{SESSION}")


def test_a_wal_left_by_a_crash_is_read_and_compacted(tmp_path):
    state = make_home(tmp_path)
    db = db_of(state)
    live = sqlite3.connect(db)
    live.execute("PRAGMA journal_mode = WAL")
    live.execute("PRAGMA wal_autocheckpoint = 0")
    live.execute("UPDATE transcript_events SET created_at = 1 WHERE seq = ?", (LAST,))  # only in the WAL
    live.commit()
    crashed = tmp_path / "crashed" / ".openclaw"
    shutil.copytree(state, crashed)  # the database and its -wal, as a killed process leaves them
    live.close()
    copy = db_of(crashed)
    assert Path(f"{copy}-wal").stat().st_size > 0
    [row] = plan_rows("--force", "--keep-recent-tokens", KEEP, str(crashed))
    assert row["status"] == "compact"
    result = run("--force", "--keep-recent-tokens", KEEP, "--in-place", str(crashed))
    assert result.exit_code == 0, result.output
    assert rows(copy, "SELECT MAX(seq), MIN(created_at) FROM transcript_events") == [(LAST + 1, 1)]


def test_jsonl_transcripts_of_older_releases_compact_and_archives_do_not(tmp_path):
    state = make_home(tmp_path)
    session = store.read_session(f"{db_of(state)}#{SESSION}")
    folder = state / "agents" / "main" / "sessions"
    folder.mkdir()
    lines = [session.header] + [e.data for e in session.entries]
    text = "".join(json.dumps(line) + "\n" for line in lines)
    (folder / "s1.jsonl").write_text(text)
    (folder / "s1.jsonl.reset.2026-11-26T13-00-00.000Z").write_text(text)
    assert detect_session_agent(folder / "s1.jsonl") == "openclaw"
    by_path = {Path(r["path"]).name: r for r in plan_rows("--force", "--keep-recent-tokens", KEEP, str(folder),
                                                            str(folder / "s1.jsonl.reset.2026-11-26T13-00-00.000Z"))}
    assert by_path["s1.jsonl"]["status"] == "compact" and by_path["s1.jsonl"]["format"] == "openclaw"
    archived = by_path["s1.jsonl.reset.2026-11-26T13-00-00.000Z"]
    assert archived["status"] == "skip" and "archived OpenClaw session (.reset copy)" in archived["reason"]
    result = run("--force", "--keep-recent-tokens", KEEP, "--output-dir", str(tmp_path / "out"), str(folder))
    assert result.exit_code == 0, result.output
    written = [json.loads(line) for line in (tmp_path / "out" / "s1.jsonl").read_text().splitlines()]
    assert written[:-1] == lines and written[-1]["type"] == "compaction"


def test_summaries_bought_from_a_model_are_written_in_the_database_with_their_usage(tmp_path, llm_server):
    """The run loop's path (summaries bought from a model, then written by a worker) for a database session."""
    state = make_home(tmp_path)
    db = db_of(state)
    out = tmp_path / "out"
    result = run("--force", "--keep-recent-tokens", KEEP, "--model", "openai/gpt-4o-mini", "--api-base",
                 llm_server.api_base, "--api-key", "sk-test", "--max-attempts", "1", "--output-dir", str(out),
                 f"{db}#{SESSION}")
    assert result.exit_code == 0, result.output
    copy = out / store.DATABASE
    [(event,)] = rows(copy, "SELECT event_json FROM transcript_events WHERE seq = ?", LAST + 1)
    event = json.loads(event)
    assert event["summary"].startswith("## Goal\nsummary from the test server") and event["usage"]["output"] == 20
    assert len(llm_server.requests) == 1


def test_copy_unchanged_puts_the_database_in_the_output_folder(tmp_path):
    state = make_home(tmp_path)
    out = tmp_path / "out"
    result = run("--copy-unchanged", "--output-dir", str(out), str(state))
    assert result.exit_code == 0, result.output
    copy = out / "agents" / "main" / "agent" / store.DATABASE
    assert rows(copy, "SELECT COUNT(*), MAX(seq) FROM transcript_events") == [(LAST + 1, LAST)]


@pytest.mark.parametrize(("kind", "said"), [("reset", "reset boundary"), ("leaf", "leaf-control entries")])
def test_openclaws_own_boundaries_are_not_compacted(tmp_path, kind, said):
    state = make_home(tmp_path)
    db = db_of(state)
    leaf = store.read_session(f"{db}#{SESSION}").path_entries()[-1].id
    event = {"type": kind, "id": "own-1", "parentId": leaf, "timestamp": "2026-11-26T13:39:00.000Z", "reason": "new"}
    conn = sqlite3.connect(db)
    conn.create_function("octet_length", 1, lambda v: None if v is None else len(str(v).encode()))
    conn.execute("INSERT INTO transcript_events (session_id, seq, event_json, created_at) VALUES (?, ?, ?, 1)",
                 (SESSION, LAST + 1, json.dumps(event)))
    conn.commit()
    conn.close()
    [row] = plan_rows("--force", str(state))
    assert row["status"] == "skip" and said in row["reason"]


def test_cold_stored_events_are_read_from_their_zstd_payload(tmp_path):
    """OpenClaw moves old events to `event_zstd` (a zstd frame of the JSON, `event_json` NULL); the reader
    decompresses them (the `zstd` extra) and names a damaged one by its seq."""
    zstandard = required_module("zstandard", "zstd")
    db = tmp_path / "agents" / "main" / "agent" / store.DATABASE
    db.parent.mkdir(parents=True)
    conn = sqlite3.connect(db)
    conn.execute("PRAGMA user_version = 23")
    conn.execute("CREATE TABLE transcript_events (session_id TEXT, seq INTEGER, event_json TEXT, created_at INTEGER, "
                 "event_zstd BLOB, event_utf8_bytes INTEGER, navigation_json TEXT)")
    header = {"type": "session", "version": 4, "id": "cold", "timestamp": "2026-11-26T13:00:00.000Z", "cwd": "/w"}
    user = {"type": "message", "id": "u1", "parentId": None, "timestamp": "2026-11-26T13:00:01.000Z",
            "message": {"role": "user", "content": "an old prompt", "timestamp": 1}}
    packed = zstandard.ZstdCompressor(write_checksum=True).compress(json.dumps(user).encode())
    conn.execute("INSERT INTO transcript_events VALUES ('cold', 0, ?, 1, NULL, NULL, NULL)", (json.dumps(header),))
    conn.execute("INSERT INTO transcript_events VALUES ('cold', 1, NULL, 2, ?, ?, '{}')", (packed, len(json.dumps(user))))
    conn.execute("INSERT INTO transcript_events VALUES ('cold', 2, NULL, 3, ?, 5, '{}')", (b"not zstd",))
    conn.commit()
    conn.close()
    session = store.read_session(f"{db}#cold")
    assert [e.data for e in session.entries] == [user]
    [problem] = session.problems
    assert problem.line == 2 and "seq 2: cannot decompress event_zstd" in problem.message


def test_report_counts_cold_stored_events(tmp_path):
    """`report` reads a cold-stored event's usage (it read `event_json` only: an `event_zstd` row's usage was
    left out in silence) and names one it cannot decompress."""
    zstandard = required_module("zstandard", "zstd")
    db = tmp_path / "agents" / "main" / "agent" / store.DATABASE
    db.parent.mkdir(parents=True)
    conn = sqlite3.connect(db)
    conn.execute("CREATE TABLE transcript_events (session_id TEXT, seq INTEGER, event_json TEXT, created_at INTEGER, "
                 "event_zstd BLOB, event_utf8_bytes INTEGER, navigation_json TEXT)")
    header = {"type": "session", "version": 4, "id": "cold", "timestamp": "2026-11-26T13:00:00.000Z", "cwd": "/w"}
    answers = [{"type": "message", "id": f"a{n}", "parentId": None, "timestamp": f"2026-11-26T13:00:0{n}.000Z",
                "message": {"role": "assistant", "model": "claude-sonnet-4-5", "provider": "anthropic",
                            "content": [{"type": "text", "text": "ok"}], "timestamp": n,
                            "usage": {"input": 100 * n, "output": 10, "cacheRead": 0, "cacheWrite": 0}}}
               for n in (1, 2)]
    packed = zstandard.ZstdCompressor().compress(json.dumps(answers[0]).encode())
    conn.execute("INSERT INTO transcript_events VALUES ('cold', 0, ?, 1, NULL, NULL, NULL)", (json.dumps(header),))
    conn.execute("INSERT INTO transcript_events VALUES ('cold', 1, NULL, 2, ?, NULL, NULL)", (packed,))
    conn.execute("INSERT INTO transcript_events VALUES ('cold', 2, ?, 3, NULL, NULL, NULL)", (json.dumps(answers[1]),))
    conn.execute("INSERT INTO transcript_events VALUES ('cold', 3, NULL, 4, ?, NULL, NULL)", (b"not zstd",))
    conn.commit()
    conn.close()
    result = CliRunner().invoke(main, ["report", "--no-cache", "--format", "json", "--by", "session", str(db)])
    assert result.exit_code == 0, result.output
    [row] = json.loads(result.stdout)["rows"]
    assert row["input_tokens"] == 300 and row["output_tokens"] == 20
    assert "rowid 4: cannot decompress event_zstd" in result.stderr


def test_a_session_of_a_database_that_does_not_exist_is_a_path_not_found(tmp_path):
    """`<db>#<id>` is checked with the other PATHS before any work: a missing database is exit 2 naming it
    (it was an error row 'not found on host vm' and exit 0 once every PATH was checked on its own)."""
    missing = tmp_path / "agents" / "main" / "agent" / "openclaw-agent.sqlite"
    for command in (["plan"], ["validate"], ["run", "--output-dir", str(tmp_path / "out")]):
        result = CliRunner().invoke(main, [*command, f"{missing}#s1"])
        assert result.exit_code == 2, result.output
        assert f"path not found: {missing}" in result.output
