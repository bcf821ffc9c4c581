"""Start-up: the CLI on small inputs, next to a bare interpreter start in the same run.

    python bench/bench_startup.py

Each command is run five times as a user runs it (a new process, warm page cache, warm caches: the
second `plan` of the same file finds its token counts in the cache); the median time counts, and a
command that fails stops the bench. Aim: plan and report within 0.15 s on small inputs.
"""

from __future__ import annotations

import os
import sys
import tempfile
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))
from bench.figures import emit  # noqa: E402
from bench.timing import median_seconds, run_checked, user_env  # noqa: E402

SMALL_PI = REPO / "sample_sessions" / "pi" / "small-fix.jsonl"
CLAUDE_FOLDER = REPO.parent / "shared" / "fixtures" / "claude" / "projects" / "-home-USER-projects-spotter"


RUNS = 5
GOALS = {"plan, one small pi session": "value <= 0.15", "report, one Claude project (warm cache)": "value <= 0.15"}


def main() -> None:
    with tempfile.TemporaryDirectory() as tmp:
        env = user_env(dict(os.environ, XDG_CACHE_HOME=tmp))  # bytecode caches kept, as a user's
        bc = [sys.executable, "-m", "batchcompact"]
        bare = median_seconds([sys.executable, "-c", "pass"], RUNS, env=env)
        rows = [("--help", bc + ["--help"]), ("plan, one small pi session", bc + ["plan", str(SMALL_PI)])]
        if CLAUDE_FOLDER.is_dir():
            rows.append(("report, one Claude project (warm cache)", bc + ["report", str(CLAUDE_FOLDER)]))
        for label, command in rows:
            run_checked(command, env=env, label=label)  # warm every cache once
            seconds = median_seconds(command, RUNS, env=env, label=label)
            print(f"{label}: {seconds:.3f} s (python -c pass: {bare:.3f} s; medians of {RUNS})")
            emit("startup", label, seconds, "s", "python -c pass", bare, goal=GOALS.get(label), runs=RUNS)


if __name__ == "__main__":
    main()
