"""The real Qwen Code (npm @qwen-code/qwen-code 0.24.4) resumes our compacted chats.

In a sandbox HOME the real CLI records a chat against a loopback fake OpenAI-compatible API that makes
tool calls (read_file, write_file, edit, run_shell_command; then, continued, glob, grep_search,
run_shell_command). `batchcompact run --in-place` compacts it (a `chat_compression` record, as Qwen Code
writes its own); `qwen --continue -p …` then runs twice. The first request of each resume must start
from the whole summary we wrote, byte for byte (in the first user message, after the reminders Qwen Code
regenerates), hold the kept
tail's calls and results in order and nothing from before the cut; the second resume must send the
same history plus the first resume's turn.
"""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

import pytest
from agent_judges import (
    QWEN,
    REPLY,
    FakeOpenAIChat,
    assert_whole_summary,
    compact_in_place,
    npm_cli,
    qwen_env,
    qwen_script,
    qwen_settings,
)

pytestmark = pytest.mark.slow


@pytest.fixture(scope="module")
def qwen_bin() -> Path:
    return npm_cli(*QWEN)


def _script(project: Path) -> dict:
    """The recorder's script plus one more turn for the second resume."""
    return {**qwen_script(project), "RESUME-TWO": [
        ("read_file", {"file_path": str(project / "hello.py")}),
        ("run_shell_command", {"command": "python3 hello.py", "description": "run it again"}),
    ]}


