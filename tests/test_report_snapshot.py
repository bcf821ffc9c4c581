"""The consolidated usage snapshot: an unchanged archive's warm report reads one table, with equal totals."""

from __future__ import annotations

from pathlib import Path

import pytest
from conftest import fixture_path

from batchcompact.report import ReportSettings, build_report, collect_usage
from batchcompact.report.snapshot import SNAPSHOT_MIN_FILES


@pytest.fixture
def archive(tmp_path) -> Path:
    source = fixture_path("claude", "projects", "-home-USER-projects-spotter", "tool_heavy.jsonl").read_bytes()
    root = tmp_path / "projects"
    for n in range(SNAPSHOT_MIN_FILES + 5):
        folder = root / f"-p{n % 5}"
        folder.mkdir(parents=True, exist_ok=True)
        (folder / f"{n:08d}-0000-4000-8000-000000000000.jsonl").write_bytes(source.replace(b'"msg_', f'"msg_{n}_'.encode()))
    return root


def _totals(collected):
    return build_report(collected.parts, ReportSettings(by="day")).totals


def test_unchanged_archive_reads_the_snapshot_alone(archive, tmp_path):
    cache = tmp_path / "cache"
    cold = collect_usage([archive], cache_dir=cache)
    assert cold.extracted == SNAPSHOT_MIN_FILES + 5 and len(cold.parts) == 1  # consolidated after extraction
    warm = collect_usage([archive], cache_dir=cache)
    assert warm.cached == warm.files == SNAPSHOT_MIN_FILES + 5 and warm.extracted == 0
    assert warm.parts == cold.parts and len(warm.stats) == warm.files
    assert _totals(warm) == _totals(cold) == _totals(collect_usage([archive], use_cache=False))


def test_a_changed_file_or_a_damaged_snapshot_falls_back_to_the_parts(archive, tmp_path):
    cache = tmp_path / "cache"
    expected = _totals(collect_usage([archive], cache_dir=cache))
    changed = sorted(archive.rglob("*.jsonl"))[0]
    changed.write_bytes(changed.read_bytes() + b"\n")
    again = collect_usage([archive], cache_dir=cache)
    assert again.extracted == 1 and again.cached == again.files - 1
    assert _totals(again) == expected
    snapshot = Path(again.parts[0])
    data = bytearray(snapshot.read_bytes())
    data[len(data) // 2] ^= 0xFF
    snapshot.write_bytes(bytes(data))
    rebuilt = collect_usage([archive], cache_dir=cache)
    assert rebuilt.extracted == 0 and rebuilt.cached == rebuilt.files  # from the per-file parts
    assert _totals(rebuilt) == expected


def test_no_snapshot_without_the_cache_or_for_few_files(archive, tmp_path):
    assert len(collect_usage([archive], use_cache=False).parts) == SNAPSHOT_MIN_FILES + 5
    few = sorted(archive.rglob("*.jsonl"))[:3]
    assert len(collect_usage(few, cache_dir=tmp_path / "cache").parts) == 3
