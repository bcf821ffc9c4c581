"""Cold reports of the other agents' transcripts next to ccusage 20 (issue 28: "no slower than ccusage on
the other agents' readers"): Gemini CLI and Qwen Code, the two other agents batchcompact also compacts.

    .venv/bin/python bench/bench_agents.py [--total 100MB] [--runs 5] [--agents gemini,qwen]

The corpus is made from the sessions recorded with each agent's own CLI (tests/data/recorded): each
file holds a long-tailed number of copies of a recorded session (1 to 24, one after the other, each copy
with fresh message ids, as a resumed chat appends them), one session id and
one day per file, laid out where the agent keeps them under a fresh HOME. Both tools read that HOME: ours
`report --agent A --no-cache`, theirs `ccusage A daily --offline`, each as a user runs it.

Before anything is timed the bench checks both tools read the same thing: for Gemini the same total
tokens; for Qwen Code, whose counts differ by rule (batchcompact/adapters/qwen/README.md: ccusage 20 reads only the assistant
records and counts their cached and thought tokens twice), both list every session the corpus holds.
"""

from __future__ import annotations

import argparse
import datetime
import json
import os
import random
import re
import shutil
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))
from bench.bench_report import NO_CCUSAGE, _total_tokens, cold_side_by_side, find_ccusage, parse_size  # noqa: E402
from bench.figures import emit, finish, not_measured  # noqa: E402
from bench.timing import BenchFailure, run_checked, user_env  # noqa: E402

RECORDED = REPO / "tests" / "data" / "recorded"
AGENTS = ("gemini", "qwen")
SEEDS = {"gemini": RECORDED / "gemini-cli", "qwen": RECORDED / "qwen-code"}
# The ids a copy of the records renames (a resumed session's new messages have their own ids).
ID_KEYS = {"gemini": (b'"id":"',), "qwen": (b'"uuid":"', b'"parentUuid":"', b'"response_id":"')}
RECORDED_DAY = b"2026-11-23T"


def session_copies(rng: random.Random) -> int:
    """How many copies of its recorded session a file holds: long-tailed, 1 to 24 (57% one, mean 3, 6% ten or more)."""
    return min(24, max(1, int(rng.paretovariate(1.2))))


def agent_corpus(agent: str, home: Path, total: int, seed: int = 1) -> int:
    """Write about `total` bytes of `agent` sessions under `home`; returns the number of files."""
    seeds = [path.read_bytes() for path in sorted(SEEDS[agent].glob("session-*.jsonl"))]
    if not seeds:
        raise BenchFailure(f"bench: no recorded {agent} session under {SEEDS[agent]}")
    rng = random.Random(seed)
    written = n = 0
    while written < total:
        data = seeds[n % len(seeds)]
        old = re.search(rb'"sessionId":"([^"]+)"', data).group(1)
        session = f"{n:08d}-{old.decode()[9:]}".encode()
        day = (datetime.date(2025, 1, 1) + datetime.timedelta(days=n % 300)).isoformat()
        parts = []
        for copy in range(session_copies(rng)):
            text = data.replace(old, session).replace(RECORDED_DAY, day.encode() + b"T")
            for key in ID_KEYS[agent]:
                text = text.replace(key, key + f"s{n}c{copy}-".encode())
            parts.append(text)
        text = b"".join(parts)
        if agent == "gemini":
            path = home / ".gemini" / "tmp" / f"project-{n % 40}" / "chats" / f"session-{day}-{n:06d}.jsonl"
        else:
            path = home / ".qwen" / "projects" / f"-work-project-{n % 40}" / "chats" / f"{session.decode()}.jsonl"
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_bytes(text)
        written += len(text)
        n += 1
    return n


def _json(command: list[str], env: dict) -> dict:
    return json.loads(run_checked(command, env=env, stdout=subprocess.PIPE, label=Path(command[0]).name).stdout)


