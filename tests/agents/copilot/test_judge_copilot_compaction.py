"""The real GitHub Copilot CLI (npm @github/copilot 1.0.102) resumes our compacted sessions.

In a sandbox HOME the real CLI, offline (`COPILOT_OFFLINE=true`, a bring-your-own-key OpenAI-compatible
provider on 127.0.0.1), records a session whose fake model makes tool calls (view, create, edit, bash;
then, continued, glob, grep, bash). `batchcompact run --in-place` compacts its events.jsonl (Copilot's
own compaction events: start, the kept tail, complete with our summary); `copilot --continue -p …` then
runs twice. The first request of each resume must hold Copilot's summary message with our summary exactly
once, then the kept tail's calls and results in order and nothing from before the cut; the second resume
sends the same history plus the first resume's turn. Then the session is compacted again and resumed:
only the new summary. `report` counts the same usage before and after a compaction.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from agent_judges import (
    COPILOT,
    REPLY,
    FakeOpenAIChat,
    cache_dir,
    compact_in_place,
    copilot_logs,
    copilot_script,
    npm_cli,
    run_copilot,
)
from click.testing import CliRunner

from batchcompact.cli import cli as main

pytestmark = pytest.mark.slow

WRAPPER = "Some of the conversation history has been summarized to free up context."


@pytest.fixture(scope="module")
def copilot_bin() -> Path:
    return npm_cli(*COPILOT)


def _script(project: Path) -> dict:
    """The recorder's script plus one call for each resume."""
    return {**copilot_script(project),
            "RESUME-ONE": [("view", {"path": str(project / "hello.py")})],
            "RESUME-TWO": [("bash", {"command": "python3 hello.py", "description": "run it again"})],
            "RESUME-THREE": [("view", {"path": str(project / "notes.txt")})]}


def _copilot(binary: Path, home: Path, project: Path, api: FakeOpenAIChat, *args: str) -> list[dict]:
    """Run the CLI once; the bodies of the conversation requests it sent."""
    before = len(api.requests)
    done = run_copilot(binary, home, project, api.url, *args)
    assert done.returncode == 0, done.stderr[-2000:]
    assert REPLY in done.stdout
    return [r["body"] for r in api.requests[before:] if r["path"].endswith("/chat/completions")
            and isinstance(r["body"], dict) and r["body"].get("tools")]


def _report(log: Path) -> list:
    result = CliRunner().invoke(main, ["report", "--format", "json", "--no-cache", str(log.parent)])
    assert result.exit_code == 0, result.output
    return json.loads(result.stdout)


def _added(log: Path, before: str) -> list[dict]:
    """Our events appended after `before`: the compaction's start to its completion."""
    events = [json.loads(line) for line in log.read_text()[len(before):].splitlines()]
    end = next(i for i, e in enumerate(events) if e["type"] == "session.compaction_complete")
    return events[: end + 1]


def _compact(log: Path) -> None:
    """`batchcompact run --in-place` with the largest --keep-recent-tokens that summarizes at least three
    messages (a tool call and its result among them; the sizes vary with the tmp folder's path)."""
    for keep in (600, 400, 300, 200, 150, 100, 80, 60, 40):
        result = CliRunner().invoke(main, ["plan", "--force", "--keep-recent-tokens", str(keep), "--format", "jsonl",
                                           str(log)])
        row = json.loads(result.stdout.splitlines()[0])
        if row["status"] == "compact" and row["messages_to_summarize"] + row["turn_prefix_messages"] >= 3:
            compact_in_place(log, keeps=(keep,))
            return
    raise AssertionError(f"no --keep-recent-tokens summarizes three messages of {log}")


@pytest.fixture(scope="module")
def compacted(copilot_bin: Path, tmp_path_factory: pytest.TempPathFactory) -> dict:
    root = tmp_path_factory.mktemp("copilot")
    home, project = root / "home", root / "project"
    home.mkdir()
    project.mkdir()
    (project / "notes.txt").write_text("alpha\nbeta\n")
    api = FakeOpenAIChat(_script(project))
    with api:
        _copilot(copilot_bin, home, project, api, "-p", "STEP-ONE: read notes, write and fix hello.py")
        last = _copilot(copilot_bin, home, project, api, "--continue", "-p", "STEP-TWO: look around")
        [log] = copilot_logs(home)
        original = log.read_text()
        report_before = _report(log)
        _compact(log)
        report_after = _report(log)
        first = _copilot(copilot_bin, home, project, api, "--continue", "-p", "RESUME-ONE: continue")
        second = _copilot(copilot_bin, home, project, api, "--continue", "-p", "RESUME-TWO: again")
        before_second = log.read_text()
        _compact(log)  # the agent went on: compact again
        third = _copilot(copilot_bin, home, project, api, "--continue", "-p", "RESUME-THREE: once more")
    return {"log": log, "original": original, "before": last[-1]["messages"], "first": first, "second": second,
            "third": third, "added": _added(log, original), "added2": _added(log, before_second), "report_before": report_before, "report_after": report_after}


