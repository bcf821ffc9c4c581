"""Gemini CLI and Qwen Code chats: detection, readers, triggers, the compaction written and read back,
on the transcripts recorded with the real CLIs (tests/data/recorded, `record.py` re-records them)."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest
from click.testing import CliRunner

from batchcompact.adapters.gemini.read import read as read_gemini
from batchcompact.adapters.gemini.trigger import gemini_trigger
from batchcompact.adapters.qwen.read import read as read_qwen
from batchcompact.adapters.qwen.trigger import qwen_trigger
from batchcompact.agents import get, tool_table
from batchcompact.cli import cli as main
from batchcompact.core.context import build_session_context
from batchcompact.formats.detect import detect_session_agent

RECORDED = Path(__file__).parents[2] / "data" / "recorded"
GEMINI = RECORDED / "gemini-cli"
QWEN = RECORDED / "qwen-code"


def _records(path: Path) -> list[dict]:
    return [json.loads(line) for line in path.read_text().splitlines()]


@pytest.mark.parametrize(
    ("path", "fmt"),
    [
        (GEMINI / "session-tools.jsonl", "gemini"),
        (GEMINI / "session-compressed.jsonl", "gemini"),
        (GEMINI / "legacy-session.json", "gemini"),
        (QWEN / "session-tools.jsonl", "qwen"),
        (QWEN / "session-compressed.jsonl", "qwen"),
    ],
)
def test_recorded_chats_are_told_apart_by_content(path: Path, fmt: str, tmp_path: Path) -> None:
    renamed = tmp_path / "chat.jsonl"  # by content, not by name or folder
    shutil.copyfile(path, renamed)
    assert detect_session_agent(renamed) == fmt


def test_a_qwen_record_is_not_taken_for_claude_code() -> None:
    from batchcompact.formats.detect import detect_line

    qwen = _records(QWEN / "session-tools.jsonl")
    assert {detect_line(r) for r in qwen} == {"qwen"}
    claude = {"type": "user", "uuid": "u1", "parentUuid": None, "sessionId": "s",
              "message": {"role": "user", "content": "hi"}}
    assert detect_line(claude) == "claude"


def test_gemini_reader_follows_the_loader() -> None:
    session = read_gemini(GEMINI / "session-tools.jsonl")
    assert session.compactable and session.session_id == _records(GEMINI / "session-tools.jsonl")[0]["sessionId"]
    messages = [e.message for e in session.path_entries() if e.type == "message"]
    calls = [b["name"] for m in messages if m["role"] == "assistant" for b in m["content"] if b["type"] == "toolCall"]
    assert calls == ["read_file", "write_file", "replace", "run_shell_command", "glob", "grep_search", "write_todos",
                     "list_directory"]
    # each call answered once, though Gemini CLI records every result twice
    results = [m["toolCallId"] for m in messages if m["role"] == "toolResult"]
    assert len(results) == len(calls) == len(set(results))
    # usage: input includes cached, thoughts beside the output
    last = [m for m in messages if m["role"] == "assistant"][-1]
    tokens = next(r["tokens"] for r in reversed(_records(GEMINI / "session-tools.jsonl")) if r.get("tokens"))
    assert last["usage"] == {"input": tokens["input"] - tokens["cached"] + tokens["tool"],
                             "output": tokens["output"] + tokens["thoughts"], "cacheRead": tokens["cached"],
                             "cacheWrite": 0, "totalTokens": tokens["total"]}
    legacy = read_gemini(GEMINI / "legacy-session.json")  # the same final state as one JSON document
    assert [(e.id, e.message["role"]) for e in legacy.path_entries() if e.type == "message"] == [
        (e.id, e.message["role"]) for e in session.path_entries() if e.type == "message"]
    plan = CliRunner().invoke(main, ["plan", "--force", "--format", "jsonl", str(GEMINI / "legacy-session.json")])
    assert json.loads(plan.stdout.splitlines()[0])["reason"].startswith("legacy Gemini CLI chat")


def test_gemini_own_compression_is_read_as_a_compaction() -> None:
    session = read_gemini(GEMINI / "session-compressed.jsonl")
    path = session.path_entries()
    compaction = next(e for e in path if e.type == "compaction")
    assert compaction.data["summary"] == "<state_snapshot>JUDGE-OK SNAPSHOT</state_snapshot>"
    context = build_session_context(path)
    roles = [m.message["role"] for m in context.messages]
    assert roles[0] == "compactionSummary" and "toolResult" not in roles  # everything before it summarized


def test_qwen_own_compression_is_read_as_a_compaction() -> None:
    session = read_qwen(QWEN / "session-compressed.jsonl")
    assert session.compactable
    context = build_session_context(session.path_entries())
    first, second = context.messages[0].message, context.messages[1].message
    assert first["role"] == "compactionSummary" and first["summary"].startswith("<state_snapshot>")
    assert "Recently accessed file" in second["content"][0]["text"]  # Qwen's restored files are kept
    assert session.context_window == 1_000_000


def test_rewind_and_rewritten_messages(tmp_path: Path) -> None:
    chat = tmp_path / "session-x.jsonl"
    lines = [
        {"sessionId": "s1", "projectHash": "h", "startTime": "2026-01-01T00:00:00.000Z", "kind": "main"},
        {"id": "u1", "timestamp": "2026-01-01T00:00:01.000Z", "type": "user", "content": [{"text": "first"}]},
        {"id": "g1", "timestamp": "2026-01-01T00:00:02.000Z", "type": "gemini", "content": "partial"},
        {"id": "g1", "timestamp": "2026-01-01T00:00:02.000Z", "type": "gemini", "content": "whole answer",
         "tokens": {"input": 10, "output": 2, "cached": 4, "thoughts": 1, "tool": 0, "total": 13}, "model": "m"},
        {"id": "u2", "timestamp": "2026-01-01T00:00:03.000Z", "type": "user", "content": [{"text": "dropped"}]},
        {"$rewindTo": "u2"},
        {"id": "u3", "timestamp": "2026-01-01T00:00:04.000Z", "type": "user", "content": [{"text": "kept"}]},
    ]
    chat.write_text("".join(json.dumps(r) + "\n" for r in lines))
    session = read_gemini(chat)
    texts = [b.get("text") for e in session.path_entries() for b in e.message["content"]]
    assert texts == ["first", "whole answer", "kept"]
    assert session.path_entries()[1].line == 4


def test_bad_lines_are_reported_with_file_and_line(tmp_path: Path) -> None:
    gemini = tmp_path / "session-bad.jsonl"
    text = (GEMINI / "session-tools.jsonl").read_text().splitlines()
    text[4] = text[4][:40]
    gemini.write_text("\n".join(text) + "\n")
    qwen = tmp_path / "qwen-bad.jsonl"
    qtext = (QWEN / "session-tools.jsonl").read_text().splitlines()
    qtext[2] = "{not json"
    qwen.write_text("\n".join(qtext) + "\n")
    legacy = tmp_path / "session-legacy.json"
    legacy.write_text((GEMINI / "legacy-session.json").read_text().replace('"messages": [', '"messages": [,', 1))
    result = CliRunner().invoke(main, ["validate", str(gemini), str(qwen), str(legacy)])
    assert result.exit_code == 1
    assert f"{gemini}:5:" in result.output
    assert f"{qwen}:3:" in result.output
    assert f"{legacy}:6:" in result.output


def test_triggers_are_the_agents_own() -> None:
    gemini = gemini_trigger(messages=[{"role": "assistant", "model": "gemini-2.5-pro"}])
    assert (gemini.window, gemini.threshold) == (1_048_576, 524_288)
    assert gemini_trigger(messages=[{"role": "assistant", "model": "gemma-4-31b-it"}]).threshold == 128_000
    assert qwen_trigger(recorded_window=1_000_000).threshold == 850_000  # 85%
    assert qwen_trigger().threshold == 167_000  # 200k default: window - 20,000 - 13,000
    assert qwen_trigger(table_window=131_072).threshold == 98_072
    assert get("gemini").presets["gemini-cli"]["threshold_percent"] == 50.0


def test_their_tools_are_known_to_the_builtin_summarizer() -> None:
    table = tool_table()
    assert {table[n] for n in ("read_file", "write_file", "replace", "run_shell_command", "write_todos")} == {
        "read", "write", "edit", "command", "todos"}
    assert table["todo_write"] == "todos"


def _run(args: list[str]) -> None:
    result = CliRunner().invoke(main, ["run", "--force", "--min-age", "0", *args])
    assert result.exit_code == 0, result.output
    assert "1 compacted" in result.output


def _plan(path: Path, *args: str) -> dict:
    result = CliRunner().invoke(main, ["plan", "--force", "--format", "jsonl", *args, str(path)])
    assert result.exit_code == 0, result.output
    return json.loads(result.stdout.splitlines()[0])


def _append_gemini_turn(chat: Path) -> None:
    """A later prompt and a reply that reads a file, as Gemini CLI appends them after a checkpoint."""
    records = [
        {"id": "later-user", "timestamp": "2026-11-24T00:00:00.000Z", "type": "user", "content": [{"text": "more"}]},
        {"id": "later-reply", "timestamp": "2026-11-24T00:00:01.000Z", "type": "gemini", "content": "",
         "model": "gemini-2.5-flash", "tokens": {"input": 50, "output": 5, "cached": 0, "thoughts": 0, "tool": 0,
                                                 "total": 55},
         "toolCalls": [{"id": "later-call", "name": "read_file", "args": {"file_path": "/p/extra.txt"},
                        "result": [{"functionResponse": {"id": "later-call", "name": "read_file",
                                                         "response": {"output": "x" * 400}}}],
                        "status": "success", "timestamp": "2026-11-24T00:00:01.000Z"}]},
        {"id": "later-end", "timestamp": "2026-11-24T00:00:02.000Z", "type": "gemini", "content": "done " * 80},
    ]
    with chat.open("a") as out:
        out.writelines(json.dumps(r) + "\n" for r in records)


def _append_qwen_turn(chat: Path) -> None:
    """A later prompt and a reply that reads a file, chained after the last record (our compaction)."""
    parent = _records(chat)[-1]["uuid"]
    base = {"sessionId": "s", "cwd": "/p", "version": "0.24.4"}
    records = [
        {**base, "uuid": "q1", "parentUuid": parent, "timestamp": "2026-11-24T00:00:00.000Z", "type": "user",
         "message": {"role": "user", "parts": [{"text": "more"}]}},
        {**base, "uuid": "q2", "parentUuid": "q1", "timestamp": "2026-11-24T00:00:01.000Z", "type": "assistant",
         "model": "qwen3-coder-plus", "message": {"role": "model", "parts": [
             {"functionCall": {"id": "later-call", "name": "read_file", "args": {"file_path": "/p/extra.txt"}}}]}},
        {**base, "uuid": "q3", "parentUuid": "q2", "timestamp": "2026-11-24T00:00:02.000Z", "type": "tool_result",
         "message": {"role": "user", "parts": [{"functionResponse": {"id": "later-call", "name": "read_file",
                                                                      "response": {"output": "x" * 400}}}]}},
        {**base, "uuid": "q4", "parentUuid": "q3", "timestamp": "2026-11-24T00:00:03.000Z", "type": "assistant",
         "model": "qwen3-coder-plus", "message": {"role": "model", "parts": [{"text": "done " * 80}]}},
    ]
    with chat.open("a") as out:
        out.writelines(json.dumps(r) + "\n" for r in records)


@pytest.mark.parametrize(("folder", "keep", "append"), [(GEMINI, 300, _append_gemini_turn),
                                                       (QWEN, 100, _append_qwen_turn)])
def test_compaction_reads_back_and_file_lists_carry_over(folder: Path, keep: int, append, tmp_path: Path) -> None:
    chat = tmp_path / "session-tools.jsonl"
    shutil.copyfile(folder / "session-tools.jsonl", chat)
    original = chat.read_bytes()
    first = _plan(chat, "--keep-recent-tokens", str(keep))
    assert first["status"] == "compact" and first["read_files"] and first["modified_files"]
    _run(["--keep-recent-tokens", str(keep), "--in-place", "--no-backup", str(chat)])
    assert chat.read_bytes().startswith(original)  # only appended
    again = CliRunner().invoke(main, ["plan", "--format", "jsonl", "--threshold-tokens", "1", str(chat)])
    assert json.loads(again.stdout.splitlines()[0])["reason"] == "already compacted"
    # the agent goes on; the next compaction keeps the first one's file lists (their calls are summarized)
    append(chat)
    second = _plan(chat, "--keep-recent-tokens", "100")
    assert second["status"] == "compact"
    assert "/p/extra.txt" in second["read_files"]
    assert set(first["read_files"]) <= set(second["read_files"]) | set(second["modified_files"])
    assert set(first["modified_files"]) <= set(second["modified_files"])


def test_the_builtin_summary_names_their_files(tmp_path: Path) -> None:
    chat = tmp_path / "session-tools.jsonl"
    shutil.copyfile(GEMINI / "session-tools.jsonl", chat)
    _run(["--keep-recent-tokens", "60", "--in-place", "--no-backup", str(chat)])
    checkpoint = _records(chat)[-1]["$set"]["messages"]
    summary = next(m for m in checkpoint if "batchcompact" in m)["content"][0]["text"]
    assert "hello.py" in summary and "notes.txt" in summary


@pytest.mark.parametrize(("folder", "source"), [(GEMINI, "gemini"), (QWEN, "qwen")])
def test_report_totals_are_the_same_after_compaction(folder: Path, source: str, tmp_path: Path) -> None:
    before, after = tmp_path / "before", tmp_path / "after"
    before.mkdir()
    shutil.copyfile(folder / "session-tools.jsonl", before / "chat.jsonl")
    shutil.copytree(before, after)
    _run(["--keep-recent-tokens", "300", "--in-place", "--no-backup", str(after / "chat.jsonl")])
    assert (after / "chat.jsonl").stat().st_size > (before / "chat.jsonl").stat().st_size

    def totals(folder: Path) -> list:
        result = CliRunner().invoke(main, ["report", "--format", "json", "--no-cache", str(folder)])
        assert result.exit_code == 0, result.output
        return json.loads(result.stdout)

    assert totals(before) == totals(after)
    if get(source).usage:  # the agent's report reader is registered: the totals are real rows
        assert totals(before)


@pytest.mark.parametrize(("tokens", "status"), [(524_000, "skip"), (530_000, "compact")])
def test_a_gemini_chat_compacts_where_gemini_cli_would(tokens: int, status: str, tmp_path: Path) -> None:
    records = _records(GEMINI / "session-tools.jsonl")
    last = next(r for r in reversed(records) if r.get("tokens"))
    last["tokens"] = {"input": tokens - 200, "output": 100, "cached": 0, "thoughts": 100, "tool": 0, "total": tokens}
    chat = tmp_path / "session-big.jsonl"
    chat.write_text("".join(json.dumps(r) + "\n" for r in records))
    result = CliRunner().invoke(main, ["plan", "--format", "jsonl", "--keep-recent-tokens", "100", str(chat)])
    row = json.loads(result.stdout.splitlines()[0])
    assert (row["status"], row["threshold"], row["window_source"]) == (status, 524_288, "gemini cli tokenLimit")


@pytest.mark.parametrize(("prompt", "status"), [(840_000, "skip"), (860_000, "compact")])
def test_a_qwen_chat_compacts_where_qwen_code_would(prompt: int, status: str, tmp_path: Path) -> None:
    records = _records(QWEN / "session-tools.jsonl")
    last = next(r for r in reversed(records) if r.get("usageMetadata"))
    last["usageMetadata"] = {"promptTokenCount": prompt, "candidatesTokenCount": 10, "totalTokenCount": prompt + 10,
                             "cachedContentTokenCount": prompt // 2}
    chat = tmp_path / "big.jsonl"
    chat.write_text("".join(json.dumps(r) + "\n" for r in records))
    result = CliRunner().invoke(main, ["plan", "--format", "jsonl", "--keep-recent-tokens", "100", str(chat)])
    row = json.loads(result.stdout.splitlines()[0])
    assert (row["status"], row["threshold"], row["window_source"]) == (status, 850_000, "qwen contextWindowSize")


def test_gemini_cli_s_own_compression_threshold_setting_is_followed(tmp_path: Path) -> None:
    home = tmp_path / "home"
    (home / ".gemini").mkdir(parents=True)
    (home / ".gemini" / "settings.json").write_text(json.dumps({"model": {"compressionThreshold": 0.7}}))

    def threshold(*args: str) -> int:
        result = CliRunner().invoke(main, ["plan", "--format", "jsonl", *args, str(GEMINI / "session-tools.jsonl")],
                                    env={"HOME": str(home)})
        return json.loads(result.stdout.splitlines()[0])["threshold"]

    assert threshold() == 734_003  # 70% of 1,048,576
    assert threshold("--threshold-percent", "60") == 629_145  # the command line wins
    assert threshold("--no-agent-settings") == 524_288  # Gemini CLI's default, 50%


def test_a_gemini_sub_agent_chat_is_not_compacted(tmp_path: Path) -> None:
    records = _records(GEMINI / "session-tools.jsonl")
    for record in records:  # Gemini CLI files these under chats/<parent session id>/
        if "projectHash" in record:
            record["kind"] = "subagent"
    chat = tmp_path / "sub.jsonl"
    chat.write_text("".join(json.dumps(r) + "\n" for r in records))
    result = CliRunner().invoke(main, ["plan", "--format", "jsonl", "--keep-recent-tokens", "100",
                                       "--threshold-tokens", "1", str(chat)])
    assert json.loads(result.stdout.splitlines()[0])["reason"] == "sub-agent transcript"


@pytest.mark.parametrize("call_id", ["call-7", 0, 7])
def test_a_result_recorded_twice_is_read_once_whatever_its_id(call_id, tmp_path: Path) -> None:
    """Gemini CLI records a call's result in the call (`toolCalls[].result`) and may repeat it in a results-only
    user message: the reader keeps one. Both places name the call by the same id, a number as much as text
    (the reader's id for the call and for the repeat must be one)."""
    chat = tmp_path / "session-tools.jsonl"
    shutil.copyfile(GEMINI / "session-tools.jsonl", chat)
    response = {"functionResponse": {"id": call_id, "name": "read_file", "response": {"output": "x"}}}
    records = [
        {"id": "r-call", "timestamp": "2026-11-24T00:00:01.000Z", "type": "gemini", "content": "",
         "toolCalls": [{"id": call_id, "name": "read_file", "args": {"file_path": "/p/a.txt"},
                        "result": [response], "status": "success", "timestamp": "2026-11-24T00:00:01.000Z"}]},
        {"id": "r-again", "timestamp": "2026-11-24T00:00:02.000Z", "type": "user", "content": [response]},
    ]
    with chat.open("a") as out:
        out.writelines(json.dumps(r) + "\n" for r in records)
    entries = read_gemini(chat).entries
    results = [e for e in entries if (e.data.get("message") or {}).get("toolCallId") == str(call_id)]
    assert len(results) == 1
    again = next(e for e in entries if e.id == "r-again")
    assert again.data["type"] == "gemini_meta" and again.data["lineType"] == "repeated_results"
