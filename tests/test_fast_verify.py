"""The writer's verify of an appended pi session parses only what was appended (adapters/pi/read.py
`read_pi_appended`): it must give exactly what a full re-read gives, and never trust a prefix whose bytes
are not the ones the session was read from."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

from batchcompact.adapters.pi.read import read_pi_appended, read_pi_session
from batchcompact.pipeline.state import fingerprint_file

SAMPLES = Path(__file__).resolve().parent.parent / "sample_sessions" / "pi"
PI_FILES = sorted(SAMPLES.glob("*.jsonl"))


def _view(session) -> tuple:
    """Everything a verify looks at: header, entries with their lines, problems, the active path."""
    return (session.header, [(e.line, e.data) for e in session.entries], [str(p) for p in session.problems],
            [e.id for e in session.path_entries()], session.version)


def _append(path: Path, *lines: bytes) -> None:
    with open(path, "ab") as out:
        for line in lines:
            out.write(line)


def _child_of_leaf(session, entry_id: str) -> bytes:
    leaf = session.path_entries()[-1].id
    entry = {"type": "message", "id": entry_id, "parentId": leaf, "timestamp": "2026-11-23T00:00:00.000Z",
             "message": {"role": "user", "content": "appended", "timestamp": 1}}
    return (json.dumps(entry, separators=(",", ":")) + "\n").encode()


@pytest.mark.parametrize("source", PI_FILES, ids=lambda p: p.name)
def test_the_appended_read_gives_what_a_full_read_gives(tmp_path, source):
    path = tmp_path / source.name
    shutil.copyfile(source, path)
    fingerprint = fingerprint_file(path)
    original = read_pi_session(path, digest=True)
    assert not original.problems
    _append(path, _child_of_leaf(original, "fa570001"), b"\n", _child_of_leaf(original, "fa570002"))
    fast = read_pi_appended(original, path, fingerprint.size, fingerprint.sha256)
    if original.migrated:  # a v1/v2 file is written whole as v3, never appended to: read in full
        assert fast is None
        return
    assert fast is not None
    assert _view(fast) == _view(read_pi_session(path))
    assert fast.path_entries()[-1].id == "fa570002"


@pytest.mark.parametrize("tail", [
    b'{"type":"message","id":"x1","parentId":\n',  # invalid JSON
    b'[1, 2]\n',  # not an object
    b'{"type":"message","id":"x2","parentId":"nowhere","message":{"role":"user","content":"a"}}\n',
    b'{"type":"compaction","id":"x3","parentId":null,"summary":"s","firstKeptEntryId":"gone"}\n',
    b'{"type":"session","version":3,"id":"again"}\n',  # a second header
    b'{"type":"message","id":"x4","parentId":null,"message":{"role":"user","content":"torn"',  # no newline
], ids=["invalid-json", "not-object", "dangling-parent", "compaction-off-path", "second-header", "torn"])
def test_a_corrupted_tail_gives_the_full_reads_problems(tmp_path, tail):
    path = tmp_path / "s.jsonl"
    shutil.copyfile(PI_FILES[0], path)
    fingerprint = fingerprint_file(path)
    original = read_pi_session(path, digest=True)
    _append(path, tail)
    fast = read_pi_appended(original, path, fingerprint.size, fingerprint.sha256)
    full = read_pi_session(path)
    assert fast is not None and full.problems
    assert _view(fast) == _view(full)


def _line(**entry) -> bytes:
    return (json.dumps(entry, separators=(",", ":")) + "\n").encode()


@pytest.mark.parametrize("case", ["duplicate-of-an-ancestor", "branch-from-the-middle", "self-parent",
                                  "forward-parent", "cycle", "compaction-on-a-branch", "compaction-kept-off-path",
                                  "duplicate-of-a-kept-entry"])
def test_the_appended_tree_is_the_full_reads_tree(tmp_path, case):
    """The appended read extends the original's tree (`SessionTree.extended`) and checks only the appended
    compactions: ids that repeat the original's, branches, cycles and compactions give what a full read gives."""
    path = tmp_path / "s.jsonl"
    shutil.copyfile(SAMPLES / "second-compaction.jsonl", path)  # two compactions on its active path
    fingerprint = fingerprint_file(path)
    original = read_pi_session(path, digest=True)
    assert not original.problems and original.version == 3
    ids = [e.id for e in original.path_entries()]
    middle, leaf = ids[len(ids) // 2], ids[-1]
    kept = [e for e in original.entries if e.type == "compaction"][-1].data["firstKeptEntryId"]
    message = {"role": "user", "content": "appended", "timestamp": 1}
    tails = {
        # the old compaction's kept id now names an entry off its path: only a check of every compaction sees it
        "duplicate-of-a-kept-entry": [_line(type="message", id=kept, parentId=leaf, message=message)],
        "duplicate-of-an-ancestor": [_line(type="message", id=ids[1], parentId=leaf, message=message)],
        "branch-from-the-middle": [_line(type="message", id="n1", parentId=middle, message=message),
                                   _line(type="message", id="n2", parentId="n1", message=message)],
        "self-parent": [_line(type="message", id="n1", parentId="n1", message=message)],
        "forward-parent": [_line(type="message", id="n1", parentId="n2", message=message),
                           _line(type="message", id="n2", parentId=leaf, message=message)],
        "cycle": [_line(type="message", id="n1", parentId="n2", message=message),
                  _line(type="message", id="n2", parentId="n1", message=message)],
        "compaction-on-a-branch": [_line(type="compaction", id="c1", parentId=middle, summary="s",
                                         firstKeptEntryId=ids[1], tokensBefore=1)],
        "compaction-kept-off-path": [_line(type="message", id="n1", parentId=ids[1], message=message),
                                     _line(type="compaction", id="c1", parentId=leaf, summary="s",
                                           firstKeptEntryId="n1", tokensBefore=1)],
    }
    children_before = {k: [e.id for e in v] for k, v in original.tree.children.items()}
    _append(path, *tails[case])
    fast = read_pi_appended(original, path, fingerprint.size, fingerprint.sha256)
    full = read_pi_session(path)
    assert fast is not None
    assert _view(fast) == _view(full)
    assert {k: [e.id for e in v] for k, v in fast.tree.children.items()} == \
        {k: [e.id for e in v] for k, v in full.tree.children.items()}
    assert fast.tree.by_id.keys() == full.tree.by_id.keys()
    assert {k: [e.id for e in v] for k, v in original.tree.children.items()} == children_before  # untouched
    assert [e.id for e in original.path_entries()] == ids


def test_a_changed_prefix_is_never_trusted(tmp_path):
    path = tmp_path / "s.jsonl"
    shutil.copyfile(PI_FILES[0], path)
    fingerprint = fingerprint_file(path)
    original = read_pi_session(path, digest=True)
    data = bytearray(path.read_bytes())
    at = data.index(b'"content"')
    data[at + 1] = ord("C")  # same size, one byte changed inside the prefix
    path.write_bytes(bytes(data) + _child_of_leaf(original, "fa570003"))
    assert read_pi_appended(original, path, fingerprint.size, fingerprint.sha256) is None


def test_a_session_not_read_from_those_bytes_is_never_trusted(tmp_path):
    path = tmp_path / "s.jsonl"
    shutil.copyfile(PI_FILES[0], path)
    fingerprint = fingerprint_file(path)
    without = read_pi_session(path)  # no digest: which bytes it came from is unknown
    assert read_pi_appended(without, path, fingerprint.size, fingerprint.sha256) is None
    other = tmp_path / "other.jsonl"
    shutil.copyfile(PI_FILES[1], other)
    read_elsewhere = read_pi_session(other, digest=True)  # read from other bytes than the fingerprint's
    assert read_pi_appended(read_elsewhere, path, fingerprint.size, fingerprint.sha256) is None


def _run(folder: Path, out: Path):
    from batchcompact.core.planner import CompactionSettings
    from batchcompact.pipeline.run import RunOptions, run_archive
    from batchcompact.summarize import BuiltinSummarizer, PoolSettings

    options = RunOptions(output_dir=out, min_age_s=0, jobs=1, report_dir=out / "reports")
    return run_archive([str(folder)], CompactionSettings(force=True), options, BuiltinSummarizer(), PoolSettings())


def test_run_verifies_appended_pi_sessions_without_reading_them_again(tmp_path, monkeypatch):
    from batchcompact.pipeline import outcome

    for source in PI_FILES[:2]:
        shutil.copyfile(source, tmp_path / source.name)
    full_reads = []
    real = outcome.read_session
    monkeypatch.setattr(outcome, "read_session", lambda p: full_reads.append(p) or real(p))
    summary = _run(tmp_path, tmp_path / "out")
    assert summary.by_status.get("compacted") == 2, summary.by_status
    assert full_reads == []  # both verified from their appended lines only
    for source in PI_FILES[:2]:
        written = read_pi_session(tmp_path / "out" / source.name)
        assert not written.problems and written.path_entries()[-1].type == "compaction"


def test_run_rejects_a_corrupted_appended_line_on_the_fast_path(tmp_path, monkeypatch):
    from batchcompact.pipeline import outcome, writer

    source = PI_FILES[0]
    shutil.copyfile(source, tmp_path / source.name)
    real_dumps = writer.dumps_line

    def corrupt(obj):  # the compaction line reaches the disk damaged
        text = real_dumps(obj)
        return text[: len(text) // 2] + "\n" if obj.get("type") == "compaction" else text

    monkeypatch.setattr(writer, "dumps_line", corrupt)
    full_reads = []
    real = outcome.read_session
    monkeypatch.setattr(outcome, "read_session", lambda p: full_reads.append(p) or real(p))
    summary = _run(tmp_path, tmp_path / "out")
    assert summary.by_status.get("failed") == 1, summary.by_status
    (row,) = [r for r in summary.rows if r.get("status") == "failed"]
    assert "invalid JSON" in row["reason"] and "no new entry was written" in row["reason"], row["reason"]
    assert full_reads == [] and not (tmp_path / "out" / source.name).exists()
    assert (tmp_path / source.name).read_bytes() == source.read_bytes()


def test_run_rejects_a_changed_prefix_before_the_fast_path_trusts_it(tmp_path, monkeypatch):
    """The fast path is told the prefix was checked (outcome.py): write_session compares it with the source
    byte for byte before anything is renamed, so the fast path's answer never counts for a wrong prefix."""
    from batchcompact.pipeline import writer

    source = PI_FILES[0]
    shutil.copyfile(source, tmp_path / source.name)
    real_copy = writer._copy_prefix

    def copy_and_flip(src, out, fingerprint, **how):  # one byte of the copied prefix reaches the disk changed
        last = real_copy(src, out, fingerprint, **how)
        out.flush()
        out.seek(fingerprint.size // 2)
        byte = out.read(1) if out.readable() else None
        out.seek(fingerprint.size // 2)
        out.write(b"X" if byte != b"X" else b"Y")
        out.seek(0, 2)
        return last

    monkeypatch.setattr(writer, "_copy_prefix", copy_and_flip)
    summary = _run(tmp_path, tmp_path / "out")
    (row,) = [r for r in summary.rows if r.get("status") == "failed"]
    assert "the original bytes are not a prefix of the output" in row["reason"], row["reason"]
    assert not (tmp_path / "out" / source.name).exists()


def test_a_source_rewritten_after_the_copy_is_never_written(bc, tmp_path, monkeypatch):
    """The copy of an appended output is not hashed as it is made: the check before the rename hashes the
    source and compares the copy with it byte for byte. A source rewritten after the copy with the same size
    and its mtime put back (only its hash tells) is reported as changed by `run`, exit 0, and nothing is
    written."""
    import os

    from batchcompact.adapters.pi import read as pi

    source = PI_FILES[0]
    (tmp_path / "in").mkdir()
    path = tmp_path / "in" / source.name
    shutil.copyfile(source, path)
    real = pi.read_pi_appended

    def read_then_rewrite(original, tmp, size, sha256, **kwargs):  # the verify runs after the copy
        written = real(original, tmp, size, sha256, **kwargs)
        before = os.stat(path)
        data = bytearray(path.read_bytes())
        data[size // 2] = ord("X") if data[size // 2] != ord("X") else ord("Y")
        path.write_bytes(bytes(data))
        os.utime(path, ns=(before.st_atime_ns, before.st_mtime_ns))
        return written

    monkeypatch.setattr(pi, "read_pi_appended", read_then_rewrite)
    changed = path.read_bytes()
    code, out, err = bc("run", tmp_path / "in", "--output-dir", tmp_path / "out", "--force", "--min-age", "0",
                        "--jobs", "1", "--format", "jsonl")
    rows = [json.loads(line) for line in out.splitlines() if line.startswith("{")]
    assert code == 0, err
    assert [(r["input_path"], r["status"]) for r in rows] == [(str(path), "changed_during_run")], out
    assert not (tmp_path / "out" / source.name).exists()
    assert path.read_bytes() != changed and len(path.read_bytes()) == len(changed)  # theirs, left alone
    assert not [p for p in (tmp_path / "out").rglob("*") if "batchcompact-tmp" in p.name]


def _temp_fd(fd: int) -> bool:
    import os

    try:
        return "batchcompact-tmp" in os.readlink(f"/proc/self/fd/{fd}")
    except OSError:
        return False


@pytest.mark.skipif(not Path("/proc/self/fd").is_dir(), reason="needs /proc to tell a temp file's fd")
def test_the_rename_waits_for_the_temp_files_fsync(tmp_path, monkeypatch):
    """The temp file's fsync runs while it is verified (durable.Durable); the rename waits for it."""
    import os
    import threading
    import time

    from batchcompact.pipeline import writer

    source = PI_FILES[0]
    shutil.copyfile(source, tmp_path / source.name)
    real_fsync, real_replace = os.fsync, os.replace
    synced: list[str] = []
    renamed: list[tuple[str, list[str]]] = []

    def slow_fsync(fd):
        if _temp_fd(fd):
            time.sleep(0.3)  # a slow disk: the verify goes on meanwhile, in the caller's thread
            synced.append(threading.current_thread().name)
        return real_fsync(fd)

    def replace(src, dst, **kwargs):
        if "batchcompact-tmp" in str(src):
            renamed.append((str(dst), list(synced)))
        return real_replace(src, dst, **kwargs)

    monkeypatch.setattr(writer.os, "fsync", slow_fsync)
    monkeypatch.setattr(writer.os, "replace", replace)
    summary = _run(tmp_path, tmp_path / "out")
    assert summary.by_status.get("compacted") == 1, summary.by_status
    assert synced == ["batchcompact-fsync"]  # in its own thread
    assert renamed == [(str(tmp_path / "out" / source.name), ["batchcompact-fsync"])]  # after it, not before


@pytest.mark.skipif(not Path("/proc/self/fd").is_dir(), reason="needs /proc to tell a temp file's fd")
def test_a_failed_fsync_of_the_temp_file_writes_nothing(tmp_path, monkeypatch):
    import errno
    import os

    from batchcompact.pipeline import writer

    source = PI_FILES[0]
    shutil.copyfile(source, tmp_path / source.name)
    real_fsync = os.fsync

    def failing_fsync(fd):
        if _temp_fd(fd):
            raise OSError(errno.EIO, os.strerror(errno.EIO))
        return real_fsync(fd)

    monkeypatch.setattr(writer.os, "fsync", failing_fsync)
    summary = _run(tmp_path, tmp_path / "out")
    (row,) = summary.rows
    assert row["status"] == "failed" and "Input/output error" in row["reason"], row
    assert not (tmp_path / "out" / source.name).exists()
    assert not [p for p in (tmp_path / "out").rglob("*") if "batchcompact-tmp" in p.name]
    assert (tmp_path / source.name).read_bytes() == source.read_bytes()
