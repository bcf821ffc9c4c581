"""Crash safety of `batchcompact run`: SIGKILL it at random moments, many times, and check the invariants.

`python -m batchcompact run` runs as a subprocess over a folder of sessions against the loopback test
server (slow answers, each with a unique text). It is killed at seeded random moments: at random times,
while a summary call is in flight, as soon as a file appears in the output folder (the temp file of a
write), and once some answers are stored in the run state while the other calls are held ("paid": this
also fails when answers are never stored). After each kill: every original is byte-identical, every
output is absent or complete (original bytes + one compaction entry whose usage is the summaries' real
usage) and valid, and a scan of the output folder finds nothing but complete outputs. A final
uninterrupted run must finish everything and leave no temp file, and no summary whose answer had reached
the run state was ever requested again (answers are unique, so the state tells which were stored).

By default the summaries come from `LoopbackSummarizer` below (`--summarizer`): it posts to the server
with the stdlib, so a run starts in about a second instead of paying litellm's import on every start.
Set BATCHCOMPACT_CRASH_LITELLM=1 to drive the litellm summarizer instead (slower; same checks).
"""

from __future__ import annotations

import asyncio
import hashlib
import http.client
import json
import os
import random
import signal
import sqlite3
import subprocess
import sys
import threading
import time
from pathlib import Path
from urllib.parse import urlparse

import pytest

ENV_BASE = "BATCHCOMPACT_TEST_API_BASE"
TESTS = Path(__file__).resolve().parent
SESSIONS = 10
MIN_KILLS = 16
LITELLM = bool(os.environ.get("BATCHCOMPACT_CRASH_LITELLM"))
# stop killing after this (a round always ends with a clean rerun); litellm's import makes each start slow
TIME_BUDGET_S = 240.0 if LITELLM else 90.0


class LoopbackSummarizer:
    """A minimal OpenAI-compatible client (stdlib only) for the subprocess: one attempt per call."""

    name = "loopback"
    remote = True

    async def summarize(self, call):
        return await asyncio.to_thread(self._post, call)

    def _post(self, call):
        from batchcompact.summarize.base import RetryableError, SessionFatalError, SummaryResult

        base = urlparse(os.environ[ENV_BASE])
        body = {"model": "loopback", "max_tokens": call.max_tokens,
                "messages": [{"role": "system", "content": call.system_prompt},
                             {"role": "user", "content": call.user_prompt}]}
        connection = http.client.HTTPConnection(base.hostname, base.port, timeout=60)
        try:
            connection.request("POST", base.path + "/chat/completions", json.dumps(body),
                               {"Content-Type": "application/json"})
            response = connection.getresponse()
            data = json.loads(response.read() or b"{}")
        except (OSError, ValueError) as exc:
            raise RetryableError(f"loopback: {exc}") from None
        finally:
            connection.close()
        if response.status == 429 or response.status >= 500:
            raise RetryableError(f"loopback: HTTP {response.status}", status_code=response.status)
        if response.status != 200:
            raise SessionFatalError(f"loopback: HTTP {response.status}", status_code=response.status)
        usage = data.get("usage", {})
        return SummaryResult(text=data["choices"][0]["message"]["content"], model="loopback",
                             prompt_tokens=usage.get("prompt_tokens", 0),
                             completion_tokens=usage.get("completion_tokens", 0), cost_usd=0.0)


