"""OpenCode's database: the reader (OpenCode's loader rules), our compaction's writer and verify, and bad
input (an unknown schema, a locked, corrupt or changed database, a WAL left by a crash).

The database is a real one (tests/data/recorded/opencode/compacted.db, recorded by record.py with
opencode-ai 1.18.33): three prompts with read, write, edit and bash calls, OpenCode's own compaction,
then a fourth prompt. The real CLI resuming what we write is judged in test_judge_opencode.py.
"""

from __future__ import annotations

import json
import shutil
import sqlite3
from pathlib import Path

import pytest

from batchcompact.adapters.opencode.read import (
    COMPACTION_PROMPT,
    OpenCodeStoreError,
    filter_compacted,
    read_session,
    session_ids,
)
from batchcompact.adapters.opencode.store import (
    ChangedSince,
    DatabaseBusy,
    copy_database,
    verify,
    write_compaction,
)
from batchcompact.core.context import build_session_context

RECORDED = Path(__file__).parents[2] / "data" / "recorded" / "opencode" / "compacted.db"
SUMMARY = "BC-SUMMARY of the work so far"


@pytest.fixture
def db(tmp_path: Path) -> Path:
    target = tmp_path / "opencode.db"
    shutil.copyfile(RECORDED, target)
    return target


def _session(db: Path):
    [session_id] = session_ids(db)
    return read_session(db, session_id)


def _counts(db: Path) -> tuple[int, int, int]:
    conn = sqlite3.connect(db)
    try:
        return tuple(conn.execute(f"SELECT count(*) FROM {t}").fetchone()[0] for t in ("message", "part", "event"))
    finally:
        conn.close()


def _prompt(session, word: str):
    return next(e for e in session.path_entries() if e.role == "user" and word in json.dumps(e.message))


def test_reader_follows_opencodes_loader(db):
    session = _session(db)
    assert not session.problems
    path = session.path_entries()
    tools = [b["name"] for e in path if e.role == "assistant" for b in e.message["content"] if b["type"] == "toolCall"]
    assert tools == ["read", "write", "edit", "bash", "read", "bash"]
    results = [e for e in path if e.role == "toolResult"]
    assert len(results) == 6 and "8123" in results[0].message["content"][0]["text"]
    # OpenCode's own compaction (no tail): one compaction entry; the context is its summary and what follows
    [compaction] = [e for e in path if e.type == "compaction"]
    assert compaction.data["summary"] == "JUDGE-OK" and compaction.data["firstKeptEntryId"] == compaction.id
    context = build_session_context(path)
    assert [m.message["role"] for m in context.messages] == ["compactionSummary", "user", "assistant"]
    assert "STEP-FOUR" in json.dumps(context.messages[1].message)
    # the same messages OpenCode's loader keeps: its compaction's user message, the summary, then the rest
    loaded = filter_compacted(session.extra.messages)
    assert [m["info"].get("role") for m in loaded] == ["user", "assistant", "user", "assistant"]
    assert loaded[0]["parts"][0]["type"] == "compaction" and loaded[1]["info"]["summary"] is True


def test_usage_is_non_cached_input_and_output_with_reasoning(db):
    session = _session(db)
    first = next(e for e in session.path_entries() if e.role == "assistant")
    raw = next(m["info"] for m in session.extra.messages if m["info"]["id"] == first.id)
    usage = first.message["usage"]
    assert usage["input"] == raw["tokens"]["input"] and usage["cacheRead"] == raw["tokens"]["cache"]["read"]
    assert usage["output"] == raw["tokens"]["output"] + raw["tokens"]["reasoning"]


