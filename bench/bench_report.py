"""Report throughput on a generated archive: MB/s cold (empty cache), seconds warm, peak RSS.

    .venv/bin/python bench/bench_report.py                  # ~60 MB, well under a minute
    .venv/bin/python bench/bench_report.py --total 1GB --jobs 4 --dir /tmp/bc-corpus

The corpus comes from `synth` when present (else a tiny local generator that copies the
Claude fixture with fresh ids). For scale it also times a bare `json.loads` of every line (one
process): cold report time close to that, divided by the jobs, means JSON parsing is the limit.
"""

from __future__ import annotations

import argparse
import json
import resource
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
import uuid
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))
from bench.figures import emit, finish, not_measured  # noqa: E402
from bench.timing import BenchFailure, run_checked, timed, timed_cpu, user_env  # noqa: E402

FIXTURE = (
    REPO.parent
    / "shared"
    / "fixtures"
    / "claude"
    / "projects"
    / "-home-USER-projects-spotter"
    / "4d5611e5-241a-462a-8d15-5122611a9569.jsonl"
)


def parse_size(text: str) -> int:
    text = text.strip().upper().rstrip("B")
    scale = {"K": 1000, "M": 1000**2, "G": 1000**3}.get(text[-1:], 1)
    return int(float(text.rstrip("KMG")) * scale)


def generate(out: Path, total: int) -> None:
    try:
        from synth.corpus import write_corpus
    except ImportError:
        write_corpus = None
    if write_corpus is not None:
        write_corpus(out, total, seed=1)
        return
    lines = FIXTURE.read_bytes().splitlines(keepends=True)
    written, n = 0, 0
    while written < total:
        session = str(uuid.uuid4())
        path = out / "claude" / "projects" / f"-proj-{n % 20}" / f"{session}.jsonl"
        path.parent.mkdir(parents=True, exist_ok=True)
        text = b"".join(lines).replace(b"4d5611e5-241a-462a-8d15-5122611a9569", session.encode())
        text = text.replace(b'"msg_', f'"msg_{n}_'.encode())
        path.write_bytes(text)
        written += len(text)
        n += 1


def bare_json_seconds(root: Path) -> float:
    start = time.perf_counter()
    for path in root.rglob("*.jsonl"):
        with open(path, "rb") as fh:
            for line in fh:
                try:
                    json.loads(line)
                except ValueError:
                    pass
    return time.perf_counter() - start


NO_CCUSAGE = "no ccusage binary: set CCUSAGE_BIN or run tests/test_ccusage_parity.py once"


def find_ccusage() -> str | None:
    """A ccusage 20 binary: $CCUSAGE_BIN, one on PATH, or the copy the parity test installs."""
    import os

    candidates = [os.environ.get("CCUSAGE_BIN"), shutil.which("ccusage")]
    cache = Path(os.environ.get("BATCHCOMPACT_TEST_CACHE", Path.home() / ".cache" / "batchcompact-tests"))
    candidates += sorted(str(p) for p in cache.glob("ccusage-20*/node_modules/.bin/ccusage"))
    return next((c for c in candidates if c and Path(c).exists()), None)


def claude_corpus(out: Path, total: int) -> None:
    """Claude-only archive for the side-by-side: the real fixture copied with fresh session and request ids."""
    lines = FIXTURE.read_bytes()
    written, n = 0, 0
    while written < total:
        session = str(uuid.UUID(int=n + 1))
        path = out / "projects" / f"-proj-{n % 20}" / f"{session}.jsonl"
        path.parent.mkdir(parents=True, exist_ok=True)
        text = lines.replace(b"4d5611e5-241a-462a-8d15-5122611a9569", session.encode())
        text = text.replace(b'"msg_', f'"msg_{n}_'.encode()).replace(b'"req_', f'"req_{n}_'.encode())
        path.write_bytes(text)
        written += len(text)
        n += 1


CODEX_FIXTURE = (REPO.parent / "shared" / "fixtures" / "codex" / "sessions" / "2026" / "02" / "23"
                 / "rollout-2026-02-23T12-54-34-019c8a59-e9dd-71f0-9ae3-4079fe9726a9.jsonl")


