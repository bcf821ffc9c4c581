"""`report --html` at a team's scale: a year of a ten-person team (365 days, 25 agents, 30 models of which 2
unpriced, 50 projects, 20 branches, 5 machines, ~1M requests), as the five machines' usage exports
(`report --by request --format parquet`, what a team's nightly cron collects in one folder).

Figures: the page's weight, the time to write it (`report EXPORTS --html`, a subprocess, cold: `--no-cache`)
and to make `report EXPORTS --format json` of the same files (the report the page's numbers come from), each
beside a baseline taken in the same round: polars alone reading the same exports and grouping their rows by
day (a subprocess too: the floor of any polars report of these rows, `BASELINE`), with the peak memory of each
command (issue 57: `--html` <= 5 s, `--format json` <= 3 s, each under 1 GB); and the time to first render in
Chromium (navigation start to the page's `data-ready` mark, from `performance.now()` in the page; Debian's
/usr/bin/chromium through Playwright).

    python bench/bench_html.py [--requests 1000000] [--runs 3] [--dir FOLDER] [--page FILE]
    python -m bench --only html --quick     # 100k requests, one run

Generated synthetically (seeded: the same files every time): each person works on weekdays (and a few
weekend days; two weeks off in August), about 15 sessions a day, each with one agent, one project and
branch and one or two models from their habits.
"""

from __future__ import annotations

import argparse
import os
import random
import statistics
import subprocess
import sys
import tempfile
import time
from datetime import UTC, date, datetime, timedelta
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))
from bench.figures import emit  # noqa: E402
from bench.timing import BenchFailure, run_checked, user_env  # noqa: E402

PEOPLE, AGENTS, MODELS, PROJECTS, BRANCHES, MACHINES, DAYS = 10, 25, 30, 50, 20, 5, 365
GOAL_BYTES, GOAL_RENDER_S = 5_000_000, 1.0
GOAL_HTML_S, GOAL_JSON_S, GOAL_PEAK_MB = 5.0, 3.0, 1000  # issue 57, item 3 (cold, --no-cache)
# The baseline: polars alone, the same exports read and their rows grouped by day (no dedupe, no prices).
BASELINE = """
import sys
import polars as pl
rows = pl.read_parquet(sys.argv[1:])
days = rows.group_by(pl.col("timestamp").dt.date()).agg(pl.len(), pl.col("total_tokens").sum(),
                                                         pl.col("output_tokens").sum())
print(days.height, days["len"].sum())
"""


