"""`python -m bench [--quick]`: every stage's figure in one table, each next to its baseline.

Each stage runs as its own subprocess (so memory and imports do not leak between them) and reports
`FIGURE {json}` lines (bench/figures.py). Machines here are noisy: compare ratios, not absolute times.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
STAGES = [
    ("read", "bench_read.py"),
    ("plan + memory", "bench_plan.py"),
    ("pool", "bench_pool.py"),
    ("report", "bench_report.py"),
    ("e2e", "bench_e2e.py"),
    ("builtin", "bench_builtin.py"),
    ("startup", "bench_startup.py"),
    ("redact", "bench_redact.py"),
    ("ray", "bench_ray.py"),
]


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="small inputs: about a minute in all")
    parser.add_argument("--only", default=None, help="comma-separated stage scripts to run (e.g. read,plan)")
    parser.add_argument("--verbose", action="store_true", help="also show each script's own output")
    args = parser.parse_args()
    figures: list[dict] = []
    for label, script in STAGES:
        if args.only and not any(script.startswith(f"bench_{name}") for name in args.only.split(",")):
            continue
        command = [sys.executable, str(HERE / script)] + (["--quick"] if args.quick else [])
        started = time.perf_counter()
        # Token counts remembered by an earlier stage would make later ones look faster than they are.
        env = dict(os.environ, BATCHCOMPACT_TOKEN_CACHE=os.environ.get("BATCHCOMPACT_TOKEN_CACHE", "off"))
        done = subprocess.run(command, capture_output=True, text=True, env=env)
        elapsed = time.perf_counter() - started
        print(f"[{label}: {elapsed:.0f}s{'' if done.returncode == 0 else ', FAILED'}]", file=sys.stderr)
        for line in done.stdout.splitlines():
            if line.startswith("FIGURE "):
                figures.append(json.loads(line[len("FIGURE "):]))
            elif args.verbose:
                print("   ", line, file=sys.stderr)
        if done.returncode != 0:
            print(done.stderr[-2000:], file=sys.stderr)
    print(f"{'stage':<8} {'figure':<40} {'value':>12} {'unit':<11} {'baseline':<24} {'baseline':>10} {'ratio':>7}")
    for f in figures:
        base = "" if f["baseline_value"] is None else f"{f['baseline_value']:>10.2f}"
        ratio = "" if f["ratio"] is None else f"{f['ratio']:>7.2f}"
        print(f"{f['stage']:<8} {f['figure'][:40]:<40} {f['value']:>12.2f} {f['unit']:<11} "
              f"{(f['baseline'] or '')[:24]:<24} {base:>10} {ratio:>7}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
