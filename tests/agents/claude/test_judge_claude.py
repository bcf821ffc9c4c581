"""The real Claude Code CLI (npm @anthropic-ai/claude-code 2.1.328) resumes our compacted transcript.

batchcompact compacts the real 2.1.39 session cut just before Claude Code's own auto-compaction (from
the installed CLI, by default settings); `claude -p … --resume <id>` then runs in a sandbox against a
loopback fake Anthropic Messages server. The first request must carry our summary first, then the kept
tail in order, nothing from before our boundary, no block twice and no tool result without its call;
a second resume must still start from our summary. The original transcript (compacted by Claude Code
itself) is resumed too, to show what the CLI does with its own compaction.
"""

from __future__ import annotations

import json
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from agent_judges import REPLY, FakeAnthropic, content_blocks, npm_cli, sandbox_env
from conftest import fixture_path

pytestmark = pytest.mark.slow

VERSION = "2.1.328"
SESSION = "4d5611e5-241a-462a-8d15-5122611a9569"
MAIN = ("claude", "projects", "-home-USER-projects-spotter", f"{SESSION}.jsonl")
PREAMBLE = "This session is being continued from a previous conversation that ran out of context."


@pytest.fixture(scope="module")
def claude_bin() -> Path:
    return npm_cli("@anthropic-ai/claude-code", VERSION, "claude")


def _project_dir(config: Path, cwd: Path) -> Path:
    return config / "projects" / re.sub(r"[^A-Za-z0-9]", "-", str(cwd))


def _resume(claude_bin: Path, tmp: Path, transcript: Path, prompt: str) -> list[dict]:
    """Resume `transcript` once with `prompt`; the conversation requests Claude Code sent."""
    home, config, work = tmp / "home", tmp / "config", tmp / "work"
    for folder in (home, config, work):
        folder.mkdir(exist_ok=True)
    project = _project_dir(config, work)
    project.mkdir(parents=True, exist_ok=True)
    target = project / f"{SESSION}.jsonl"
    if not target.exists():
        shutil.copyfile(transcript, target)
    with FakeAnthropic() as server:
        env = sandbox_env(home, CLAUDE_CONFIG_DIR=str(config), ANTHROPIC_BASE_URL=server.url,
                          ANTHROPIC_API_KEY="sk-ant-judge")
        done = subprocess.run(
            [str(claude_bin), "-p", prompt, "--resume", SESSION, "--model", "claude-opus-4-6"],
            cwd=work, env=env, capture_output=True, text=True, timeout=120,
        )
        assert done.returncode == 0, done.stderr[-2000:]
        assert REPLY in done.stdout
        return server.conversation_requests()


def _check_pairs_and_duplicates(messages: list[dict]) -> None:
    seen_calls: set[str] = set()
    for _, block in content_blocks(messages):
        if block.get("type") == "tool_use":
            assert block["id"] not in seen_calls, f"tool_use {block['id']} sent twice"
            seen_calls.add(block["id"])
        elif block.get("type") == "tool_result":
            assert block["tool_use_id"] in seen_calls, f"tool_result {block['tool_use_id']} without its call"


def _cut_and_compact(tmp: Path) -> tuple[Path, list[str], list[str]]:
    """Our compacted copy of the session cut before Claude Code's own boundary, from the installed CLI.
    Returns (file, tool_use ids of the kept tail in order, tool_use ids summarized away)."""
    source = fixture_path(*MAIN)
    lines = source.read_text(encoding="utf-8").splitlines(keepends=True)
    boundary = next(i for i, line in enumerate(lines) if '"compact_boundary"' in line)
    inbox, out = tmp / "in", tmp / "out"
    inbox.mkdir()
    (inbox / source.name).write_text("".join(lines[:boundary]), encoding="utf-8")
    done = subprocess.run(
        [sys.executable, "-m", "batchcompact", "run", str(inbox), "--output-dir", str(out), "--min-age", "0"],
        capture_output=True, text=True, timeout=300,
    )
    assert done.returncode == 0, done.stderr
    written = out / source.name
    objs = [json.loads(line) for line in written.read_text(encoding="utf-8").splitlines()]
    at = next(i for i, o in enumerate(objs) if o.get("subtype") == "compact_boundary" and "batchcompact" in
              o["compactMetadata"])
    first_kept = objs[at]["compactMetadata"]["batchcompact"]["firstKeptUuid"]

    def tool_ids(rows):
        return [b["id"] for o in rows if o.get("type") == "assistant" and not o.get("isSidechain")
                for b in o["message"]["content"] if isinstance(b, dict) and b.get("type") == "tool_use"]

    kept = tool_ids(objs[at + 2 :])
    first_index = next(i for i, o in enumerate(objs[:at]) if o.get("uuid") == first_kept)
    dropped = tool_ids(objs[:first_index])
    return written, kept, dropped


def test_claude_code_resumes_our_compaction_summary_first_twice(claude_bin, tmp_path):
    written, kept, dropped = _cut_and_compact(tmp_path)
    assert kept and dropped
    objs = [json.loads(x) for x in written.read_text(encoding="utf-8").splitlines()]
    boundary = next(o["uuid"] for o in objs if "batchcompact" in (o.get("compactMetadata") or {}))
    ours = next(o for o in objs if o.get("isCompactSummary") and o["parentUuid"] == boundary)["message"]["content"]
    for turn, prompt in enumerate(("judge turn one", "judge turn two")):
        requests = _resume(claude_bin, tmp_path, written, prompt)
        assert requests, "Claude Code sent no conversation"
        messages = requests[0]["messages"]
        first = next(block for _, block in content_blocks(messages[:1]))
        assert first.get("text") == ours, "the first message is not our summary"
        text = json.dumps(messages)
        assert text.count(PREAMBLE) == 1  # no second summary: no compaction of its own, ours once
        sent = [b["id"] for _, b in content_blocks(messages) if b.get("type") == "tool_use"]
        assert sent[: len(kept)] == kept, "the kept tail is not sent in order right after the summary"
        assert not set(sent) & set(dropped), "something from before our boundary was sent"
        _check_pairs_and_duplicates(messages)
        assert prompt in text
        if turn == 1:
            assert "judge turn one" in text  # the first resumed turn is kept, the compaction is not undone


def test_claude_code_resumes_its_own_compaction(claude_bin, tmp_path):
    source = fixture_path(*MAIN)
    requests = _resume(claude_bin, tmp_path, source, "judge original")
    messages = requests[0]["messages"]
    first = next(block for _, block in content_blocks(messages[:1]))
    assert first.get("text", "").startswith(PREAMBLE)  # Claude Code's own summary
    _check_pairs_and_duplicates(messages)
