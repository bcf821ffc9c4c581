"""The floor under the adapters (batchcompact/adapters/common/): the SQLite session store OpenCode, Kilo and
OpenClaw share (copy, backup, one transaction verified before the commit), the settings-file reader, and the
usage helpers written once for several agents. Each agent's own store is tested in tests/agents/<name>/; these
tests hold the shared rules on a database of their own, so a change to the floor is caught whatever agent uses it."""

from __future__ import annotations

import json
import os
import sqlite3
from contextlib import closing
from pathlib import Path

import pytest

from batchcompact.adapters.common.database import (
    SessionDatabase,
    begin_immediate,
    session_path,
    write_in_one_transaction,
)
from batchcompact.adapters.common.documents import read_object
from batchcompact.adapters.common.files import ChangedDuringRun
from batchcompact.adapters.common.lines import ExtractStats
from batchcompact.adapters.common.settings_files import json_settings, positive
from batchcompact.adapters.common.usage_rows import COLUMNS, UsageRows
from batchcompact.errors import SessionReadError, VerificationError

DB_NAME = "toy.db"


class Busy(Exception):
    pass


class Changed(Exception):
    pass


def make_db(path: Path, rows: list[tuple[str, str]]) -> Path:
    with closing(sqlite3.connect(path)) as conn:
        conn.execute("CREATE TABLE line (session TEXT, text TEXT)")
        conn.executemany("INSERT INTO line VALUES (?, ?)", rows)
        conn.commit()
    return path


def split(path: str | Path) -> tuple[Path, str] | None:
    db, sep, session = str(path).rpartition("#")
    return (Path(db), session) if sep and session and Path(db).name == DB_NAME else None


def open_checked(db: Path) -> sqlite3.Connection:
    conn = sqlite3.connect(f"file:{db}?mode=ro", uri=True)
    if not conn.execute("SELECT name FROM sqlite_master WHERE name = 'line'").fetchone():
        conn.close()
        raise SessionReadError(f"{db}: not a toy database")
    return conn


def held(db: Path, session: str) -> tuple[int, str]:
    with closing(open_checked(db)) as conn:
        texts = [row[0] for row in conn.execute("SELECT text FROM line WHERE session = ? ORDER BY rowid", (session,))]
    return len(texts), "|".join(texts)


STORE = SessionDatabase(split=split, open_checked=open_checked, held=held,
                        not_a_session=lambda path: SessionReadError(f"{path}: not a toy session"), changed=Changed)


def lines(db: Path, session: str) -> list[str]:
    return [row[0] for row in sqlite3.connect(db).execute("SELECT text FROM line WHERE session = ? ORDER BY rowid",
                                                          (session,))]


def append(db: Path, session: str, text: str, *, expect: tuple[int, str], verify=None) -> None:
    """A toy agent's write: one line appended in one transaction, the session as read checked first."""
    with closing(sqlite3.connect(db, isolation_level=None, timeout=0.05)) as conn:
        def write() -> None:
            if held_in(conn, session) != expect:
                raise Changed(f"{session_path(db, session)} changed")
            conn.execute("INSERT INTO line VALUES (?, ?)", (session, text))

        write_in_one_transaction(conn, lambda: begin_immediate(conn, tries=2, pause=0, busy=lambda exc: Busy(str(exc))),
                                 write, lambda: lines_in(conn, session), verify)


def held_in(conn: sqlite3.Connection, session: str) -> tuple[int, str]:
    texts = lines_in(conn, session)
    return len(texts), "|".join(texts)


def lines_in(conn: sqlite3.Connection, session: str) -> list[str]:
    return [row[0] for row in conn.execute("SELECT text FROM line WHERE session = ? ORDER BY rowid", (session,))]


def test_the_write_commits_once_verified_and_rolls_back_when_verify_finds_problems(tmp_path):
    db = make_db(tmp_path / DB_NAME, [("s1", "a")])
    seen = []
    append(db, "s1", "b", expect=(1, "a"), verify=lambda written: seen.append(list(written)) or [])
    assert seen == [["a", "b"]]  # verify read the session back inside the transaction, the new line in it
    assert lines(db, "s1") == ["a", "b"]
    with pytest.raises(VerificationError, match="bad one; bad two"):
        append(db, "s1", "c", expect=(2, "a|b"), verify=lambda written: ["bad one", "bad two"])
    assert lines(db, "s1") == ["a", "b"]  # rolled back: nothing of the failed write stays


