"""Claude Code transcripts: reading into pi's planning view, planning, compacting, verifying.

Pinned on the real fixtures in ../shared/fixtures/claude (skipped when absent)."""

from __future__ import annotations

import json

import pytest
from conftest import fixture_path
from factories import context_messages, plan_forced, write_appended

from batchcompact.adapters.claude import read as claude
from batchcompact.adapters.common.verify import orphan_tool_results
from batchcompact.core.context import build_session_context, convert_to_llm
from batchcompact.core.entries import ERROR
from batchcompact.core.planner import CompactionPlan, Skip

SPOTTER = ("claude", "projects", "-home-USER-projects-spotter")
MAIN = (*SPOTTER, "4d5611e5-241a-462a-8d15-5122611a9569.jsonl")
FILES = [
    MAIN,
    (*SPOTTER, "short.jsonl"),
    (*SPOTTER, "tool_heavy.jsonl"),
    (*SPOTTER, "4d5611e5-241a-462a-8d15-5122611a9569", "subagents", "agent-acompact-e1f845.jsonl"),
    ("claude", "projects", "-Users-chip-dev-ai-music", "fed8ce56-bc79-401f-a83e-af084253362f.jsonl"),
    ("claude", "projects", "sample-project", "5c0375b4-57a5-4f26-b12d-d022ee4e51b7.jsonl"),
    ("claude", "coverage", "claude-code-log_dag_compact_after_rewind.jsonl"),
    ("claude", "coverage", "agent-sessions_claude_small.jsonl"),
]
NOW = "2026-11-22T04:00:00.000Z"
IDS = [parts[-1][:24] for parts in FILES]


plan_of = plan_forced
write_compacted = write_appended
context = context_messages


@pytest.mark.parametrize("parts", FILES, ids=IDS)
def test_every_fixture_reads_and_plans(parts):
    session = claude.read(fixture_path(*parts))
    assert session.agent == "claude"
    assert session.errors == []
    assert session.header["id"]
    for entry in session.entries:
        assert isinstance(entry.line, int) and entry.line >= 1
    for keep in (100, 2000, 20000):
        result = plan_of(session, keep)
        assert isinstance(result, (CompactionPlan, Skip))
        if isinstance(result, CompactionPlan):
            first = next(e for e in session.path_entries() if e.id == result.first_kept_entry_id)
            assert first.role != "toolResult"
    assert orphan_tool_results(convert_to_llm(context(session))) == []


def test_real_compacted_session_restarts_at_the_boundary():
    session = claude.read(fixture_path(*MAIN))
    ctx = build_session_context(session.path_entries())
    assert ctx.compaction is not None and ctx.compaction.line == 755
    assert ctx.compaction.data["tokensBefore"] == 170251
    assert ctx.compaction.data["summary"].startswith("Analysis:")  # Claude's preamble is stripped
    assert ctx.messages[0].message["role"] == "compactionSummary"
    assert all(m.line > 755 for m in ctx.messages[1:])
    assert session.path_entries()[0].line == 754  # the boundary is the root of the active path
    assert ctx.model == {"provider": "anthropic", "modelId": "claude-opus-4-6"}


def test_streamed_responses_count_usage_once():
    """254 assistant lines = 139 requests; usage is the largest copy (reference 1.3)."""
    session = claude.read(fixture_path(*MAIN))
    assistants = [e for e in session.entries if e.role == "assistant"]
    assert len(assistants) == 139
    assert sum(e.message["usage"]["output"] for e in assistants) == 28755
    assert sum(e.message["usage"]["cacheRead"] for e in assistants) == 11618567


def test_parallel_tool_calls_read_as_one_response_then_results():
    session = claude.read(fixture_path(*MAIN))
    path = session.path_entries()
    for index, entry in enumerate(path):
        if entry.role == "assistant":
            calls = [b for b in entry.message["content"] if b["type"] == "toolCall"]
            results = []
            for later in path[index + 1 :]:
                if later.role == "toolResult":
                    results.extend(later.message["toolCallIds"])
                elif later.type == "message":
                    break
            assert sorted(results) == sorted(c["id"] for c in calls), entry


def test_rewind_then_compaction_follows_the_last_branch():
    session = claude.read(
        fixture_path("claude", "coverage", "claude-code-log_dag_compact_after_rewind.jsonl")
    )
    messages = context(session)
    assert [m["role"] for m in messages] == ["compactionSummary", "user", "assistant"]
    assert session.tree.leaf.id == "p1a"