def codex_corpus(out: Path, total: int) -> None:
    """Codex-only archive: the real rollout copied with a fresh thread id and its own day (so no copy's
    requests are another's: Codex events are told apart by time and cumulative total)."""
    import datetime

    data = CODEX_FIXTURE.read_bytes()
    written, n = 0, 0
    while written < total:
        thread = str(uuid.UUID(int=n + 1))
        day = (datetime.date(2025, 1, 1) + datetime.timedelta(days=n)).isoformat()
        path = out / "sessions" / day.replace("-", "/") / f"rollout-{day}T12-54-34-{thread}.jsonl"
        path.parent.mkdir(parents=True, exist_ok=True)
        text = data.replace(b"019c8a59-e9dd-71f0-9ae3-4079fe9726a9", thread.encode())
        path.write_bytes(text.replace(b"2026-02-23T", day.encode() + b"T"))
        written += len(text)
        n += 1


def versus_ccusage_codex(work: Path, total: int, runs: int) -> None:
    """Cold `batchcompact report --no-cache` next to `ccusage codex daily` on the same Codex rollouts."""
    import os

    binary = find_ccusage()
    if binary is None or not CODEX_FIXTURE.exists():
        why = "no ccusage binary" if binary is None else f"no Codex fixture at {CODEX_FIXTURE}"
        not_measured("report", f"cold CLI (--no-cache), {total / 1e6:.0f} MB Codex", "s",
                     "ccusage 20 codex daily, same files", "ratio <= 1.0", why)
        return
    corpus = work / "codex"
    shutil.rmtree(corpus, ignore_errors=True)
    codex_corpus(corpus, total)
    mb = sum(p.stat().st_size for p in corpus.rglob("*.jsonl")) / 1e6
    env = user_env(dict(os.environ, CODEX_HOME=str(corpus), XDG_CACHE_HOME=str(work / "xdg-codex")))
    ours = [sys.executable, "-m", "batchcompact", "report", str(corpus), "--format", "json", "--no-cache"]
    theirs = [binary, "codex", "daily", "--offline", "--json"]
    ours_tokens = _total_tokens(ours, env, ours=True)
    their_tokens = _total_tokens(theirs, env, ours=False)
    if ours_tokens != their_tokens:
        raise BenchFailure(f"bench: on the same rollouts batchcompact counts {ours_tokens:,} tokens and ccusage "
                           f"{their_tokens:,}: not the same computation, nothing timed")
    ours_s, theirs_s, _ = cold_side_by_side(ours, theirs, env, runs, f"{mb:.0f} MB Codex", "ccusage 20 codex daily")
    print(f"ccusage codex side by side on {mb:.0f} MB of Codex rollouts ({ours_tokens:,} tokens on both sides; "
          f"medians of {runs}): ours {ours_s:.2f}s, ccusage {theirs_s:.2f}s")


def cold_side_by_side(ours: list[str], theirs: list[str], env: dict, runs: int, corpus: str, tool: str,
                      note: str = "") -> tuple[float, float, float]:
    """Time `ours` and `theirs` alternately `runs` times (wall and CPU seconds) and emit the two figures
    "cold CLI (--no-cache), <corpus>" (wall, goal: no slower) and its CPU seconds; returns the medians of
    our wall, their wall and their CPU seconds."""
    walls, cpus, their_walls, their_cpus = [], [], [], []
    for _ in range(runs):  # alternating, so that a change of machine load hits both sides
        wall, cpu = timed_cpu(ours, env=env, label=f"batchcompact report ({corpus})")
        walls.append(wall)
        cpus.append(cpu)
        wall, cpu = timed_cpu(theirs, env=env, label=f"{tool} ({corpus})")
        their_walls.append(wall)
        their_cpus.append(cpu)
    ours_s, theirs_s = statistics.median(walls), statistics.median(their_walls)
    emit("report", f"cold CLI (--no-cache), {corpus}", ours_s, "s", f"{tool}, same files", theirs_s,
         goal="ratio <= 1.0", runs=runs, note=note)
    emit("report", f"cold CLI (--no-cache), {corpus}, CPU seconds", statistics.median(cpus), "CPU s",
         f"{tool}, same files", statistics.median(their_cpus), note="user + system, workers included", runs=runs)
    return ours_s, theirs_s, statistics.median(their_cpus)


