"""zstd-compressed Codex rollouts (`*.jsonl.zst`): planned, compacted and written back compressed."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest
from conftest import fixture_path, required_module

zstandard = required_module("zstandard", "zstd")

ROLLOUT = ("codex", "sessions", "2026", "02", "23", "rollout-2026-02-23T12-54-34-019c8a59-e9dd-71f0-9ae3-4079fe9726a9.jsonl")


def cli(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "batchcompact", *args], capture_output=True, text=True, timeout=120)


def decompressed(path: Path) -> bytes:
    return zstandard.ZstdDecompressor().stream_reader(path.open("rb")).read()


@pytest.fixture
def compressed(tmp_path) -> tuple[Path, bytes]:
    plain = fixture_path(*ROLLOUT).read_bytes()
    folder = tmp_path / "in"
    folder.mkdir()
    path = folder / "rollout-a.jsonl.zst"
    path.write_bytes(zstandard.ZstdCompressor().compress(plain))
    return path, plain


def test_compacted_into_a_compressed_copy(compressed, tmp_path):
    path, plain = compressed
    before = path.read_bytes()
    out = tmp_path / "out"
    done = cli("run", str(path.parent), "--output-dir", str(out), "--force", "--min-age", "0", "--format", "json")
    assert done.returncode == 0, done.stderr
    assert [row["status"] for row in json.loads(done.stdout)["rows"]] == ["compacted"]
    written = out / "rollout-a.jsonl.zst"
    assert written.read_bytes()[:4] == b"\x28\xb5\x2f\xfd"  # still zstd
    text = decompressed(written)
    assert text.startswith(plain)  # every original line kept, as Codex keeps them
    added = [json.loads(line) for line in text[len(plain):].splitlines()]
    assert [a["type"] for a in added] == ["compacted", "event_msg"]
    assert path.read_bytes() == before  # the original is untouched
    assert cli("validate", str(written)).returncode == 0
    again = cli("plan", str(written), "--format", "json")
    assert json.loads(again.stdout)["rows"][0]["status"] == "skip"


def test_in_place_keeps_the_compressed_original_as_backup(compressed, tmp_path):
    path, plain = compressed
    before = path.read_bytes()
    done = cli("run", str(path.parent), "--in-place", "--force", "--min-age", "0", "--state", str(tmp_path / "s.sqlite"))
    assert done.returncode == 0, done.stderr
    assert Path(str(path) + ".bak").read_bytes() == before
    assert decompressed(path).startswith(plain)


def test_report_reads_the_compressed_copy_like_the_plain_one(compressed, tmp_path):
    path, _ = compressed

    def tokens(target: Path) -> int:
        done = cli("report", str(target), "--no-cache", "--format", "json")
        assert done.returncode == 0, done.stderr
        return json.loads(done.stdout)["totals"]["total_tokens"]

    assert tokens(path) == tokens(fixture_path(*ROLLOUT))


def test_without_zstandard_a_compressed_file_fails_alone(compressed, monkeypatch):
    from batchcompact.errors import SessionReadError
    from batchcompact.formats import compressed as module
    from batchcompact.formats.detect import read_session

    def missing():
        raise SessionReadError("zstd-compressed transcript: install the zstandard package (pip install 'batchcompact[zstd]')")

    monkeypatch.setattr(module, "_zstandard", missing)
    path, _ = compressed
    with pytest.raises(SessionReadError, match="batchcompact\\[zstd\\]"):
        read_session(path, "codex")


def test_a_damaged_compressed_file_is_one_clear_line_everywhere(compressed, tmp_path):
    path, _ = compressed
    data = path.read_bytes()
    path.write_bytes(data[: len(data) // 2] + b"garbage" * 10 + data[len(data) // 2 + 70 :])
    checked = cli("validate", str(path))
    assert checked.returncode == 1 and "zstd data damaged" in checked.stdout and "Traceback" not in checked.stderr
    ran = cli("run", str(path.parent), "--output-dir", str(tmp_path / "out"), "--force", "--min-age", "0", "--format", "json")
    assert ran.returncode == 1 and "Traceback" not in ran.stderr
    (row,) = json.loads(ran.stdout)["rows"]
    assert row["status"] == "failed" and row["reason"].startswith("zstd data damaged")
    reported = cli("report", str(path), "--no-cache", "-v")
    assert reported.returncode == 0 and "Traceback" not in reported.stderr
    assert "zstd data damaged" in reported.stderr
