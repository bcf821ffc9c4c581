"""Start-up: the CLI on small inputs, next to a bare interpreter start in the same run.

    python bench/bench_startup.py

Each command is run five times as a user runs it (a new process, warm page cache, warm caches: the
second `plan` of the same file finds its token counts in the cache); the best time counts. Aim: plan
and report within 0.15 s on small inputs.
"""

from __future__ import annotations

import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))
from bench.figures import emit  # noqa: E402

SMALL_PI = REPO / "sample_sessions" / "pi" / "small-fix.jsonl"
CLAUDE_FOLDER = REPO.parent / "shared" / "fixtures" / "claude" / "projects" / "-home-USER-projects-spotter"


def best(command: list[str], env: dict[str, str], runs: int = 5) -> float:
    fastest = float("inf")
    for _ in range(runs):
        started = time.perf_counter()
        subprocess.run(command, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, check=False)
        fastest = min(fastest, time.perf_counter() - started)
    return fastest


def main() -> None:
    with tempfile.TemporaryDirectory() as tmp:
        env = dict(os.environ, XDG_CACHE_HOME=tmp)
        env.pop("PYTHONDONTWRITEBYTECODE", None)  # users' interpreters keep their bytecode caches
        bc = [sys.executable, "-m", "batchcompact"]
        bare = best([sys.executable, "-c", "pass"], env)
        rows = [("--help", bc + ["--help"]), ("plan, one small pi session", bc + ["plan", str(SMALL_PI)])]
        if CLAUDE_FOLDER.is_dir():
            rows.append(("report, one Claude project (warm cache)", bc + ["report", str(CLAUDE_FOLDER)]))
        for label, command in rows:
            subprocess.run(command, env=env, capture_output=True, check=False)  # warm every cache once
            seconds = best(command, env)
            print(f"{label}: {seconds:.3f} s (python -c pass: {bare:.3f} s)")
            emit("startup", label, seconds, "s", "python -c pass", bare)


if __name__ == "__main__":
    main()
