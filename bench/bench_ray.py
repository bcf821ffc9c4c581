"""`--executor ray` against `--executor local` on one machine: the overhead of going through Ray.

    python bench/bench_ray.py [--total 30MB] [--cpus 2] [--quick]

One generated corpus (pi, Claude Code, Codex). Each command's file work runs on a local process pool of
`--cpus` workers and on a Ray instance started here with the same CPUs. Both sides are warmed the same
way before anything is timed: one untimed round of every command (page cache, imports and tiktoken's
encoding: on Ray in its long-lived workers; locally in this process, from which the pool forks its
workers per command, so they start with all of it loaded). Then --runs rounds alternate local and Ray, and each
figure is the median of its runs. Ray's own start-up is its own figure:

- plan --force: read, plan and count the prompt tokens of every file (token cache off);
- report, cold: extract every file's usage into a fresh cache, then aggregate;
- run --force, built-in summarizer: plan, summarize, write and verify every file (fresh output folder).

Prints files/s per command and executor, and the ratio ray/local (1.0 = no overhead). Also the mean
prompt tokens per compacted session, the input of the scaling model in docs/performance.md.
Skipped (exit 0, a line saying why) when Ray is not installed.
"""

from __future__ import annotations

import argparse
import os
import shutil
import statistics
import sys
import tempfile
import time
from pathlib import Path

os.environ["BATCHCOMPACT_TOKEN_CACHE"] = "off"  # every plan counts (Ray workers inherit this at init)

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))  # the repo root (bench, synth)
from bench.figures import emit  # noqa: E402
from bench.timing import BenchFailure  # noqa: E402
from synth.corpus import parse_size, write_corpus  # noqa: E402