def check_same_work(agent: str, ours: list[str], theirs: list[str], env: dict, files: int) -> str:
    """Raise BenchFailure unless both tools read the whole corpus; returns what was checked."""
    if agent == "gemini":
        a, b = _total_tokens(ours, env, ours=True), _total_tokens(theirs, env, ours=False)
        if a != b:
            raise BenchFailure(f"bench: on the same {agent} sessions batchcompact counts {a:,} tokens and "
                               f"ccusage {b:,}: not the same computation, nothing timed")
        return f"{a:,} tokens on both sides"
    a = len(_json([*ours, "--by", "session"], env)["rows"])
    b = len(_json([theirs[0], agent, "session", *theirs[3:]], env)["sessions"])
    if not a == b == files:
        raise BenchFailure(f"bench: of {files} {agent} sessions batchcompact lists {a} and ccusage {b}: "
                           "not the same files read, nothing timed")
    return f"all {files} sessions on both sides (token counts differ by rule)"


def floor_cpu(agent: str, home: Path) -> float:
    """CPU seconds, in this one process, of what any Python reader of these files must do: read every line,
    test it for the reader's markers (its `WANT`; Gemini's reader has none: every line) and `orjson.loads`
    the lines it parses, the objects dropped at once. No Python work per object at all: a floor, not a
    reader."""
    import time

    import orjson

    from batchcompact import agents

    # The agent's usage reader, found through the registry (its module moved once: agents/ -> adapters/).
    usage_module = agents.load(agents.get(agent).usage.partition(":")[0])
    want = getattr(usage_module, "WANT", ())
    loads = orjson.loads
    paths = sorted(home.rglob("*.jsonl"))
    start = time.process_time()
    for path in paths:
        with open(path, "rb", buffering=1 << 20) as handle:
            for raw in handle:
                if not want or any(marker in raw for marker in want):
                    loads(raw)
    return time.process_time() - start


def versus_ccusage_agent(work: Path, agent: str, total: int, runs: int) -> None:
    """Cold `batchcompact report --agent A --no-cache` next to `ccusage A daily` on the same sessions."""
    label = {"gemini": "Gemini CLI", "qwen": "Qwen Code"}[agent]
    binary = find_ccusage()
    if binary is None:
        not_measured("report", f"cold CLI (--no-cache), {total / 1e6:.0f} MB {label}", "s",
                     f"ccusage 20 {agent} daily, same files", "ratio <= 1.0", NO_CCUSAGE)
        return
    home = work / f"home-{agent}"
    shutil.rmtree(home, ignore_errors=True)
    files = agent_corpus(agent, home, total)
    mb = sum(p.stat().st_size for p in home.rglob("*.jsonl")) / 1e6
    env = user_env({"PATH": os.environ.get("PATH", ""), "HOME": str(home), "NO_COLOR": "1",
                    "XDG_CACHE_HOME": str(work / f"xdg-{agent}")})
    ours = [sys.executable, "-m", "batchcompact", "report", "--agent", agent, "--no-cache", "--format", "json",
            "--timezone", "UTC"]
    theirs = [binary, agent, "daily", "--offline", "--json", "--timezone", "UTC"]
    checked = check_same_work(agent, ours, theirs, env, files)  # also the untimed warm-up of both
    ours_s, theirs_s, their_cpu = cold_side_by_side(ours, theirs, env, runs, f"{mb:.0f} MB {label}",
                                         f"ccusage 20 {agent} daily", note=f"{files} sessions")
    floor = statistics.median(floor_cpu(agent, home) for _ in range(runs))
    print(f"ccusage {agent} side by side on {mb:.0f} MB, {files} sessions ({checked}; medians of {runs}): "
          f"ours {ours_s:.2f}s, ccusage {theirs_s:.2f}s")
    emit("report", f"{label}: a Python reader's floor, 1 process (lines read, marker test, orjson of the lines "
         "parsed; no work per object), CPU seconds", floor, "CPU s", f"ccusage 20 {agent} daily, whole command",
         their_cpu, runs=runs)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--total", default="100MB", help="corpus size per agent (default 100MB; --quick 20MB)")
    parser.add_argument("--runs", type=int, default=5)
    parser.add_argument("--agents", default=",".join(AGENTS))
    parser.add_argument("--quick", action="store_true")
    args = parser.parse_args()
    total = parse_size("20MB" if args.quick and args.total == "100MB" else args.total)
    work = Path(tempfile.mkdtemp(prefix="bc-bench-agents-"))
    try:
        for agent in args.agents.split(","):
            versus_ccusage_agent(work, agent, total, args.runs)
    finally:
        shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    main()
    sys.exit(finish())