def _wall(command: list[str], env: dict) -> float:
    """Wall seconds of one run of `command`; the bench stops if it fails (a crash is not a fast time)."""
    return timed(command, env=env, label=" ".join(Path(command[0]).name if i == 0 else c
                                                  for i, c in enumerate(command[:4])))


def _total_tokens(command: list[str], env: dict, ours: bool) -> int:
    """The total tokens a report prints (ours: `totals.total_tokens`; ccusage: `totals.totalTokens`)."""
    out = run_checked(command, env=env, stdout=subprocess.PIPE, label=Path(command[0]).name)
    totals = json.loads(out.stdout)["totals"]
    return int(totals["total_tokens"] if ours else totals["totalTokens"])


def _forget_results(cache: Path) -> None:
    """Remove the stored reports (not the cached parts), so the next report takes the full path."""
    for folder in cache.glob("batchcompact/usage-v*/results"):
        shutil.rmtree(folder)


def versus_ccusage(work: Path, total: int, runs: int, *, start_up: bool = True) -> None:
    """Cold `batchcompact report` next to ccusage 20 on the same Claude archive, both as a user runs them."""
    import os

    binary = find_ccusage()
    if binary is None:
        not_measured("report", f"cold CLI (--no-cache), {total / 1e6:.0f} MB Claude", "s",
                     "ccusage 20 daily, same files", "ratio <= 1.0", NO_CCUSAGE)
        return
    corpus = work / "claude"
    shutil.rmtree(corpus, ignore_errors=True)
    shutil.rmtree(work / "xdg", ignore_errors=True)
    claude_corpus(corpus, total)
    mb = sum(p.stat().st_size for p in corpus.rglob("*.jsonl")) / 1e6
    for p in corpus.rglob("*.jsonl"):
        p.read_bytes()  # page cache warm for both
    # Bytecode caches kept (a pip install compiles our sources; the first run below writes them here).
    env = user_env(dict(os.environ, CLAUDE_CONFIG_DIR=str(corpus), XDG_CACHE_HOME=str(work / "xdg")))
    # `--cache-above 0`: the parts are kept whatever the size (what the rows below say)
    ours = [sys.executable, "-m", "batchcompact", "report", str(corpus), "--format", "json", "--cache-above", "0"]
    theirs = [binary, "daily", "--offline", "--json"]
    # Same inputs, same answer: both count the same tokens in these files (tests/test_ccusage_parity.py
    # checks the figures in detail); a difference means the two sides are not doing the same work.
    ours_tokens = _total_tokens(ours + ["--no-cache"], env, ours=True)
    their_tokens = _total_tokens(theirs, env, ours=False)
    if ours_tokens != their_tokens:
        raise BenchFailure(f"bench: on the same files batchcompact counts {ours_tokens:,} tokens and ccusage "
                           f"{their_tokens:,}: not the same computation, nothing timed")
    # Cold twice: `--no-cache` (nothing kept: no Parquet parts, no polars; report/fast.py) and the first
    # report into an empty cache (the workers write the parts as they read; no polars), then a report with
    # other options over those parts (polars; it also writes the snapshot).
    cold_ours, cold_cc, cpu_ours, cpu_cc, first_ours, first_cpu, other_ours = [], [], [], [], [], [], []
    for _ in range(runs):  # alternating, so that a change of machine load hits every side
        wall, cpu = timed_cpu(ours + ["--no-cache"], env=env, label="batchcompact report --no-cache")
        cold_ours.append(wall)
        cpu_ours.append(cpu)
        wall, cpu = timed_cpu(theirs, env=env, label="ccusage daily")
        cold_cc.append(wall)
        cpu_cc.append(cpu)
        _empty_usage_cache(work / "xdg")
        wall, cpu = timed_cpu(ours, env=env, label="batchcompact report")
        first_ours.append(wall)
        first_cpu.append(cpu)
        other_ours.append(timed_cpu(ours + ["--by", "month"], env=env, label="batchcompact report --by month")[0])
    warm = statistics.median(_wall(ours, env) for _ in range(runs))
    best_ours, best_cc = statistics.median(cold_ours), statistics.median(cold_cc)
    first = statistics.median(first_ours)
    print(f"ccusage side by side on {mb:.0f} MB of Claude sessions ({ours_tokens:,} tokens on both sides; "
          f"medians of {runs}): ours cold (--no-cache) {best_ours:.2f}s, first report into an empty cache "
          f"{first:.2f}s, warm (stored report) {warm:.2f}s; ccusage {best_cc:.2f}s")
    emit("report", f"cold CLI (--no-cache), {mb:.0f} MB Claude", best_ours, "s", "ccusage 20 daily, same files",
         best_cc, goal="ratio <= 1.0", runs=runs)
    emit("report", f"cold CLI (--no-cache), {mb:.0f} MB Claude, CPU seconds", statistics.median(cpu_ours),
         "CPU s", "ccusage 20 daily, same files", statistics.median(cpu_cc),
         note="user + system, workers included", runs=runs)
    emit("report", f"first report into an empty cache (the workers write the parts), {mb:.0f} MB Claude", first,
         "s", "ccusage 20 daily, same files", best_cc, runs=runs)
    emit("report", f"first report into an empty cache, {mb:.0f} MB Claude, CPU seconds",
         statistics.median(first_cpu), "CPU s", "ccusage 20 daily, same files", statistics.median(cpu_cc),
         note="user + system, workers included", runs=runs)
    emit("report", f"then other options (--by month) over those parts (polars, snapshot written), {mb:.0f} MB Claude",
         statistics.median(other_ours), "s", "ccusage 20 daily, same files", best_cc, runs=runs)
    # Not like with like: ccusage has no stored result and computes every time; this row says what a
    # second report of an unchanged archive costs a user of each tool.
    emit("report", f"warm CLI, {mb:.0f} MB Claude: stored report replayed (ccusage recomputes, has no cache)",
         warm, "s", "ccusage 20 daily, same files", best_cc, runs=runs)
    if not start_up:
        return
    small = FIXTURE.parent
    one_project = work / "one-project"
    shutil.copytree(small, one_project / "projects" / small.name)
    one_env = dict(env, CLAUDE_CONFIG_DIR=str(one_project))
    mine = ours[:4] + [str(one_project)]
    _wall(mine, one_env)  # warm: its usage cached and its report stored
    emit("report", "start-up: report on one project folder (warm)", statistics.median(
        _wall(mine, one_env) for _ in range(runs)), "s", "ccusage 20 daily, same folder",
         statistics.median(_wall(theirs, one_env) for _ in range(runs)), runs=runs)