def test_write_records_our_compaction_as_opencode_does(db):
    session = _session(db)
    cut = _prompt(session, "STEP-FOUR")
    before = _counts(db)
    written = write_compaction(db, session, summary=SUMMARY, first_kept_entry_id=cut.id, now_ms=1,
                               marker={"tokensBefore": 99})
    assert _counts(db) == (before[0] + 2, before[1] + 2, before[2] + 4)
    assert verify(db, session, written, summary=SUMMARY, agent="opencode") == []
    again = _session(db)
    loaded = filter_compacted(again.extra.messages)
    assert [m["info"]["id"] for m in loaded[:3]] == [written.user_id, written.summary_id, cut.id]
    user, summary = loaded[0], loaded[1]
    assert user["parts"][0] == {**user["parts"][0], "type": "compaction", "auto": False, "tail_start_id": cut.id}
    assert summary["info"]["mode"] == "compaction" and summary["info"]["summary"] is True
    assert summary["info"]["parentID"] == written.user_id and summary["info"]["finish"] == "stop"
    assert summary["info"]["tokens"]["input"] == 0 and summary["info"]["cost"] == 0
    # ids sort after every earlier message, as OpenCode's ascending ids do
    assert all(m["info"]["id"] < written.user_id for m in session.extra.messages)
    # the sync log goes on where it was
    conn = sqlite3.connect(db)
    seqs = [row[0] for row in conn.execute("SELECT seq FROM event ORDER BY seq")]
    assert seqs == list(range(seqs[0], seqs[0] + len(seqs)))
    assert conn.execute("SELECT seq FROM event_sequence").fetchone()[0] == seqs[-1]
    conn.close()
    context = build_session_context(again.path_entries())
    assert context.messages[0].message["role"] == "compactionSummary"
    assert context.messages[0].message["summary"] == SUMMARY
    assert COMPACTION_PROMPT == "What did we do so far?"


def test_the_same_inputs_write_the_same_rows(db, tmp_path):
    other = tmp_path / "other.db"
    shutil.copyfile(db, other)
    a = write_compaction(db, _session(db), summary=SUMMARY, first_kept_entry_id=_prompt(_session(db), "STEP-FOUR").id,
                         now_ms=1)
    b = write_compaction(other, _session(other), summary=SUMMARY,
                         first_kept_entry_id=_prompt(_session(other), "STEP-FOUR").id, now_ms=1)
    assert a == b


def test_an_unknown_schema_version_is_named_and_nothing_is_written(db):
    session = _session(db)
    conn = sqlite3.connect(db)
    conn.execute("INSERT INTO migration (id, time_completed) VALUES ('29990101000000_future_layout', 0)")
    conn.commit()
    conn.close()
    again = read_session(db, session.extra.session_id)
    [error] = again.errors
    assert "unknown OpenCode schema version '29990101000000_future_layout'" in error.message
    with pytest.raises(OpenCodeStoreError, match="newest known"):
        session_ids(db)
    before = _counts(db)
    with pytest.raises(OpenCodeStoreError, match="29990101000000_future_layout"):
        write_compaction(db, session, summary=SUMMARY, first_kept_entry_id=_prompt(session, "STEP-FOUR").id, now_ms=1)
    assert _counts(db) == before


def test_a_busy_database_is_retried_then_the_session_fails_with_nothing_written(db):
    session = _session(db)
    before = _counts(db)
    holder = sqlite3.connect(db, isolation_level=None)
    holder.execute("BEGIN IMMEDIATE")  # OpenCode writing
    try:
        with pytest.raises(DatabaseBusy, match="stayed locked by another writer .*2 tries.*nothing written"):
            write_compaction(db, session, summary=SUMMARY, first_kept_entry_id=_prompt(session, "STEP-FOUR").id,
                             now_ms=1, busy_timeout=0.05, tries=2)
    finally:
        holder.execute("ROLLBACK")
        holder.close()
    assert _counts(db) == before


def test_a_session_changed_since_it_was_read_is_not_written(db):
    session = _session(db)
    conn = sqlite3.connect(db)
    conn.execute("UPDATE session SET time_updated = time_updated + 1")
    conn.commit()
    conn.close()
    before = _counts(db)
    with pytest.raises(ChangedSince, match="changed since it was read"):
        write_compaction(db, session, summary=SUMMARY, first_kept_entry_id=_prompt(session, "STEP-FOUR").id, now_ms=1)
    assert _counts(db) == before


def test_a_corrupt_database_is_one_error(tmp_path):
    bad = tmp_path / "opencode.db"
    bad.write_bytes(b"SQLite format 3\x00" + b"\xff" * 4000)
    session = read_session(bad, "ses_x")
    [error] = session.errors
    assert error.message.startswith(f"{bad}: not a readable SQLite database")
    not_opencode = tmp_path / "other.db"
    sqlite3.connect(not_opencode).execute("CREATE TABLE t (x)").connection.close()
    assert "no `session` table" in read_session(not_opencode, "ses_x").errors[0].message


