"""Codex rollouts: reading into pi's planning view, planning, compacting, verifying.

Pinned on the real fixtures in ../shared/fixtures/codex (skipped when absent)."""

from __future__ import annotations

import json

import pytest
from conftest import fixture_path
from factories import context_messages, plan_forced, write_appended

from batchcompact.adapters.codex import read as codex
from batchcompact.adapters.common.verify import orphan_tool_results
from batchcompact.core.context import build_session_context, convert_to_llm
from batchcompact.core.planner import CompactionPlan, Skip

DAY = ("codex", "sessions", "2026", "02", "23")
BIG = (*DAY, "rollout-2026-02-23T12-54-34-019c8a59-e9dd-71f0-9ae3-4079fe9726a9.jsonl")
FILES = [
    BIG,
    (*DAY, "rollout-2026-02-23T12-40-23-019c8a4c-ed82-79a1-aa28-7738fc5ab61a.jsonl"),
    (*DAY, "rollout-2026-02-23T20-34-25-019c8bfe-ec25-79e0-97d7-bda6a9c575ff.jsonl"),
    (*DAY, "rollout-2026-02-23T13-19-38-019c8a70-dda7-7f33-98ea-f30553347322.jsonl"),
    ("codex", "coverage", "agent-sessions_codex_small.jsonl"),
]
NOW = "2026-11-22T04:00:00.000Z"
IDS = [parts[-1][:28] for parts in FILES]


plan_of = plan_forced
write_compacted = write_appended
context = context_messages


@pytest.mark.parametrize("parts", FILES, ids=IDS)
def test_every_fixture_reads_and_plans(parts):
    session = codex.read(fixture_path(*parts))
    assert session.agent == "codex"
    assert session.errors == []
    assert session.header["id"] and "cwd" in session.header
    for entry in session.entries:
        assert isinstance(entry.line, int) and entry.line >= 1
    for keep in (1, 2000, 20000):
        result = plan_of(session, keep)
        assert isinstance(result, (CompactionPlan, Skip))
        if isinstance(result, CompactionPlan):
            first = next(e for e in session.path_entries() if e.id == result.first_kept_entry_id)
            assert first.role != "toolResult"
    assert orphan_tool_results(convert_to_llm(context(session))) == []


def test_remote_compaction_restarts_the_context_with_its_replacement_history():
    session = codex.read(fixture_path(*BIG))
    ctx = build_session_context(session.path_entries())
    assert ctx.compaction is not None and ctx.compaction.line == 1788
    assert ctx.messages[0].message["role"] == "compactionSummary"
    # 40 replacement items: 39 readable messages and one encrypted `compaction` item (metadata)
    assert [m.line for m in ctx.messages[1:40]] == [1788] * 39
    assert all(m.line > 1788 for m in ctx.messages[40:])
    assert ctx.stale_count == 40


def test_model_window_and_usage_come_from_the_rollout():
    session = codex.read(fixture_path(*BIG))
    assert session.header["model"] == "gpt-5.3-codex"
    assert session.header["context_window"] == session.context_window == 258400
    last = [e for e in session.path_entries() if e.role == "assistant" and "usage" in e.message][-1]
    # the last token_count's last_token_usage: input includes the cached tokens in Codex
    assert last.message["usage"] == {
        "input": 162073 - 157696,
        "output": 293,
        "cacheRead": 157696,
        "cacheWrite": 0,
        "totalTokens": 162366,
    }
    assert last.message["model"] == "gpt-5.3-codex" and last.message["provider"] == "openai"


def test_one_model_call_is_one_assistant_message_and_outputs_follow_their_calls():
    session = codex.read(fixture_path(*FILES[1]))
    path = session.path_entries()
    calls = [
        b for e in path if e.role == "assistant" for b in e.message["content"] if b["type"] == "toolCall"
    ]
    results = [e for e in path if e.role == "toolResult"]
    assert len(calls) == 82 + 22 + 1  # function calls, custom tool calls, one web search
    assert len(results) == 82 + 22
    for index, entry in enumerate(path):
        if entry.role == "toolResult":
            before = [e for e in path[:index] if e.role == "assistant"][-1]
            assert entry.message["toolCallId"] in {
                b["id"] for b in before.message["content"] if b["type"] == "toolCall"
            }


def compactable():
    for parts in FILES:
        yield pytest.param(parts, 1, id=f"{parts[-1][:24]}-1")
    for parts, keep in ((BIG, 3000), (BIG, 20000), (FILES[1], 3000)):
        yield pytest.param(parts, keep, id=f"{parts[-1][:24]}-{keep}")


@pytest.mark.parametrize(("parts", "keep"), list(compactable()))
def test_compact_write_reread_verify(parts, keep, tmp_path):
    src = fixture_path(*parts)
    session = codex.read(src)
    plan = plan_of(session, keep)
    assert isinstance(plan, CompactionPlan), plan
    lines = codex.build_compaction(session, plan, "## Goal\nthe summary", usage=None, now_iso=NOW)
    out = write_compacted(src, lines, tmp_path / src.name)
    written = codex.read(out)
    assert codex.verify(session, written, plan) == []
    assert out.read_bytes().startswith(src.read_bytes())
    messages = context(written)
    assert messages[0]["role"] == "compactionSummary" and messages[0]["summary"] == "## Goal\nthe summary"
    kept = [e for e in session.path_entries()[plan.first_kept_index :] if e.type == "message"]
    assert len(messages) == 1 + len(kept)
    assert messages[1]["role"] != "toolResult"
    assert orphan_tool_results(messages[1:]) == []
    again = plan_of(written, keep)
    assert isinstance(again, Skip) and again.reason == "already compacted"