def test_a_session_changed_since_it_was_read_is_not_written(tmp_path):
    db = make_db(tmp_path / DB_NAME, [("s1", "a")])
    with pytest.raises(Changed):
        append(db, "s1", "b", expect=(0, ""))
    assert lines(db, "s1") == ["a"]


def test_begin_immediate_gives_up_with_the_agent_s_error_while_another_writer_holds_the_lock(tmp_path):
    db = make_db(tmp_path / DB_NAME, [("s1", "a")])
    holder = sqlite3.connect(db, isolation_level=None)
    holder.execute("BEGIN IMMEDIATE")
    try:
        with pytest.raises(Busy, match="locked"):
            append(db, "s1", "b", expect=(1, "a"))
    finally:
        holder.execute("ROLLBACK")
        holder.close()
    append(db, "s1", "b", expect=(1, "a"))  # the lock released: the same write goes through
    assert lines(db, "s1") == ["a", "b"]


def test_begin_immediate_lets_other_errors_through(tmp_path):
    conn = sqlite3.connect(tmp_path / "x.db", isolation_level=None)
    conn.execute("BEGIN")
    with pytest.raises(sqlite3.OperationalError, match="within a transaction"):
        begin_immediate(conn, tries=3, pause=0, busy=lambda exc: Busy(str(exc)))
    conn.close()


def test_output_dir_writes_into_one_copy_of_the_database_and_keeps_the_source(tmp_path):
    (tmp_path / "in").mkdir()
    source = make_db(tmp_path / "in" / DB_NAME, [("s1", "a"), ("s2", "x")])
    os.chmod(source, 0o640)
    out = tmp_path / "out" / "deep" / DB_NAME
    for session, text, expect in (("s1", "b", (1, "a")), ("s2", "y", (1, "x"))):
        written = STORE.write_session(source, session, f"{out}#{session}",
                                      lambda db, s=session, t=text, e=expect: append(db, s, t, expect=e),
                                      in_place=False, backup=True, expect=expect)
        assert written == f"{out}#{session}"
    assert lines(out, "s1") == ["a", "b"] and lines(out, "s2") == ["x", "y"]  # both into the one copy
    assert lines(source, "s1") == ["a"]
    assert os.stat(out).st_mode & 0o777 == 0o640  # the source's mode
    assert not list(source.parent.glob("*.bak*"))  # no backup beside a source that is not written
    assert [p.name for p in out.parent.iterdir()] == [DB_NAME]  # no temp copy left


def test_in_place_backs_up_once_and_reuses_a_backup_holding_the_session_as_read(tmp_path):
    db = make_db(tmp_path / DB_NAME, [("s1", "a"), ("s2", "x")])
    STORE.write_session(db, "s1", f"{db}#s1", lambda out: append(out, "s1", "b", expect=(1, "a")),
                        in_place=True, backup=True, expect=(1, "a"))
    backup = Path(f"{db}.bak")
    assert lines(backup, "s1") == ["a"] and lines(db, "s1") == ["a", "b"]
    # s2 as read is what the backup holds: reused, no second copy
    STORE.write_session(db, "s2", f"{db}#s2", lambda out: append(out, "s2", "y", expect=(1, "x")),
                        in_place=True, backup=True, expect=(1, "x"))
    assert not Path(f"{db}.bak.1").exists()
    # s1 again: the backup holds it as first read, not as read now: a new backup at the next name
    STORE.write_session(db, "s1", f"{db}#s1", lambda out: append(out, "s1", "c", expect=(2, "a|b")),
                        in_place=True, backup=True, expect=(2, "a|b"))
    assert lines(Path(f"{db}.bak.1"), "s1") == ["a", "b"]
    # backup disabled: none made
    STORE.write_session(db, "s2", f"{db}#s2", lambda out: append(out, "s2", "z", expect=(2, "x|y")),
                        in_place=True, backup=False, expect=(2, "x|y"))
    assert not Path(f"{db}.bak.2").exists()