def test_a_wal_left_by_a_crash_is_read(db, tmp_path):
    """Rows committed to the WAL and never checkpointed (OpenCode killed) are part of the database."""
    live = sqlite3.connect(db)
    live.execute("PRAGMA journal_mode=WAL")
    live.execute("PRAGMA wal_autocheckpoint=0")
    session_id = session_ids(db)[0]
    live.execute("UPDATE message SET data = json_set(data, '$.crashMark', 1) WHERE session_id = ?", (session_id,))
    live.commit()
    crashed = tmp_path / "crashed"
    crashed.mkdir()
    for suffix in ("", "-wal"):  # what a killed process leaves (the -shm is rebuilt)
        shutil.copyfile(f"{db}{suffix}", crashed / f"opencode.db{suffix}")
    live.close()
    session = read_session(crashed / "opencode.db", session_id)
    assert not session.errors
    assert all(m["info"].get("crashMark") == 1 for m in session.extra.messages)
    copy = tmp_path / "copy.db"
    copy_database(crashed / "opencode.db", copy)
    assert read_session(copy, session_id).extra.messages == session.extra.messages


# From the command line: each session of the database is `<opencode.db>#<id>` (adapters/opencode/store.py).


def _plain(tmp_path: Path, name: str = "opencode") -> tuple[Path, str]:
    """The recorded database without OpenCode's own compaction (four prompts, nothing compacted yet), its
    session's project folder moved to `tmp_path/project`."""
    folder = tmp_path / "data"
    folder.mkdir()
    db = folder / f"{name}.db"
    shutil.copyfile(RECORDED, db)
    conn = sqlite3.connect(db)
    summary, user = conn.execute("SELECT id, json_extract(data, '$.parentID') FROM message "
                                 "WHERE json_extract(data, '$.summary') = 1").fetchone()
    for table, column in (("part", "message_id"), ("message", "id")):
        conn.execute(f"DELETE FROM {table} WHERE {column} IN (?, ?)", (summary, user))
    (tmp_path / "project").mkdir()
    conn.execute("UPDATE session SET directory = ?", (str(tmp_path / "project"),))
    conn.commit()
    [session_id] = [row[0] for row in conn.execute("SELECT id FROM session")]
    conn.close()
    return db, session_id


def _cli(*args: str):
    from click.testing import CliRunner

    from batchcompact.cli import cli as main

    return CliRunner().invoke(main, list(args))


def _rows(result) -> list[dict]:
    return [json.loads(line) for line in result.stdout.splitlines() if line.startswith("{")]


def test_plan_lists_each_session_of_the_database_with_the_windows_source(tmp_path, monkeypatch):
    monkeypatch.setenv("XDG_CONFIG_HOME", str(tmp_path / "config"))
    db, session_id = _plain(tmp_path)
    result = _cli("plan", "--format", "jsonl", str(db.parent))
    assert result.exit_code == 0, result.output
    [row] = _rows(result)
    assert row["path"] == f"{db}#{session_id}" and row["format"] == "opencode"
    assert row["window_source"] == "price table" and row["context_window"] == 1_047_576
    assert row["threshold"] == 1_047_576 - 32_000  # OpenCode's usable window: context - max output (32,000 cap)
    # the user's opencode.json: the model's limits and OpenCode's compaction settings
    model = read_session(db, session_id).extra.model
    config = {"provider": {model["providerID"]: {"models": {model["modelID"]: {"limit": {"context": 3000,
                                                                                         "output": 1000}}}}},
              "compaction": {"preserve_recent_tokens": 100}}
    (tmp_path / "project" / "opencode.json").write_text(json.dumps(config))
    [row] = _rows(_cli("plan", "--format", "jsonl", f"{db}#{session_id}"))
    assert (row["window_source"], row["context_window"], row["threshold"]) == ("opencode config limit.context",
                                                                             3000, 2000)
    assert row["status"] == "compact"  # over 2,000 tokens: OpenCode would compact it too
    config["compaction"]["auto"] = False
    (tmp_path / "project" / "opencode.json").write_text(json.dumps(config))
    [row] = _rows(_cli("plan", "--format", "jsonl", f"{db}#{session_id}"))
    assert row["status"] == "skip" and row["reason"].startswith("compaction.auto is false in the OpenCode config")


