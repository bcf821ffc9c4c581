"""The stored report (report/result_cache.py): an unchanged archive's report is replayed byte for byte
without parsing a file or importing polars/pyarrow; any change to the files or options runs it again."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from click.testing import CliRunner
from conftest import SAMPLES, SHARED_FIXTURES, in_ci, shared_fixtures

from batchcompact.adapters.common.usage_rows import USAGE_SCHEMA_VERSION
from batchcompact.cli import cli

STORED = "from cache (the stored report)"


@pytest.fixture
def archive(tmp_path) -> Path:
    """Claude Code, Codex and pi sessions (the samples, plus the shared fixtures: required in CI)."""
    root = tmp_path / "archive"
    shutil.copytree(SAMPLES, root / "samples", ignore=shutil.ignore_patterns("*.md", "*.json"))
    if SHARED_FIXTURES.is_dir() or in_ci():
        shutil.copytree(shared_fixtures() / "claude", root / "claude")
        shutil.copytree(shared_fixtures() / "codex", root / "codex")
    return root


def report(*args) -> tuple[str, str]:
    result = CliRunner().invoke(cli, ["report", *map(str, args)], standalone_mode=False, catch_exceptions=False)
    assert result.return_value == 0, result.stderr
    return result.stdout, result.stderr


def without_counts(stderr: str) -> list[str]:
    return [line for line in stderr.splitlines() if " files: " not in line]


@pytest.mark.parametrize("args", [
    ("--format", "json"),
    ("--format", "csv"),
    ("--format", "table"),
    ("--format", "table", "--compact"),
    ("--by", "session", "--format", "json", "--order", "desc"),
    ("--by", "model", "--breakdown", "--format", "table"),
    ("--by", "month", "--since", "2025-01-01", "--timezone", "Asia/Tokyo", "--format", "csv"),
])
def test_the_stored_report_prints_exactly_what_the_full_one_does(archive, tmp_path, args):
    cache = tmp_path / "cache"
    full_out, full_err = report(archive, *args, "--no-cache")
    first_out, first_err = report(archive, *args, "--cache-dir", cache)
    kept_out, kept_err = report(archive, *args, "--cache-dir", cache)
    assert STORED not in first_err and STORED in kept_err
    assert kept_out == first_out == full_out
    assert without_counts(kept_err) == without_counts(first_err) == without_counts(full_err)


def test_output_files_are_the_same_bytes(archive, tmp_path):
    cache = tmp_path / "cache"
    report(archive, "--format", "json", "-o", tmp_path / "a.json", "--cache-dir", cache)
    _, err = report(archive, "--format", "json", "-o", tmp_path / "b.json", "--cache-dir", cache)
    assert STORED in err
    assert (tmp_path / "a.json").read_bytes() == (tmp_path / "b.json").read_bytes()
    assert json.loads((tmp_path / "a.json").read_text())["totals"]["requests"] > 0


def test_any_change_to_the_files_or_options_runs_the_report_again(archive, tmp_path):
    cache = tmp_path / "cache"
    args = (archive, "--format", "json", "--cache-dir", cache, "--cache-above", "0")  # usage parts kept too
    report(*args)
    assert STORED in report(*args)[1]
    a_file = next(archive.rglob("*.jsonl"))
    os.utime(a_file, ns=(a_file.stat().st_atime_ns, a_file.stat().st_mtime_ns + 1_000_000_000))
    _, err = report(*args)
    assert STORED not in err and "1 parsed" in err  # touched: its usage is read again
    assert STORED in report(*args)[1]
    # another session, a day later (a copy of one, or a fork holding its entries, counts once)
    extra = archive / "samples" / "pi" / "copy.jsonl"
    extra.write_text((SAMPLES / "pi" / "small-fix.jsonl").read_text().replace(
        "932dd87f-f255-4702-8fff-b7e98d47d103", "932dd87f-f255-4702-8fff-000000000000", 1).replace(
        '"timestamp":"2026-10-03T', '"timestamp":"2026-10-04T'))
    added_out, err = report(*args)
    assert STORED not in err
    extra.unlink()
    removed_out, err = report(*args)
    assert STORED in err  # back to the first archive: its stored report is still there
    assert json.loads(added_out)["totals"]["requests"] > json.loads(removed_out)["totals"]["requests"]
    assert STORED not in report(*args, "--by", "model")[1]  # another option: another report
    prices = tmp_path / "prices.json"
    prices.write_text(json.dumps({"claude-sonnet-4-5": {"input_cost_per_token": 1e-3}}))
    assert STORED not in report(*args, "--pricing", prices)[1]
    assert STORED in report(*args, "--pricing", prices)[1]
    prices.write_text(json.dumps({"claude-sonnet-4-5": {"input_cost_per_token": 2e-3}}))
    assert STORED not in report(*args, "--pricing", prices)[1]  # new prices, new costs


def test_a_damaged_stored_report_is_ignored_and_rebuilt(archive, tmp_path):
    cache = tmp_path / "cache"
    args = (archive, "--format", "json", "--cache-dir", cache)
    good, _ = report(*args)
    (stored,) = (cache / f"usage-v{USAGE_SCHEMA_VERSION}" / "results").glob("*.json")
    data = bytearray(stored.read_bytes())
    data[-5] ^= 0x01
    stored.write_bytes(bytes(data))
    out, err = report(*args)
    assert STORED not in err and out == good
    assert STORED in report(*args)[1]


def test_reports_that_depend_on_the_clock_are_never_stored(archive, tmp_path):
    cache = tmp_path / "cache"
    for _ in range(2):
        _, err = report(archive, "--by", "block", "--format", "json", "--cache-dir", cache)
        assert STORED not in err
    assert not (cache / f"usage-v{USAGE_SCHEMA_VERSION}" / "results").exists()


def test_the_stored_report_imports_neither_polars_nor_pyarrow(archive, tmp_path):
    env = dict(os.environ, XDG_CACHE_HOME=str(tmp_path / "xdg"))
    env.pop("BATCHCOMPACT_DEBUG", None)
    probe = ("import sys, runpy; sys.argv = ['batchcompact', 'report', sys.argv[1], '--format', 'json'];\n"
             "try:\n    runpy.run_module('batchcompact', run_name='__main__')\n"
             "except SystemExit:\n    pass\n"
             "print(sorted(m for m in ('polars', 'pyarrow', 'litellm', 'tiktoken') if m in sys.modules),"
             " file=sys.stderr)")
    first = subprocess.run([sys.executable, "-c", probe, str(archive)], capture_output=True, text=True, env=env)
    second = subprocess.run([sys.executable, "-c", probe, str(archive)], capture_output=True, text=True, env=env)
    assert first.stdout == second.stdout and json.loads(second.stdout)["totals"]["requests"] > 0
    # a small archive is read whole without polars (--cache-above); a large one would take the parts path
    assert first.stderr.splitlines()[-1] == "[]" and STORED not in first.stderr
    assert STORED in second.stderr and second.stderr.splitlines()[-1] == "[]"
    parts = dict(env, BATCHCOMPACT_CACHE_ABOVE="0", XDG_CACHE_HOME=str(tmp_path / "xdg-parts"))
    kept = subprocess.run([sys.executable, "-c", probe, str(archive)], capture_output=True, text=True, env=parts)
    assert kept.stdout == first.stdout
    # the first report that keeps parts writes them as it reads (pyarrow, here: a small archive is read in
    # this process), and aggregates without polars
    assert "'polars'" not in kept.stderr.splitlines()[-1] and list((tmp_path / "xdg-parts").rglob("*.parquet"))
    by_model = probe.replace("'--format', 'json'", "'--format', 'json', '--by', 'model'")
    later = subprocess.run([sys.executable, "-c", by_model, str(archive)], capture_output=True, text=True, env=parts)
    assert "0 parsed" in later.stderr and "'polars'" in later.stderr.splitlines()[-1]  # the parts path: polars


def test_a_small_archive_is_read_whole_and_its_report_stored(archive, tmp_path):
    """Under --cache-above (256MB by default) no usage parts are written: every report the stored one does
    not answer reads the files again, and prints what the parts path prints, byte for byte."""
    cache = tmp_path / "cache"
    files = len(list(archive.rglob("*.jsonl")))
    out, err = report(archive, "--format", "json", "--cache-dir", cache)
    assert f"{files} files: {files} parsed, 0 from cache" in err
    assert not list(cache.glob("usage-v*/**/*.parquet"))  # nothing but the stored report
    assert STORED in report(archive, "--format", "json", "--cache-dir", cache)[1]
    by_model, err = report(archive, "--format", "json", "--by", "model", "--cache-dir", cache)
    assert f"{files} parsed, 0 from cache" in err
    parts = tmp_path / "parts"
    assert report(archive, "--format", "json", "--cache-dir", parts, "--cache-above", "0")[0] == out
    assert report(archive, "--format", "json", "--by", "model", "--cache-dir", parts, "--cache-above", "0")[0] \
        == by_model
    assert list(parts.glob("usage-v*/**/*.parquet"))  # that path keeps its parts
    _, err = report(archive, "--format", "json", "--by", "week", "--cache-dir", parts, "--cache-above", "0")
    assert f"0 parsed, {files} from cache" in err
    above = report(archive, "--format", "json", "--cache-dir", tmp_path / "above", "--cache-above", "1KB")[1]
    assert f"{files} parsed, 0 from cache" in above and list((tmp_path / "above").glob("usage-v*/**/*.parquet"))


@pytest.mark.parametrize("size", ["lots", "-1MB", "5PB", "1.5.2GB"])
def test_a_size_that_is_not_one_is_a_usage_error(archive, size):
    result = CliRunner().invoke(cli, ["report", str(archive), "--cache-above", size])
    assert result.exit_code == 2 and "--cache-above" in result.output and "Traceback" not in result.output


def test_the_first_report_writes_the_parts_the_parts_path_writes(archive, tmp_path):
    """Above --cache-above, a cache holding no part for most of the archive's bytes gets its parts from the
    first report's workers (no polars here): the same parts, row for row and stats for stats, that the parts
    path writes; the next report with other options reads them, and prints what the cold path prints."""
    import polars as pl

    from batchcompact.report.collect import collect_usage
    from batchcompact.report.files import FileKey
    from batchcompact.report.part_cache import UsageCache

    first = tmp_path / "first"
    out, err = report(archive, "--format", "json", "--cache-dir", first, "--cache-above", "1KB", "--jobs", "2")
    files = sorted(archive.rglob("*.jsonl"))
    assert f"{len(files)} parsed, 0 from cache" in err
    reference = tmp_path / "reference"
    collect_usage([archive], cache_dir=reference, jobs=1)
    for path in files:
        key = FileKey.of(path)
        ours, theirs = UsageCache(first).lookup(key), UsageCache(reference).lookup(key)
        assert ours is not None and theirs is not None, path
        assert pl.read_parquet(ours[0]).equals(pl.read_parquet(theirs[0]))
        assert ours[1].to_dict() == theirs[1].to_dict()
    for options in (("--by", "model"), ("--by", "week", "--breakdown")):
        cached, err = report(archive, "--format", "json", *options, "--cache-dir", first, "--cache-above", "1KB")
        assert f"0 parsed, {len(files)} from cache" in err
        assert cached == report(archive, "--format", "json", *options, "--no-cache")[0]
    assert out == report(archive, "--format", "json", "--no-cache")[0]


def _blocked_cache(folder: Path) -> Path:
    """A cache folder whose parts folder cannot be made (a file in its place: as a read-only disk, an OSError)."""
    folder.mkdir(parents=True)
    (folder / f"usage-v{USAGE_SCHEMA_VERSION}").write_text("a file where the parts folder would be")
    return folder


def _blocked_warning(folder: Path) -> str:
    return (f"warning: usage cache folder {folder / f'usage-v{USAGE_SCHEMA_VERSION}'} cannot be written (File exists): the report is made "
            "without it")


def test_a_cache_folder_that_cannot_be_written_is_a_warning(archive, tmp_path):
    """The first report's parts are a by-product: where they cannot be written, the report is still made,
    with one warning naming the folder (not one a file)."""
    blocked = _blocked_cache(tmp_path / "cache")
    out, err = report(archive, "--format", "json", "--cache-dir", blocked, "--cache-above", "1KB")
    assert err.splitlines()[0] == _blocked_warning(blocked) and "Traceback" not in err
    assert err.count("warning: usage cache") == 1
    assert out == report(archive, "--format", "json", "--no-cache")[0]


@pytest.mark.parametrize("args", [  # --cache-above 0: an archive this small keeps no parts otherwise
    ("--by", "block", "--format", "json", "--cache-above", "0"),
    ("--format", "jsonl", "--cache-above", "0"),
    ("--format", "parquet", "--cache-above", "0"),
    ("--by", "day", "--format", "json", "--cache-above", "0"),
    ("--by", "model", "--breakdown", "--format", "csv", "--cache-above", "0"),
])
@pytest.mark.parametrize("where", ["--cache-dir", "XDG_CACHE_HOME"])
def test_every_report_path_is_made_when_its_cache_cannot_be_written(archive, tmp_path, monkeypatch, args, where):
    """The parts path (blocks, jsonl, parquet, a cached archive) used to stop with `internal error:
    OSError(30, 'Read-only file system')`, exit 4: now the parts go to a temporary folder, one warning."""
    if where == "--cache-dir":
        blocked = _blocked_cache(tmp_path / "cache")
        options = ["--cache-dir", blocked]
    else:
        blocked = _blocked_cache(tmp_path / "xdg" / "batchcompact")
        monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "xdg"))
        options = []
    outputs = []
    for cache in (options, ["--no-cache"]):
        more = ["-o", tmp_path / f"out{len(outputs)}.parquet"] if "parquet" in args else []
        out, err = report(archive, *args, *more, *cache)
        outputs.append(out if not more else pl_rows(more[1]))
        if cache is options:
            assert err.splitlines()[0] == _blocked_warning(blocked), err
            assert err.count("warning: usage cache") == 1 and "Traceback" not in err
    assert outputs[0] == outputs[1]


def pl_rows(path: Path) -> list[dict]:
    import polars as pl

    return pl.read_parquet(path).to_dicts()


def test_a_part_the_cache_refuses_midway_goes_to_a_temporary_folder(archive, tmp_path, monkeypatch):
    """A cache folder that passed the check but refuses a part (a disk that filled up meanwhile): that
    file's part is kept in the report's temporary folder, with a warning naming the file."""
    from batchcompact.report import collect

    blocked = _blocked_cache(tmp_path / "cache")
    monkeypatch.setattr(collect, "parts_folder_problem", lambda root: None)
    out, err = report(archive, "--format", "jsonl", "--cache-dir", blocked, "--jobs", "1", "--cache-above", "0")
    files = sorted(archive.rglob("*.jsonl"))
    assert err.count(": usage cache part not written: File exists") == len(files), err
    assert out == report(archive, "--format", "jsonl", "--no-cache")[0]


def test_the_polars_path_takes_the_files_the_first_attempt_found(archive, tmp_path, monkeypatch):
    """An archive whose parts are cached is walked once: the attempt without polars hands the files it
    stat'ed (`files.Walk`) to the parts path, which then walks nothing."""
    from batchcompact.report import files

    cache = tmp_path / "cache"
    first, _ = report(archive, "--format", "json", "--cache-dir", cache, "--cache-above", "1KB")
    walks = []
    real = files.iter_resolved

    def counted(paths):
        walks.append(list(paths))
        return real(walks[-1])

    monkeypatch.setattr(files, "iter_resolved", counted)
    out, err = report(archive, "--format", "json", "--by", "model", "--cache-dir", cache, "--cache-above", "1KB")
    assert "0 parsed" in err and out == report(archive, "--format", "json", "--by", "model", "--no-cache")[0]
    assert len(walks) == 2  # the attempt without polars and the --no-cache report above; not the parts path


