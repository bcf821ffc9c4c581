"""`run` with the built-in summarizer finishes each session where it planned it (pipeline/session_task.py):
read once, summarized, written and verified by the same worker; the run loop only records outcomes.

The other path (phase 2 in the run loop, as with a model pool, or when --limit needs the whole plan first)
must give byte-identical outputs and the same report rows.
"""

from __future__ import annotations

import json
import shutil
from collections import Counter
from datetime import UTC, datetime
from pathlib import Path

import pytest
from conftest import SAMPLES, cli_invoker, copy_archive, session_outputs
from run_cli import FAST, Result

EPOCH = 1767323045  # 2026-01-02T03:04:05Z


@pytest.fixture
def bc(capsys, monkeypatch):
    run = cli_invoker(capsys, monkeypatch)
    return lambda *args: Result(*run(*args))


def statuses(text: str) -> dict[str, tuple]:
    rows = json.loads(text)["rows"]
    return {Path(r["input_path"]).name + ":" + r["input_path"].split("/in/")[-1]:
            (r["status"], r["reason"], r["tokens_before"], r["calls"], r["prompt_tokens"], r["completion_tokens"],
             r["model"]) for r in rows}


@pytest.fixture
def reads(monkeypatch):
    """How often each input session was parsed (the writer's temp files are counted apart: read whole, or
    from the appended lines on after a verified prefix, adapters/pi/read.py `read_pi_appended`)."""
    import batchcompact.adapters.pi.read as pi
    import batchcompact.formats.detect as detect

    counts: Counter = Counter()
    real = detect.read_session
    real_appended = pi.read_pi_appended

    def counting(path, agent_name=None, **kwargs):
        counts[str(path)] += 1
        return real(path, agent_name, **kwargs)

    def appended(original, path, *args, **kwargs):
        session = real_appended(original, path, *args, **kwargs)
        if session is not None:
            counts[str(path)] += 1
        return session

    monkeypatch.setattr(detect, "read_session", counting)
    monkeypatch.setattr(pi, "read_pi_appended", appended)
    return counts


def test_each_session_is_read_once_and_written_where_it_was_planned(bc, tmp_path, reads, monkeypatch):
    monkeypatch.setenv("BATCHCOMPACT_TOKEN_CACHE", "off")
    inputs = copy_archive(tmp_path / "in")
    result = bc("run", inputs, "--output-dir", tmp_path / "out", "--force", *FAST, "--format", "json")
    assert result.code in (0, 1), result.err
    rows = json.loads(result.out)["rows"]
    compacted = [r for r in rows if r["status"] == "compacted"]
    assert len(compacted) >= 5
    originals = {k: n for k, n in reads.items() if "batchcompact-tmp" not in k}
    verified = {k: n for k, n in reads.items() if "batchcompact-tmp" in k}
    assert set(originals.values()) == {1}, originals  # never re-read to summarize or to write
    assert len(verified) == len(compacted)  # every output verified from disk before its rename
    for row in compacted:
        assert Path(row["output_path"]).is_file() and row["calls"] >= 1 and row["model"] == "builtin"


def test_the_run_loop_path_gives_the_same_bytes_and_rows(bc, tmp_path, reads, monkeypatch):
    """--limit needs the whole plan before anything is summarized: the sessions go through phase 2 in the
    run loop (re-read there). Same outputs, byte for byte, and the same rows."""
    monkeypatch.setenv("SOURCE_DATE_EPOCH", str(EPOCH))
    inputs = copy_archive(tmp_path / "in")
    here = bc("run", inputs, "--output-dir", tmp_path / "here", "--force", *FAST, "--format", "json")
    assert here.code in (0, 1), here.err
    reads.clear()
    loop = bc("run", inputs, "--output-dir", tmp_path / "loop", "--force", *FAST, "--format", "json",
              "--limit", "1000")
    assert loop.code == here.code, loop.err
    # planned; re-read for its calls; re-read by the worker that writes it (the model pool's path)
    assert max(n for k, n in reads.items() if "batchcompact-tmp" not in k) == 3
    assert statuses(loop.out) == statuses(here.out)
    assert session_outputs(tmp_path / "loop") == session_outputs(tmp_path / "here")
    assert len(session_outputs(tmp_path / "here")) >= 5


def test_source_date_epoch_is_the_time_new_entries_carry(bc, tmp_path, monkeypatch):
    monkeypatch.setenv("SOURCE_DATE_EPOCH", str(EPOCH))
    inputs = tmp_path / "in"
    shutil.copytree(SAMPLES / "pi", inputs, ignore=shutil.ignore_patterns("*.md", "*.json"))
    first = bc("run", inputs, "--output-dir", tmp_path / "a", "--force", *FAST)
    second = bc("run", inputs, "--output-dir", tmp_path / "b", "--force", *FAST, "--jobs", "2")
    assert first.code == second.code == 0, first.err + second.err
    assert session_outputs(tmp_path / "a") == session_outputs(tmp_path / "b")
    expected = datetime.fromtimestamp(EPOCH, UTC).strftime("%Y-%m-%dT%H:%M:%S.000Z")
    stamps = set()
    for path in (tmp_path / "a").rglob("*.jsonl"):
        before = len((inputs / path.relative_to(tmp_path / "a")).read_text().splitlines())
        for line in path.read_text().splitlines()[before:]:  # the entries this run added
            stamps.add(json.loads(line)["timestamp"])
    assert stamps == {expected}


