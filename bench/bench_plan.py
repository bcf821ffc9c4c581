"""Plan throughput with 1 and N processes, and peak memory of `plan` at 1x and 10x corpus size.

    .venv/bin/python bench/bench_plan.py [--total 60MB] [--jobs 2] [--corpus DIR]

Prints sessions/s and MB/s for 1 and N processes (the scaling factor is the figure to watch: aim >= 1.7x
with 2), the bare-`orjson.loads` baseline over the same bytes, and the peak RSS of a `batchcompact plan`
subprocess over the corpus and over a corpus ten times larger (should stay flat: rows stream).
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from batchcompact.core.planner import CompactionSettings
from batchcompact.pipeline.planning import PlanOptions, iter_plan_rows
from batchcompact.synth.corpus import parse_size, write_corpus

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
from bench.figures import emit  # noqa: E402


def corpus(folder: Path, total: str, seed: int) -> tuple[list[str], int]:
    if not (folder / "corpus.json").exists():
        write_corpus(folder, total, seed=seed, formats=("pi",))
    files = sorted(str(p) for p in folder.rglob("*.jsonl"))
    return files, sum(os.path.getsize(f) for f in files)


def json_baseline(files: list[str]) -> float:
    """Bare `orjson.loads` of every line: the fastest parse there is, the physical limit of planning."""
    import orjson

    started = time.perf_counter()
    for name in files:
        with open(name, "rb") as handle:
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
    for _ in iter_plan_rows(files, settings, PlanOptions(), jobs=jobs):
        pass
    return time.perf_counter() - started


PEAK = (
    "import resource, sys\n"
    "from batchcompact.cli import cli\n"
    "try:\n    cli.main(['plan', *sys.argv[1:], '--jobs', '1', '--format', 'json', '-o', '/dev/null', '--force'],"
    " standalone_mode=False)\n"
    "finally:\n    print(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss)\n"
)


def peak_rss_mb(paths: list[str]) -> float:
    out = subprocess.run([sys.executable, "-c", PEAK, *paths], capture_output=True, text=True, check=True)
    return int(out.stdout.strip().splitlines()[-1]) / 1024


def main(argv: list[str] | None = None) -> dict:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--total", default="60MB")
    parser.add_argument("--jobs", type=int, default=2)
    parser.add_argument("--corpus", type=Path, default=None)
    parser.add_argument("--seed", type=int, default=7)
    parser.add_argument("--quick", action="store_true", help="a 20 MB corpus")
    args = parser.parse_args(argv)
    if args.quick and args.total == "60MB":
        args.total = "20MB"
    root = args.corpus or Path(tempfile.gettempdir()) / f"bc-bench-plan-{parse_size(args.total)}-{args.seed}"
    files, size = corpus(root, args.total, args.seed)
    mb = size / 1e6
    baseline = json_baseline(files)
    one = plan_time(files, 1)
    many = plan_time(files, args.jobs)
    default = plan_time(files, 1, force=False)  # the usual case: only sessions over the threshold are planned
    with tempfile.TemporaryDirectory() as cache_dir:  # a rerun, or `run` after `plan`: counts come from the cache
        plan_time(files, 1, token_cache=f"{cache_dir}/counts.sqlite")
        cached = plan_time(files, 1, token_cache=f"{cache_dir}/counts.sqlite")
    # 10x: the same files listed ten times would be deduplicated by the scanner, so use ten copies' worth
    # of distinct paths via symlinks in a sibling folder.
    big = root.with_name(root.name + "-x10")
    if not big.exists():
        big.mkdir()
        for copy in range(10):
            (big / f"c{copy}").symlink_to(root, target_is_directory=True)
    os.environ["BATCHCOMPACT_TOKEN_CACHE"] = "off"
    rss_1x = peak_rss_mb([str(root)])
    rss_10x = peak_rss_mb([str(big / f"c{copy}") for copy in range(10)])
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
    }
    print(f"plan: {len(files)} files, {mb:.1f} MB")
    print(f"  bare orjson.loads:      {mb / baseline:8.1f} MB/s")
    print(f"  plan, 1 process:        {mb / one:8.1f} MB/s  {len(files) / one:8.1f} sessions/s  "
          f"({baseline / one:.2f}x of orjson.loads speed)")
    print(f"  plan, 1 process, default threshold: {mb / default:8.1f} MB/s ({baseline / default:.2f}x of orjson.loads)")
    print(f"  plan, {args.jobs} processes:      {mb / many:8.1f} MB/s  scaling {one / many:.2f}x")
    print(f"  peak RSS, plan 1x:      {rss_1x:8.1f} MB")
    print(f"  peak RSS, plan 10x:     {rss_10x:8.1f} MB  ({rss_10x / rss_1x:.2f}x of 1x)")
    emit("plan", "1 process (--force)", mb / one, "MB/s", "orjson.loads", mb / baseline)
    emit("plan", "1 process", len(files) / one, "sessions/s")
    emit("plan", "1 process (default threshold)", mb / default, "MB/s", "orjson.loads", mb / baseline)
    emit("plan", f"{args.jobs} processes", mb / many, "MB/s", "1 process", mb / one, note="scaling")
    emit("plan", "1 process (--force), token counts cached", mb / cached, "MB/s", "same, counted", mb / one)
    emit("memory", "plan peak RSS, 10x corpus", rss_10x, "MB", "1x corpus", rss_1x)
    return figures


if __name__ == "__main__":
    main()
