"""The real Gemini CLI (npm @google/gemini-cli 0.61.0) resumes our compacted chats.

In a sandbox HOME the real CLI records a chat against a loopback fake Gemini API that makes tool calls
(read_file, write_file, replace, run_shell_command; then, resumed, glob, grep_search, write_todos,
list_directory). `batchcompact run --in-place` compacts it; `gemini --resume latest -p …` then runs twice.
The first request of each resume must start from the whole summary we wrote, byte for byte (after the
context block Gemini regenerates), hold the kept tail's calls and results in order and nothing from before the cut, and the
second resume must send the same history plus the first resume's turn.
"""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

import pytest
from agent_judges import (
    GEMINI,
    REPLY,
    FakeGemini,
    assert_whole_summary,
    compact_in_place,
    gemini_env,
    gemini_script,
    gemini_settings,
    npm_cli,
)

pytestmark = pytest.mark.slow


@pytest.fixture(scope="module")
def gemini_bin() -> Path:
    return npm_cli(*GEMINI)


def _script(project: Path) -> dict:
    """The recorder's script plus one more turn for the second resume."""
    return {**gemini_script(project), "RESUME-TWO": [
        ("read_file", {"file_path": str(project / "hello.py")}),
        ("run_shell_command", {"command": "python3 hello.py", "description": "run it again"}),
    ]}