def _qwen(qwen_bin: Path, home: Path, project: Path, api: FakeOpenAIChat, *args: str) -> list[dict]:
    """Run the CLI once; the bodies of the conversation requests it sent."""
    before = len(api.requests)
    done = subprocess.run([str(qwen_bin), "--yolo", *args], cwd=project, env=qwen_env(home, api.url),
                          capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr[-2000:]
    assert REPLY in done.stdout
    return [r["body"] for r in api.requests[before:] if r["path"].endswith("/chat/completions")
            and isinstance(r["body"], dict) and r["body"].get("tools")]


def _calls(messages: list[dict]) -> list[str]:
    return [c["id"] for m in messages if m.get("role") == "assistant" for c in m.get("tool_calls") or ()]


def _texts(message: dict) -> list[str]:
    content = message.get("content")
    if isinstance(content, str):
        return [content]
    return [b.get("text") or "" for b in content or () if isinstance(b, dict)]


@pytest.fixture(scope="module")
def compacted(qwen_bin: Path, tmp_path_factory: pytest.TempPathFactory) -> dict:
    root = tmp_path_factory.mktemp("qwen")
    home, project = root / "home", root / "project"
    project.mkdir()
    (project / "notes.txt").write_text("alpha\nbeta\n")
    qwen_settings(home)
    api = FakeOpenAIChat(_script(project))
    with api:
        _qwen(qwen_bin, home, project, api, "-p", "STEP-ONE: read notes, write and fix hello.py")
        last = _qwen(qwen_bin, home, project, api, "--continue", "-p", "STEP-TWO: look around")
        [chat] = sorted((home / ".qwen" / "projects").glob("*/chats/*.jsonl"))
        original = chat.read_text()
        summaries = compact_in_place(chat)
        first = _qwen(qwen_bin, home, project, api, "--continue", "-p", "RESUME-ONE: continue")
        second = _qwen(qwen_bin, home, project, api, "--continue", "-p", "RESUME-TWO: again")
        before_second = chat.read_text()
        summaries2 = compact_in_place(chat)  # the agent went on: compact again
        third = _qwen(qwen_bin, home, project, api, "--continue", "-p", "RESUME-THREE: once more")
    record = json.loads(chat.read_text()[len(original):].splitlines()[0])
    record2 = json.loads(chat.read_text()[len(before_second):].splitlines()[0])
    return {"chat": chat, "original": original, "before": last[-1]["messages"], "first": first,
            "second": second, "record": record, "third": third, "record2": record2, "summaries": summaries,
            "summaries2": summaries2}


def _kept_calls(record: dict) -> list[str]:
    history = record["systemPayload"]["compressedHistory"]
    return [p["functionCall"]["id"] for c in history for p in c["parts"] if "functionCall" in p]


def _our_summary(record: dict, returned: list[str]) -> str:
    """The whole text of the summary we wrote, the first turn of our record's compressed history: the
    summarizer's texts, whole, inside `<state_snapshot>`."""
    first = record["systemPayload"]["compressedHistory"][0]
    assert first["role"] == "user"
    [text] = [p["text"] for p in first["parts"]]
    assert text.startswith("<state_snapshot>\n") and text.endswith("\n</state_snapshot>")
    assert_whole_summary(text.removeprefix("<state_snapshot>\n").removesuffix("\n</state_snapshot>"), returned)
    return text


def _sent_summary(messages: list[dict]) -> str:
    """The summary a request sent: after the system prompt, the first user message holds Qwen Code's
    regenerated reminders, then the first stored user turn (ours) as it is; no other snapshot anywhere."""
    assert messages[0]["role"] == "system"
    assert messages[1]["role"] == "user"
    assert sum(t.startswith("<state_snapshot>") for m in messages for t in _texts(m)) == 1
    return _texts(messages[1])[-1]


def test_our_compaction_is_a_chat_compression_record(compacted: dict) -> None:
    record = compacted["record"]
    assert record["type"] == "system" and record["subtype"] == "chat_compression"
    _our_summary(record, compacted["summaries"])


def test_the_resumed_request_starts_from_our_summary(compacted: dict) -> None:
    ours = _our_summary(compacted["record"], compacted["summaries"])
    assert _sent_summary(compacted["first"][0]["messages"]) == ours  # the whole summary we wrote, byte for byte


def test_the_resumed_request_holds_the_kept_tail_and_nothing_before_the_cut(compacted: dict) -> None:
    kept_calls = _kept_calls(compacted["record"])
    before_calls = _calls(compacted["before"])
    summarized = [c for c in before_calls if c not in kept_calls]
    assert kept_calls and summarized
    messages = compacted["first"][0]["messages"]
    sent = _calls(messages)
    assert sent == kept_calls
    results = [m["tool_call_id"] for m in messages if m.get("role") == "tool"]
    assert results == kept_calls  # every kept call answered once, none without its call
    assert not any("STEP-ONE" in t for m in messages[2:] for t in _texts(m))


def test_a_second_resume_sends_the_same_history(compacted: dict) -> None:
    first = compacted["first"][0]["messages"]
    second = compacted["second"][0]["messages"]
    prompt = next(i for i, m in enumerate(first) if any("RESUME-ONE" in t for t in _texts(m)))
    assert [m["role"] for m in second[:prompt]] == [m["role"] for m in first[:prompt]]
    assert _calls(second[:prompt]) == _calls(first[:prompt])
    assert _sent_summary(second) == _our_summary(compacted["record"], compacted["summaries"])  # the same, whole
    assert any("RESUME-ONE" in t for m in second for t in _texts(m))


def test_a_second_compaction_resumes_from_the_new_summary_only(compacted: dict) -> None:
    assert compacted["record2"]["subtype"] == "chat_compression"
    messages = compacted["third"][0]["messages"]
    ours = _our_summary(compacted["record2"], compacted["summaries2"])
    assert ours != _our_summary(compacted["record"], compacted["summaries"])
    assert _sent_summary(messages) == ours
    kept = _kept_calls(compacted["record2"])
    assert _calls(messages) == kept
    summarized = [c for c in _calls(compacted["second"][-1]["messages"]) if c not in kept]
    assert summarized and not set(_calls(messages)) & set(summarized)


def test_no_usage_is_copied_or_lost(compacted: dict) -> None:
    """Our record carries no usage: every reply's usageMetadata stays once, on its own record."""

    def usage(text: str) -> list[tuple[str, dict]]:
        records = [json.loads(line) for line in text.splitlines()]
        return [(r["uuid"], r["usageMetadata"]) for r in records if r.get("type") == "assistant" and r.get("usageMetadata")]

    after = compacted["chat"].read_text()
    assert usage(after)[: len(usage(compacted["original"]))] == usage(compacted["original"])
    assert "usageMetadata" not in json.dumps(compacted["record"])