def test_run_output_dir_writes_a_copy_of_the_database_and_the_original_is_untouched(tmp_path):
    db, session_id = _plain(tmp_path)
    before = _counts(db)
    out = tmp_path / "out"
    result = _cli("run", "--force", "--min-age", "0", "--keep-recent-tokens", "100", "--output-dir", str(out),
                  "--format", "jsonl", str(db.parent))
    assert result.exit_code == 0, result.output
    [row] = _rows(result)
    assert row["status"] == "compacted" and not row["split_turn"], row
    assert _counts(db) == before
    copy = out / "opencode.db"
    assert row["output_path"] == f"{copy}#{session_id}"
    assert _counts(copy) == (before[0] + 2, before[1] + 2, before[2] + 4)
    again = read_session(copy, session_id)
    assert not again.problems
    loaded = filter_compacted(again.extra.messages)
    assert loaded[0]["parts"][0]["type"] == "compaction" and loaded[1]["info"]["summary"] is True
    assert loaded[2]["info"]["id"] == loaded[0]["parts"][0]["tail_start_id"] == row["first_kept_entry_id"]
    # the built-in summary knows OpenCode's tools (filePath, oldString/newString)
    text = "".join(p["text"] for p in loaded[1]["parts"] if p["type"] == "text")
    assert "hello.py" in text and "<modified-files>" in text
    # a second run finds it compacted
    [row] = _rows(_cli("plan", "--force", "--keep-recent-tokens", "100", "--format", "jsonl", f"{copy}#{session_id}"))
    assert row["status"] == "skip"


def test_run_in_place_keeps_a_backup_and_the_report_counts_the_same_usage(tmp_path):
    db, session_id = _plain(tmp_path)
    before = _counts(db)
    usage = _cli("report", "--no-cache", "--format", "json", str(db))
    result = _cli("run", "--force", "--min-age", "0", "--keep-recent-tokens", "100", "--in-place", "--format", "jsonl",
                  f"{db}#{session_id}")
    assert result.exit_code == 0, result.output
    assert _rows(result)[0]["status"] == "compacted"
    assert _counts(Path(f"{db}.bak")) == before and _counts(db) == (before[0] + 2, before[1] + 2, before[2] + 4)
    after = _cli("report", "--no-cache", "--format", "json", str(db))
    assert json.loads(after.stdout)["totals"] == json.loads(usage.stdout)["totals"]


def test_a_session_changed_within_min_age_is_left_alone(tmp_path):
    import time

    db, session_id = _plain(tmp_path)
    conn = sqlite3.connect(db)
    conn.execute("UPDATE session SET time_updated = ?", (int(time.time() * 1000),))
    conn.commit()
    conn.close()
    before = _counts(db)
    result = _cli("run", "--force", "--in-place", "--format", "jsonl", str(db))
    assert result.exit_code == 0, result.output
    assert "under --min-age" in result.output and _counts(db) == before


def test_a_database_busy_during_run_fails_that_session_with_the_reason(tmp_path, monkeypatch):
    from batchcompact.adapters.opencode import store

    monkeypatch.setattr(store, "BUSY_TRIES", 2)
    monkeypatch.setattr(store, "BUSY_TIMEOUT_S", 0.05)
    db, session_id = _plain(tmp_path)
    before = _counts(db)
    holder = sqlite3.connect(db, isolation_level=None)
    holder.execute("BEGIN IMMEDIATE")  # OpenCode writing
    try:
        result = _cli("run", "--force", "--min-age", "0", "--keep-recent-tokens", "100", "--in-place", "--no-backup",
                      "--jobs", "1", "--format", "jsonl", f"{db}#{session_id}")
    finally:
        holder.execute("ROLLBACK")
        holder.close()
    assert result.exit_code == 1
    [row] = _rows(result)
    assert row["status"] == "failed" and "stayed locked by another writer" in row["reason"], row["reason"]
    assert _counts(db) == before


def test_the_database_itself_and_an_unknown_session_are_one_line_each(tmp_path):
    db, _ = _plain(tmp_path)
    result = _cli("validate", f"{db}#ses_missing")
    assert result.exit_code == 1
    assert "no session 'ses_missing'" in result.output


def test_preset_opencode_keeps_opencodes_tail(tmp_path):
    db, session_id = _plain(tmp_path)
    [row] = _rows(_cli("plan", "--preset", "opencode", "--force", "--format", "jsonl", f"{db}#{session_id}"))
    assert row["status"] == "skip" and "--keep-recent-tokens (15,000)" in row["reason"]