def test_already_compacted_when_the_summary_is_the_leaf(tmp_path):
    src = fixture_path(*SPOTTER, "short.jsonl")
    lines = src.read_text().splitlines()
    first = json.loads(lines[0]) if "uuid" in lines[0] else json.loads(lines[1])
    boundary = {
        "parentUuid": None,
        "type": "system",
        "subtype": "compact_boundary",
        "uuid": "b-1",
        "sessionId": first.get("sessionId"),
        "compactMetadata": {"trigger": "auto", "preTokens": 5},
    }
    summary = {
        "parentUuid": "b-1",
        "type": "user",
        "uuid": "s-1",
        "isCompactSummary": True,
        "sessionId": first.get("sessionId"),
        "message": {"role": "user", "content": claude.SUMMARY_PREAMBLE + "x"},
    }
    out = write_compacted(src, [boundary, summary], tmp_path / "s.jsonl")
    result = plan_of(claude.read(out), 100)
    assert isinstance(result, Skip) and result.reason == "already compacted"


SUBAGENT = FILES[3]  # a sub-agent transcript: every line is a sidechain line


def compactable():
    for parts in FILES:
        if parts is not FILES[7]:  # FILES[7]: one cut point on its path
            yield pytest.param(parts, 1, id=f"{parts[-1][:20]}-1")
    for parts, keep in ((MAIN, 3000), (MAIN, 20000), (FILES[5], 3000), (FILES[4], 300)):
        yield pytest.param(parts, keep, id=f"{parts[-1][:20]}-{keep}")


def test_subagent_transcript_is_its_sidechain():
    """A sub-agent's own file: every line a sidechain line, they are its conversation (--force plans it)."""
    session = claude.read(fixture_path(*SUBAGENT))
    assert session.subagent and len(session.entries) == 5
    assert session.problems == []  # its first lines hang from its parent session's lines: no warning
    assert isinstance(plan_of(session, 1), CompactionPlan)


@pytest.mark.parametrize(("parts", "keep"), list(compactable()))
def test_compact_write_reread_verify(parts, keep, tmp_path):
    src = fixture_path(*parts)
    session = claude.read(src)
    plan = plan_of(session, keep)
    assert isinstance(plan, CompactionPlan), f"nothing to compact: {plan.reason}"  # each case was chosen to compact
    lines = claude.build_compaction(session, plan, "## Goal\nthe summary", usage=None, now_iso=NOW)
    assert lines == claude.build_compaction(session, plan, "## Goal\nthe summary", usage=None, now_iso=NOW)
    out = write_compacted(src, lines, tmp_path / src.name)
    written = claude.read(out)
    assert claude.verify(session, written, plan) == []
    # every original line is still there, unchanged
    assert out.read_bytes().startswith(src.read_bytes())
    # context = summary + kept tail, no tool result separated from its call
    messages = context(written)
    assert messages[0]["role"] == "compactionSummary" and messages[0]["summary"] == "## Goal\nthe summary"
    kept = [e for e in session.path_entries()[plan.first_kept_index :] if e.type == "message"]
    assert len(messages) == 1 + len(kept)
    assert messages[1]["role"] != "toolResult"
    assert orphan_tool_results(messages[1:]) == []
    # fresh uuids, unique in the file
    new = [obj["uuid"] for obj in lines]
    assert len(set(new)) == len(new) and not set(new) & session.extra.uuids
    again = plan_of(written, keep)
    assert isinstance(again, Skip) and again.reason == "already compacted"


def key_types(obj: dict) -> dict[str, str]:
    return {k: type(v).__name__ for k, v in obj.items()}


def test_written_lines_have_the_shape_claude_writes(tmp_path):
    src = fixture_path(*MAIN)
    raw = [json.loads(line) for line in src.read_text().splitlines()]
    native_boundary, native_summary = raw[753], raw[754]
    assert native_boundary.get("subtype") == "compact_boundary" and native_summary.get("isCompactSummary")
    session = claude.read(src)
    plan = plan_of(session, 3000)
    boundary, summary, *copies = claude.build_compaction(session, plan, "S", usage={"output": 3}, now_iso=NOW)
    assert key_types(boundary) == key_types(native_boundary)
    assert key_types(summary) == key_types(native_summary)
    meta = dict(boundary["compactMetadata"])
    marker = meta.pop("batchcompact")  # the documented extra key
    assert key_types(meta) == key_types(native_boundary["compactMetadata"])
    assert meta["trigger"] == "manual" and meta["preTokens"] == plan.tokens_before
    assert marker["keptHeadUuid"] == copies[0]["uuid"] and marker["keptTailUuid"] == copies[-1]["uuid"]
    assert marker["usage"] == {"output": 3}
    assert boundary["parentUuid"] is None and boundary["logicalParentUuid"] == session.extra.leaf_uuid
    assert summary["parentUuid"] == boundary["uuid"] and copies[0]["parentUuid"] == summary["uuid"]
    assert summary["message"]["content"].startswith(claude.SUMMARY_PREAMBLE)
    for copy in copies:
        assert copy["sessionId"] == native_boundary["sessionId"] and copy["isSidechain"] is False


