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


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--total", default="60MB", help="archive size to generate (default 60MB)")
    parser.add_argument("--dir", help="corpus folder (kept; generated if empty)")
    parser.add_argument("--jobs", type=int, default=None, help="extraction processes (default: CPUs, max 8)")
    parser.add_argument("--skip-bare-json", action="store_true", help="skip the json.loads baseline")
    parser.add_argument("--quick", action="store_true", help="a 30 MB archive")
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
    finally:
        shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    main()
