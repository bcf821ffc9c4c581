"""The report's two engines side by side, in the same run: is each one needed? (docs/architecture.md, "The
report's routes")

- start-up: importing each engine in a fresh interpreter (CPU seconds): report/fast.py (plain Python, the
  rules and the price map) next to report/aggregate.py (polars, pyarrow, numpy);
- at each size (synthetic requests of several agents, models, projects, days; about a tenth copied, as
  resumed sessions copy them), aggregation in one process, CPU seconds (polars threads included):
  - cold: the rows as the workers hand them over (tuples), `fast.build_report`, next to the same rows as a
    Parquet part (written by the workers on the polars route) and `aggregate.build_report`;
  - warm: from that Parquet part, as an unchanged archive's next report reads it: the part read into rows
    for fast.py (pyarrow, column by column) next to polars reading it itself.
  Both engines' JSON is compared (byte for byte) at every size: a faster wrong answer is no figure.

    python bench/bench_routes.py            # 10k, 100k, 1M requests
    python bench/bench_routes.py --quick    # 10k, 100k
"""

from __future__ import annotations

import argparse
import random
import statistics
import subprocess
import sys
import tempfile
import time
from datetime import UTC, datetime, timedelta
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

from bench.figures import emit  # noqa: E402

MODELS = [("claude-sonnet-4-5", "anthropic"), ("claude-opus-4-1", "anthropic"), ("gpt-5", "openai"),
          ("gpt-5-mini", "openai"), ("gemini-2.5-pro", "google"), ("unpriced-model", None)]
AGENTS = ["claude", "codex", "pi", "opencode", "gemini"]


def usage_rows(count: int, seed: int = 7):
    """`count` requests as the readers make them (adapters/common/usage_rows.UsageRows)."""
    from batchcompact.adapters.common.usage_rows import UsageRows

    rng = random.Random(seed)
    rows = UsageRows()
    start = datetime(2026, 1, 1, tzinfo=UTC)
    for n in range(count):
        model, provider = MODELS[rng.randrange(len(MODELS))]
        agent = AGENTS[rng.randrange(len(AGENTS))]
        key = f"m{rng.randrange(int(count * 0.9)) if rng.random() < 0.1 else n}:r{n}"  # ~10% copies
        rows.add(source=agent, file=f"/a/{agent}/{n % 500}.jsonl", line=n + 1, session_id=f"s{n % 2000}",
                 project=f"/home/u/p{n % 40}", timestamp=start + timedelta(seconds=n * 29 % (365 * 86400)),
                 provider=provider, model=model, kind="main", input_tokens=rng.randrange(1, 5000),
                 output_tokens=rng.randrange(1, 2000), cache_read_tokens=rng.randrange(0, 50_000),
                 branch=f"b{n % 7}", dedupe_key=key)
    return rows


def import_seconds(module: str, runs: int) -> float:
    """Median CPU seconds (user + system, children) of importing `module` in a fresh interpreter."""
    import resource

    samples = []
    for _ in range(runs):
        before = resource.getrusage(resource.RUSAGE_CHILDREN)
        subprocess.run([sys.executable, "-c", f"import {module}"], check=True)
        after = resource.getrusage(resource.RUSAGE_CHILDREN)
        samples.append(after.ru_utime - before.ru_utime + after.ru_stime - before.ru_stime)
    return statistics.median(samples)


def part_rows(part: str) -> list[tuple]:
    """A Parquet part read as fast.py's row tuples (rules.REPORT_COLUMNS), column by column."""
    import pyarrow.parquet as pq

    from batchcompact.report import rules

    table = pq.read_table(part, columns=list(rules.REPORT_COLUMNS))
    return list(zip(*(column.to_pylist() for column in table.columns), strict=True))


def fast_from_part(part: str, settings, table):
    """The plain-Python engine over a Parquet part: the part read into rows, then `fast.build_report`."""
    from batchcompact.report import fast

    return fast.build_report(part_rows(part), settings, table)


def cpu(func, *args):
    """(CPU seconds of this process, all threads, result) of `func(*args)`."""
    started = time.process_time()
    out = func(*args)
    return time.process_time() - started, out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="10k and 100k requests only")
    parser.add_argument("--sizes", default=None, help="comma-separated request counts")
    parser.add_argument("--runs", type=int, default=3, help="runs per figure (the median counts)")
    args = parser.parse_args()
    sizes = [int(s) for s in args.sizes.split(",")] if args.sizes else (
        [10_000, 100_000] if args.quick else [10_000, 100_000, 1_000_000])

    fast_import = import_seconds("batchcompact.report.fast", args.runs)
    polars_import = import_seconds("batchcompact.report.aggregate", args.runs)
    print(f"import: fast.py {fast_import:.2f} CPU s, aggregate.py (polars) {polars_import:.2f} CPU s")
    emit("routes", "start-up: import the plain-Python engine (report/fast.py)", fast_import, "CPU s",
         "the polars engine (report/aggregate.py)", polars_import, runs=args.runs)

    import pyarrow.parquet as pq

    from batchcompact.pricing import PriceTable
    from batchcompact.report import aggregate, fast, fast_collect
    from batchcompact.report.render import write_report
    from batchcompact.report.settings import ReportSettings

    table = PriceTable.load(None)
    settings = ReportSettings(by="day", machine="here", machine_id="m-1")
    with tempfile.TemporaryDirectory() as work:
        for size in sizes:
            usage = usage_rows(size)
            rows = [fast_collect._PICK(row) for row in usage.rows]
            part = str(Path(work) / f"part-{size}.parquet")
            pq.write_table(usage.to_table(), part)
            del usage
            cold_fast, cold_polars, warm_fast, warm_polars = [], [], [], []
            for _ in range(args.runs):  # alternating, so that a change of load hits both
                seconds, quick = cpu(fast.build_report, rows, settings, table)
                cold_fast.append(seconds)
                seconds, slow = cpu(aggregate.build_report, [part], settings, table)
                cold_polars.append(seconds)
                warm_polars.append(seconds)  # the polars route reads the part in both cases
                seconds, warm = cpu(fast_from_part, part, settings, table)
                warm_fast.append(seconds)
            if not write_report(quick, "json", None) == write_report(warm, "json", None) == write_report(slow, "json", None):
                raise SystemExit(f"bench: the engines disagree on {size:,} requests")
            label = f"{size:,} requests"
            print(f"{label}: cold fast.py {statistics.median(cold_fast):.2f} / polars "
                  f"{statistics.median(cold_polars):.2f} CPU s; warm (from the part) fast.py "
                  f"{statistics.median(warm_fast):.2f} / polars {statistics.median(warm_polars):.2f} CPU s")
            emit("routes", f"cold: rows from the workers, plain Python (fast.build_report), {label}",
                 statistics.median(cold_fast), "CPU s", "polars over the part (aggregate.build_report)",
                 statistics.median(cold_polars), runs=args.runs)
            emit("routes", f"warm: the Parquet part read into rows for plain Python, {label}",
                 statistics.median(warm_fast), "CPU s", "polars reading the part itself",
                 statistics.median(warm_polars), runs=args.runs)


if __name__ == "__main__":
    main()