def test_the_agent_s_changed_is_the_writer_s_changed_during_run_and_bad_paths_are_named(tmp_path):
    db = make_db(tmp_path / DB_NAME, [("s1", "a")])
    with pytest.raises(ChangedDuringRun, match="changed"):
        STORE.write_session(db, "s1", f"{db}#s1", lambda out: append(out, "s1", "b", expect=(9, "?")),
                            in_place=True, backup=False, expect=(9, "?"))
    with pytest.raises(SessionReadError, match="other.db#s1: not a toy session"):
        STORE.write_session(db, "s1", tmp_path / "other.db#s1", lambda out: None, in_place=False, backup=False,
                            expect=(1, "a"))
    with pytest.raises(SessionReadError, match="not a toy session"):
        STORE.copy_session(tmp_path / "x.txt", tmp_path / "out" / f"{DB_NAME}#s1")


def test_copy_session_copies_the_database_once_and_refuses_one_of_another_kind(tmp_path):
    db = make_db(tmp_path / DB_NAME, [("s1", "a")])
    out = tmp_path / "out" / DB_NAME
    STORE.copy_session(f"{db}#s1", f"{out}#s1")
    assert lines(out, "s1") == ["a"]
    with closing(sqlite3.connect(db)) as conn:
        conn.execute("INSERT INTO line VALUES ('s2', 'x')")
        conn.commit()
    STORE.copy_session(f"{db}#s2", f"{out}#s2")  # the copy exists: kept as it is
    assert lines(out, "s2") == []
    other = tmp_path / "other" / DB_NAME
    other.parent.mkdir()
    sqlite3.connect(other).close()
    with pytest.raises(SessionReadError, match="not a toy database"):
        STORE.copy_session(f"{other}#s1", f"{tmp_path / 'out2' / DB_NAME}#s1")
    assert not (tmp_path / "out2" / DB_NAME).exists()


def test_settings_files_are_json_objects_read_again_when_they_change(tmp_path):
    path = tmp_path / "settings.json"
    assert json_settings(path) == {}  # missing
    path.write_text('{"a": {"b": 2}}')
    assert json_settings(path) == {"a": {"b": 2}}
    path.write_text('{"a": 3, // a comment\n}')
    os.utime(path, ns=(1, 1))
    assert json_settings(path) == {}  # not plain JSON
    path.write_text("[1, 2]")
    os.utime(path, ns=(2, 2))
    assert json_settings(path) == {}  # not an object
    path.write_text('{"a": 4}')
    os.utime(path, ns=(3, 3))
    assert json_settings(path) == {"a": 4}
    assert [positive(v) for v in (3, 2.9, 0, -1, True, "5", None)] == [3, 2, None, None, None, None, None]


def test_add_request_keys_a_request_by_agent_session_and_identity(tmp_path):
    rows = UsageRows()
    rows.add_request("toy", tmp_path / "s.json", "s1", "m7", project="/p", timestamp=None, provider=None,
                     model="gpt-4o", input_tokens=5, output_tokens=2, cache_read_tokens=1)
    rows.add_request("toy", tmp_path / "s.json", "s1", "m8", line=4, project=None, timestamp=None, provider=None,
                     model="gpt-4o", input_tokens=1, output_tokens=1)
    first, second = (dict(zip(COLUMNS, row, strict=True)) for row in rows.rows)
    assert (first["source"], first["agent"], first["file"], first["line"], first["kind"], first["dedupe_key"],
            first["total_tokens"]) == ("toy", "toy", str(tmp_path / "s.json"), None, "main", "toy:s1:m7", 8)
    assert (second["line"], second["dedupe_key"]) == (4, "toy:s1:m8")


def test_read_object_is_a_json_object_or_none(tmp_path):
    stats = ExtractStats(path="x")
    (tmp_path / "a.json").write_text(json.dumps({"k": 1}))
    (tmp_path / "b.json").write_text("[1]")
    (tmp_path / "c.json").write_text("{bad")
    assert read_object(tmp_path / "a.json", stats) == {"k": 1}
    assert read_object(tmp_path / "b.json", stats) is None
    assert stats.warnings == []  # another JSON value: nothing to count, no warning
    assert read_object(tmp_path / "c.json", stats) is None
    assert len(stats.warnings) == 1 and "invalid JSON" in stats.warnings[0]
