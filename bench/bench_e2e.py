"""End to end: `batchcompact run --force` with the built-in summarizer over a generated corpus.

    .venv/bin/python bench/bench_e2e.py [--total 40MB] [--jobs 2] [--quick]

Prints sessions/s and MB/s of the whole run (plan, summarize, apply, write, verify, report) next to
`plan --force` alone over the same corpus in the same process (the baseline: what reading and planning cost).
Both commands are run --runs times, alternating, and each figure is the median; a command that fails
stops the bench (a crash must not read as a fast time). The package's bytecode is compiled once before
anything is timed (`python -m compileall -q batchcompact`), as a user's pip install compiles it: with
PYTHONDONTWRITEBYTECODE set (as on the bench machine) every command would otherwise compile our sources
again at start, 0.08 CPU s for `plan` and 0.12 for `run`.
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

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))  # the repo root (bench, synth)
from bench.figures import emit  # noqa: E402
from bench.timing import BenchFailure, timed_cpu  # noqa: E402
from synth.corpus import parse_size, write_corpus  # noqa: E402


def precompile() -> Path:
    """Compile the package's bytecode once (what a user's installed copy has); returns the package folder."""
    import batchcompact

    package = Path(batchcompact.__file__).resolve().parent
    subprocess.run([sys.executable, "-m", "compileall", "-q", str(package)], check=True)
    return package


def _cli(*args: str, env: dict[str, str] | None = None) -> tuple[float, float]:
    """(wall, CPU) seconds of one `batchcompact` command; the bench stops if it fails."""
    return timed_cpu([sys.executable, "-m", "batchcompact", "-q", *args], env=env, label=f"batchcompact {args[0]}")


def remembered_counts(root: Path, jobs: int, runs: int, out: Path) -> tuple[list, list]:
    """(plans, runs) as (wall, CPU) pairs, alternated, with the token counts remembered: a user's `run`
    after `plan` (the goal's row runs with the cache off, every prompt counted). The cache is a fresh
    file in `out`, filled by one untimed `plan`."""
    env = dict(os.environ, BATCHCOMPACT_TOKEN_CACHE=str(out / "token-counts.sqlite"))
    plan = ("plan", str(root), "--force", "--jobs", str(jobs), "--format", "json", "-o", os.devnull)
    _cli(*plan, env=env)  # fills the cache
    plans, done = [], []
    for n in range(runs):
        plans.append(_cli(*plan, env=env))
        done.append(_cli("run", str(root), "--force", "--output-dir", str(out / f"r{n}"), "--min-age", "0",
                         "--jobs", str(jobs), env=env))
    return plans, done


def write_floor(files: list[Path], runs: int) -> tuple[float, float, int, int]:
    """(plan CPU s, safe-write floor CPU s, sessions compacted, their bytes), medians of `runs`, in this
    process. The floor is what writing the compacted sessions costs before any summary, parse or verify:
    each source hashed as it is read (the fingerprint), copied and fsynced, then read and hashed again
    while the copy is compared byte for byte (the check before the rename, docs/reliability.md). A run
    does all of that on top of its plan, so plan / (plan + floor) bounds run/plan from above."""
    import hashlib

    from batchcompact.core.planner import CompactionSettings
    from batchcompact.pipeline.planning import PlanOptions, iter_plan_rows

    settings = CompactionSettings(force=True)
    paths = [str(f) for f in files]

    def plan() -> list[dict]:
        return list(iter_plan_rows(paths, settings, PlanOptions(), jobs=1))

    compacted = [f for f, row in zip(paths, plan(), strict=True) if row["status"] == "compact"]
    copy = Path(tempfile.mkdtemp(prefix="bc-bench-floor-")) / "copy"

    def floor() -> None:
        for path in compacted:
            read = hashlib.sha256()
            with open(path, "rb") as fh:
                while chunk := fh.read(1 << 20):
                    read.update(chunk)
            with open(path, "rb") as src, open(copy, "wb") as dst:
                shutil.copyfileobj(src, dst, 1 << 20)
                dst.flush()
                os.fsync(dst.fileno())
            again = hashlib.sha256()
            with open(path, "rb") as src, open(copy, "rb") as written:
                while chunk := src.read(1 << 20):
                    again.update(chunk)
                    if written.read(len(chunk)) != chunk:
                        raise BenchFailure(f"bench: the copy of {path} differs")
            if again.digest() != read.digest():
                raise BenchFailure(f"bench: {path} changed while the floor was measured")

    def cpu(step) -> float:
        started = time.process_time()
        step()
        return time.process_time() - started

    try:
        plans, floors = [], []
        for _ in range(runs):  # alternating, as everywhere
            plans.append(cpu(plan))
            floors.append(cpu(floor))
    finally:
        shutil.rmtree(copy.parent, ignore_errors=True)
    return (statistics.median(plans), statistics.median(floors), len(compacted),
            sum(os.path.getsize(f) for f in compacted))


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--total", default="40MB")
    parser.add_argument("--jobs", type=int, default=2)
    parser.add_argument("--seed", type=int, default=11)
    parser.add_argument("--runs", type=int, default=3, help="timed runs of each command (the median counts)")
    parser.add_argument("--quick", action="store_true", help="a 15 MB corpus")
    args = parser.parse_args(argv)
    if args.quick and args.total == "40MB":
        args.total = "15MB"
    root = Path(tempfile.gettempdir()) / f"bc-bench-e2e-{parse_size(args.total)}-{args.seed}"
    if not (root / "corpus.json").exists():
        write_corpus(root, args.total, seed=args.seed, formats=("pi",))
    files = sorted(root.rglob("*.jsonl"))
    mb = sum(os.path.getsize(f) for f in files) / 1e6
    package = precompile()
    print(f"e2e: bytecode of {package} compiled before timing (as a pip install does)")
    out = Path(tempfile.mkdtemp(prefix="bc-bench-e2e-out-"))
    plans, runs, written = [], [], set()
    try:
        # --force: every session with history to summarize is compacted (the corpus' sessions are mostly
        # under their models' thresholds, as real archives are). Each run writes into a fresh folder, and
        # the two commands alternate so that a change of machine load hits both.
        _cli("plan", str(root), "--force", "--jobs", str(args.jobs), "--format", "json", "-o", os.devnull)  # warm
        for n in range(args.runs):
            plans.append(_cli("plan", str(root), "--force", "--jobs", str(args.jobs), "--format", "json",
                              "-o", os.devnull))
            target = out / f"o{n}"
            runs.append(_cli("run", str(root), "--force", "--output-dir", str(target), "--min-age", "0",
                             "--jobs", str(args.jobs)))
            written.add(sum(1 for _ in target.rglob("*.jsonl")))
        warm_plans, warm_runs = remembered_counts(root, args.jobs, args.runs, out)
    finally:
        shutil.rmtree(out, ignore_errors=True)
    if len(written) != 1 or not next(iter(written)):
        raise BenchFailure(f"bench: run wrote {sorted(written)} compacted sessions over {args.runs} runs; "
                           "expected the same positive count each time")
    written = written.pop()
    plan_s, run_s = statistics.median(p[0] for p in plans), statistics.median(r[0] for r in runs)
    plan_cpu, run_cpu = statistics.median(p[1] for p in plans), statistics.median(r[1] for r in runs)
    print(f"e2e: {len(files)} sessions, {mb:.1f} MB; {written} compacted")
    print(f"  plan only:  {plan_s:6.2f}s  {len(files) / plan_s:7.1f} sessions/s")
    print(f"  run:        {run_s:6.2f}s  {len(files) / run_s:7.1f} sessions/s  {mb / run_s:6.1f} MB/s")
    print(f"  CPU:        plan {plan_cpu:6.2f}s  run {run_cpu:6.2f}s  (user + system, workers included)")
    print(f"  (medians of {args.runs} runs each; wall plan {[round(x[0], 2) for x in plans]}, "
          f"run {[round(x[0], 2) for x in runs]})")
    # Each round's own ratio (its plan and its run ran back to back, under the same load): the figure's
    # ratio is their median, not median(plan) / median(run) of unpaired rounds (which took the plan of one
    # round and the run of another, and came out as the best round); the spread says how far it can be trusted.
    rounds = sorted(p[0] / r[0] for p, r in zip(plans, runs, strict=True))
    spread = f"rounds {rounds[0]:.2f}-{rounds[-1]:.2f}" if len(rounds) > 1 else ""
    print(f"  run/plan throughput per round: {[round(x, 2) for x in rounds]}; median {statistics.median(rounds):.2f}")
    emit("e2e", "run, built-in summarizer", len(files) / run_s, "sessions/s", "plan only", len(files) / plan_s,
         note=", ".join(filter(None, [f"{written} of {len(files)} compacted, {mb:.0f} MB, bytecode precompiled",
                                      spread])), goal="ratio >= 0.8", runs=args.runs, ratio=statistics.median(rounds))
    emit("e2e", "run, built-in summarizer, per CPU second", len(files) / run_cpu, "sessions/CPU s", "plan only",
         len(files) / plan_cpu, note="CPU time: what load on a shared machine does not change", runs=args.runs)
    warm_plan_s = statistics.median(p[0] for p in warm_plans)
    warm_run_s = statistics.median(r[0] for r in warm_runs)
    print(f"  token counts remembered (run after plan): plan {warm_plan_s:6.2f}s  run {warm_run_s:6.2f}s")
    emit("e2e", "run after plan, token counts remembered (a user's usual order)", len(files) / warm_run_s,
         "sessions/s", "plan, counts remembered", len(files) / warm_plan_s,
         note=f"plan {warm_plan_s:.2f} s, run {warm_run_s:.2f} s; the row above counts every prompt",
         runs=args.runs)
    plan_here, floor, count, size = write_floor(files, max(args.runs, 5))
    print(f"  safe-write floor of the {count} compacted sessions ({size / 1e6:.1f} MB): {floor:.3f} CPU s; "
          f"plan of all, one process: {plan_here:.3f} CPU s; run/plan at most {plan_here / (plan_here + floor):.2f}")
    emit("e2e", "run/plan ceiling set by the safe write alone (one process, CPU)", plan_here / (plan_here + floor),
         "x", note=f"plan {plan_here:.3f} CPU s; floor {floor:.3f} CPU s: the {count} compacted sessions' "
         f"{size / 1e6:.0f} MB hashed as read, copied + fsynced, hashed again + compared", runs=max(args.runs, 5))


if __name__ == "__main__":
    main()
