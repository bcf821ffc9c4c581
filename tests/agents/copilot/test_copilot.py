"""GitHub Copilot CLI event logs: detection, the reader, the trigger, the compaction written and read back,
bad input; on the logs recorded with the real CLI (tests/data/recorded/copilot-cli, `record.py copilot`)."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest
from click.testing import CliRunner

from batchcompact.adapters.copilot.read import read
from batchcompact.adapters.copilot.trigger import copilot_trigger
from batchcompact.agents import tool_table
from batchcompact.cli import cli as main
from batchcompact.core.context import build_session_context
from batchcompact.formats.detect import detect_session_agent

RECORDED = Path(__file__).parents[2] / "data" / "recorded" / "copilot-cli"
TOOLS = RECORDED / "session-tools.jsonl"
COMPACTED = RECORDED / "session-compacted.jsonl"


def _events(path: Path) -> list[dict]:
    return [json.loads(line) for line in path.read_text().splitlines()]


def _write(path: Path, events: list[dict]) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text("".join(json.dumps(e) + "\n" for e in events))
    return path


def _log(tmp_path: Path, source: Path = TOOLS) -> Path:
    """The recorded log where Copilot keeps it: session-state/<id>/events.jsonl."""
    session_id = _events(source)[0]["data"]["sessionId"]
    target = tmp_path / ".copilot" / "session-state" / session_id / "events.jsonl"
    target.parent.mkdir(parents=True)
    shutil.copyfile(source, target)
    return target


def _plan(path: Path, *args: str) -> dict:
    result = CliRunner().invoke(main, ["plan", "--format", "jsonl", *args, str(path)])
    assert result.exit_code == 0, result.output
    return json.loads(result.stdout.splitlines()[0])


def _run(*args: str) -> CliRunner:
    return CliRunner().invoke(main, ["run", "--min-age", "0", *args])


def _messages(session) -> list[dict]:
    return [m.message for m in build_session_context(session.path_entries()).messages]


def _calls(messages: list[dict]) -> list[str]:
    return [b["name"] for m in messages if m["role"] == "assistant" for b in m["content"] if b["type"] == "toolCall"]


def test_recorded_logs_are_copilot_by_content(tmp_path: Path) -> None:
    renamed = tmp_path / "x.jsonl"
    shutil.copyfile(TOOLS, renamed)
    assert detect_session_agent(renamed) == "copilot"
    # a log whose first lines were cut off is still told by its events
    _write(renamed, _events(TOOLS)[5:])
    assert detect_session_agent(renamed) == "copilot"


def test_the_reader_follows_copilot_s_loader() -> None:
    session = read(TOOLS)
    events = _events(TOOLS)
    assert session.compactable and session.session_id == events[0]["data"]["sessionId"]
    messages = _messages(session)
    assert [m["role"] for m in messages[:2]] == ["user", "assistant"]  # system.message is regenerated: none
    assert _calls(messages) == ["view", "create", "edit", "bash", "glob", "grep", "bash"]
    results = [m["toolCallId"] for m in messages if m["role"] == "toolResult"]
    assert len(results) == len(set(results)) == 7
    assert messages[0]["content"][0]["text"].endswith("STEP-ONE: read notes, write and fix hello.py")
    # usage: the usage record with the same apiCallId, input includes cache reads
    last = [m for m in messages if m["role"] == "assistant"][-1]
    record = [e for e in events if e["type"] == "session.usage_record"][-1]["data"]["usage"]
    assert last["usage"]["input"] == record["inputTokens"] - record["cacheReadTokens"]
    assert last["usage"]["cacheRead"] == record["cacheReadTokens"]
    assert session.context_window == record["maxPromptTokens"] == 64_000


def test_copilot_s_own_compaction_is_read_as_a_compaction() -> None:
    session = read(COMPACTED)
    complete = next(e for e in _events(COMPACTED) if e["type"] == "session.compaction_complete")
    compaction = next(e for e in session.path_entries() if e.type == "compaction")
    assert compaction.id == complete["id"] and compaction.data["summary"] == complete["data"]["summaryContent"]
    assert compaction.data["firstKeptEntryId"] == compaction.id  # /compact keeps nothing from before it
    messages = _messages(session)
    assert messages[0]["role"] == "compactionSummary"
    assert messages[1]["content"][0]["text"].endswith("STEP-THREE: carry on")
    assert _calls(messages) == ["view"]


def test_a_sub_agent_s_events_are_not_the_conversation() -> None:
    """Copilot resumed this log with [user, assistant (task), its result, assistant]: the sub-agent's own
    messages (events with `agentId`) are not sent again."""
    events = _events(RECORDED / "session-subagent.jsonl")
    assert any(e.get("agentId") and e["type"] == "assistant.message" for e in events)
    messages = _messages(read(RECORDED / "session-subagent.jsonl"))
    assert [m["role"] for m in messages] == ["user", "assistant", "toolResult", "assistant"]
    assert _calls(messages) == ["task"]


def test_copilot_s_background_compactions_keep_what_was_recorded_meanwhile() -> None:
    """Recorded with a 40,000-token prompt limit: two background compactions (`trigger: threshold`) each
    started above 80% and completed while the turn went on. Resumed, Copilot sent [its summary message,
    the final reply]: the reply recorded between the second start and its completion, nothing else."""
    path = RECORDED / "session-background.jsonl"
    events = _events(path)
    starts = [e for e in events if e["type"] == "session.compaction_start"]
    assert [s["data"]["trigger"] for s in starts] == ["threshold", "threshold"]
    assert all(s["data"]["currentTokens"] > 0.8 * s["data"]["tokenLimit"] for s in starts)
    session = read(path)
    first, second = [e for e in session.path_entries() if e.type == "compaction"]
    start = events.index(starts[0])
    meanwhile = next(e for e in events[start:] if e["type"] == "assistant.message")
    assert first.data["firstKeptEntryId"] == meanwhile["id"]  # recorded between its start and completion
    messages = _messages(session)
    assert [m["role"] for m in messages] == ["compactionSummary", "assistant"]
    assert messages[0]["summary"] == second.data["summary"] and messages[1]["content"][0]["text"] == "JUDGE-OK"


def test_messages_recorded_during_a_background_compaction_are_kept(tmp_path: Path) -> None:
    events = _events(TOOLS)
    second = next(i for i, e in enumerate(events) if e["type"] == "user.message" and "STEP-TWO" in e["data"]["content"])
    events.insert(second, {"type": "session.compaction_start", "data": {"compactionAttemptId": "a1"},
                           "id": "start-1", "timestamp": events[second]["timestamp"], "parentId": None})
    events.append({"type": "session.compaction_complete", "id": "done-1", "timestamp": events[-1]["timestamp"],
                   "parentId": None, "data": {"success": True, "compactionAttemptId": "a1", "summaryContent": "S"}})
    session = read(_write(tmp_path / "bg.jsonl", events))
    messages = _messages(session)
    assert messages[0]["summary"] == "S"
    assert messages[1]["content"][0]["text"].endswith("STEP-TWO: look around")
    assert _calls(messages) == ["glob", "grep", "bash"]


@pytest.mark.parametrize(
    ("inputs", "expected"),
    [
        ({"recorded_window": 64_000}, (64_000, "copilot maxPromptTokens", 51_200)),
        ({"recorded_window": 64_000, "override_window": 100_000}, (100_000, "--context-window", 80_000)),
        ({"table_window": 1_047_576}, (1_047_576, "price table", 838_060)),
        ({}, (None, "unknown", None)),
    ],
)
def test_copilot_trigger(inputs: dict, expected: tuple) -> None:
    trigger = copilot_trigger(reserve_tokens=16_384, **inputs)
    assert (trigger.window, trigger.window_source, trigger.threshold) == expected


@pytest.mark.parametrize(("input_tokens", "status"), [(51_000, "skip"), (52_000, "compact")])
def test_a_log_compacts_where_copilot_would(input_tokens: int, status: str, tmp_path: Path) -> None:
    events = _events(TOOLS)
    last = [e for e in events if e["type"] == "session.usage_record"][-1]["data"]["usage"]
    last.update(inputTokens=input_tokens, cacheReadTokens=input_tokens // 2)
    row = _plan(_write(tmp_path / "big.jsonl", events), "--keep-recent-tokens", "60")
    assert (row["status"], row["threshold"], row["window_source"]) == (status, 51_200, "copilot maxPromptTokens")


def test_the_tools_are_known_to_the_builtin_summarizer() -> None:
    table = tool_table()
    assert (table["view"], table["create"], table["bash"]) == ("read", "write", "command")


def test_run_appends_copilot_s_compaction_events_and_they_read_back(tmp_path: Path) -> None:
    log = _log(tmp_path / "home")
    original = log.read_bytes()
    planned = _plan(log, "--force", "--keep-recent-tokens", "60")
    assert planned["status"] == "compact" and planned["window_source"] == "copilot maxPromptTokens"
    assert planned["read_files"] and planned["modified_files"]
    out = tmp_path / "out"
    result = _run("--force", "--keep-recent-tokens", "60", "--output-dir", str(out),
                  str(tmp_path / "home" / ".copilot" / "session-state"))
    assert result.exit_code == 0, result.output
    written = out / log.parent.name / "events.jsonl"
    assert log.read_bytes() == original  # the original is untouched
    data = written.read_bytes()
    assert data.startswith(original)  # old events are never touched
    added = [json.loads(line) for line in data[len(original):].decode().splitlines()]
    assert added[0]["type"] == "session.compaction_start" and added[-1]["type"] == "session.compaction_complete"
    assert added[0]["parentId"] == _events(TOOLS)[-1]["id"]
    assert all(b["parentId"] == a["id"] for a, b in zip(added, added[1:], strict=False))
    assert {e["type"] for e in added[1:-1]} <= {"user.message", "assistant.message", "tool.execution_complete"}
    assert all(e["data"].get("source") == "batchcompact-kept" for e in added if e["type"] == "user.message")
    complete = added[-1]["data"]
    assert complete["compactionAttemptId"] == added[0]["data"]["compactionAttemptId"]
    assert complete["success"] is True and complete["trigger"] == "manual"
    assert "hello.py" in complete["summaryContent"]  # the built-in summary names the files
    assert "<modified-files>" in complete["summaryContent"]  # the file lists, for the next compaction
    assert "session.usage_record" not in {e["type"] for e in added}
    # read back: summary + the kept tail, as Copilot rebuilds it
    before, after = read(log), read(written)
    kept = _messages(after)
    assert kept[0]["role"] == "compactionSummary" and kept[0]["summary"] == complete["summaryContent"]
    tail = [json.dumps(m["content"]) for m in _messages(before)][-(len(kept) - 1):]
    assert [json.dumps(m["content"]) for m in kept[1:]] == tail
    # Copilot's counts: the messages before, and how many fewer after (the summary is one)
    assert complete["preCompactionMessagesLength"] == len(_messages(before))
    assert complete["messagesRemoved"] == len(_messages(before)) - len(kept)
    again = _plan(written, "--threshold-tokens", "1")
    assert again["reason"] == "already compacted"


def _append_turn(log: Path) -> None:
    """A later prompt and a reply that views a file, chained after the last event (our compaction)."""
    parent = _events(log)[-1]["id"]
    events = [
        ("user.message", {"content": "more", "transformedContent": "more"}),
        ("assistant.turn_start", {"turnId": "0"}),
        ("assistant.message", {"messageId": "m1", "content": "", "toolRequests": [
            {"toolCallId": "later-call", "name": "view", "arguments": {"path": "/p/extra.txt"}}]}),
        ("tool.execution_complete", {"toolCallId": "later-call", "success": True, "result": {"content": "x" * 400}}),
        ("assistant.message", {"messageId": "m2", "content": "done " * 80, "toolRequests": []}),
        ("assistant.turn_end", {"turnId": "0"}),
    ]
    with log.open("a") as out:
        for n, (kind, data) in enumerate(events):
            out.write(json.dumps({"type": kind, "data": data, "id": f"later-{n}", "timestamp": "2026-11-26T00:00:00Z",
                                  "parentId": parent}) + "\n")
            parent = f"later-{n}"


def test_file_lists_carry_over_to_the_next_compaction(tmp_path: Path) -> None:
    log = _log(tmp_path / "home")
    first = _plan(log, "--force", "--keep-recent-tokens", "60")
    assert first["read_files"] and first["modified_files"]
    result = _run("--force", "--keep-recent-tokens", "60", "--in-place", "--no-backup", str(log))
    assert result.exit_code == 0, result.output
    _append_turn(log)  # the agent goes on; the next compaction keeps the first one's lists
    second = _plan(log, "--force", "--keep-recent-tokens", "100")
    assert second["status"] == "compact" and "/p/extra.txt" in second["read_files"]
    assert set(first["read_files"]) <= set(second["read_files"]) | set(second["modified_files"])
    assert set(first["modified_files"]) <= set(second["modified_files"])


def test_logs_named_alike_given_one_by_one_are_refused_for_one_output_dir(tmp_path: Path) -> None:
    a = _write(tmp_path / "a" / "events.jsonl", _events(TOOLS))
    b = _write(tmp_path / "b" / "events.jsonl", _events(TOOLS))
    out = tmp_path / "out"
    result = _run("--force", "--output-dir", str(out), str(a), str(b))
    assert result.exit_code == 2
    assert result.output.splitlines()[-1] == (f"Error: --output-dir {out}: {a} and {b} would both be written to "
                                              f"{out / 'events.jsonl'}; name the folder that holds them instead")
    assert not out.exists() or not list(out.rglob("*.jsonl"))
    result = _run("--force", "--keep-recent-tokens", "60", "--output-dir", str(out), str(tmp_path / "a"),
                  str(tmp_path / "b"))
    assert result.exit_code == 2  # two folders: their logs would collide too
    result = _run("--force", "--keep-recent-tokens", "60", "--output-dir", str(out), str(tmp_path))
    assert result.exit_code == 0 and "2 compacted" in result.output
    assert sorted(p.relative_to(out).as_posix() for p in out.rglob("events.jsonl")) == ["a/events.jsonl",
                                                                                        "b/events.jsonl"]


def test_in_place_keeps_a_backup_and_report_counts_the_same(tmp_path: Path) -> None:
    log = _log(tmp_path / "home")
    original = log.read_bytes()

    def totals() -> list:
        result = CliRunner().invoke(main, ["report", "--format", "json", "--no-cache", str(log.parent)])
        assert result.exit_code == 0, result.output
        return json.loads(result.stdout)

    before = totals()
    assert before
    result = _run("--force", "--keep-recent-tokens", "60", "--in-place", str(log))
    assert result.exit_code == 0, result.output
    assert "1 compacted" in result.output
    assert log.read_bytes().startswith(original) and len(log.read_bytes()) > len(original)
    assert next(log.parent.glob("events.jsonl.bak*")).read_bytes() == original
    assert totals() == before


def test_a_log_that_ends_mid_turn_is_not_compacted(tmp_path: Path) -> None:
    events = _events(TOOLS)
    cut = next(i for i, e in enumerate(events) if e["type"] == "tool.execution_start" and e["data"]["toolName"] == "grep")
    log = _write(tmp_path / "s" / "events.jsonl", events[: cut + 1])
    original = log.read_bytes()
    line = cut  # the assistant.message asking for grep, the line before
    row = _plan(log, "--force", "--keep-recent-tokens", "60")
    assert row["status"] == "skip"
    assert row["reason"] == (f"line {line}: the events end mid-turn (tool call {events[cut]['data']['toolCallId']} "
                             "has no result): Copilot CLI may still be running it; not compacted")
    result = _run("--force", "--keep-recent-tokens", "60", "--in-place", str(log))
    assert result.exit_code == 0 and "1 skipped" in result.output
    assert log.read_bytes() == original and not list(log.parent.glob("*.bak*"))
    # a turn started and nothing after it: the same
    start = max(i for i, e in enumerate(events) if e["type"] == "assistant.turn_start")
    _write(log, events[: start + 1])
    assert _plan(log, "--force")["reason"].startswith(f"line {start + 1}: the events end mid-turn (a turn started")


@pytest.mark.parametrize("kind", ["session.snapshot_rewind", "session.context_cleared"])
def test_a_history_edit_not_followed_leaves_the_log_alone(kind: str, tmp_path: Path) -> None:
    events = _events(TOOLS)
    events.insert(20, {"type": kind, "data": {}, "id": "edit-1", "timestamp": events[20]["timestamp"],
                       "parentId": events[19]["id"]})
    log = _write(tmp_path / "s" / "events.jsonl", events)
    row = _plan(log, "--force", "--keep-recent-tokens", "60")
    assert row["status"] == "skip"
    assert row["reason"] == f"line 21: {kind} edits the history in a way batchcompact does not follow; not compacted"


def test_a_torn_last_line_fails_with_its_line_and_nothing_is_written(tmp_path: Path) -> None:
    log = _log(tmp_path / "home")
    with log.open("a") as out:
        out.write('{"type":"assistant.turn_start","data":{"turnId"')
    original = log.read_bytes()
    lines = original.count(b"\n") + 1
    result = _run("--force", "--keep-recent-tokens", "60", "--in-place", str(log))
    assert result.exit_code == 1
    assert f"line {lines}: torn last line" in result.output
    assert log.read_bytes() == original and not list(log.parent.glob("*.bak*"))


def test_unknown_event_types_are_kept_and_passed_over(tmp_path: Path) -> None:
    events = _events(TOOLS)
    future = {"type": "session.future_thing", "data": {"anything": [1, 2]}, "id": "f-1",
              "timestamp": events[10]["timestamp"], "parentId": events[9]["id"]}
    events.insert(10, future)
    log = _write(tmp_path / "s" / "events.jsonl", events)
    session = read(log)
    assert session.compactable and not session.problems
    assert _calls(_messages(session)) == ["view", "create", "edit", "bash", "glob", "grep", "bash"]
    result = _run("--force", "--keep-recent-tokens", "60", "--in-place", "--no-backup", str(log))
    assert result.exit_code == 0 and "1 compacted" in result.output
    assert json.loads(log.read_text().splitlines()[10]) == future


def test_an_otel_export_is_reported_not_compacted(tmp_path: Path) -> None:
    span = {"type": "span", "traceId": "t", "spanId": "s", "name": "chat gpt-4.1",
            "attributes": {"gen_ai.operation.name": "chat", "gen_ai.usage.input_tokens": 10}}
    path = _write(tmp_path / "otel" / "copilot-otel.jsonl", [{"type": "metric", "name": "gen_ai.client.token.usage"},
                                                             span])
    assert detect_session_agent(path) == "copilot" and not read(path).problems
    row = _plan(path, "--force")
    assert row["reason"] == "a Copilot CLI OpenTelemetry export: reported, not compacted"


def test_the_preset_keeps_batchcompact_s_tail() -> None:
    row = _plan(TOOLS, "--preset", "copilot-cli", "--force")
    assert row["reason"] == "nothing to summarize: everything fits in --keep-recent-tokens (20,000)"
    assert (row["threshold"], row["window_source"]) == (51_200, "copilot maxPromptTokens")