def _empty_usage_cache(xdg: Path) -> None:
    """Remove the usage cache (parts, snapshot, stored reports) but keep the price map's index, which every
    command keeps whatever the usage cache holds (as the bytecode caches are kept): "an empty cache" is
    the first report of an archive, not the first command after installing litellm."""
    for entry in (xdg / "batchcompact").glob("*"):
        if entry.name.startswith("price-map-index-"):
            continue
        if entry.is_dir():
            shutil.rmtree(entry)
        else:
            entry.unlink()


def many_files(work: Path, count: int, runs: int) -> None:
    """Warm CLI over `count` files (links to one Claude fixture in 100 project folders): the stored report
    against the full path with every part cached (the stored report removed before each such run)."""
    import os

    root = work / "many"
    for n in range(count):
        path = root / "projects" / f"-proj-{n % 100}" / f"{uuid.UUID(int=n + 1)}.jsonl"
        path.parent.mkdir(parents=True, exist_ok=True)
        try:
            os.link(FIXTURE, path)
        except OSError:
            shutil.copyfile(FIXTURE, path)
    xdg = work / "xdg-many"
    env = user_env(dict(os.environ, XDG_CACHE_HOME=str(xdg)))
    ours = [sys.executable, "-m", "batchcompact", "report", str(root), "--format", "json", "--cache-above", "0"]
    cold = _wall(ours, env)  # parses every file, stores the parts, the snapshot and the result
    warm = statistics.median(_wall(ours, env) for _ in range(runs))
    full = []
    for _ in range(runs):
        _forget_results(xdg)
        full.append(_wall(ours, env))
    full_s = statistics.median(full)
    print(f"{count} files: cold {cold:.2f}s, warm (stored report) {warm:.2f}s, full path on cached parts "
          f"{full_s:.2f}s (medians of {runs})")
    emit("report", f"warm CLI, {count} files", warm, "s", "full path, parts cached", full_s, goal="value <= 0.2",
         runs=runs)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--total", default="60MB", help="archive size to generate (default 60MB)")
    parser.add_argument("--dir", help="corpus folder (kept; generated if empty)")
    parser.add_argument("--jobs", type=int, default=None, help="extraction processes (default: CPUs, max 8)")
    parser.add_argument("--skip-bare-json", action="store_true", help="skip the json.loads baseline")
    parser.add_argument("--quick", action="store_true", help="a 30 MB archive, no many-files figure")
    parser.add_argument("--many", type=int, default=10_000, help="files for the warm many-files figure")
    parser.add_argument("--runs", type=int, default=3, help="timed runs per figure (the median counts)")
    parser.add_argument("--versus", help="Claude archive sizes for the side by side with ccusage "
                        "(default 300MB,1GB; --quick 30MB)")
    args = parser.parse_args()
    if args.quick and args.total == "60MB":
        args.total = "30MB"

    from batchcompact.report import ReportSettings, build_report, collect_usage

    work = Path(tempfile.mkdtemp(prefix="bc-bench-"))
    corpus = Path(args.dir) if args.dir else work / "corpus"
    try:
        if not corpus.exists() or not any(corpus.iterdir()):
            corpus.mkdir(parents=True, exist_ok=True)
            t = time.perf_counter()
            generate(corpus, parse_size(args.total))
            print(f"generated corpus in {time.perf_counter() - t:.1f}s", file=sys.stderr)
        colds, warms, collects = [], [], []
        for n in range(args.runs):
            cache = work / f"cache-{n}"
            for samples in (colds, warms):  # first into an empty cache, then from it
                t = time.perf_counter()
                collected = collect_usage([corpus], cache_dir=cache, jobs=args.jobs)
                t_collect = time.perf_counter() - t
                report = build_report(collected.parts, ReportSettings(by="day"))
                samples.append(time.perf_counter() - t)
                if samples is colds:
                    collects.append(t_collect)
                    cold_collected = collected
                else:
                    warm = collected
            shutil.rmtree(cache)
        cold_s, warm_s, cold_collect = (statistics.median(x) for x in (colds, warms, collects))
        collected = cold_collected
        if collected.extracted != collected.files or warm.extracted:
            raise BenchFailure(f"bench: cold parsed {collected.extracted} of {collected.files} files, warm "
                               f"{warm.extracted}: the cold/warm figures would not measure what they say")
        mb = collected.bytes / 1e6
        print(f"archive: {collected.files} files, {mb:,.1f} MB, {report.totals['requests']:,} requests")
        print(
            f"cold: {cold_s:.2f}s  ({mb / cold_s:,.1f} MB/s; extraction {cold_collect:.2f}s, "
            f"{collected.extracted} files parsed; medians of {args.runs})"
        )
        print(f"warm: {warm_s:.2f}s  ({warm.cached} files from cache, {warm.extracted} parsed)")
        self_rss = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
        child_rss = resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss / 1024
        print(f"peak RSS: {self_rss:,.0f} MB main process, {child_rss:,.0f} MB largest worker")
        bare = None
        if not args.skip_bare_json:
            bare = statistics.median(bare_json_seconds(corpus) for _ in range(args.runs))
            print(f"baseline: json.loads of every line, 1 process: {bare:.2f}s ({mb / bare:,.1f} MB/s)")
        emit("report", "cold, library (empty cache)", mb / cold_s, "MB/s", "json.loads, 1 process",
             mb / bare if bare else None, runs=args.runs)
        emit("report", "warm, library (cached parts)", warm_s, "s", "cold", cold_s, runs=args.runs)
        emit("report", "peak RSS, main process", self_rss, "MB")
        sizes = args.versus.split(",") if args.versus else ["30MB" if args.quick else "300MB", "1GB"][: 1 if args.quick else 2]
        for number, size in enumerate(sizes):  # the goal's sizes: 300 MB and 1 GB (the quick run: 30 MB)
            versus_ccusage(work, parse_size(size), max(args.runs, 5), start_up=number == 0)
        versus_ccusage_codex(work, parse_size(sizes[0]), max(args.runs, 5))
        if not args.quick and args.many:
            many_files(work, args.many, args.runs)
    finally:
        shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    main()
    sys.exit(finish())