def measure(name: str, executor, files: list[str], root: Path, scratch: Path) -> dict[str, float]:
    """Seconds per command with `executor`, each on fresh outputs."""
    from batchcompact.core.planner import CompactionSettings
    from batchcompact.pipeline.planning import PlanOptions, iter_plan_rows
    from batchcompact.pipeline.run import RunOptions, run_archive
    from batchcompact.report import build_report, collect_usage
    from batchcompact.report.settings import ReportSettings
    from batchcompact.summarize import BuiltinSummarizer, PoolSettings

    settings = CompactionSettings(force=True)
    out: dict[str, float] = {}
    started = time.perf_counter()
    rows = list(iter_plan_rows(files, settings, PlanOptions(), executor=executor))
    out["plan"] = time.perf_counter() - started
    if len(rows) != len(files) or any(r["status"] == "error" for r in rows):
        raise BenchFailure(f"bench: plan on {name}: {len(rows)} rows for {len(files)} files, "
                           f"{sum(r['status'] == 'error' for r in rows)} errors; nothing timed")
    compacted = [r for r in rows if r["status"] == "compact"]
    out["prompt_tokens"] = sum(r.get("prompt_tokens") or 0 for r in compacted) / max(1, len(compacted))
    out["calls"] = sum(r.get("calls") or 0 for r in compacted) / max(1, len(compacted))

    cache = scratch / f"cache-{name}"
    started = time.perf_counter()
    shutil.rmtree(cache, ignore_errors=True)
    collected = collect_usage([str(root)], cache_dir=cache, executor=executor, jobs=getattr(executor, "jobs", None))
    if collected.extracted != collected.files:
        raise BenchFailure(f"bench: report on {name} parsed {collected.extracted} of {collected.files} files")
    try:
        build_report(collected.parts, ReportSettings(by="day"))
    finally:
        collected.cleanup()
    out["report"] = time.perf_counter() - started

    target = scratch / f"out-{name}"
    shutil.rmtree(target, ignore_errors=True)
    options = RunOptions(output_dir=target, min_age_s=0, jobs=getattr(executor, "jobs", 1))
    started = time.perf_counter()
    summary = run_archive([str(root)], settings, options, BuiltinSummarizer(), PoolSettings(), executor=executor)
    out["run"] = time.perf_counter() - started
    out["compacted"] = summary.by_status.get("compacted", 0)
    if summary.by_status.get("failed") or not out["compacted"]:
        raise BenchFailure(f"bench: run on {name}: {dict(summary.by_status)}; nothing timed")
    return out


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--total", default="30MB")
    parser.add_argument("--cpus", type=int, default=2)
    parser.add_argument("--seed", type=int, default=5)
    parser.add_argument("--runs", type=int, default=3, help="timed rounds per executor (the median counts)")
    parser.add_argument("--quick", action="store_true", help="a 10 MB corpus")
    args = parser.parse_args(argv)
    try:
        import ray
    except ImportError:
        print("ray: skipped: Ray is not installed (pip install -e '.[ray]')")
        return 0
    if args.quick and args.total == "30MB":
        args.total = "10MB"
    root = Path(tempfile.gettempdir()) / f"bc-bench-ray-{parse_size(args.total)}-{args.seed}"
    if not (root / "corpus.json").exists():
        write_corpus(root, args.total, seed=args.seed)
    files = sorted(str(p) for p in root.rglob("*.jsonl"))
    mb = sum(os.path.getsize(f) for f in files) / 1e6
    scratch = Path(tempfile.mkdtemp(prefix="bc-bench-ray-"))
    ray_temp = Path(tempfile.mkdtemp(prefix="bc-ray-", dir="/tmp"))  # short: Ray's socket paths are limited
    try:
        from batchcompact.pipeline.executor import LocalExecutor, RayExecutor

        started = time.perf_counter()
        ray.init(num_cpus=args.cpus, include_dashboard=False, log_to_driver=False, configure_logging=False,
                 _temp_dir=str(ray_temp), _node_ip_address="127.0.0.1")
        startup = time.perf_counter() - started
        executors = {"local": LocalExecutor(args.cpus), "ray": RayExecutor()}
        started = time.perf_counter()
        list(executors["ray"].map(os.path.getsize, files[: 4 * args.cpus]))  # workers started and imports warm
        warmup = time.perf_counter() - started
        # One untimed round each, so both sides are warm: Ray's workers keep what they loaded; the local
        # pool forks its workers per command from this process, so its round runs in this process (one
        # job) and the forks inherit every import and tiktoken's loaded encoding.
        measure("local", LocalExecutor(1), files, root, scratch)
        measure("ray", executors["ray"], files, root, scratch)
        rounds: dict[str, list[dict[str, float]]] = {"local": [], "ray": []}
        for _ in range(args.runs):
            for name, executor in executors.items():
                rounds[name].append(measure(name, executor, files, root, scratch))
        local, remote = ({key: statistics.median(r[key] for r in rounds[name]) for key in rounds[name][0]}
                         for name in ("local", "ray"))
    finally:
        if ray.is_initialized():
            ray.shutdown()
        shutil.rmtree(scratch, ignore_errors=True)
        shutil.rmtree(ray_temp, ignore_errors=True)
    print(f"ray: {len(files)} files, {mb:.1f} MB; {local['compacted']:.0f} compacted; {args.cpus} CPUs")
    print(f"  ray.init {startup:.2f}s, first tasks {warmup:.2f}s; both sides warmed, medians of {args.runs} rounds")
    for command in ("plan", "report", "run"):
        print(f"  {command:<7} local {local[command]:6.2f}s   ray {remote[command]:6.2f}s   "
              f"ratio {remote[command] / local[command]:.2f}")
    print(f"  per compacted session: {local['prompt_tokens']:.0f} prompt tokens, {local['calls']:.2f} calls")
    for command, label in (("plan", "plan --force"), ("report", "report, cold"), ("run", "run, built-in")):
        emit("ray", f"{label}, 1 node ({args.cpus} CPUs)", len(files) / remote[command], "files/s",
             f"local, {args.cpus} processes", len(files) / local[command], note=f"{mb:.1f} MB, both warm",
             runs=args.runs)
    emit("ray", "start-up: ray.init + first tasks", startup + warmup, "s")
    emit("ray", "mean prompt tokens per compacted session", local["prompt_tokens"], "tokens",
         note=f"{local['compacted']:.0f} of {len(files)} compacted, {local['calls']:.2f} calls each")
    return 0


if __name__ == "__main__":
    sys.exit(main())
