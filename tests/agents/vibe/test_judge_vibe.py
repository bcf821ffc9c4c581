"""The report reads what the real Mistral Vibe CLI writes: `vibe` (PyPI `mistral-vibe`, pinned in
tests/report_judges.py, in a Python 3.12+ venv) run in a sandbox HOME against a loopback OpenAI-compatible
provider whose every reply reports 1,200 prompt tokens of which 1,000 cached and 30 completion tokens.

Two prompts with the Unified Harness (the default; the second `--continue`s the session) and two with
`--legacy-harness`: Vibe keeps each session's running totals (prompt 2,400 INCLUDING the 2,000 cached,
completion 60), so the report must give each session one row of 400 input, 2,000 cache reads and 60
output tokens, with the model and provider its config names and the project it ran in. A legacy-harness
sub-agent (the `task` tool) is a session of its own: parent and child together count every call once.
"""

from __future__ import annotations

import json
import subprocess

import pytest
from agent_judges import REPLY, FakeOpenAIChatCounted, sandbox_env
from click.testing import CliRunner
from report_judges import CACHED, COMPLETION, MODEL, PROMPT, record_vibe, vibe_cli, vibe_config

from batchcompact.cli import cli

pytestmark = pytest.mark.slow

RUNS = (("JUDGE-ONE say hi", ()), ("JUDGE-TWO say hi again", ("--continue",)),
        ("JUDGE-THREE legacy", ("--legacy-harness",)), ("JUDGE-FOUR legacy again", ("--legacy-harness", "--continue")))


@pytest.fixture(scope="module")
def recorded(tmp_path_factory):
    root = tmp_path_factory.mktemp("vibe")
    home, calls = record_vibe(root, RUNS)
    return root, home, calls


def test_each_session_is_one_row_of_its_calls(recorded, monkeypatch, tmp_path):
    root, home, calls = recorded
    assert calls == len(RUNS)
    monkeypatch.setenv("HOME", str(home))
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "cache"))
    monkeypatch.delenv("VIBE_HOME", raising=False)
    logs = home / ".vibe" / "logs" / "session"
    metas = sorted([*logs.glob("session_*/meta.json"), *logs.glob("unified/*/meta.json")])
    assert len(metas) == 2  # one session per harness, each resumed once
    result = CliRunner().invoke(cli, ["report", "--agent", "vibe", "--by", "session", "--format", "json"])
    assert result.exit_code == 0, result.output
    assert f"reading vibe: {logs}" in result.stderr and "warning" not in result.stderr
    rows = json.loads(result.stdout)["rows"]
    assert sorted(r["session_id"] for r in rows) == sorted(json.loads(p.read_text())["session_id"] for p in metas)
    for row in rows:
        assert row["agent"] == "vibe" and row["requests"] == 1 and row["project"] == str(root / "project")
        assert (row["input_tokens"], row["cache_read_tokens"], row["output_tokens"]) == (
            2 * (PROMPT - CACHED), 2 * CACHED, 2 * COMPLETION)
        assert row["total_tokens"] == 2 * (PROMPT + COMPLETION) and row["models"] == [MODEL]
        assert row["cost_usd"] == pytest.approx(2 * ((PROMPT - CACHED) * 0.4 + CACHED * 0.1 + COMPLETION * 1.6) / 1e6)
    providers = CliRunner().invoke(cli, ["report", "--agent", "vibe", "--by", "provider", "--format", "json"])
    assert [r["provider"] for r in json.loads(providers.stdout)["rows"]] == ["judge"]


def test_a_sub_agents_calls_are_counted_once(tmp_path, monkeypatch):
    """The legacy harness's `task` tool: the sub-agent's session is a folder of its own under its parent's
    `agents/`, with its own totals that the parent's do not include. Every call the fake answered is
    counted once, whatever session it is in (the fake reports prompt = body size / 4, half of it cached,
    9 completion tokens)."""
    binary = vibe_cli()
    home, project = tmp_path / "home", tmp_path / "project"
    project.mkdir()
    script = {"JUDGE-TASK": [("task", {"task": "JUDGE-SUB say hi", "agent": "explore"})]}
    with FakeOpenAIChatCounted(script) as api:
        vibe_config(home, api.url)
        done = subprocess.run([str(binary), "--legacy-harness", "--trust", "--auto-approve", "-p", "JUDGE-TASK delegate"],
                              cwd=project, env=sandbox_env(home, JUDGE_KEY="judge"), capture_output=True, text=True,
                              timeout=300)
        assert done.returncode == 0 and REPLY in done.stdout, (done.stdout[-2000:], done.stderr[-2000:])
        bodies = [r["body"] for r in api.requests if r["path"].endswith("/chat/completions")]
    assert len(bodies) == 3  # the parent's call to the tool, the sub-agent's answer, the parent's answer
    prompts = [max(len(json.dumps(body.get("messages") or [])) // 4, 1) for body in bodies]
    monkeypatch.setenv("HOME", str(home))
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "cache"))
    monkeypatch.delenv("VIBE_HOME", raising=False)
    result = CliRunner().invoke(cli, ["report", "--agent", "vibe", "--by", "session", "--format", "json"])
    assert result.exit_code == 0, result.output
    rows = json.loads(result.stdout)["rows"]
    (child,) = (home / ".vibe" / "logs" / "session").glob("session_*/agents/explore_*/meta.json")
    assert json.loads(child.read_text())["session_id"] in {r["session_id"] for r in rows} and len(rows) == 2
    assert sum(r["input_tokens"] + r["cache_read_tokens"] for r in rows) == sum(prompts)
    assert sum(r["cache_read_tokens"] for r in rows) == sum(p // 2 for p in prompts)
    assert sum(r["output_tokens"] for r in rows) == 9 * len(bodies)
