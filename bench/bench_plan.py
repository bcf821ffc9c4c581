"""Plan throughput with 1 and N processes, and peak memory of `plan` at 1x and 10x corpus size.

    .venv/bin/python bench/bench_plan.py [--total 60MB] [--jobs 2] [--corpus DIR]

Prints sessions/s and MB/s for 1 and N processes (the scaling factor is the figure to watch: aim >= 1.7x
with 2), the bare-`orjson.loads` baseline over the same bytes, and the peak RSS of a `batchcompact plan`
subprocess over the corpus and over ten real copies of it (should stay flat: rows stream), with the
files and bytes each actually planned (the bench stops if the 10x corpus did not plan 10x the bytes).
Every time is the median of --runs runs.
"""

from __future__ import annotations

import argparse
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from batchcompact.core.planner import CompactionSettings
from batchcompact.pipeline.planning import PlanOptions, iter_plan_rows

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))  # the repo root (bench, synth)
from bench.figures import emit  # noqa: E402
from bench.timing import BenchFailure, run_checked  # noqa: E402
from synth.corpus import parse_size, write_corpus  # noqa: E402


def corpus(folder: Path, total: str, seed: int) -> tuple[list[str], int]:
    if not (folder / "corpus.json").exists():
        write_corpus(folder, total, seed=seed, formats=("pi",))
    files = sorted(str(p) for p in folder.rglob("*.jsonl"))
    return files, sum(os.path.getsize(f) for f in files)


def json_baseline(files: list[str]) -> float:
    """Bare `orjson.loads` of every line: the fastest parse there is, the physical limit of planning."""
    import orjson

    from batchcompact.formats.jsonl import READ_BUFFER

    started = time.perf_counter()
    for name in files:
        with open(name, "rb", buffering=READ_BUFFER) as handle:  # as the readers read
            for line in handle:
                orjson.loads(line)
    return time.perf_counter() - started


def plan_time(files: list[str], jobs: int, force: bool = True, token_cache: str = "off") -> float:
    """Seconds to plan `files`; `token_cache` is "off" (count every prompt) or a cache file to use."""
    from batchcompact.token_cache import reset_shared_cache

    os.environ["BATCHCOMPACT_TOKEN_CACHE"] = token_cache
    reset_shared_cache()
    settings = CompactionSettings(force=force)
    started = time.perf_counter()
    statuses = [row["status"] for row in iter_plan_rows(files, settings, PlanOptions(), jobs=jobs)]
    elapsed = time.perf_counter() - started
    check_rows(statuses, len(files), "--force" if force else "default threshold", need_plans=force)
    return elapsed


def check_rows(statuses: list[str], files: int, label: str, need_plans: bool = False) -> None:
    """Raise BenchFailure unless plan gave a row per file and none is an error (a file it could not read
    or an internal error is fast and plans nothing: it must not pass for a planned session), and, with
    `need_plans` (`--force`), unless some session was planned: the time would not measure planning."""
    if len(statuses) != files:
        raise BenchFailure(f"bench: plan ({label}) returned {len(statuses)} rows for {files} files; nothing timed")
    errors = statuses.count("error")
    if errors:
        raise BenchFailure(f"bench: plan ({label}) gave {errors} error rows of {files}; nothing timed")
    if need_plans and "compact" not in statuses:
        raise BenchFailure(f"bench: plan ({label}) planned no session of {files} ({sorted(set(statuses))}); "
                           "nothing timed")


def ten_copies(root: Path) -> Path:
    """A sibling folder holding ten real copies of `root` (distinct files, distinct bytes on disk: links
    would be deduplicated by the scanner, which keys files by resolved path)."""
    big = root.with_name(root.name + "-x10")
    done = big / "complete"
    if done.exists():
        return big
    shutil.rmtree(big, ignore_errors=True)
    big.mkdir()
    for copy in range(10):
        shutil.copytree(root, big / f"c{copy}", symlinks=False)
    done.write_text("10 copies\n")
    return big


PEAK = (
    "import resource, sys\n"
    "from batchcompact.cli import cli\n"
    "out, paths = sys.argv[1], sys.argv[2:]\n"
    "try:\n    cli.main(['plan', *paths, '--jobs', '1', '--format', 'jsonl', '-o', out, '--force'],"
    " standalone_mode=False)\n"
    "finally:\n    print(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss)\n"
)


def peak_rss_mb(paths: list[str], label: str) -> tuple[float, int, int]:
    """(peak RSS in MB, files planned, bytes planned) of one `batchcompact plan` process over `paths`.

    Files and bytes come from the rows `plan` wrote, so a corpus that shrank on the way (links
    deduplicated, a folder skipped) shows instead of passing for the larger one."""
    import json

    with tempfile.TemporaryDirectory() as tmp:
        rows_file = Path(tmp) / "rows.jsonl"
        out = run_checked([sys.executable, "-c", PEAK, str(rows_file), *paths], label=f"plan ({label})",
                          stdout=subprocess.PIPE)
        rows = [json.loads(line) for line in rows_file.read_text().splitlines() if line.strip()]
    planned = {row["path"] for row in rows}
    check_rows([row.get("status") for row in rows], len(rows), label, need_plans=True)
    size = sum(os.path.getsize(p) for p in planned)
    return int(out.stdout.decode().strip().splitlines()[-1]) / 1024, len(planned), size