def sha256(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def persisted_texts(state: Path) -> set[str]:
    """Summary texts the run state holds (each was paid for and must never be bought again)."""
    if not state.exists():
        return set()
    db = sqlite3.connect(state)
    try:
        return {json.loads(row[0])["text"] for row in db.execute("SELECT result FROM summaries")}
    except sqlite3.OperationalError:  # killed before the schema was created
        return set()
    finally:
        db.close()


def validate(paths: list[Path]) -> None:
    from click.testing import CliRunner

    from batchcompact.cli import cli

    if paths:
        result = CliRunner().invoke(cli, ["validate", *map(str, paths)], standalone_mode=False)
        assert result.exception is None and result.return_value == 0, result.output


def check_after_kill(originals: dict[Path, tuple[str, bytes]], out: Path) -> int:
    """The invariants after a kill; returns the number of complete outputs."""
    from batchcompact.formats.scan import iter_session_files

    for path, (digest, _) in originals.items():
        assert sha256(path) == digest, f"original {path} was modified"
    expected = {out / "project" / path.name: content for path, (_, content) in originals.items()}
    complete = []
    for path in (out / "project").glob("*.jsonl") if (out / "project").exists() else ():
        content = path.read_bytes()
        old = expected[path]  # no output under a name that is not a session's
        assert content.startswith(old) and content.endswith(b"\n"), f"{path} is not the original + new lines"
        added = content[len(old):].splitlines()
        assert len(added) == 1 and json.loads(added[0])["type"] == "compaction", f"{path} is incomplete"
        usage = json.loads(added[0])["usage"]  # what its summaries cost, even when bought by a killed run
        assert usage["input"] >= 100 and usage["output"] >= 20, f"{path}: usage {usage}"
        complete.append(path)
    validate(complete)
    found = {item.path for item in iter_session_files([out])} if out.exists() else set()  # killed before it began
    assert found == set(complete), f"a scan of the output folder finds more than complete outputs: {found}"
    return len(complete)


def wait_for(predicate, proc: subprocess.Popen, timeout: float, every: float = 0.0005) -> bool:
    """Poll `predicate` (tight by default: a write lasts milliseconds) until it holds, the process ends, or timeout."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline and proc.poll() is None:
        if predicate():
            return True
        time.sleep(every)
    return False


def names_in(folder: Path) -> set[str]:
    try:
        return set(os.listdir(folder))
    except FileNotFoundError:
        return set()


@pytest.mark.slow
def test_sigkill_at_random_moments_never_corrupts_and_never_pays_twice(tmp_path, llm_server):
    from llm_server import Answer
    from run_cli import write_session

    rng = random.Random(20261122)
    names = [f"s{i:02d}" for i in range(SESSIONS)]
    inputs = tmp_path / "in"
    for i, name in enumerate(names):
        write_session(inputs / "project" / f"{name}.jsonl", name, turns=24 + i, chars=6000)
    originals = {p: (sha256(p), p.read_bytes()) for p in sorted((inputs / "project").glob("*.jsonl"))}

    answer_no = iter(range(1, 1_000_000))
    delays = random.Random(7)
    lock = threading.Lock()
    issued: dict[str, list[str]] = {}  # prompt hash -> the answer texts sent for it, in order (this round)

    hold: dict = {"limit": None, "texts": []}  # "paid" mode: answer `limit` requests, hold the rest
    release = threading.Event()

    def behaviour(body):
        prompt = hashlib.sha256(json.dumps(body["messages"]).encode()).hexdigest()
        with lock:
            text = f"## Goal\nsummary #{next(answer_no)}"
            issued.setdefault(prompt, []).append(text)
            delay = delays.uniform(0.05, 0.4)
            held = hold["limit"] is not None and len(hold["texts"]) >= hold["limit"]
            if hold["limit"] is not None and not held:
                hold["texts"].append(text)
        if held:
            release.wait(60)  # until the run is killed; the answer then goes nowhere
        return Answer(text=text, delay=0 if held else delay)

    llm_server.default = behaviour
    env = {**os.environ, ENV_BASE: llm_server.api_base, "PYTHONPATH": str(TESTS)}
    env.pop("BATCHCOMPACT_MODEL", None)
    if LITELLM:
        summarizer = ["--model", "openai/gpt-4o-mini", "--api-base", llm_server.api_base, "--api-key", "sk-test"]
    else:
        summarizer = ["--summarizer", "test_run_crash:LoopbackSummarizer"]

    started = time.monotonic()
    kills = write_kills = rounds = resent = 0
    while kills < MIN_KILLS and time.monotonic() - started < TIME_BUDGET_S:
        rounds += 1
        out = tmp_path / f"out{rounds}"
        command = [sys.executable, "-m", "batchcompact", "-q", "run", str(inputs), "--output-dir", str(out), "--min-age", "0",
                   "--jobs", "1", "--force", "--keep-recent-tokens", "3000", "--concurrency", "3", "--format", "json",
                   *summarizer]
        while kills < MIN_KILLS and time.monotonic() - started < TIME_BUDGET_S:
            proc = subprocess.Popen(command, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
            mode = rng.choice(["time", "time", "call", "write", "write", "paid"])
            state = out / ".batchcompact" / "state.sqlite"
            if mode == "paid":  # kill once answers are surely paid for and stored, while others are held
                with lock:
                    hold.update(limit=rng.randint(1, 3), texts=[])
                    release.clear()
                triggered = wait_for(lambda: len(hold["texts"]) == hold["limit"], proc, 30, 0.01)
                if triggered:
                    stored = wait_for(lambda state=state: set(hold["texts"]) <= persisted_texts(state), proc, 30, 0.02)
                    assert stored or proc.poll() is not None, "answered summaries never reached the run state"
                time.sleep(rng.uniform(0, 0.05))
            elif mode == "time":
                triggered = wait_for(lambda: False, proc, rng.uniform(0.2, 3.0)) or proc.poll() is None
            elif mode == "call":
                seen = len(llm_server.requests)
                triggered = wait_for(lambda seen=seen: len(llm_server.requests) > seen, proc, 15)
                time.sleep(rng.uniform(0, 0.3))
            else:  # as soon as a file appears in the output folder: a temp file while it is written
                before = names_in(out / "project")
                triggered = wait_for(lambda out=out, before=before: names_in(out / "project") - before, proc, 15)
                time.sleep(rng.uniform(0, 0.003))
            if proc.poll() is not None:  # it finished this round before the kill
                with lock:
                    hold.update(limit=None, texts=[])
                release.set()
                assert proc.returncode == 0, proc.stderr.read().decode()
                proc.stderr.close()
                break
            proc.send_signal(signal.SIGKILL)
            proc.wait()
            with lock:
                hold.update(limit=None, texts=[])
            release.set()
            proc.stderr.close()
            kills += 1
            write_kills += mode == "write" and bool(triggered)
            check_after_kill(originals, out)

        # the final uninterrupted run finishes everything
        final = subprocess.run(command, env=env, capture_output=True, text=True, timeout=120)
        assert final.returncode == 0, final.stderr
        rows = json.loads(final.stdout)["rows"]
        assert len(rows) == SESSIONS
        for row in rows:
            assert row["status"] == "compacted" or row["reason"].startswith("finished in an earlier run"), row
        assert check_after_kill(originals, out) == SESSIONS
        assert not [n for n in names_in(out / "project") if ".batchcompact-" in n], "temp files left behind"

        # no summary that reached the state was ever requested again
        persisted = persisted_texts(out / ".batchcompact" / "state.sqlite")
        with lock:
            for texts in issued.values():
                resent += len(texts) - 1
                repeated = [t for t in texts[:-1] if t in persisted]
                assert not repeated, f"a summary already paid for and stored was requested again: {repeated}"
            issued.clear()

    print(f"{rounds} rounds, {kills} kills ({write_kills} while writing), {len(llm_server.requests)} requests, "
          f"{resent} re-sent after a kill before their answer was stored")
    assert kills >= MIN_KILLS, f"only {kills} kills in {TIME_BUDGET_S}s"
    assert write_kills >= 1, "no kill landed while an output was being written"
