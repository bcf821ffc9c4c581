"""A line longer than the limit (`formats.jsonl.MAX_LINE_BYTES`) is passed over in pieces, never read
whole: a file with a corrupt region (a crash's zero-filled blocks, a runaway line) costs at most the
limit in memory, is named with its line, and the lines after it are read with the right numbers.
The limit is lowered here so a few MB stand for gigabytes; one CLI test uses a real, sparse line."""

from __future__ import annotations

import hashlib
import json
import os
import subprocess
import sys
import tracemalloc
from pathlib import Path

import pytest
from conftest import SAMPLES

import batchcompact.formats.jsonl as jsonl
from batchcompact.adapters.pi.read import read_pi_session
from batchcompact.formats.jsonl import capped_lines
from batchcompact.report.part_cache import extract_file

LIMIT = 1 << 20
LONG = 24 << 20  # 24 times the limit
CLAUDE = SAMPLES / "claude" / "projects" / "-home-user-projects-webapp" / "bd6e388f-417b-444a-b6e3-88a50c28ea27.jsonl"


@pytest.fixture
def small_limit(monkeypatch):
    monkeypatch.setattr(jsonl, "MAX_LINE_BYTES", LIMIT)


def _with_long_line(source: Path, target: Path, at: int, long: bytes) -> int:
    """`source` with `long` (and a newline) inserted as line `at`; returns the number of lines written."""
    lines = source.read_bytes().splitlines(keepends=True)
    target.parent.mkdir(parents=True, exist_ok=True)
    target.write_bytes(b"".join(lines[: at - 1]) + long + b"\n" + b"".join(lines[at - 1:]))
    return len(lines) + 1


def _peak(work) -> tuple[object, int]:
    tracemalloc.start()
    try:
        result = work()
        return result, tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()


def test_the_lines_of_a_file_with_a_long_line_keep_their_numbers_and_bytes(tmp_path, small_limit):
    path = tmp_path / "x.jsonl"
    path.write_bytes(b'{"a":1}\n' + b"x" * (3 * LIMIT + 5) + b"\n" + b"y" * LIMIT + b'{"b":2}\n' + b"z" * LIMIT)
    told, digest, lines = [], hashlib.sha256(), []
    with open(path, "rb") as handle:
        for raw in capped_lines(handle, lambda number, size: told.append((number, size)), digest=digest):
            digest.update(raw)  # as the readers feed theirs
            lines.append(raw)
    assert told == [(2, 3 * LIMIT + 6), (3, LIMIT + 8)]  # each long line is one line, passed over
    assert lines == [b'{"a":1}\n', b"", b"", b"z" * LIMIT]  # a last line of exactly the limit is kept
    # the long lines' bytes went to the digest: every byte of the file is in it, once, in order
    assert digest.digest() == hashlib.sha256(path.read_bytes()).digest()


def test_a_short_file_is_its_own_line_iterator(tmp_path):
    path = tmp_path / "x.jsonl"
    path.write_bytes(b'{"a":1}\n')
    with open(path, "rb", buffering=1 << 20) as handle:
        assert capped_lines(handle) is handle  # the readers' loops pay nothing for the check


def test_the_session_reader_names_the_long_line_and_reads_the_rest(tmp_path, small_limit):
    source = SAMPLES / "pi" / "small-fix.jsonl"
    path = tmp_path / "long.jsonl"
    long = b'{"type":"message","pad":"' + b"x" * LONG + b'"}'
    count = _with_long_line(source, path, 3, long)
    session, peak = _peak(lambda: read_pi_session(path, digest=True))
    errors = [p for p in session.problems if p.severity == "error"]
    assert [(p.line, p.message) for p in errors] == [
        (3, f"line of {len(long) + 1} bytes is larger than the limit ({LIMIT} bytes); not read")]
    assert len(session.entries) == count - 2  # every other line but the header is an entry
    assert session.entries[-1].line == count  # the lines after it keep their numbers
    digest = session.source
    assert (digest.size, digest.lines) == (path.stat().st_size, count)
    assert digest.sha256 == hashlib.sha256(path.read_bytes()).hexdigest()
    assert peak < LONG // 2, peak  # never read whole (it took more than LONG)


def test_the_report_reader_warns_and_counts_every_usage_line_around_it(tmp_path, small_limit):
    plain, _ = extract_file(CLAUDE)
    path = tmp_path / "projects" / "p" / "s.jsonl"
    long = b'{"type":"assistant","message":{"usage":{"x":"' + b"0" * LONG + b'"}}}'
    _with_long_line(CLAUDE, path, 5, long)
    (table, stats), peak = _peak(lambda: extract_file(path))
    assert table.num_rows == plain.num_rows > 0
    assert table.column("input_tokens").to_pylist() == plain.column("input_tokens").to_pylist()
    assert [w for w in stats.warnings if "larger than the limit" in w] == [
        f"{path}:5: line of {len(long) + 1} bytes is larger than the limit ({LIMIT} bytes); skipped"]
    assert peak < LONG // 2, peak


def test_the_codex_reader_passes_over_it_too(tmp_path, small_limit):
    rollouts = sorted((SAMPLES / "codex").rglob("rollout-*.jsonl"))
    plain, _ = extract_file(rollouts[0])
    path = tmp_path / "sessions" / "2026" / "01" / "01" / rollouts[0].name
    _with_long_line(rollouts[0], path, 2, b'{"timestamp":"2026-10-14T09:45:01.000Z","type":"event_msg","payload":{"x":"'
                    + b"0" * LONG + b'"}}')
    (table, stats), peak = _peak(lambda: extract_file(path))
    assert table.num_rows == plain.num_rows > 0
    assert any(":2: line of" in w for w in stats.warnings), stats.warnings
    assert peak < LONG // 2, peak


def test_a_real_long_line_from_the_cli(tmp_path):
    """A Claude transcript with a 300 MB run of NUL bytes in its middle (a sparse file: no disk used), as a
    crash can leave: `report` counts the usage around it and names it, `validate` names it, exit 1."""
    lines = CLAUDE.read_bytes().splitlines(keepends=True)
    path = tmp_path / "projects" / "p" / "s.jsonl"
    path.parent.mkdir(parents=True)
    with open(path, "wb") as out:
        out.write(b"".join(lines[:4]))
        out.truncate(out.tell() + (300 << 20))
        out.seek(0, os.SEEK_END)
        out.write(b"\n" + b"".join(lines[4:]))
    env = {**os.environ, "BATCHCOMPACT_DEBUG": ""}
    report = subprocess.run([sys.executable, "-m", "batchcompact", "report", str(tmp_path / "projects"),
                             "--no-cache", "--format", "json"], capture_output=True, text=True, env=env,
                            timeout=300)
    assert report.returncode == 0, report.stderr
    assert f"{path}:5: line of {(300 << 20) + 1} bytes is larger than the limit" in report.stderr
    expected = subprocess.run([sys.executable, "-m", "batchcompact", "report", str(CLAUDE), "--no-cache",
                               "--format", "json"], capture_output=True, text=True, env=env, timeout=300)
    assert json.loads(report.stdout)["totals"] == json.loads(expected.stdout)["totals"]
    validate = subprocess.run([sys.executable, "-m", "batchcompact", "validate", str(path)], capture_output=True,
                              text=True, env=env, timeout=300)
    assert validate.returncode == 1, validate.stderr
    assert f"{path}:5: error: line of {(300 << 20) + 1} bytes is larger than the limit" in validate.stdout
