"""The real OpenCode (npm opencode-ai 1.18.33) and Kilo (@kilocode/cli 7.7.7, its fork with the same
storage and loader) resume a session compacted by `batchcompact run`.

In a sandbox HOME the real CLI records a session against a loopback fake OpenAI-compatible API that makes
tool calls (read, write, edit, bash; then, continued, read and bash; then a plain answer).
`batchcompact run --in-place <opencode.db>#<session id>` (`kilo.db`) compacts it, keeping the turns from the
second prompt on: our compaction is recorded in the database the way OpenCode records its own (a user
message with a `compaction` part naming the kept tail, then a `summary` assistant message).
`opencode run --session ID` (`kilo run --session ID`) then runs twice: the first request of each resume must
start from our summary exactly once ("What did we do so far?", then the summary), hold the kept tail in
order and nothing from before the cut; `report` counts the same usage before and after.
"""

from __future__ import annotations

import json
import re
import shutil
import sqlite3
import subprocess
import sys
from pathlib import Path

import pytest
from agent_judges import REPLY, FakeOpenAIChat, opencode_script, opencode_setup
from click.testing import CliRunner
from report_judges import KILO, OPENCODE, judge_cli

from batchcompact.adapters.opencode.read import filter_compacted, read_session, session_ids
from batchcompact.cli import cli as main

pytestmark = pytest.mark.slow


def _opencode(binary: Path, project: Path, env: dict, api: FakeOpenAIChat, *args: str) -> list[dict]:
    """Run `opencode run ARGS` once; the bodies of the conversation requests it sent."""
    before = len(api.requests)
    done = subprocess.run([str(binary), "run", *args], cwd=project, env=env, capture_output=True, text=True,
                          timeout=300)
    assert done.returncode == 0 and REPLY in done.stdout, (done.stdout[-2000:], done.stderr[-2000:])
    return [r["body"] for r in api.requests[before:] if r["path"].endswith("/chat/completions")
            and isinstance(r["body"], dict) and r["body"].get("tools")]


def _text(message: dict) -> str:
    content = message.get("content")
    if isinstance(content, str):
        return content
    return "".join(b.get("text") or "" for b in content or () if isinstance(b, dict))


