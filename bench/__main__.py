"""`python -m bench [--quick]`: every stage's figure in one table, each next to its baseline.

Each stage runs as its own subprocess (so memory and imports do not leak between them) and reports
`FIGURE {json}` lines (bench/figures.py). Machines here are noisy: compare ratios, not absolute times;
the load average is printed before and after each stage. A stage that fails, or that could not measure a
goal's figure (its row says `not measured: why`, e.g. no ccusage), makes the whole run exit 1.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import time
from pathlib import Path

from bench.figures import NOT_MEASURED_EXIT, merge_repeats

HERE = Path(__file__).resolve().parent
STAGES = [
    ("read", "bench_read.py"),
    ("plan + memory", "bench_plan.py"),
    ("pool", "bench_pool.py"),
    ("report", "bench_report.py"),
    ("html", "bench_html.py"),
    ("agents", "bench_agents.py"),
    ("e2e", "bench_e2e.py"),
    ("builtin", "bench_builtin.py"),
    ("startup", "bench_startup.py"),
    ("redact", "bench_redact.py"),
    ("ray", "bench_ray.py"),
    ("routes", "bench_routes.py"),
]


def _load() -> str:
    one, five, _ = os.getloadavg()
    return f"load {one:.1f} (1 min) / {five:.1f} (5 min) on {os.cpu_count()} CPUs"


def _markdown(figures: list[dict]) -> str:
    """The table of docs/performance.md: every figure, its baseline, the ratio and the goal's status."""
    def num(x: float | None) -> str:
        return "" if x is None else f"{x:,.3g}" if abs(x) < 100 else f"{x:,.0f}"

    rows = ["| stage | figure | value | baseline (same run) | ratio | runs | goal |", "|---|---|---|---|---|---|---|"]
    for f in figures:
        base = f"{f['baseline']}: {num(f['baseline_value'])}" if f["baseline"] else ""
        ratio = "" if f["ratio"] is None else f"{f['ratio']:.2f}"
        figure = f["figure"] + (f" ({f['note']})" if f.get("note") else "")
        status = f.get("status", "no goal")
        if status.startswith("not met"):
            status = f"**{status}**"
        rows.append(f"| {f['stage']} | {figure} | {num(f['value'])} {f['unit']} | {base} | {ratio} | "
                    f"{f.get('runs') or 1} | {status} |")
    return "\n".join(rows)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="small inputs: about a minute in all")
    parser.add_argument("--only", default=None, help="comma-separated stage scripts to run (e.g. read,plan)")
    parser.add_argument("--verbose", action="store_true", help="also show each script's own output")
    parser.add_argument("--markdown", type=Path, default=None, help="also write the table as Markdown to FILE")
    parser.add_argument("--repeat", type=int, default=1, metavar="N",
                        help="run the stages N times (all of them, then again) and show each figure's median "
                             "and its spread over the N runs")
    args = parser.parse_args()
    figures: list[dict] = []
    failed: list[str] = []
    unmeasured: list[str] = []
    print(f"[start: {_load()}]", file=sys.stderr)
    chosen = [(label, script) for label, script in STAGES
              if not args.only or any(script.startswith(f"bench_{name}") for name in args.only.split(","))]
    for round_number, (label, script) in enumerate(chosen * max(args.repeat, 1)):
        if args.repeat > 1 and round_number % len(chosen) == 0:
            print(f"[round {round_number // len(chosen) + 1} of {args.repeat}]", file=sys.stderr)
        command = [sys.executable, str(HERE / script)] + (["--quick"] if args.quick else [])
        started = time.perf_counter()
        # Token counts remembered by an earlier stage would make later ones look faster than they are.
        env = dict(os.environ, BATCHCOMPACT_TOKEN_CACHE=os.environ.get("BATCHCOMPACT_TOKEN_CACHE", "off"))
        done = subprocess.run(command, capture_output=True, text=True, env=env)
        elapsed = time.perf_counter() - started
        outcome = {0: "", NOT_MEASURED_EXIT: ", a goal NOT MEASURED"}.get(done.returncode, ", FAILED")
        print(f"[{label}: {elapsed:.0f}s, {_load()}{outcome}]", file=sys.stderr)
        for line in done.stdout.splitlines():
            if line.startswith("FIGURE "):
                figures.append(json.loads(line[len("FIGURE "):]))
            elif args.verbose:
                print("   ", line, file=sys.stderr)
        if done.returncode == NOT_MEASURED_EXIT:
            unmeasured.append(label)
        elif done.returncode != 0:
            failed.append(label)
            print(done.stderr[-2000:], file=sys.stderr)
    figures = merge_repeats(figures)
    print(f"{'stage':<8} {'figure':<40} {'value':>12} {'unit':<11} {'baseline':<24} {'baseline':>10} {'ratio':>7} "
          f"goal")
    for f in figures:
        base = "" if f["baseline_value"] is None else f"{f['baseline_value']:>10.2f}"
        ratio = "" if f["ratio"] is None else f"{f['ratio']:>7.2f}"
        value = "" if f["value"] is None else f"{f['value']:>12.2f}"
        print(f"{f['stage']:<8} {f['figure'][:40]:<40} {value:>12} {f['unit']:<11} "
              f"{(f['baseline'] or '')[:24]:<24} {base:>10} {ratio:>7} {f.get('status', '')}")
    print(f"[end: {_load()}]", file=sys.stderr)
    if args.markdown:
        args.markdown.write_text(_markdown(figures) + "\n")
    if unmeasured:
        print(f"bench: {len(unmeasured)} stage(s) could not measure a goal: {', '.join(unmeasured)} "
              "(rows 'not measured' above)", file=sys.stderr)
    if failed:
        print(f"bench: {len(failed)} stage(s) FAILED: {', '.join(failed)} (their figures are missing above)",
              file=sys.stderr)
    return 1 if failed or unmeasured else 0


if __name__ == "__main__":
    sys.exit(main())