def _texts(message: dict) -> list[str]:
    content = message.get("content")
    if isinstance(content, str):
        return [content]
    return [b.get("text") or "" for b in content or () if isinstance(b, dict)]


def _calls(messages: list[dict]) -> list[str]:
    return [c["id"] for m in messages if m.get("role") == "assistant" for c in m.get("tool_calls") or ()]


def _kept_calls(added: list[dict]) -> list[str]:
    return [r["toolCallId"] for e in added if e["type"] == "assistant.message" for r in e["data"]["toolRequests"]]


def _summary(added: list[dict]) -> str:
    return next(e for e in added if e["type"] == "session.compaction_complete")["data"]["summaryContent"]


def test_our_compaction_is_copilot_s_compaction_events(compacted: dict) -> None:
    added = compacted["added"]
    assert added[0]["type"] == "session.compaction_start" and added[-1]["type"] == "session.compaction_complete"
    assert added[-1]["data"]["compactionAttemptId"] == added[0]["data"]["compactionAttemptId"]
    assert added[-1]["data"]["success"] is True and _summary(added).strip()


def test_our_events_are_valid_under_copilot_s_own_schema(compacted: dict) -> None:
    """The package ships the events' JSON Schema (draft 7; event data admit no unknown keys)."""
    import jsonschema

    shipped = sorted((cache_dir() / "npm" / f"copilot-cache-{COPILOT[1]}" / "pkg").glob(
        f"*/{COPILOT[1]}/schemas/session-events.schema.json"))
    assert shipped, "the CLI unpacked no schemas/session-events.schema.json"
    schema = json.loads(shipped[0].read_text())
    validator_class = jsonschema.validators.validator_for(schema)
    validator = validator_class(schema, format_checker=validator_class.FORMAT_CHECKER)
    for event in compacted["added"] + compacted["added2"]:
        errors = [e.message[:300] for e in validator.iter_errors(event)]
        assert not errors, (event["type"], errors)


def test_the_resumed_request_starts_from_our_summary(compacted: dict) -> None:
    messages = compacted["first"][0]["messages"]
    assert messages[0]["role"] == "system"
    wrapper = _texts(messages[1])[0]
    assert messages[1]["role"] == "user" and wrapper.startswith(WRAPPER)
    summary = _summary(compacted["added"])
    assert f"<summary>\n{summary}\n</summary>" in wrapper
    assert sum(t.count(summary) for m in messages for t in _texts(m)) == 1


def test_the_resumed_request_holds_the_kept_tail_and_nothing_before_the_cut(compacted: dict) -> None:
    kept = _kept_calls(compacted["added"])
    summarized = [c for c in _calls(compacted["before"]) if c not in kept]
    assert kept and summarized
    messages = compacted["first"][0]["messages"]
    prompt = next(i for i, m in enumerate(messages) if any("RESUME-ONE" in t for t in _texts(m)))
    assert _calls(messages[:prompt]) == kept
    assert [m["tool_call_id"] for m in messages[:prompt] if m.get("role") == "tool"] == kept
    # Copilot's summary message lists the user's prompts (its own wording); no other message is from before
    assert not any("STEP-ONE" in t for m in messages[2:] for t in _texts(m))


def test_a_second_resume_sends_the_same_history(compacted: dict) -> None:
    first = compacted["first"][0]["messages"]
    second = compacted["second"][0]["messages"]
    prompt = next(i for i, m in enumerate(first) if any("RESUME-ONE" in t for t in _texts(m)))
    assert [m["role"] for m in second[:prompt]] == [m["role"] for m in first[:prompt]]
    assert _calls(second[:prompt]) == _calls(first[:prompt])
    assert _texts(second[1]) == _texts(first[1])  # the same summary message
    assert any("RESUME-ONE" in t for m in second for t in _texts(m))
    assert sum(t.count(_summary(compacted["added"])) for m in second for t in _texts(m)) == 1


def test_a_second_compaction_resumes_from_the_new_summary_only(compacted: dict) -> None:
    added2 = compacted["added2"]
    assert added2[0]["type"] == "session.compaction_start"
    messages = compacted["third"][0]["messages"]
    wrappers = [t for m in messages for t in _texts(m) if t.startswith(WRAPPER)]
    assert len(wrappers) == 1 and f"<summary>\n{_summary(added2)}\n</summary>" in wrappers[0]
    assert _summary(compacted["added"]) not in wrappers[0]
    kept = _kept_calls(added2)
    prompt = next(i for i, m in enumerate(messages) if any("RESUME-THREE" in t for t in _texts(m)))
    assert _calls(messages[:prompt]) == kept
    summarized = [c for c in _calls(compacted["second"][-1]["messages"]) if c not in kept]
    assert summarized and not set(_calls(messages)) & set(summarized)


def test_report_counts_the_same_usage_after_compaction(compacted: dict) -> None:
    assert compacted["report_before"] and compacted["report_after"] == compacted["report_before"]
    assert not any(e["type"] == "session.usage_record" for e in compacted["added"])
