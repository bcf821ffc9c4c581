"""The built-in summarizer on one huge session: time and memory next to planning the same session.

    python bench/bench_builtin.py [--entries 200000] [--quick]

Writes one pi session of many small entries (200k entries, about 67 MB: the shape a user reported as
taking minutes before the summarizer became linear), plans it with --force, then summarizes the history
call. The baseline is planning the same session in the same process; a second, 10x smaller session gives
the scaling figure (time per message at 10x the input over 1x: 1.0 when linear; goal <= 1.25). Times
are medians of --runs runs, in CPU seconds of this process.
"""

from __future__ import annotations

import argparse
import resource
import statistics
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
from batchcompact.agents import file_tools
from batchcompact.core.calls import HISTORY  # noqa: E402
from batchcompact.core.planner import CompactionSettings, prepare_compaction  # noqa: E402
from batchcompact.formats.detect import read_session  # noqa: E402
from batchcompact.summarize.builtin import summarize_offline  # noqa: E402
from bench.figures import emit  # noqa: E402


def write_many_entries(path: Path, entries: int) -> tuple[Path, int]:
    """A valid pi v3 session of `entries` short entries: user, tool call, result, answer, repeated."""
    import json

    def line(obj: dict) -> str:
        return json.dumps(obj, separators=(",", ":")) + "\n"

    parent = None
    with path.open("w", encoding="utf-8") as out:
        out.write(
            line(
                {
                    "type": "session",
                    "version": 3,
                    "id": "bench",
                    "timestamp": "2026-01-01T00:00:00.000Z",
                    "cwd": "/w",
                }
            )
        )
        for i in range(entries):
            turn, step = divmod(i, 4)
            if step == 0:
                message = {
                    "role": "user",
                    "content": f"Step {turn}: update module m{turn % 997} and keep the API stable.",
                    "timestamp": 1,
                }
            elif step == 1:
                call = [
                    {
                        "type": "toolCall",
                        "id": f"c{turn}",
                        "name": "edit" if turn % 3 else "bash",
                        "arguments": {
                            "path": f"src/m{turn % 997}.py",
                            "oldText": "a = 1",
                            "newText": f"a = {turn}",
                        }
                        if turn % 3
                        else {"command": f"pytest -q tests/test_m{turn % 997}.py"},
                    }
                ]
                message = {
                    "role": "assistant",
                    "content": call,
                    "stopReason": "toolUse",
                    "timestamp": 2,
                    "api": "anthropic-messages",
                    "provider": "anthropic",
                    "model": "claude-sonnet-4-5",
                }
            elif step == 2:
                message = {
                    "role": "toolResult",
                    "toolCallId": f"c{turn}",
                    "toolName": "edit" if turn % 3 else "bash",
                    "content": [
                        {
                            "type": "text",
                            "text": "ok" if turn % 7 else "1 failed\n\nCommand exited with code 1",
                        }
                    ],
                    "isError": not turn % 7 and not turn % 3 == 0,
                    "timestamp": 3,
                }
            else:
                message = {
                    "role": "assistant",
                    "content": [{"type": "text", "text": f"Done with step {turn} because the tests pass."}],
                    "stopReason": "stop",
                    "timestamp": 4,
                    "api": "anthropic-messages",
                    "provider": "anthropic",
                    "model": "claude-sonnet-4-5",
                }
            entry_id = f"{i:08x}"
            out.write(
                line(
                    {
                        "type": "message",
                        "id": entry_id,
                        "parentId": parent,
                        "timestamp": "2026-01-01T00:00:01.000Z",
                        "message": message,
                    }
                )
            )
            parent = entry_id
    return path, path.stat().st_size


def _measure(path: Path) -> tuple[int, float, float, int]:
    """(entries, plan seconds, summarize seconds, messages summarized) for one session file, in CPU time
    of this process (one thread: what the machine's load moves least)."""
    started = time.process_time()
    session = read_session(path)
    plan = prepare_compaction(session.path_entries(), CompactionSettings(force=True), 200_000, file_tools=file_tools())
    planned = time.process_time() - started
    history = next(c for c in plan.calls if c.kind == HISTORY)
    started = time.process_time()
    summarize_offline(history)
    return len(session.entries), planned, time.process_time() - started, len(history.messages)


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--entries", type=int, default=200_000)
    parser.add_argument("--runs", type=int, default=3, help="timed runs per size (the median counts)")
    parser.add_argument("--quick", action="store_true", help="40k entries")
    args = parser.parse_args(argv)
    count = 40_000 if args.quick and args.entries == 200_000 else args.entries
    with tempfile.TemporaryDirectory() as tmp:
        big, size = write_many_entries(Path(tmp) / "big.jsonl", count)
        small, _ = write_many_entries(Path(tmp) / "small.jsonl", count // 10)
        small_runs = [_measure(small) for _ in range(args.runs)]
        big_runs = [_measure(big) for _ in range(args.runs)]
    small_s, small_messages = statistics.median(r[2] for r in small_runs), small_runs[0][3]
    entries, messages = big_runs[0][0], big_runs[0][3]
    plan_s, summ_s = (statistics.median(r[i] for r in big_runs) for i in (1, 2))
    rss_mb = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    print(
        f"{entries} entries ({size / 1e6:.0f} MB), {messages} messages summarized: "
        f"plan {plan_s:.2f}s, builtin summary {summ_s:.2f}s, peak RSS {rss_mb:.0f} MB"
    )
    emit("builtin", f"summarize {entries // 1000}k entries", summ_s, "s", "plan --force same file", plan_s,
         runs=args.runs)
    per_message = (summ_s / messages) / (small_s / small_messages) if small_messages and small_s else None
    if per_message is not None:
        emit("builtin", "time per message, 10x input", per_message, "x of 1x", note="1.0 = linear",
             goal="value <= 1.25", runs=args.runs)
    emit("builtin", "peak RSS (read + plan + summary)", rss_mb, "MB")


if __name__ == "__main__":
    main()
