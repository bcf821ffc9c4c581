"""Timing helpers every bench script uses: subprocesses whose failure stops the bench, medians of runs.

A command that crashes returns quickly, so an unchecked exit code reads as a fast time: `run_checked`
raises `BenchFailure` (a `SystemExit` with the command, its exit code and the end of its stderr) instead.
Every timed figure is the median of several runs (the machine is shared; a median resists one slow run
better than a mean, and does not flatter like a best-of).
"""

from __future__ import annotations

import os
import resource
import statistics
import subprocess
import time
from collections.abc import Callable, Sequence


class BenchFailure(SystemExit):
    """A timed command failed: the bench stops with this message (exit status 1)."""


def run_checked(command: Sequence[str], *, env: dict[str, str] | None = None, label: str | None = None,
                stdout: int | None = subprocess.DEVNULL) -> subprocess.CompletedProcess:
    """Run `command`; raise `BenchFailure` unless it exits 0."""
    done = subprocess.run(list(command), env=env, stdout=stdout, stderr=subprocess.PIPE)
    if done.returncode != 0:
        tail = [line for line in done.stderr.decode("utf-8", "replace").splitlines() if line.strip()][-3:]
        name = label or " ".join(os.path.basename(part) if i == 0 else part for i, part in enumerate(command))
        raise BenchFailure(f"bench: {name} failed with exit code {done.returncode}; nothing timed. "
                           + (" | ".join(tail) if tail else "(no stderr)"))
    return done


def timed(command: Sequence[str], *, env: dict[str, str] | None = None, label: str | None = None) -> float:
    """Wall seconds of one checked run of `command`."""
    return timed_cpu(command, env=env, label=label)[0]


def timed_cpu(command: Sequence[str], *, env: dict[str, str] | None = None,
              label: str | None = None) -> tuple[float, float]:
    """(wall seconds, CPU seconds: user + system of the command and the workers it waited for) of one
    checked run. CPU time barely moves with the machine's load, wall time does: the two together say
    whether a slow figure is the program or the machine."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    started = time.perf_counter()
    run_checked(command, env=env, label=label)
    wall = time.perf_counter() - started
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    return wall, (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)


def user_env(env: dict[str, str] | None = None) -> dict[str, str]:
    """`env` (default: this process's) as an installed user's interpreter runs: bytecode caches kept.

    Some machines here set PYTHONDONTWRITEBYTECODE, so every start of the CLI would compile our sources
    again (0.07 s of a 0.1 s start-up); a pip install compiles them once at install time. Timed commands
    run with the caches written by an untimed warm-up run, as a user's do."""
    out = dict(os.environ if env is None else env)
    out.pop("PYTHONDONTWRITEBYTECODE", None)
    return out


def median_of(measure: Callable[[], float], runs: int) -> float:
    """The median of `runs` calls of `measure` (each returns seconds)."""
    return statistics.median(measure() for _ in range(runs))


def median_seconds(command: Sequence[str], runs: int, *, env: dict[str, str] | None = None,
                   before: Callable[[], object] | None = None, label: str | None = None) -> float:
    """Median wall seconds of `runs` checked runs of `command`; `before` runs untimed before each."""
    samples = []
    for _ in range(runs):
        if before is not None:
            before()
        samples.append(timed(command, env=env, label=label))
    return statistics.median(samples)