def model_names() -> list[str]:
    """28 models the bundled price table knows (so costs are computed) and 2 it does not (unpriced)."""
    from batchcompact.pricing import PriceTable

    table = PriceTable.load(None)
    known = sorted(n for n in table.names() if "/" not in n and n.startswith(("claude-", "gpt-", "gemini-", "o3", "o4"))
                   and table.lookup(n) is not None and table.lookup(n).rates())
    step = max(len(known) // (MODELS - 2), 1)
    return known[::step][:MODELS - 2] + ["team-local-llm", "vendor-preview-model"]


def generate(folder: Path, requests: int) -> int:
    """One export per machine; returns the number of rows written."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    from batchcompact.report.export import COLUMNS, EXPORT_SCHEMA_VERSION, export_schema

    rng = random.Random(48)
    models = model_names()
    agents = [f"agent-{i:02d}" for i in range(AGENTS)]
    projects = [f"/work/team/project-{i:02d}" for i in range(PROJECTS)]
    branches = ["main", *[f"feature/topic-{i:02d}" for i in range(BRANCHES - 1)]]
    start = date(2026, 1, 1)
    per_session = max(requests // (PEOPLE * 260 * 15), 1)
    people = []
    for p in range(PEOPLE):
        people.append({
            "machine": f"dev-{p % MACHINES}", "agents": rng.sample(agents, 3), "models": rng.sample(models, 4),
            "projects": rng.sample(projects, 6), "off": set(range(200 + 3 * p, 214 + 3 * p)),  # two weeks off
        })
    columns: dict[str, dict[str, list]] = {f"dev-{m}": {c: [] for c in COLUMNS} for m in range(MACHINES)}
    written = 0
    for day in range(DAYS):
        when = start + timedelta(days=day)
        for p, person in enumerate(people):
            weekend = when.weekday() >= 5
            if day in person["off"] or (weekend and rng.random() > 0.1):
                continue
            out = columns[person["machine"]]
            for s in range(rng.randint(10, 20)):
                session = f"{p:02d}-{day:03d}-{s:02d}"
                agent = rng.choice(person["agents"])
                project = rng.choice(person["projects"])
                branch = branches[(projects.index(project) + rng.randrange(3)) % BRANCHES] if rng.random() < 0.9 else None
                pair = rng.sample(person["models"], 2)
                t = datetime(when.year, when.month, when.day, 8, tzinfo=UTC) + timedelta(minutes=rng.randrange(600))
                for r in range(max(int(rng.gauss(per_session, per_session / 3)), 1)):
                    model = pair[0] if rng.random() < 0.8 else pair[1]
                    t += timedelta(seconds=rng.randrange(5, 90))
                    cache_read = rng.randrange(2_000, 120_000)
                    row = {
                        "export_version": EXPORT_SCHEMA_VERSION, "request_id": f"{session}-{r:04d}",
                        "machine": person["machine"], "machine_id": f"id-{person['machine']}", "agent": agent,
                        "source": agent, "session_id": session, "project": project, "branch": branch,
                        "provider": None, "model": model, "kind": "main", "timestamp": t,
                        "input_tokens": rng.randrange(10, 4_000), "output_tokens": rng.randrange(50, 3_000),
                        "cache_read_tokens": cache_read, "cache_write_tokens": rng.randrange(0, 8_000),
                        "cache_write_1h_tokens": 0, "reasoning_tokens": 0,
                        "recorded_cost_usd": None, "cost_usd": None, "dedupe_rank": 0,
                        "export_rows": None,  # each export's row count, set when it is written
                    }
                    row["total_tokens"] = (row["input_tokens"] + row["output_tokens"] + row["cache_read_tokens"]
                                           + row["cache_write_tokens"])
                    for c in COLUMNS:
                        out[c].append(row[c])
                    written += 1
    schema = export_schema()
    for machine, data in columns.items():
        data["export_rows"] = [len(data["request_id"])] * len(data["request_id"])
        pq.write_table(pa.table(data, schema=schema), folder / f"{machine}.parquet")
    return written


def measured(command: list[str], env: dict[str, str], label: str) -> tuple[float, float, float]:
    """(wall seconds, CPU seconds, peak RSS in MB) of one checked run of `command` (its own rusage: `wait4`)."""
    started = time.perf_counter()
    child = subprocess.Popen(command, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    stderr = child.stderr.read() if child.stderr else b""
    _, status, usage = os.wait4(child.pid, 0)
    wall = time.perf_counter() - started
    child.returncode = os.waitstatus_to_exitcode(status)
    if child.returncode != 0:
        tail = " | ".join(stderr.decode("utf-8", "replace").strip().splitlines()[-3:])
        raise BenchFailure(f"bench: {label} failed with exit code {child.returncode}; nothing timed. {tail}")
    return wall, usage.ru_utime + usage.ru_stime, usage.ru_maxrss / 1024


def render_seconds(page: Path, runs: int) -> list[float]:
    """Navigation start to the page's ready mark, in a fresh tab each run."""
    from playwright.sync_api import sync_playwright

    times = []
    with sync_playwright() as p:
        browser = p.chromium.launch(executable_path="/usr/bin/chromium", args=["--no-sandbox"])
        for _ in range(runs):
            tab = browser.new_page(viewport={"width": 1280, "height": 900})
            errors: list[str] = []
            tab.on("pageerror", lambda e, seen=errors: seen.append(str(e)))
            tab.goto(page.as_uri())
            tab.wait_for_selector("body[data-ready='1']", timeout=60_000)
            if errors:
                raise SystemExit(f"bench: the page failed in Chromium: {errors[0]}")
            times.append(tab.evaluate("window.__batchcompactRendered") / 1000)
            tab.close()
        browser.close()
    return times


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--requests", type=int, default=1_000_000)
    parser.add_argument("--runs", type=int, default=3)
    parser.add_argument("--dir", help="exports folder (kept; generated when empty)")
    parser.add_argument("--page", help="where to write the page (kept)")
    parser.add_argument("--quick", action="store_true", help="100k requests, one run")
    args = parser.parse_args()
    if args.quick:
        args.requests, args.runs = min(args.requests, 100_000), 1
    work = Path(tempfile.mkdtemp(prefix="bc-html-"))
    exports = Path(args.dir) if args.dir else work / "exports"
    exports.mkdir(parents=True, exist_ok=True)
    if not any(exports.glob("*.parquet")):
        t = time.perf_counter()
        rows = generate(exports, args.requests)
        print(f"generated {rows:,} requests in {time.perf_counter() - t:.1f}s", file=sys.stderr)
    page = Path(args.page) if args.page else work / "spend.html"
    env = user_env({**os.environ, "XDG_CACHE_HOME": str(work / "cache")})  # bytecode kept, as a user's
    cli = [sys.executable, "-m", "batchcompact", "-q", "report", str(exports), "--no-cache"]
    files = sorted(str(p) for p in exports.glob("*.parquet"))
    commands = {
        "baseline": [sys.executable, "-c", BASELINE, *files],
        "html": [*cli, "--html", str(page)],
        "json": [*cli, "--format", "json", "-o", str(work / "r.json")],
    }
    run_checked(commands["json"], env=env, label="report --format json")  # untimed: bytecode, page cache
    rounds: dict[str, list[tuple[float, float, float]]] = {name: [] for name in commands}
    for _ in range(args.runs):  # the three take turns in each round, so the machine's load hits all of them
        for name, command in commands.items():
            rounds[name].append(measured(command, env, name))
    size = page.stat().st_size
    renders = render_seconds(page, args.runs)
    base_s, base_cpu, base_peak = (statistics.median(r[i] for r in rounds["baseline"]) for i in range(3))
    print(f"baseline (polars: read, group by day): {base_s:.2f}s")
    for name, label, goal in (("html", "--html", GOAL_HTML_S), ("json", "--format json", GOAL_JSON_S)):
        wall, cpu, peak = (statistics.median(r[i] for r in rounds[name]) for i in range(3))
        ratio = statistics.median(r[0] / b[0] for r, b in zip(rounds[name], rounds["baseline"], strict=True))
        print(f"report {label}: {wall:.2f}s wall, {cpu:.2f} CPU s, peak RSS {peak:.0f} MB ({ratio:.2f}x the baseline)")
        emit("html", f"report {label}, cold (--no-cache), {len(files)} exports", wall, "s",
             "polars alone: read the exports, group by day", base_s, goal=f"value <= {goal:g}", runs=args.runs,
             ratio=ratio, note=f"{cpu:.2f} CPU s (the baseline: {base_cpu:.2f})")
        emit("html", f"report {label}, cold, peak RSS", peak, "MB", "polars alone: read the exports, group by day",
             base_peak, goal=f"value <= {GOAL_PEAK_MB}", runs=args.runs)
    render_s = statistics.median(renders)
    print(f"page: {size:,} bytes; first render in Chromium {render_s:.3f}s (medians of {args.runs})")
    emit("html", "page weight", size / 1e6, "MB", goal=f"value <= {GOAL_BYTES / 1e6:g}")
    emit("html", "first render in Chromium", render_s, "s", goal=f"value <= {GOAL_RENDER_S:g}", runs=args.runs)


if __name__ == "__main__":
    main()
