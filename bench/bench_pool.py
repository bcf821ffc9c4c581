"""Pool efficiency and litellm's per-call overhead against the loopback test server.

    .venv/bin/python bench/bench_pool.py [--calls 640] [--concurrency 32] [--delay 0.2]

Prints achieved calls/s as a fraction of the ideal concurrency / delay (aim >= 90%), and the mean latency
of one litellm call vs one raw HTTP request to a server that answers at once. Takes well under a minute.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import statistics
import subprocess
import sys
import time
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO / "tests"))
sys.path.insert(0, str(REPO))
from bench.figures import emit  # noqa: E402
from bench.timing import BenchFailure  # noqa: E402

os.environ.setdefault("LITELLM_LOCAL_MODEL_COST_MAP", "True")


from batchcompact.core.calls import HISTORY, SummaryCall  # noqa: E402
from batchcompact.summarize import PoolSettings, SummaryJob, run_jobs  # noqa: E402
from batchcompact.summarize.litellm_import import import_litellm  # noqa: E402
from batchcompact.summarize.litellm_summarizer import LiteLLMSummarizer  # noqa: E402

MODEL = "openai/gpt-4o-mini"


def make_call(i: int) -> SummaryCall:
    return SummaryCall(kind=HISTORY, system_prompt="sys", user_prompt=f"[User]: session {i}", max_tokens=256)


class ServerProcess:
    """The loopback server in its own process, so its threads do not compete with the pool for the GIL."""

    def __init__(self, delay: float):
        self.process = subprocess.Popen(
            [sys.executable, str(REPO / "tests" / "llm_server.py"), str(delay)],
            stdout=subprocess.PIPE,
            text=True,
        )
        self.api_base = self.process.stdout.readline().strip()
        if not self.api_base.startswith("http"):
            self.process.kill()
            raise BenchFailure(f"bench: the loopback server did not start (exit {self.process.wait()})")

    def stop(self) -> None:
        self.process.terminate()
        self.process.wait(timeout=10)


RUNS = 3  # each throughput figure is the median of this many runs


def _all_succeeded(stats, calls: int) -> None:
    """A failed call returns at once: the figure would count it as fast work. Stop instead."""
    done = stats.by_status.get("ok", 0)
    if done != calls:
        raise BenchFailure(f"bench: {done} of {calls} summary jobs succeeded ({dict(stats.by_status)}); nothing timed")


async def pool_efficiency(api_base: str, calls: int, concurrency: int, delay: float) -> None:
    summarizer = LiteLLMSummarizer(MODEL, api_base=api_base, api_key="sk-bench", timeout=30)
    # warm up: connection pool, litellm's lazy imports
    await run_jobs(
        [SummaryJob(f"w{i}", [make_call(i)]) for i in range(concurrency)],
        summarizer,
        PoolSettings(concurrency=concurrency),
    )
    samples = []
    for _ in range(RUNS):
        jobs = (SummaryJob(f"s{i}", [make_call(i)]) for i in range(calls))
        start = time.perf_counter()
        stats = await run_jobs(jobs, summarizer, PoolSettings(concurrency=concurrency))
        samples.append(time.perf_counter() - start)
        _all_succeeded(stats, calls)
    elapsed = statistics.median(samples)
    ideal = concurrency / delay
    achieved = calls / elapsed
    print(f"pool: {calls} calls, concurrency {concurrency}, server delay {delay * 1000:.0f} ms")
    print(f"  {stats.by_status}")
    print(
        f"  {achieved:.1f} calls/s of ideal {ideal:.1f} -> efficiency {achieved / ideal:.1%} in {elapsed:.2f}s"
    )
    emit("pool", f"litellm, concurrency {concurrency}, {delay * 1000:.0f} ms", achieved, "calls/s",
         "concurrency / latency", ideal, runs=RUNS, goal="ratio >= 0.9" if delay >= 1 else None)


class SleepSummarizer:
    """No HTTP at all: the pool's own overhead at the same concurrency and delay."""

    name = "sleep"
    remote = False

    def __init__(self, delay: float):
        self.delay = delay

    async def summarize(self, call: SummaryCall):
        from batchcompact.summarize import SummaryResult

        await asyncio.sleep(self.delay)
        return SummaryResult(text="## Goal\nx", model="sleep", prompt_tokens=10, completion_tokens=5)