def _report(db: Path) -> dict:
    done = subprocess.run([sys.executable, "-m", "batchcompact", "report", "--format", "json", str(db)],
                          capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr
    return json.loads(done.stdout)["totals"]


@pytest.fixture(scope="module", params=[OPENCODE, KILO], ids=["opencode", "kilo"])
def judged(request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory) -> dict:
    cli = request.param
    name = cli[2]
    binary = judge_cli(*cli)
    root = tmp_path_factory.mktemp(name)
    home, project = root / "home", root / "project"
    project.mkdir()
    home.mkdir()
    (project / "notes.txt").write_text("remember: the port is 8123\n")
    api = FakeOpenAIChat(opencode_script(project))
    with api:
        env = opencode_setup(home, project, api.url, name)
        _opencode(binary, project, env, api, "STEP-ONE read the notes, write and fix hello.py")
        _opencode(binary, project, env, api, "--continue", "STEP-TWO look again")
        before = _opencode(binary, project, env, api, "--continue", "STEP-THREE just answer")
        db = home / f".local/share/{name}/{name}.db"
        [session_id] = session_ids(db, name)
        usage_before = _report(db)
        shutil.copy(db, root / "original.db")
        session = read_session(db, session_id, agent=name)
        assert not session.errors, session.problems
        cut = next(e for e in session.path_entries() if e.role == "user" and "STEP-TWO" in json.dumps(e.message))
        path = f"{db}#{session_id}"
        keep = _keep_from(path, cut.id)
        result = CliRunner().invoke(main, ["run", "--in-place", "--force", "--min-age", "0", "--keep-recent-tokens",
                                           str(keep), "--format", "jsonl", path])
        assert result.exit_code == 0, result.output
        [row] = [json.loads(line) for line in result.stdout.splitlines() if line.startswith("{")]
        assert row["status"] == "compacted", row
        assert Path(f"{db}.bak").exists()  # the in-place write kept a backup of the database
        again = read_session(db, session_id, agent=name)
        [summary] = [m for m in again.extra.messages if m["info"].get("summary") is True]
        problems = [p.message for p in again.problems]
        usage_after = _report(db)
        first = _opencode(binary, project, env, api, "--session", session_id, "RESUME-ONE go on")
        second = _opencode(binary, project, env, api, "--session", session_id, "RESUME-TWO once more")
    text = "".join(p.get("text") or "" for p in summary["parts"] if p.get("type") == "text")
    return {"before": before, "first": first, "second": second, "problems": problems, "db": db,
            "session_id": session_id, "summary": summary, "summary_text": text, "cut": cut.id, "again": again,
            "usage": (usage_before, usage_after)}


def _keep_from(path: str, first_kept: str) -> int:
    """The --keep-recent-tokens that cuts at `first_kept` (a prompt), whole turns (no split turn)."""
    for keep in range(5, 400, 5):
        result = CliRunner().invoke(main, ["plan", "--force", "--keep-recent-tokens", str(keep), "--format", "jsonl",
                                           path])
        row = json.loads(result.stdout.splitlines()[0])
        if row["status"] == "compact" and not row["split_turn"] and row["first_kept_entry_id"] == first_kept:
            return keep
    raise AssertionError("no budget keeps exactly the turns from the second prompt on")


ENVIRONMENT = re.compile(r"\s*<environment_details>.*?</environment_details>\s*", re.S)


def _history(request: dict) -> list[dict]:
    """The conversation without the system prompt, and without the <environment_details> (the time of the
    request, its folder) Kilo adds to user messages, which differ from one request to the next."""
    out = []
    for message in request["messages"]:
        if message.get("role") == "system":
            continue
        content = message.get("content")
        if isinstance(content, str):
            message = {**message, "content": ENVIRONMENT.sub("", content)}
        elif isinstance(content, list):
            blocks = [{**b, "text": ENVIRONMENT.sub("", b["text"])} if isinstance(b.get("text"), str) else b
                      for b in content]
            message = {**message, "content": [b for b in blocks if b.get("text") != ""]}
        out.append(message)
    return out


def test_run_wrote_opencodes_own_compaction(judged):
    assert judged["problems"] == []
    summary = judged["summary"]["info"]
    assert summary["mode"] == "compaction" and summary["finish"] == "stop" and summary["batchcompact"]["tokensBefore"]
    loaded = filter_compacted(judged["again"].extra.messages)
    assert loaded[0]["parts"][0]["type"] == "compaction" and loaded[0]["parts"][0]["tail_start_id"] == judged["cut"]
    assert loaded[1]["info"]["id"] == summary["id"] and loaded[2]["info"]["id"] == judged["cut"]


@pytest.mark.parametrize("resume", ["first", "second"])
def test_resume_starts_from_our_summary_then_the_kept_tail(judged, resume):
    [original] = judged["before"][-1:]
    request = judged[resume][0]
    history = _history(request)
    summary = judged["summary_text"]
    assert _text(history[0]) == "What did we do so far?"
    assert history[1]["role"] == "assistant" and _text(history[1]) == summary
    assert sum(_text(m) == summary for m in history) == 1
    # the kept tail: from the STEP-TWO prompt on, exactly as OpenCode sent it before the compaction
    old = _history(original)
    start = next(i for i, m in enumerate(old) if m["role"] == "user" and "STEP-TWO" in _text(m))
    kept = old[start:]
    assert history[2:2 + len(kept)] == kept
    assert not any("STEP-ONE" in json.dumps(m) for m in history[2:])  # the summary itself quotes the prompts
    # then STEP-THREE's reply (after the request recorded above) and the resumed prompt
    assert history[2 + len(kept)] == {"role": "assistant", "content": REPLY}
    assert "RESUME-ONE" in _text(history[3 + len(kept)])
    if resume == "second":  # the first resume's turn is there too, and the summary still leads
        assert any("RESUME-TWO" in _text(m) for m in history)


def test_report_counts_the_same_usage_before_and_after(judged):
    before, after = judged["usage"]
    assert before["requests"] > 0
    assert after == before  # our summary message records no usage: the call was ours, in our own report
    conn = sqlite3.connect(judged["db"])
    summary_data = json.loads(conn.execute("SELECT data FROM message WHERE id = ?",
                                           (judged["summary"]["info"]["id"],)).fetchone()[0])
    conn.close()
    assert summary_data["summary"] is True and summary_data["tokens"]["input"] == 0