def test_plan_without_paths_finds_the_database_not_the_legacy_storage(tmp_path, monkeypatch):
    home = tmp_path / "home"
    data = home / ".local" / "share" / "opencode"
    (data / "storage" / "message" / "ses_old").mkdir(parents=True)
    (data / "storage" / "message" / "ses_old" / "msg_1.json").write_text('{"id": "msg_1", "role": "user"}')
    db, session_id = _plain(tmp_path)
    shutil.copyfile(db, data / "opencode.db")
    shutil.copyfile(db, data / "opencode-beta.db")  # a channel database: reported, not compacted
    for variable in ("XDG_DATA_HOME", "OPENCODE_DATA_DIR", "KILO_DATA_DIR", "XDG_CONFIG_HOME"):
        monkeypatch.delenv(variable, raising=False)
    monkeypatch.setenv("HOME", str(home))
    result = _cli("plan", "--format", "jsonl")
    assert result.exit_code == 0, result.output
    assert [row["path"] for row in _rows(result)] == [f"{data / 'opencode.db'}#{session_id}"]


def test_kilo_databases_are_compacted_as_kilo(tmp_path):
    db, session_id = _plain(tmp_path, "kilo")
    result = _cli("run", "--force", "--min-age", "0", "--keep-recent-tokens", "100", "--in-place", "--format", "jsonl",
                  str(db))
    assert result.exit_code == 0, result.output
    [row] = _rows(result)
    assert row["format"] == "kilo" and row["status"] == "compacted" and row["output_path"] == f"{db}#{session_id}"
    assert filter_compacted(read_session(db, session_id, agent="kilo").extra.messages)[1]["info"]["summary"] is True


def test_a_session_changed_during_the_run_or_a_failed_verify_writes_nothing(tmp_path):
    from batchcompact.adapters.opencode import store
    from batchcompact.errors import VerificationError
    from batchcompact.pipeline.state import fingerprint_file
    from batchcompact.pipeline.writer import ChangedDuringRun

    db, session_id = _plain(tmp_path)
    path = f"{db}#{session_id}"
    session = read_session(db, session_id)
    line = {"type": "compaction", "summary": SUMMARY, "firstKeptEntryId": _prompt(session, "STEP-TWO").id,
            "now_ms": 1, "batchcompact": {}}
    printed = fingerprint_file(path)
    expect = (printed.size, printed.sha256)
    before = _counts(db)
    with pytest.raises(ChangedDuringRun, match="changed since it was read"):
        store.write_session(session, [line], path, None, in_place=True, backup=False, expect=(1, "0" * 64))
    with pytest.raises(VerificationError, match="bad"):
        store.write_session(session, [line], path, lambda written: ["bad"], in_place=True, backup=False,
                            expect=expect)
    assert _counts(db) == before and fingerprint_file(path) == printed
    # the verify sees the rows written inside the transaction
    seen = []
    store.write_session(session, [line], path, lambda written: seen.append(len(written.entries)) or [],
                        in_place=True, backup=False, expect=expect)
    assert seen == [len(session.entries) + 1] and _counts(db) == (before[0] + 2, before[1] + 2, before[2] + 4)


def test_summaries_bought_from_a_model_are_written_with_their_usage_in_the_run_report(tmp_path, llm_server):
    db, session_id = _plain(tmp_path)
    out = tmp_path / "out"
    result = _cli("run", "--force", "--min-age", "0", "--keep-recent-tokens", "100", "--model", "openai/gpt-4o-mini",
                  "--api-base", llm_server.api_base, "--api-key", "sk-test", "--max-attempts", "1", "--output-dir",
                  str(out), "--format", "jsonl", f"{db}#{session_id}")
    assert result.exit_code == 0, result.output
    [row] = _rows(result)
    assert row["status"] == "compacted" and row["written_entries"][0]["output"] == 20
    loaded = filter_compacted(read_session(out / "opencode.db", session_id).extra.messages)
    text = "".join(p["text"] for p in loaded[1]["parts"] if p["type"] == "text")
    assert text.startswith("## Goal\nsummary from the test server")
    assert loaded[1]["info"]["tokens"]["output"] == 0  # OpenCode's own report stays the agent's usage
    assert len(llm_server.requests) == 1
