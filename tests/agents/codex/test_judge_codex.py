"""The real Codex CLI (npm @openai/codex 0.169.0) resumes our compacted rollout.

batchcompact compacts a real Codex Desktop rollout (from the installed CLI); `codex exec resume <id>`
then runs in a sandbox (HOME and CODEX_HOME in tmp) against a loopback fake Responses API. The first
request must carry our replacement history as written (initial context, earlier prompts, the summary,
the kept tail in order), nothing from before our boundary, no call twice and no output without its call;
a second resume must still start from it. The original rollout with Codex's own (remote) compaction is
resumed too.
"""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from agent_judges import REPLY, FakeResponses, npm_cli, sandbox_env
from conftest import fixture_path

from batchcompact.adapters.codex.items import SUMMARY_PREFIX

pytestmark = pytest.mark.slow

VERSION = "0.169.0"
FOLDER = ("codex", "sessions", "2026", "02", "23")
PLAIN = "rollout-2026-02-23T12-40-23-019c8a4c-ed82-79a1-aa28-7738fc5ab61a.jsonl"
REMOTE = "rollout-2026-02-23T12-54-34-019c8a59-e9dd-71f0-9ae3-4079fe9726a9.jsonl"


@pytest.fixture(scope="module")
def codex_bin() -> Path:
    return npm_cli("@openai/codex", VERSION, "codex")


def _thread_id(name: str) -> str:
    return name.removesuffix(".jsonl")[-36:]


def _resume(codex_bin: Path, tmp: Path, rollout: Path, prompt: str) -> list[dict]:
    """Resume `rollout` once with `prompt`; the `input` of the first request Codex sent."""
    home, codex_home, work = tmp / "home", tmp / "codex-home", tmp / "work"
    sessions = codex_home / "sessions" / "2026" / "02" / "23"
    for folder in (home, sessions, work):
        folder.mkdir(parents=True, exist_ok=True)
    target = sessions / rollout.name
    if not target.exists():
        shutil.copyfile(rollout, target)
    with FakeResponses() as server:
        (codex_home / "config.toml").write_text(
            f'model = "gpt-5.3-codex"\nopenai_base_url = "{server.url}"\n', encoding="utf-8"
        )
        env = sandbox_env(home, CODEX_HOME=str(codex_home), OPENAI_API_KEY="sk-judge", OPENAI_BASE_URL=server.url)
        done = subprocess.run(
            [str(codex_bin), "exec", "--skip-git-repo-check", "resume", _thread_id(rollout.name), prompt],
            cwd=work, env=env, capture_output=True, text=True, timeout=180,
        )
        assert done.returncode == 0, done.stderr[-2000:]
        assert REPLY in done.stdout
        inputs = server.inputs()
        assert inputs, "Codex sent no request"
        return inputs[0]


def _calls(items: list[dict]) -> list[str]:
    return [i["call_id"] for i in items if i.get("type") in ("function_call", "custom_tool_call") and i.get("call_id")]


def _check_pairs(items: list[dict]) -> None:
    calls = _calls(items)
    assert len(calls) == len(set(calls)), "a call sent twice"
    seen: set[str] = set()
    for item in items:
        if item.get("type") in ("function_call", "custom_tool_call"):
            seen.add(item["call_id"])
        elif item.get("type") in ("function_call_output", "custom_tool_call_output"):
            assert item["call_id"] in seen, f"output {item['call_id']} without its call"


def _same(sent: dict, ours: dict) -> bool:
    """`sent` is our item as Codex sends it (Codex adds its own fields, e.g. metadata passthrough)."""
    return all(sent.get(k) == v for k, v in ours.items() if k not in ("id", "status"))


def test_codex_resumes_our_compaction_with_its_replacement_history_twice(codex_bin, tmp_path):
    source = fixture_path(*FOLDER, PLAIN)
    inbox, out = tmp_path / "in", tmp_path / "out"
    inbox.mkdir()
    shutil.copyfile(source, inbox / source.name)
    done = subprocess.run(
        [sys.executable, "-m", "batchcompact", "run", str(inbox), "--output-dir", str(out), "--min-age", "0",
         "--force", "--keep-recent-tokens", "2000"],
        capture_output=True, text=True, timeout=300,
    )
    assert done.returncode == 0, done.stderr
    written = out / source.name
    raw = [json.loads(line) for line in written.read_text(encoding="utf-8").splitlines()]
    compacted = next(o for o in reversed(raw) if o["type"] == "compacted")
    ours = compacted["payload"]["replacement_history"]
    at = next(i for i, item in enumerate(ours) if json.dumps(item).find(SUMMARY_PREFIX) >= 0)
    assert at > 0  # initial context and earlier prompts before the summary
    before = [o["payload"] for o in raw[: raw.index(compacted)] if o["type"] == "response_item"]
    dropped = set(_calls(before)) - set(_calls(ours))
    assert dropped
    for turn, prompt in enumerate(("judge turn one", "judge turn two")):
        sent = _resume(codex_bin, tmp_path, written, prompt)
        start = next(i for i, item in enumerate(sent) if _same(item, ours[0]))
        window = sent[start : start + len(ours)]
        assert len(window) == len(ours) and all(map(_same, window, ours)), "not our replacement history"
        assert json.dumps(sent).count(SUMMARY_PREFIX) == 1
        assert not set(_calls(sent)) & dropped, "something from before our boundary was sent"
        _check_pairs(sent)
        text = json.dumps(sent)
        assert prompt in text
        if turn == 1:
            assert "judge turn one" in text


def test_codex_resumes_its_own_remote_compaction(codex_bin, tmp_path):
    source = fixture_path(*FOLDER, REMOTE)
    raw = [json.loads(line) for line in source.read_text(encoding="utf-8").splitlines()]
    compacted = next(o for o in reversed(raw) if o["type"] == "compacted")
    own = compacted["payload"]["replacement_history"]
    sent = _resume(codex_bin, tmp_path, source, "judge original")
    assert any(i.get("type") == "compaction" for i in sent)  # Codex's encrypted summary
    before = [o["payload"] for o in raw[: raw.index(compacted)] if o["type"] == "response_item"]
    dropped = set(_calls(before)) - set(_calls(own))
    assert not set(_calls(sent)) & dropped
    _check_pairs(sent)
