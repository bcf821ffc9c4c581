"""The test suite's time: one process against N workers, in the same run (docs/performance.md, "The test
suite's time").

Each round runs `python -m pytest -q -p no:cacheprovider -n 0` (one process) and `-n WORKERS` (pytest-xdist,
`--dist loadfile` from pyproject.toml) over the same PATHS, taking turns, and reads from each: wall seconds,
CPU seconds of pytest and everything it started (user + system of the children: workers, judges, the CLIs
the tests run) and the number of tests that passed. A run that fails stops the bench (a failing suite is no
figure). Not a stage of `python -m bench`: the whole suite takes 7-20 minutes here.

    python bench/bench_suite.py                          # the whole suite, -n 0 and -n 2, one round
    python bench/bench_suite.py tests/test_cli.py --workers 2 --rounds 3
    CI=true python bench/bench_suite.py                  # as CI runs it: a missing judge fails, not skips
"""

from __future__ import annotations

import argparse
import os
import re
import resource
import statistics
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

from bench.figures import emit  # noqa: E402
from bench.timing import BenchFailure  # noqa: E402


def run_suite(paths: list[str], workers: int) -> tuple[float, float, int]:
    """(wall s, CPU s of the children, tests passed) of one pytest run over `paths`."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    start = time.perf_counter()
    command = [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "-n", str(workers), *paths]
    done = subprocess.run(command, cwd=ROOT, capture_output=True, text=True)
    wall = time.perf_counter() - start
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    if done.returncode != 0:
        tail = [line for line in (done.stdout + done.stderr).splitlines() if line.strip()][-3:]
        raise BenchFailure(f"bench: pytest -n {workers} failed with exit code {done.returncode}; nothing timed. "
                           + " | ".join(tail))
    found = re.search(r"(\d+) passed", done.stdout)
    passed = int(found.group(1)) if found else 0
    cpu = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
    return wall, cpu, passed


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("paths", nargs="*", default=[], help="test files or folders (default: the whole suite)")
    parser.add_argument("--workers", type=int, default=2, help="pytest-xdist workers to compare with one process")
    parser.add_argument("--rounds", type=int, default=1, help="rounds (each runs both, taking turns)")
    args = parser.parse_args(argv)
    one: list[tuple[float, float, int]] = []
    many: list[tuple[float, float, int]] = []
    for _ in range(args.rounds):
        one.append(run_suite(args.paths, 0))
        many.append(run_suite(args.paths, args.workers))
    load = os.getloadavg()[0]
    for label, runs in (("one process (-n 0)", one), (f"{args.workers} workers (-n {args.workers})", many)):
        wall = statistics.median(r[0] for r in runs)
        cpu = statistics.median(r[1] for r in runs)
        print(f"{label}: {wall:.1f} s wall, {cpu:.1f} s CPU, {runs[0][2]:,} tests passed (load {load:.1f})")
    wall_one, wall_many = statistics.median(r[0] for r in one), statistics.median(r[0] for r in many)
    cpu_one, cpu_many = statistics.median(r[1] for r in one), statistics.median(r[1] for r in many)
    note = f"{many[0][2]:,} tests"
    emit("suite", f"wall, -n {args.workers}", wall_many, "s", "-n 0", wall_one, note=note, runs=args.rounds)
    emit("suite", f"CPU, -n {args.workers}", cpu_many, "s", "-n 0", cpu_one, note=note, runs=args.rounds)
    return 0


if __name__ == "__main__":
    sys.exit(main())
