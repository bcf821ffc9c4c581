"""Codex replacement_history carries what Codex's own local compaction carries: the initial context items
and earlier user messages within 20,000 tokens, then the summary (and our kept tail)."""

from __future__ import annotations

import json

from conftest import fixture_path
from factories import plan_forced, write_appended

from batchcompact.adapters.codex import read as codex
from batchcompact.adapters.codex.items import approx_tokens
from batchcompact.core.planner import CompactionPlan

NOW = "2026-11-22T04:00:00.000Z"
FIXTURES = ("codex", "sessions", "2026", "02", "23")


def _summary_index(history):
    return next(i for i, item in enumerate(history) if codex.SUMMARY_PREFIX in json.dumps(item))


def _texts(items):
    return ["".join(c.get("text", "") for c in item["content"]) for item in items]


def test_real_rollout_keeps_initial_context_and_earlier_prompts():
    src = sorted(fixture_path(*FIXTURES).glob("rollout-*.jsonl"))[0]
    raw = [json.loads(line) for line in src.read_text(encoding="utf-8").splitlines()]
    session = codex.read(src)
    plan = plan_forced(session, 2000)
    assert isinstance(plan, CompactionPlan)
    compacted, _ = codex.build_compaction(session, plan, "S", usage=None, now_iso=NOW)
    history = compacted["payload"]["replacement_history"]
    at = _summary_index(history)
    # The items before the session's first prompt (lines 2-7: developer instructions, AGENTS.md, environment).
    first_prompt = next(i for i, obj in enumerate(raw) if obj["payload"].get("type") == "user_message") - 1
    initial = [obj["payload"] for obj in raw[1:first_prompt] if obj["type"] == "response_item"]
    assert len(initial) == 6
    kept = history[at + 1 :]
    # Codex re-sends some of them on later turns; an item the kept tail already has is not repeated.
    expected = [item for item in initial if item not in kept]
    assert 0 < len(expected) < 6 and history[: len(expected)] == expected
    initial = expected
    # Then real prompts (a user item an event_msg/user_message follows), newest kept, in order.
    prompts = [
        raw[i]["payload"]
        for i in range(len(raw) - 1)
        if raw[i]["type"] == "response_item"
        and raw[i]["payload"].get("role") == "user"
        and raw[i + 1]["payload"].get("type") == "user_message"
    ]
    users = _texts(history[len(initial) : at])
    assert users and len(users) <= len(prompts)
    prompt_texts = _texts(prompts)
    assert users == prompt_texts[: len(users)]  # all before the cut: the kept tail holds no prompt here
    assert sum(approx_tokens(t) for t in users) <= 20_000


def _rollout(tmp_path, prompts: list[str]):
    lines = [
        {"timestamp": NOW, "type": "session_meta", "payload": {"id": "t-9", "cwd": "/r", "cli_version": "0.169.0"}},
        {"timestamp": NOW, "type": "response_item",
         "payload": {"type": "message", "role": "developer", "content": [{"type": "input_text", "text": "rules"}]}},
        {"timestamp": NOW, "type": "response_item",
         "payload": {"type": "message", "role": "user",
                     "content": [{"type": "input_text", "text": "<environment_context>cwd=/r</environment_context>"}]}},
    ]
    for n, prompt in enumerate(prompts):
        lines += [
            {"timestamp": NOW, "type": "turn_context", "payload": {"model": "gpt-5.3-codex"}},
            {"timestamp": NOW, "type": "response_item",
             "payload": {"type": "message", "role": "user", "content": [{"type": "input_text", "text": prompt}]}},
            {"timestamp": NOW, "type": "event_msg", "payload": {"type": "user_message", "message": prompt}},
            {"timestamp": NOW, "type": "response_item",
             "payload": {"type": "message", "role": "assistant",
                         "content": [{"type": "output_text", "text": f"answer {n} " * 200}]}},
        ]
    path = tmp_path / "rollout-2026-11-22T04-00-00-t-9.jsonl"
    path.write_text("".join(json.dumps(x) + "\n" for x in lines), encoding="utf-8")
    return path


def test_budget_truncates_the_oldest_prompt_that_does_not_fit(tmp_path):
    prompts = ["first " + "x" * 50_000, "second " + "y" * 40_000, "third short", "fourth " + "z" * 8_000]
    src = _rollout(tmp_path, prompts)
    session = codex.read(src)
    plan = plan_forced(session, 1500)
    assert isinstance(plan, CompactionPlan)
    compacted, _ = codex.build_compaction(session, plan, "S", usage=None, now_iso=NOW)
    history = compacted["payload"]["replacement_history"]
    at = _summary_index(history)
    assert _texts(history[:2]) == ["rules", "<environment_context>cwd=/r</environment_context>"]
    users = _texts(history[2:at])
    kept_prompts = [t for t in _texts(i for i in history[at + 1 :] if i.get("role") == "user")]
    assert "fourth " + "z" * 8_000 in kept_prompts  # the last turn is kept verbatim
    assert users[-1] == "third short"
    assert users[1] == prompts[1]  # fits whole
    assert users[0].startswith("first ") and "tokens truncated" in users[0]  # the rest of the budget
    assert len(users) == 3
    total = sum(approx_tokens(t) for t in users) + sum(approx_tokens(t) for t in kept_prompts)
    assert total <= 20_000 + 10  # the truncation marker's own few tokens


def test_written_prefix_reads_back_and_carries_to_the_next_compaction(tmp_path):
    src = _rollout(tmp_path, [f"prompt {n}" for n in range(6)])
    session = codex.read(src)
    plan = plan_forced(session, 600)
    assert isinstance(plan, CompactionPlan)
    lines = codex.build_compaction(session, plan, "S1", usage=None, now_iso=NOW)
    history = lines[0]["payload"]["replacement_history"]
    users = _texts(history[2 : _summary_index(history)])
    assert users and users[0] == "prompt 0"
    more = json.loads(src.read_text(encoding="utf-8").splitlines()[-4])  # a turn_context, then a new turn
    turn = [
        more,
        {"timestamp": NOW, "type": "response_item",
         "payload": {"type": "message", "role": "user", "content": [{"type": "input_text", "text": "prompt 6"}]}},
        {"timestamp": NOW, "type": "event_msg", "payload": {"type": "user_message", "message": "prompt 6"}},
        {"timestamp": NOW, "type": "response_item",
         "payload": {"type": "message", "role": "assistant", "content": [{"type": "output_text", "text": "ok " * 400}]}},
    ]
    out = write_appended(src, lines, tmp_path / "out.jsonl")
    written = codex.read(out)
    assert codex.verify(session, written, plan) == []  # the context is still summary + kept tail
    compaction = [e for e in written.entries if e.type == "compaction"][-1]
    assert compaction.data["prefixUserMessages"] == users
    again = codex.read(write_appended(out, turn, tmp_path / "again.jsonl"))
    second = plan_forced(again, 300)
    assert isinstance(second, CompactionPlan) and second.previous_summary == "S1"
    history2 = codex.build_compaction(again, second, "S2", usage=None, now_iso=NOW)[0]["payload"]["replacement_history"]
    at2 = _summary_index(history2)
    assert _texts(history2[:2]) == ["rules", "<environment_context>cwd=/r</environment_context>"]
    assert _texts(history2[2:at2])[0] == "prompt 0"  # carried from the first compaction's prefix
    assert len(_texts(history2[2:at2])) == len(set(_texts(history2[2:at2])))