def main(argv: list[str] | None = None) -> dict:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--total", default="60MB")
    parser.add_argument("--jobs", type=int, default=2)
    parser.add_argument("--corpus", type=Path, default=None)
    parser.add_argument("--seed", type=int, default=7)
    parser.add_argument("--runs", type=int, default=3, help="timed runs per figure (the median counts)")
    parser.add_argument("--quick", action="store_true", help="a 20 MB corpus")
    args = parser.parse_args(argv)
    if args.quick and args.total == "60MB":
        args.total = "20MB"
    root = args.corpus or Path(tempfile.gettempdir()) / f"bc-bench-plan-{parse_size(args.total)}-{args.seed}"
    files, size = corpus(root, args.total, args.seed)
    mb = size / 1e6
    runs = args.runs

    def median(measure) -> float:
        return statistics.median(measure() for _ in range(runs))

    json_baseline(files)  # page cache warm for every figure below
    baseline = median(lambda: json_baseline(files))
    one = median(lambda: plan_time(files, 1))
    many = median(lambda: plan_time(files, args.jobs))
    default = median(lambda: plan_time(files, 1, force=False))  # the usual case: only sessions over the threshold
    with tempfile.TemporaryDirectory() as cache_dir:  # a rerun, or `run` after `plan`: counts come from the cache
        plan_time(files, 1, token_cache=f"{cache_dir}/counts.sqlite")
        cached = median(lambda: plan_time(files, 1, token_cache=f"{cache_dir}/counts.sqlite"))
    big = ten_copies(root)
    os.environ["BATCHCOMPACT_TOKEN_CACHE"] = "off"
    rss_1x, files_1x, bytes_1x = peak_rss_mb([str(root)], "1x")
    rss_10x, files_10x, bytes_10x = peak_rss_mb([str(big)], "10x")
    if files_1x != len(files) or files_10x != 10 * len(files) or bytes_10x != 10 * bytes_1x:
        raise BenchFailure(f"bench: the 10x corpus is not 10x: planned {files_1x} files / {bytes_1x:,} bytes "
                           f"at 1x and {files_10x} files / {bytes_10x:,} bytes at 10x ({len(files)} files listed)")
    figures = {
        "files": len(files),
        "MB": round(mb, 1),
        "json_loads_MBps": round(mb / baseline, 1),
        "plan_1proc_MBps": round(mb / one, 1),
        "plan_1proc_sessions_per_s": round(len(files) / one, 1),
        f"plan_{args.jobs}proc_MBps": round(mb / many, 1),
        "scaling": round(one / many, 2),
        "plan_vs_json_loads": round(baseline / one, 2),
        "peak_rss_1x_MB": round(rss_1x, 1),
        "peak_rss_10x_MB": round(rss_10x, 1),
        "planned_1x": [files_1x, bytes_1x],
        "planned_10x": [files_10x, bytes_10x],
    }
    print(f"plan: {len(files)} files, {mb:.1f} MB")
    print(f"  bare orjson.loads:      {mb / baseline:8.1f} MB/s")
    print(f"  plan, 1 process:        {mb / one:8.1f} MB/s  {len(files) / one:8.1f} sessions/s  "
          f"({baseline / one:.2f}x of orjson.loads speed)")
    print(f"  plan, 1 process, default threshold: {mb / default:8.1f} MB/s ({baseline / default:.2f}x of orjson.loads)")
    print(f"  plan, {args.jobs} processes:      {mb / many:8.1f} MB/s  scaling {one / many:.2f}x")
    print(f"  peak RSS, plan 1x:      {rss_1x:8.1f} MB  ({files_1x} files, {bytes_1x / 1e6:,.1f} MB planned)")
    print(f"  peak RSS, plan 10x:     {rss_10x:8.1f} MB  ({files_10x} files, {bytes_10x / 1e6:,.1f} MB planned; "
          f"{rss_10x / rss_1x:.2f}x of 1x)")
    print(f"  (each time the median of {runs} runs)")
    emit("plan", "1 process (--force)", mb / one, "MB/s", "orjson.loads", mb / baseline, runs=runs)
    emit("plan", "1 process", len(files) / one, "sessions/s", runs=runs)
    emit("plan", "1 process (default threshold)", mb / default, "MB/s", "orjson.loads", mb / baseline, runs=runs)
    emit("plan", f"{args.jobs} processes", mb / many, "MB/s", "1 process", mb / one, note="scaling",
         goal="ratio >= 1.7", runs=runs)
    emit("plan", "1 process (--force), token counts cached", mb / cached, "MB/s", "same, counted", mb / one,
         runs=runs)
    emit("memory", "plan peak RSS, 10x corpus", rss_10x, "MB", "1x corpus", rss_1x, goal="ratio <= 1.1",
         note=f"planned {files_1x} files / {bytes_1x / 1e6:.0f} MB vs {files_10x} files / {bytes_10x / 1e6:.0f} MB")
    return figures


if __name__ == "__main__":
    main()