def test_a_fault_while_compacting_in_a_worker_fails_that_session_alone(bc, tmp_path, monkeypatch):
    from batchcompact.pipeline import session_task

    real = session_task.lock_same_size

    def lock_same_size(path, fingerprint):
        if "big-refactor" in str(path):
            raise RuntimeError("boom")
        return real(path, fingerprint)

    inputs = tmp_path / "in"
    shutil.copytree(SAMPLES / "pi", inputs, ignore=shutil.ignore_patterns("*.md", "*.json"))
    monkeypatch.setattr(session_task, "lock_same_size", lock_same_size)
    result = bc("run", inputs, "--output-dir", tmp_path / "out", "--force", *FAST, "--format", "json")
    rows = {Path(r["input_path"]).stem: r for r in json.loads(result.out)["rows"]}
    assert result.code == 4 and "Traceback" not in result.err  # a bug: exit 4, one line, no traceback
    assert rows["big-refactor"]["status"] == "failed"
    assert rows["big-refactor"]["reason"] == ("internal error: RuntimeError('boom') (a bug in batchcompact; "
                                              "rerun with BATCHCOMPACT_DEBUG=1 for the traceback)")
    assert sum(r["status"] == "compacted" for r in rows.values()) >= 2
    assert not (tmp_path / "out" / "big-refactor.jsonl").exists()
    assert not list((tmp_path / "out").rglob("*batchcompact-tmp*"))


def test_a_node_that_cannot_see_the_session_says_so(tmp_path):
    """prepare_file / finish_file run wherever the executor puts them: a path that node cannot see fails
    that session with the reason (the shared filesystem), never an exception."""
    from batchcompact.core.planner import CompactionSettings
    from batchcompact.pipeline.planning import PlanOptions
    from batchcompact.pipeline.session_task import FileTask, SessionWork, finish_file, prepare_file
    from batchcompact.pipeline.state import Fingerprint

    task = FileTask(CompactionSettings(force=True), PlanOptions())
    work = SessionWork(str(tmp_path / "elsewhere.jsonl"), str(tmp_path), Fingerprint(1, 2, "ab"),
                       target=str(tmp_path / "out.jsonl"))
    for done in (prepare_file(work, task), finish_file(work, task)):
        assert done.status == "failed"
        assert "not found on host" in done.reason and "same path" in done.reason


def test_the_report_imports_load_pyarrow_in_a_thread_of_a_fresh_interpreter():
    """`ReportImports` (pipeline/run_plan.py starts it once the workers are forked) really imports what the
    report writer needs, in a thread the caller joins."""
    import subprocess
    import sys

    code = (
        "import sys, threading\n"
        "from batchcompact.pipeline.runreport.write import ReportImports\n"
        "assert 'pyarrow' not in sys.modules\n"
        "imports = ReportImports()\n"
        "imports.start()\n"
        "assert imports._thread is not None and imports._thread.name == 'batchcompact-report-imports'\n"
        "imports.join()\n"
        "assert 'pyarrow.parquet' in sys.modules\n"
        "assert not any(t.name == 'batchcompact-report-imports' for t in threading.enumerate())\n"
    )
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr


def _flip_one_byte(path: Path) -> None:
    """The same size, one byte different (an in-place rewrite by a writer that takes no lock)."""
    data = bytearray(path.read_bytes())
    at = data.rindex(b"e")
    data[at:at + 1] = b"E"
    path.write_bytes(bytes(data))


@pytest.mark.parametrize("change", ["grown", "same size", "during the summary"])
def test_a_session_changed_after_the_workers_read_is_never_written(bc, tmp_path, monkeypatch, change):
    """The worker that read a session locks it and checks only its size (`lock_same_size`): a change of
    the same size is caught by the writer, which hashes the whole file again before the rename while it
    compares the copy in the temp file with it (`writer._check_appended`). Every way round, the session is
    `changed_during_run` and nothing is written."""
    from batchcompact.pipeline import session_task
    from batchcompact.summarize.builtin import BuiltinSummarizer

    inputs = tmp_path / "in"
    shutil.copytree(SAMPLES / "pi", inputs, ignore=shutil.ignore_patterns("*.md", "*.json"))
    live = inputs / "big-refactor.jsonl"
    done = []

    def disturb():
        if not done:
            done.append(True)
            if change == "grown":
                with open(live, "a") as handle:
                    handle.write('{"type":"message","id":"feedbeef"')  # a live agent mid-write
            else:
                _flip_one_byte(live)

    locked = []
    real_lock = session_task.take_lock

    def take_lock(path):
        locked.append(Path(path))
        if Path(path) == live and change != "during the summary":
            disturb()
        return real_lock(path)

    monkeypatch.setattr(session_task, "take_lock", take_lock)
    if change == "during the summary":  # after the lock and its size check, before the write
        real_summary = BuiltinSummarizer.summarize_now

        def summarize_now(self, call):
            if locked[-1] == live:
                disturb()
            return real_summary(self, call)

        monkeypatch.setattr(BuiltinSummarizer, "summarize_now", summarize_now)
    result = bc("run", inputs, "--output-dir", tmp_path / "out", "--force", *FAST, "--format", "json")
    rows = {Path(r["input_path"]).stem: r for r in json.loads(result.out)["rows"]}
    assert result.code == 0, result.err
    assert done, "the session was never disturbed: the test proves nothing"
    assert rows["big-refactor"]["status"] == "changed_during_run", rows["big-refactor"]
    expected = ("the file changed after it was planned" if change == "grown"
                else f"{live} changed while it was being compacted")
    assert rows["big-refactor"]["reason"] == expected
    assert not (tmp_path / "out" / "big-refactor.jsonl").exists()
    assert sum(r["status"] == "compacted" for r in rows.values()) >= 2
    assert not list((tmp_path / "out").rglob("*batchcompact-tmp*"))