def test_conversation_continues_after_our_compaction_and_compacts_again(tmp_path):
    """Claude appends after the kept tail; the next plan re-summarizes the copies (pi's FIX boundary)."""
    src = fixture_path(*MAIN)
    session = claude.read(src)
    plan = plan_of(session, 3000)
    lines = claude.build_compaction(session, plan, "first summary", usage=None, now_iso=NOW)
    tail = lines[-1]["uuid"]
    user = {
        **lines[1],
        "parentUuid": tail,
        "uuid": "new-user",
        "isCompactSummary": None,
        "message": {"role": "user", "content": "one more thing " * 50},
    }
    user.pop("isCompactSummary")
    user.pop("isVisibleInTranscriptOnly")
    answer = {
        "parentUuid": "new-user",
        "type": "assistant",
        "uuid": "new-answer",
        "sessionId": user["sessionId"],
        "message": {
            "id": "msg_new",
            "role": "assistant",
            "model": "claude-opus-4-6",
            "content": [{"type": "text", "text": "done " * 50}],
            "usage": {"input_tokens": 10, "output_tokens": 20},
        },
    }
    out = write_compacted(src, [*lines, user, answer], tmp_path / src.name)
    written = claude.read(out)
    assert written.errors == []
    messages = context(written)
    kept = [e for e in session.path_entries()[plan.first_kept_index :] if e.type == "message"]
    assert messages[0]["summary"] == "first summary"
    assert len(messages) == 1 + len(kept) + 2 and messages[-1]["content"][0]["text"].startswith("done")
    second = plan_of(written, 100)
    assert isinstance(second, CompactionPlan)
    assert second.previous_summary == "first summary"
    lines2 = claude.build_compaction(written, second, "second summary", usage=None, now_iso=NOW)
    assert not {obj["uuid"] for obj in lines2} & written.extra.uuids
    out2 = write_compacted(out, lines2, tmp_path / "second.jsonl")
    assert claude.verify(written, claude.read(out2), second) == []


def test_torn_last_line_is_an_error_with_its_line(tmp_path):
    src = fixture_path(*SPOTTER, "short.jsonl")
    data = src.read_bytes()
    out = tmp_path / "torn.jsonl"
    out.write_bytes(data + b'{"type":"user","uuid":"x"')
    session = claude.read(out)
    errors = session.errors
    assert len(errors) == 1 and errors[0].severity == ERROR
    assert errors[0].line == data.count(b"\n") + 1 and "torn" in errors[0].message
    assert not session.compactable


def test_context_messages_for_show():
    session = claude.read(fixture_path(*MAIN))
    messages = claude.context_messages(session)
    assert (
        messages[0]["role"] == "user"
        and "compacted into the following summary" in messages[0]["content"][0]["text"]
    )
    assert {m["role"] for m in messages} <= {"user", "assistant", "toolResult"}


def test_verify_reports_a_lost_kept_line_and_a_reused_uuid(tmp_path):
    src = fixture_path(*MAIN)
    session = claude.read(src)
    plan = plan_of(session, 20000)
    boundary, summary, *copies = claude.build_compaction(session, plan, "S", usage=None, now_iso=NOW)
    assert len(copies) >= 2
    # the last kept line is lost: the context is no longer summary + kept tail
    lost = dict(boundary, compactMetadata={**boundary["compactMetadata"]})
    lost["compactMetadata"]["batchcompact"] = {
        **lost["compactMetadata"]["batchcompact"],
        "keptTailUuid": copies[-2]["uuid"],
    }
    out = write_compacted(src, [lost, summary, *copies[:-1]], tmp_path / "lost.jsonl")
    assert any("not summary + kept tail" in p for p in claude.verify(session, claude.read(out), plan))
    # a written line that reuses an old uuid is ignored on re-read and reported
    old_uuid = next(iter(session.extra.entry_lines.values()))[0][1]["uuid"]
    reused = [boundary, summary, *copies[:-1], {**copies[-1], "uuid": old_uuid}]
    out = write_compacted(src, reused, tmp_path / "reused.jsonl")
    assert any("repeats line" in p for p in claude.verify(session, claude.read(out), plan))


def test_every_cut_of_the_real_session_round_trips(tmp_path):
    """Many budgets, so cuts land on user prompts, mid-turn assistants (split turns) and after results."""
    src = fixture_path(*MAIN)
    session = claude.read(src)
    seen = set()
    for keep in (1, 50, 400, 1500, 5000, 9000, 15000, 25000, 40000, 60000):
        plan = plan_of(session, keep)
        if not isinstance(plan, CompactionPlan) or plan.first_kept_entry_id in seen:
            continue
        seen.add(plan.first_kept_entry_id)
        lines = claude.build_compaction(session, plan, f"summary {keep}", usage=None, now_iso=NOW)
        out = write_compacted(src, lines, tmp_path / f"{keep}.jsonl")
        assert claude.verify(session, claude.read(out), plan) == [], keep
    assert len(seen) >= 4
