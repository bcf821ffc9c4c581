"""Report throughput on a generated archive: MB/s cold (empty cache), seconds warm, peak RSS.

    .venv/bin/python bench/bench_report.py                  # ~60 MB, well under a minute
    .venv/bin/python bench/bench_report.py --total 1GB --jobs 4 --dir /tmp/bc-corpus

The corpus comes from `batchcompact.synth` when present (else a tiny local generator that copies the
Claude fixture with fresh ids). For scale it also times a bare `json.loads` of every line (one
process): cold report time close to that, divided by the jobs, means JSON parsing is the limit.
"""

from __future__ import annotations

import argparse
import json
import resource
import shutil
import sys
import tempfile
import time
import uuid
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))
from bench.figures import emit  # noqa: E402

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
        from batchcompact.synth.corpus import write_corpus
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


def _wall(command: list[str], env: dict) -> float:
    import subprocess

    started = time.perf_counter()
    subprocess.run(command, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, check=False)
    return time.perf_counter() - started


def versus_ccusage(work: Path, total: int) -> None:
    """Cold `batchcompact report` next to ccusage 20 on the same Claude archive, both as a user runs them."""
    import os

    binary = find_ccusage()
    if binary is None:
        print("ccusage: skipped (no binary: set CCUSAGE_BIN or run tests/test_ccusage_parity.py once)")
        return
    corpus = work / "claude"
    claude_corpus(corpus, total)
    mb = sum(p.stat().st_size for p in corpus.rglob("*.jsonl")) / 1e6
    for p in corpus.rglob("*.jsonl"):
        p.read_bytes()  # page cache warm for both
    env = dict(os.environ, CLAUDE_CONFIG_DIR=str(corpus), XDG_CACHE_HOME=str(work / "xdg"))
    ours = [sys.executable, "-m", "batchcompact", "report", str(corpus), "--format", "json"]
    best_ours = best_cc = float("inf")
    for _ in range(3):
        shutil.rmtree(work / "xdg", ignore_errors=True)
        best_ours = min(best_ours, _wall(ours, env))
        best_cc = min(best_cc, _wall([binary, "daily", "--offline", "--json"], env))
    warm = _wall(ours, env)
    print(f"ccusage side by side on {mb:.0f} MB of Claude sessions: ours cold {best_ours:.2f}s, "
          f"warm {warm:.2f}s; ccusage {best_cc:.2f}s")
    emit("report", f"cold CLI, {mb:.0f} MB Claude", best_ours, "s", "ccusage 20 daily, same files", best_cc)
    emit("report", f"warm CLI, {mb:.0f} MB Claude", warm, "s", "ccusage 20 daily, same files", best_cc)
    small = FIXTURE.parent
    _wall(ours[:4] + [str(small)], env)  # warm: its usage cached and its report stored
    emit("report", "start-up: report on one project folder (warm)", _wall(ours[:4] + [str(small)], env), "s",
         "ccusage 20 daily, all fixtures", _wall([binary, "daily", "--offline", "--json"],
                                                 dict(env, CLAUDE_CONFIG_DIR=str(small.parent.parent))))


def many_files(work: Path, count: int) -> None:
    """Warm CLI over `count` files (links to one Claude fixture in 100 project folders): the stored report
    against the full path with every part cached (another grouping: a result not stored yet)."""
    import os

    root = work / "many"
    for n in range(count):
        path = root / "projects" / f"-proj-{n % 100}" / f"{uuid.UUID(int=n + 1)}.jsonl"
        path.parent.mkdir(parents=True, exist_ok=True)
        try:
            os.link(FIXTURE, path)
        except OSError:
            shutil.copyfile(FIXTURE, path)
    env = dict(os.environ, XDG_CACHE_HOME=str(work / "xdg-many"))
    ours = [sys.executable, "-m", "batchcompact", "report", str(root), "--format", "json"]
    cold = _wall(ours, env)  # parses every file, stores the parts, the snapshot and the result
    warm = min(_wall(ours, env) for _ in range(3))
    full = _wall(ours + ["--by", "week"], env)
    print(f"{count} files: cold {cold:.2f}s, warm (stored report) {warm:.2f}s, full path on cached parts {full:.2f}s")
    emit("report", f"warm CLI, {count} files", warm, "s", "full path, parts cached", full)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--total", default="60MB", help="archive size to generate (default 60MB)")
    parser.add_argument("--dir", help="corpus folder (kept; generated if empty)")
    parser.add_argument("--jobs", type=int, default=None, help="extraction processes (default: CPUs, max 8)")
    parser.add_argument("--skip-bare-json", action="store_true", help="skip the json.loads baseline")
    parser.add_argument("--quick", action="store_true", help="a 30 MB archive, no many-files figure")
    parser.add_argument("--many", type=int, default=10_000, help="files for the warm many-files figure")
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
        cache = work / "cache"
        results = {}
        for label in ("cold", "warm"):
            t = time.perf_counter()
            collected = collect_usage([corpus], cache_dir=cache, jobs=args.jobs)
            t_collect = time.perf_counter() - t
            report = build_report(collected.parts, ReportSettings(by="day"))
            results[label] = (time.perf_counter() - t, t_collect, collected, report)
        cold_s, cold_collect, collected, report = results["cold"]
        warm_s, _, warm, _ = results["warm"]
        mb = collected.bytes / 1e6
        print(f"archive: {collected.files} files, {mb:,.1f} MB, {report.totals['requests']:,} requests")
        print(
            f"cold: {cold_s:.2f}s  ({mb / cold_s:,.1f} MB/s; extraction {cold_collect:.2f}s, "
            f"{collected.extracted} files parsed)"
        )
        print(f"warm: {warm_s:.2f}s  ({warm.cached} files from cache, {warm.extracted} parsed)")
        self_rss = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
        child_rss = resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss / 1024
        print(f"peak RSS: {self_rss:,.0f} MB main process, {child_rss:,.0f} MB largest worker")
        bare = None
        if not args.skip_bare_json:
            bare = bare_json_seconds(corpus)
            print(f"baseline: json.loads of every line, 1 process: {bare:.2f}s ({mb / bare:,.1f} MB/s)")
        emit("report", "cold (empty cache)", mb / cold_s, "MB/s", "json.loads, 1 process",
             mb / bare if bare else None)
        emit("report", "warm (cache)", warm_s, "s", "cold", cold_s)
        emit("report", "peak RSS, main process", self_rss, "MB")
        versus_ccusage(work, parse_size(args.total))
        if not args.quick and args.many:
            many_files(work, args.many)
    finally:
        shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    main()