def _gemini(gemini_bin: Path, home: Path, project: Path, api: FakeGemini, *args: str) -> list[dict]:
    """Run the CLI once; the bodies of the conversation requests it sent."""
    before = len(api.requests)
    done = subprocess.run([str(gemini_bin), "-m", "gemini-2.5-flash", "--approval-mode", "yolo", *args],
                          cwd=project, env=gemini_env(home, api.url), capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr[-2000:]
    assert REPLY in done.stdout
    return [r["body"] for r in api.requests[before:] if "generatecontent" in r["path"].lower()
            and isinstance(r["body"], dict) and r["body"].get("tools")]


def _chat_file(home: Path) -> Path:
    """The chat the session lives in. Each run first opens a chat file of its own (a resumed run then
    switches to the resumed one and leaves that stray file with a header and no messages)."""
    return max((home / ".gemini" / "tmp").glob("*/chats/session-*.jsonl"), key=lambda f: f.stat().st_size)


def _call_id(call: dict) -> str:
    """A call's id as sent: the chat records `<tool>__<id>` (ensureStableToolIds), the request `<id>`."""
    return str(call.get("id") or "").removeprefix(f"{call.get('name')}__")


def _calls(contents: list[dict]) -> list[str]:
    return [_call_id(p["functionCall"]) for c in contents for p in c.get("parts") or () if "functionCall" in p]


def _texts(contents: list[dict]) -> list[str]:
    return [p["text"] for c in contents for p in c.get("parts") or () if isinstance(p.get("text"), str)]


@pytest.fixture(scope="module")
def compacted(gemini_bin: Path, tmp_path_factory: pytest.TempPathFactory) -> dict:
    """A chat the real CLI recorded, compacted in place by batchcompact; its original state too."""
    root = tmp_path_factory.mktemp("gemini")
    home, project = root / "home", root / "project"
    project.mkdir()
    (project / "notes.txt").write_text("alpha\nbeta\n")
    gemini_settings(home)
    api = FakeGemini(_script(project))
    with api:
        _gemini(gemini_bin, home, project, api, "-p", "STEP-ONE: read notes, write and fix hello.py")
        last = _gemini(gemini_bin, home, project, api, "--resume", "latest", "-p", "STEP-TWO: look around")
        chat = _chat_file(home)
        original = chat.read_text()
        summaries = compact_in_place(chat, summarize_calls=True)  # a cut after some calls, whatever the tmp path
        first = _gemini(gemini_bin, home, project, api, "--resume", "latest", "-p", "RESUME-ONE: continue")
        second = _gemini(gemini_bin, home, project, api, "--resume", "latest", "-p", "RESUME-TWO: again")
        before_second = chat.read_text()
        summaries2 = compact_in_place(chat)  # the agent went on: compact again
        third = _gemini(gemini_bin, home, project, api, "--resume", "latest", "-p", "RESUME-THREE: once more")
    return {"chat": chat, "original": original, "before": last[-1]["contents"], "first": first,
            "second": second, "checkpoint": _our_checkpoint(chat.read_text()[len(original):]),
            "third": third, "checkpoint2": _our_checkpoint(chat.read_text()[len(before_second):]),
            "summaries": summaries, "summaries2": summaries2}


def _our_checkpoint(text: str) -> list[dict]:
    """The messages of the first `$set` checkpoint we wrote in `text` (appended records)."""
    records = [json.loads(line) for line in text.splitlines()]
    return next(r["$set"]["messages"] for r in records if isinstance(r.get("$set"), dict)
                and any("batchcompact" in m for m in r["$set"].get("messages") or ()))


def _kept_calls(checkpoint: list[dict]) -> list[str]:
    calls = _calls([{"parts": [p for p in m["content"] if isinstance(p, dict)]}
                    for m in checkpoint if isinstance(m.get("content"), list)])
    calls += [_call_id(c) for m in checkpoint for c in m.get("toolCalls") or ()]
    return list(dict.fromkeys(calls))


def _our_summary(checkpoint: list[dict], returned: list[str]) -> str:
    """The whole text of the summary message we wrote in `checkpoint` (the one that carries our marker):
    the summarizer's texts, whole, inside `<state_snapshot>`."""
    [message] = [m for m in checkpoint if "batchcompact" in m]
    assert message["type"] == "user"
    [text] = [p["text"] for p in message["content"] if isinstance(p, dict) and "text" in p]
    assert text.startswith("<state_snapshot>\n") and text.endswith("\n</state_snapshot>")
    assert_whole_summary(text.removeprefix("<state_snapshot>\n").removesuffix("\n</state_snapshot>"), returned)
    return text


def _sent_summary(contents: list[dict]) -> str:
    """The summary a request sent: the first user turn is Gemini's regenerated context block, then the
    first stored user message (ours) as it is; no other snapshot anywhere in the request."""
    first_user = contents[0]
    assert first_user["role"] == "user"
    texts = [p.get("text") or "" for p in first_user["parts"]]
    assert len(texts) == 2 and texts[0].startswith("<session_context>")
    assert sum(t.startswith("<state_snapshot>") for t in _texts(contents)) == 1
    return texts[1]


def test_the_resumed_request_starts_from_our_summary(compacted: dict) -> None:
    ours = _our_summary(compacted["checkpoint"], compacted["summaries"])
    assert _sent_summary(compacted["first"][0]["contents"]) == ours  # the whole summary we wrote, byte for byte


def test_the_resumed_request_holds_the_kept_tail_and_nothing_before_the_cut(compacted: dict) -> None:
    before_calls = _calls(compacted["before"])
    kept_ids = [m["id"] for m in compacted["checkpoint"] if m.get("type") == "gemini"]
    kept_calls = _kept_calls(compacted["checkpoint"])
    assert kept_ids and kept_calls, "the kept tail has replies with tool calls"
    summarized = [c for c in before_calls if c not in kept_calls]
    assert summarized, "some calls were summarized"
    sent = _calls(compacted["first"][0]["contents"])
    assert sent == kept_calls  # the kept calls, in order, once each
    assert not set(sent) & set(summarized)
    assert not any("STEP-ONE" in t and not t.startswith("<state_snapshot>") for t in _texts(compacted["first"][0]["contents"]))
    # every result answers a call of the request
    results = [_call_id(p["functionResponse"]) for c in compacted["first"][0]["contents"] for p in c.get("parts") or ()
               if "functionResponse" in p]
    assert set(results) <= set(sent)


def test_a_second_resume_sends_the_same_history(compacted: dict) -> None:
    first = compacted["first"][0]["contents"]
    second = compacted["second"][0]["contents"]
    first_prompt = next(i for i, c in enumerate(first) if any("RESUME-ONE" in (p.get("text") or "") for p in c["parts"]))
    assert [c["role"] for c in second[1:first_prompt]] == [c["role"] for c in first[1:first_prompt]]
    assert _calls(second[:first_prompt]) == _calls(first[:first_prompt])
    assert _sent_summary(second) == _our_summary(compacted["checkpoint"], compacted["summaries"])  # the same, whole
    assert any("RESUME-ONE" in t for t in _texts(second))  # and the first resume's turn


def test_a_second_compaction_resumes_from_the_new_summary_only(compacted: dict) -> None:
    contents = compacted["third"][0]["contents"]
    ours = _our_summary(compacted["checkpoint2"], compacted["summaries2"])
    assert ours != _our_summary(compacted["checkpoint"], compacted["summaries"])
    assert _sent_summary(contents) == ours
    kept = _kept_calls(compacted["checkpoint2"])
    sent = _calls(contents)
    assert sent == kept
    summarized = [c for c in _calls(compacted["second"][-1]["contents"]) if c not in kept]
    assert summarized and not set(sent) & set(summarized)


def test_report_totals_are_the_same_before_and_after(compacted: dict, tmp_path: Path) -> None:
    """The usage recorded in the chat is neither lost nor counted twice by the compaction."""
    from batchcompact.adapters.gemini.read import read

    before = tmp_path / "before.jsonl"
    before.write_text(compacted["original"])
    after = read(compacted["chat"])
    assert after.compactable
    original_usage = _usage_by_id(before)
    assert original_usage
    assert {k: v for k, v in _usage_by_id(compacted["chat"]).items() if k in original_usage} == original_usage


def _usage_by_id(path: Path) -> dict[str, dict]:
    """Each reply id's last recorded tokens, over every record of the file (last write wins)."""
    out: dict[str, dict] = {}
    for line in path.read_text().splitlines():
        record = json.loads(line)
        messages = record["$set"].get("messages") or [] if isinstance(record.get("$set"), dict) else [record]
        for message in messages:
            if isinstance(message, dict) and message.get("type") == "gemini" and message.get("tokens"):
                out[message["id"]] = message["tokens"]
    return out