async def pool_only(calls: int, concurrency: int, delay: float) -> None:
    samples = []
    for _ in range(RUNS):
        jobs = (SummaryJob(f"s{i}", [make_call(i)]) for i in range(calls))
        start = time.perf_counter()
        stats = await run_jobs(jobs, SleepSummarizer(delay), PoolSettings(concurrency=concurrency))
        samples.append(time.perf_counter() - start)
        _all_succeeded(stats, calls)
    elapsed = statistics.median(samples)
    ideal = concurrency / delay
    print(
        f"pool alone (no HTTP): {calls / elapsed:.1f} calls/s of ideal {ideal:.1f} "
        f"-> efficiency {calls / elapsed / ideal:.1%}"
    )
    emit("pool", "pool alone (no HTTP)", calls / elapsed, "calls/s", "concurrency / latency", ideal, runs=RUNS,
         goal="ratio >= 0.9")


async def overhead(api_base: str, n: int) -> None:
    import httpx

    summarizer = LiteLLMSummarizer(MODEL, api_base=api_base, api_key="sk-bench", timeout=30)
    call = make_call(0)
    body = json.dumps(
        {
            "model": "gpt-4o-mini",
            "max_tokens": 256,
            "messages": [{"role": "system", "content": "sys"}, {"role": "user", "content": "x"}],
        }
    )
    async with httpx.AsyncClient() as client:
        for _ in range(5):
            await client.post(
                f"{api_base}/chat/completions",
                content=body,
                headers={"Authorization": "Bearer sk-bench", "Content-Type": "application/json"},
            )
            await summarizer.summarize(call)
        raws = []
        for _ in range(n):
            start = time.perf_counter()
            response = await client.post(
                f"{api_base}/chat/completions",
                content=body,
                headers={"Authorization": "Bearer sk-bench", "Content-Type": "application/json"},
            )
            response.raise_for_status()
            json.loads(response.content)
            raws.append(time.perf_counter() - start)
    vias = []
    for _ in range(n):
        start = time.perf_counter()
        await summarizer.summarize(call)  # raises on any failure: a failed call is never timed
        vias.append(time.perf_counter() - start)
    raw, via = statistics.median(raws), statistics.median(vias)
    print(
        f"overhead: raw httpx {raw * 1000:.2f} ms/call, litellm {via * 1000:.2f} ms/call "
        f"-> litellm adds {(via - raw) * 1000:.2f} ms per call (sequential; medians of {n} calls)"
    )
    emit("pool", "litellm per-call latency", via * 1000, "ms", "raw httpx request", raw * 1000, runs=n)


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--calls", type=int, default=640)
    parser.add_argument("--concurrency", type=int, default=32)
    parser.add_argument("--delay", type=float, default=0.2)
    parser.add_argument("--overhead-calls", type=int, default=200)
    parser.add_argument("--quick", action="store_true", help="fewer calls")
    args = parser.parse_args()
    if args.quick:
        args.calls, args.overhead_calls = min(args.calls, 320), min(args.overhead_calls, 100)
    start = time.perf_counter()
    import_litellm()
    print(f"import litellm: {time.perf_counter() - start:.2f}s")
    asyncio.run(pool_only(args.calls, args.concurrency, args.delay))
    slow, fast = ServerProcess(args.delay), ServerProcess(0.0)
    try:
        asyncio.run(pool_efficiency(slow.api_base, args.calls, args.concurrency, args.delay))
        # A realistic summary latency (1 s and more): litellm's per-call CPU is then far from the limit.
        realistic = ServerProcess(1.0)
        try:
            asyncio.run(pool_efficiency(realistic.api_base, 4 * args.concurrency, args.concurrency, 1.0))
        finally:
            realistic.stop()
        asyncio.run(overhead(fast.api_base, args.overhead_calls))
    finally:
        slow.stop()
        fast.stop()


if __name__ == "__main__":
    main()
