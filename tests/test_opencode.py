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

from batchcompact.agents.opencode.session import (
    COMPACTION_PROMPT,
    OpenCodeStoreError,
    filter_compacted,
    read_session,
    session_ids,
)
from batchcompact.agents.opencode.store import (
    ChangedSince,
    DatabaseBusy,
    copy_database,
    verify,
    write_compaction,
)
from batchcompact.core.context import build_session_context

RECORDED = Path(__file__).parent / "data" / "recorded" / "opencode" / "compacted.db"
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
    loaded = filter_compacted(session.extra["messages"])
    assert [m["info"].get("role") for m in loaded] == ["user", "assistant", "user", "assistant"]
    assert loaded[0]["parts"][0]["type"] == "compaction" and loaded[1]["info"]["summary"] is True


def test_usage_is_non_cached_input_and_output_with_reasoning(db):
    session = _session(db)
    first = next(e for e in session.path_entries() if e.role == "assistant")
    raw = next(m["info"] for m in session.extra["messages"] if m["info"]["id"] == first.id)
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
    assert verify(db, session, written, summary=SUMMARY, fmt="opencode") == []
    again = _session(db)
    loaded = filter_compacted(again.extra["messages"])
    assert [m["info"]["id"] for m in loaded[:3]] == [written.user_id, written.summary_id, cut.id]
    user, summary = loaded[0], loaded[1]
    assert user["parts"][0] == {**user["parts"][0], "type": "compaction", "auto": False, "tail_start_id": cut.id}
    assert summary["info"]["mode"] == "compaction" and summary["info"]["summary"] is True
    assert summary["info"]["parentID"] == written.user_id and summary["info"]["finish"] == "stop"
    assert summary["info"]["tokens"]["input"] == 0 and summary["info"]["cost"] == 0
    # ids sort after every earlier message, as OpenCode's ascending ids do
    assert all(m["info"]["id"] < written.user_id for m in session.extra["messages"])
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
    again = read_session(db, session.extra["session_id"])
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
    assert all(m["info"].get("crashMark") == 1 for m in session.extra["messages"])
    copy = tmp_path / "copy.db"
    copy_database(crashed / "opencode.db", copy)
    assert read_session(copy, session_id).extra["messages"] == session.extra["messages"]