def test_every_file_found_is_keyed_by_its_resolved_path(tmp_path):
    """The walk resolves the top folder once and builds each folder's resolved path from its parent's
    (a folder it enters is no link): the same paths `os.path.realpath` gives, through a linked top, a
    linked file and nested folders; a linked folder is not entered."""
    from batchcompact.report import files

    real = tmp_path / "real"
    nested = real / "projects" / "-home-me-app" / "subagents"
    nested.mkdir(parents=True)
    for folder in (real / "projects" / "-home-me-app", nested):
        (folder / "a.jsonl").write_text("{}\n")
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    (elsewhere / "b.jsonl").write_text("{}\n")
    (real / "projects" / "-home-me-app" / "link.jsonl").symlink_to(elsewhere / "b.jsonl")
    (real / "projects" / "linked-folder").symlink_to(elsewhere, target_is_directory=True)
    (tmp_path / "top").symlink_to(real, target_is_directory=True)

    found = list(files.iter_resolved([tmp_path / "top"]))
    assert [(str(shown), resolved) for shown, resolved in found] == [
        (str(shown), os.path.realpath(shown)) for shown, _ in found]
    assert sorted(os.path.relpath(resolved, tmp_path) for _, resolved in found) == [
        "elsewhere/b.jsonl", "real/projects/-home-me-app/a.jsonl", "real/projects/-home-me-app/subagents/a.jsonl"]