def test_kept_tail_may_start_inside_an_earlier_replacement_history():
    """pi's FIX boundary: items kept by the earlier compaction can be summarized or kept again."""
    session = codex.read(fixture_path(*BIG))
    plan = plan_of(session, 20000)
    assert plan.first_kept_entry_id.startswith("L1788.r")
    compacted, _ = codex.build_compaction(session, plan, "S", usage=None, now_iso=NOW)
    history = compacted["payload"]["replacement_history"]
    old = json.loads(fixture_path(*BIG).read_text().splitlines()[1787])["payload"]["replacement_history"]
    index = int(plan.first_kept_entry_id.split(".r")[1])
    at = next(i for i, item in enumerate(history) if codex.SUMMARY_PREFIX in json.dumps(item))
    assert history[at + 1 : at + 1 + len(old) - index] == old[index:]  # the encrypted `compaction` item too


def key_types(obj: dict) -> dict[str, str]:
    return {k: type(v).__name__ for k, v in obj.items()}


def test_written_lines_have_the_shape_codex_writes():
    src = fixture_path(*BIG)
    raw = [json.loads(line) for line in src.read_text().splitlines()]
    native_compacted, native_event = raw[1787], raw[1788]
    session = codex.read(src)
    plan = plan_of(session, 3000)
    compacted, event = codex.build_compaction(session, plan, "S", usage=None, now_iso=NOW)
    assert key_types(compacted) == key_types(native_compacted)
    assert key_types(compacted["payload"]) == key_types(native_compacted["payload"])
    assert event == {**native_event, "timestamp": NOW}
    history = compacted["payload"]["replacement_history"]
    at = next(i for i, item in enumerate(history) if codex.SUMMARY_PREFIX in json.dumps(item))
    summary_item, kept = history[at], history[at + 1 :]
    assert summary_item["content"][0]["text"] == codex.SUMMARY_PREFIX + "\nS"
    native_items = native_compacted["payload"]["replacement_history"]
    native_user = next(i for i in native_items if i.get("role") == "user")
    assert (
        set(summary_item) <= set(native_user)
        and summary_item["content"][0].keys() == native_user["content"][0].keys()
    )
    assert all(item.get("type") for item in kept)


def test_conversation_continues_after_our_compaction(tmp_path):
    src = fixture_path(*FILES[1])
    session = codex.read(src)
    plan = plan_of(session, 3000)
    lines = codex.build_compaction(session, plan, "first summary", usage=None, now_iso=NOW)
    later = [
        {"timestamp": NOW, "type": "turn_context", "payload": {"model": "gpt-5.3-codex", "cwd": "/x"}},
        {
            "timestamp": NOW,
            "type": "response_item",
            "payload": {
                "type": "message",
                "role": "user",
                "content": [{"type": "input_text", "text": "more " * 200}],
            },
        },
        {
            "timestamp": NOW,
            "type": "response_item",
            "payload": {
                "type": "message",
                "role": "assistant",
                "content": [{"type": "output_text", "text": "ok"}],
            },
        },
    ]
    out = write_compacted(src, [*lines, *later], tmp_path / src.name)
    written = codex.read(out)
    messages = context(written)
    kept = [e for e in session.path_entries()[plan.first_kept_index :] if e.type == "message"]
    assert messages[0]["summary"] == "first summary"
    assert len(messages) == 1 + len(kept) + 2
    second = plan_of(written, 100)
    assert isinstance(second, CompactionPlan) and second.previous_summary == "first summary"
    lines2 = codex.build_compaction(written, second, "second", usage=None, now_iso=NOW)
    out2 = write_compacted(out, lines2, tmp_path / "second.jsonl")
    assert codex.verify(written, codex.read(out2), second) == []


def test_invalid_line_is_reported_with_its_line(tmp_path):
    src = fixture_path(*FILES[3])
    data = src.read_bytes()
    out = tmp_path / "bad.jsonl"
    out.write_bytes(data + b"{not json}\n")
    session = codex.read(out)
    assert [p.line for p in session.errors] == [data.count(b"\n") + 1]


def test_verify_catches_a_changed_original_line(tmp_path):
    src = fixture_path(*FILES[2])
    session = codex.read(src)
    plan = plan_of(session, 1)
    lines = codex.build_compaction(session, plan, "S", usage=None, now_iso=NOW)
    out = write_compacted(src, lines, tmp_path / src.name)
    data = out.read_bytes()
    out.write_bytes(data.replace(b'"session_meta"', b'"session_metA"', 1))
    problems = codex.verify(session, codex.read(out), plan)
    assert any("original bytes changed" in p for p in problems)


def test_every_cut_of_the_real_rollouts_round_trips(tmp_path):
    for parts in (BIG, FILES[1]):
        src = fixture_path(*parts)
        session = codex.read(src)
        seen = set()
        for keep in (1, 50, 400, 1500, 5000, 9000, 15000, 25000):
            plan = plan_of(session, keep)
            if not isinstance(plan, CompactionPlan) or plan.first_kept_entry_id in seen:
                continue
            seen.add(plan.first_kept_entry_id)
            lines = codex.build_compaction(session, plan, f"summary {keep}", usage=None, now_iso=NOW)
            out = write_compacted(src, lines, tmp_path / f"{keep}.jsonl")
            assert codex.verify(session, codex.read(out), plan) == [], (parts[-1], keep)
        assert len(seen) >= 4
