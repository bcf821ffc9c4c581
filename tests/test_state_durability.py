"""The run state's durability: a paid summary's commit syncs the log; outcome records do not wait for it.

The statements SQLite is given are traced (`sqlite3.Connection.set_trace_callback`); docs/reliability.md says
what each level promises.
"""

from __future__ import annotations

from batchcompact.pipeline.state import Fingerprint, RunState


def _traced(state: RunState) -> list[str]:
    seen: list[str] = []
    state.db.set_trace_callback(lambda statement: seen.append(" ".join(statement.split()[:3]).upper()))
    return seen


def test_a_paid_summary_is_committed_with_the_log_synced(tmp_path):
    with RunState(tmp_path / "state.sqlite") as state:
        seen = _traced(state)
        state.put_summary("k1", {"summary": "paid"})
        # FULL for exactly this commit, then back to NORMAL for the outcome records.
        assert seen == ["PRAGMA SYNCHRONOUS=FULL", "BEGIN", "INSERT OR REPLACE", "COMMIT",
                        "PRAGMA SYNCHRONOUS=NORMAL"]
        assert state.db.execute("PRAGMA synchronous").fetchone()[0] == 1  # NORMAL
        assert state.get_summary("k1") == {"summary": "paid"}


def test_outcome_records_commit_without_a_sync_and_survive_a_reopen(tmp_path):
    path = tmp_path / "state.sqlite"
    fingerprint = Fingerprint(3, 1, "ab")
    with RunState(path) as state:
        assert state.db.execute("PRAGMA journal_mode").fetchone()[0] == "wal"
        seen = _traced(state)
        state.record("/a.jsonl", fingerprint, "s", "compacted", "/out/a.jsonl", None, "run1")
        assert not any(statement.startswith("PRAGMA") for statement in seen)
        assert state.db.execute("PRAGMA synchronous").fetchone()[0] == 1  # NORMAL
    with RunState(path) as state:
        done = state.finished("/a.jsonl", fingerprint, "s")
        assert (done.status, done.output_path, done.reason) == ("compacted", "/out/a.jsonl", None)


def test_a_summary_that_cannot_be_stored_raises_its_own_error_and_the_level_is_restored(tmp_path):
    import pytest

    with RunState(tmp_path / "state.sqlite") as state:
        with pytest.raises(TypeError):
            state.put_summary("k1", {"summary": object()})  # not JSON: fails before anything is written
        assert state.db.execute("PRAGMA synchronous").fetchone()[0] == 1  # NORMAL again
        assert state.get_summary("k1") is None
