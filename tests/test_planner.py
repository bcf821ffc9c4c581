"""Planning: cut points, split turns, the FIX boundary, pi's bugs fixed, fixture conformance, properties."""

from __future__ import annotations

import dataclasses
import json
import math

import pytest
from conftest import fixture_path
from factories import Builder
from hypothesis import given, settings
from hypothesis import strategies as st
from pi_cut_points import FIXTURE_TABLE

from batchcompact.adapters.pi.read import read_pi_session
from batchcompact.agents import file_tools
from batchcompact.cli.options import MIN_SUMMARY_BUDGET
from batchcompact.core.calls import HISTORY, TURN_PREFIX
from batchcompact.core.cutpoint import find_cut_point
from batchcompact.core.defaults import DEFAULT_SUMMARY_BUDGET
from batchcompact.core.planner import (
    CompactionPlan,
    CompactionSettings,
    Skip,
    estimate_text_tokens,
    prepare_compaction,
)
from batchcompact.core.prompts import NO_PRIOR_HISTORY, SPLIT_TURN_SEPARATOR
from batchcompact.core.serialize import serialize_conversation
from batchcompact.core.tree import SessionTree

FORCE = CompactionSettings(force=True)


def _path(b: Builder):
    return SessionTree(b.objects()).path()


def test_false_split_after_metadata_matches_pi_without_the_fix_and_is_fixed_with_it():
    # The reference's example [u0, a1, tlc2, u3, a4]: pi gives {firstKept: 2, turnStart: 0, split: true}.
    b = Builder()
    b.user("u0" * 40)
    b.assistant("a1" * 40)
    b.meta()
    b.user("u3" * 10)
    b.assistant("a4" * 10)
    entries = b.objects()
    pi = find_cut_point(entries, 0, 5, 10, fix_false_split=False)
    assert (pi.first_kept_index, pi.turn_start_index, pi.is_split_turn) == (2, 0, True)
    fixed = find_cut_point(entries, 0, 5, 10)
    assert (fixed.first_kept_index, fixed.turn_start_index, fixed.is_split_turn) == (2, -1, False)


def test_cut_never_lands_on_tool_result_and_falls_back_when_budget_crossed_in_results():
    b = Builder()
    b.user("do it")
    b.assistant("", calls=[("bash", {"command": "x"})])
    b.tool_result("r" * 400)
    b.tool_result("r" * 400)
    entries = b.objects()
    cut = find_cut_point(entries, 0, len(entries), 50)
    # Budget crossed inside trailing tool results with no cut point after: keep everything (#7201).
    assert cut.first_kept_index == 0 and not cut.is_split_turn


def _split_turn_session() -> Builder:
    """An old exchange, then one request whose six edit steps are too big to keep whole: a split turn."""
    b = Builder()
    b.user("old request " * 30)
    b.assistant("old answer " * 30)
    b.user("big request")
    for index in range(6):
        b.assistant(f"step {index} " * 20, calls=[("edit", {"path": f"src/f{index}.py"})])
        b.tool_result("out " * 50)
    return b


SPLIT = CompactionSettings(force=True, keep_recent_tokens=300, instructions="focus on tests")


def _split_plan(summary_budget: int | None = None) -> CompactionPlan:
    settings = SPLIT if summary_budget is None else dataclasses.replace(SPLIT, summary_budget=summary_budget)
    plan = prepare_compaction(_path(_split_turn_session()), settings, file_tools=file_tools())
    assert isinstance(plan, CompactionPlan) and plan.split_turn
    return plan


def _stored_summary_tokens(plan: CompactionPlan) -> int:
    """The stored summary's tokens at each call's max_tokens: the history's and the prefix's summaries, the
    separator between them and the file tags (chars/4, as the budget is measured)."""
    return (sum(c.max_tokens for c in plan.calls) + estimate_text_tokens(SPLIT_TURN_SEPARATOR)
            + estimate_text_tokens(plan.file_tags))


def test_split_turn_plans_two_calls_with_instructions_in_both():
    plan = _split_plan()
    assert [c.kind for c in plan.calls] == [HISTORY, TURN_PREFIX]
    assert all(c.user_prompt.endswith("Additional focus: focus on tests") for c in plan.calls)
    assert plan.modified_files == ["src/f0.py", "src/f1.py", "src/f2.py"]
    assert all("The whole summary must fit in" in c.user_prompt for c in plan.calls)
    assert plan.turn_prefix_messages > 0 and plan.messages_to_summarize == 2


@pytest.mark.parametrize("summary_budget", [MIN_SUMMARY_BUDGET, 1000, DEFAULT_SUMMARY_BUDGET, 4000])
def test_a_split_turn_s_summaries_fill_the_budget_and_hold_it(summary_budget):
    """The history's and the prefix's max_tokens, with the separator and the file tags, are the whole
    budget: never past it (the stored summary holds --summary-budget), none of it left unused (the built-in
    fills what it is given), and each call has room, down to the least budget the CLI takes."""
    plan = _split_plan(summary_budget)
    assert _stored_summary_tokens(plan) == summary_budget
    assert all(c.max_tokens > 0 for c in plan.calls)


def test_a_split_turn_s_prefix_takes_what_its_text_can_use_and_the_history_the_rest():
    """A summary compresses: the prefix's max_tokens stays under its own text's tokens whatever the budget,
    and what it cannot use goes to the history, which grows with the budget."""
    plans = [_split_plan(budget) for budget in (1000, DEFAULT_SUMMARY_BUDGET, 4000)]
    prefix_text = serialize_conversation(list(plans[0].calls[1].messages))
    prefixes = {plan.calls[1].max_tokens for plan in plans}
    # docs/summaries.md: the prefix gets at most half its own text's tokens
    assert len(prefixes) == 1 and prefixes.pop() <= estimate_text_tokens(prefix_text) // 2
    histories = [plan.calls[0].max_tokens for plan in plans]
    assert histories == sorted(set(histories))  # strictly growing
    assert all(plan.calls[0].max_tokens > plan.calls[1].max_tokens for plan in plans)


def test_a_budget_past_pi_s_limits_is_held_to_them():
    """pi gives a summary call at most 0.8 x reserve_tokens (the history) and 0.5 x (a split turn's
    prefix): a budget past that changes nothing more, and the calls stay within pi's limits."""
    past, further = _split_plan(100_000), _split_plan(1_000_000)
    assert [c.max_tokens for c in past.calls] == [c.max_tokens for c in further.calls]
    history, prefix = past.calls
    assert history.max_tokens == math.floor(0.8 * SPLIT.reserve_tokens) > _split_plan().calls[0].max_tokens
    assert prefix.max_tokens <= 0.5 * SPLIT.reserve_tokens
    assert _stored_summary_tokens(past) < 100_000


def test_nothing_to_summarize_is_a_skip_not_an_empty_call():
    b = Builder()
    b.user("hi")
    b.assistant("hello")
    plan = prepare_compaction(_path(b), FORCE, file_tools=file_tools())
    assert isinstance(plan, Skip) and plan.reason.startswith("nothing to summarize")


def test_split_turn_with_no_history_keeps_the_previous_summary():
    b = Builder()
    first = b.user("first")
    b.assistant("a")
    b.add("compaction", summary="PREVIOUS", firstKeptEntryId=first, tokensBefore=5,
          details={"readFiles": ["r.txt"], "modifiedFiles": ["m.txt"]}, fromHook=False)
    # Everything after the boundary is one turn (started by 'first') too big to keep whole: the history
    # part is empty. pi would send "No prior history." and drop PREVIOUS; we keep PREVIOUS.
    for index in range(5):
        b.assistant(f"work {index} " * 40)
    plan = prepare_compaction(_path(b), CompactionSettings(force=True, keep_recent_tokens=150), file_tools=file_tools())
    assert isinstance(plan, CompactionPlan) and plan.split_turn
    assert [c.kind for c in plan.calls] == [TURN_PREFIX]
    assert plan.history_fallback == "PREVIOUS" != NO_PRIOR_HISTORY
    assert plan.read_files == ["r.txt"] and plan.modified_files == ["m.txt"]
    from batchcompact.core.apply import compose_summary

    summary = compose_summary(plan, {TURN_PREFIX: "PREFIX"})
    assert summary.startswith("PREVIOUS\n\n---\n\n**Turn Context (split turn):**\n\nPREFIX\n\n<read-files>")


def test_update_prompt_carries_previous_summary():
    b = Builder()
    b.user("q1 " * 100)
    b.assistant("a1 " * 100)
    kept = b.user("q2 " * 100)
    b.assistant("a2 " * 100)
    b.add("compaction", summary="PREVIOUS", firstKeptEntryId=kept, tokensBefore=5)
    b.user("q3 " * 100)
    b.assistant("a3 " * 100)
    plan = prepare_compaction(_path(b), CompactionSettings(force=True, keep_recent_tokens=100), file_tools=file_tools())
    assert isinstance(plan, CompactionPlan) and not plan.split_turn
    history = plan.calls[0]
    assert history.previous_summary == "PREVIOUS"
    assert "<previous-summary>\nPREVIOUS\n</previous-summary>" in history.user_prompt
    # FIX boundary: the earlier kept region (q2, a2) is summarized again, the compaction entry is not.
    assert plan.messages_to_summarize == 2


def test_already_compacted_and_threshold_and_unknown_window():
    b = Builder()
    u = b.user("x" * 400)
    b.assistant("y" * 400, usage=150_000)
    b.add("compaction", summary="S", firstKeptEntryId=u, tokensBefore=1)
    assert prepare_compaction(_path(b), FORCE, file_tools=file_tools()).reason == "already compacted"
    b.user("next")
    plan = prepare_compaction(_path(b), CompactionSettings(), context_window=128_000, file_tools=file_tools())
    # The only usage predates the compaction: it is stale and must not trigger another compaction.
    assert isinstance(plan, Skip) and plan.reason.startswith("below threshold")
    fresh = Builder()
    fresh.user("x")
    fresh.assistant("y", usage=120_000)
    assert isinstance(prepare_compaction(_path(fresh), CompactionSettings(), context_window=128_000, file_tools=file_tools()), Skip)
    fresh.user("z" * 40_000)
    small_keep = CompactionSettings(keep_recent_tokens=1000)
    assert isinstance(prepare_compaction(_path(fresh), small_keep, context_window=128_000, file_tools=file_tools()), CompactionPlan)
    unknown = prepare_compaction(_path(fresh), small_keep, file_tools=file_tools())
    assert isinstance(unknown, Skip) and "unknown context window" in unknown.reason


@pytest.mark.parametrize(
    ("settings", "window", "threshold"),
    [
        (CompactionSettings(), 200_000, 183_616),
        (CompactionSettings(threshold_percent=80), 200_000, 160_000),
        (CompactionSettings(threshold_tokens=90_000), 200_000, 90_000),
        (CompactionSettings(threshold_tokens=500_000), 200_000, 199_999),
        (CompactionSettings(threshold_percent=80, threshold_tokens=1000), 200_000, 1000),
    ],
)
def test_thresholds(settings, window, threshold):
    assert settings.threshold(window) == threshold


def _independent_count(path, start_line: int, end_line: int) -> int:
    """Messages in lines [start, end) counted straight from the JSON, compactions excluded."""
    count = 0
    with open(path) as handle:
        for lineno, raw in enumerate(handle, 1):
            if start_line <= lineno < end_line:
                kind = json.loads(raw)["type"]
                count += kind in ("message", "custom_message", "branch_summary")
    return count


@pytest.mark.parametrize("name", sorted(FIXTURE_TABLE))
def test_fixture_cut_points_match_pi(name):
    path = fixture_path("pi", name)
    session = read_pi_session(path)
    entries = session.tree.path()
    boundary_line = 2
    compactions = [e for e in entries if e.type == "compaction"]
    if compactions:  # FIX: the boundary is the previous compaction's first kept entry
        kept = compactions[-1].data["firstKeptEntryId"]
        boundary_line = next(e.line for e in entries if e.id == kept)
    for keep, first, turn, split, msgs, prefix, before, nread, nmod in FIXTURE_TABLE[name]:
        plan = prepare_compaction(entries, CompactionSettings(force=True, keep_recent_tokens=keep), file_tools=file_tools())
        assert isinstance(plan, CompactionPlan), plan
        got = (plan.first_kept_line, plan.turn_start_line, plan.split_turn, plan.messages_to_summarize,
               plan.turn_prefix_messages, plan.tokens_before, len(plan.read_files), len(plan.modified_files))
        assert got == (first, turn, split, msgs, prefix, before, nread, nmod), keep
        history_end = turn if split else first
        assert msgs == _independent_count(path, boundary_line, history_end)
        assert prefix == (_independent_count(path, turn, first) if split else 0)
        assert entries[plan.first_kept_index].role != "toolResult"
        # The pi bug fixes change nothing here.
        pi_plan = prepare_compaction(
            entries, CompactionSettings(force=True, keep_recent_tokens=keep, fix_false_split=False)
        , file_tools=file_tools())
        assert (pi_plan.first_kept_line, pi_plan.split_turn) == (first, split)


def test_fixture_second_compaction_uses_fix_boundary_not_snap():
    session = read_pi_session(fixture_path("pi", "before-compaction.jsonl"))
    plan = prepare_compaction(session.tree.path(), CompactionSettings(force=True), file_tools=file_tools())
    # SNAP would start after the compaction on line 629; FIX starts at its first kept entry (line 552).
    assert plan.boundary_start == 550
    assert plan.previous_summary.startswith("# Context Checkpoint")


# ---- properties ----------------------------------------------------------------------------------

ROLE = st.sampled_from(["user", "assistant", "tool", "meta", "bash"])


def _build(steps):
    b = Builder()
    for kind, size in steps:
        text = "w" * size
        if kind == "user":
            b.user(text)
        elif kind == "assistant":
            b.assistant(text, calls=[("read", {"path": f"f{size}.py"})] if size % 2 else [], usage=size * 3)
        elif kind == "tool":
            b.tool_result(text)
        elif kind == "meta":
            b.meta()
        else:
            b.add("message", message={"role": "bashExecution", "command": "ls", "output": text, "exitCode": 0})
    return b


@settings(max_examples=150, deadline=None)
@given(steps=st.lists(st.tuples(ROLE, st.integers(1, 3000)), min_size=1, max_size=40),
       keep=st.integers(1, 20000))
def test_planning_properties(steps, keep):
    b = _build(steps)
    path = _path(b)
    settings_ = CompactionSettings(force=True, keep_recent_tokens=keep)
    plan = prepare_compaction(path, settings_, file_tools=file_tools())
    assert plan == prepare_compaction(path, settings_, file_tools=file_tools())  # deterministic (plans and skips are values)
    if isinstance(plan, Skip):
        return
    first = path[plan.first_kept_index]
    assert first.role != "toolResult"
    from batchcompact.core.cutpoint import is_cut_point
    from batchcompact.core.tokens import estimate_tokens

    kept = sum(estimate_tokens(e.message) for e in path[plan.first_kept_index:] if e.message is not None)
    # pi moves the cut forward from where the budget was reached to the next valid cut point, so the
    # kept region plus the run of non-cut-point entries (tool results, metadata) just before it reaches
    # the budget, unless everything from the first valid cut point on is kept.
    index = plan.first_kept_index - 1
    skipped = 0
    while index >= 0 and not is_cut_point(path[index]):
        skipped += estimate_tokens(path[index].message) if path[index].message is not None else 0
        index -= 1
    everything = not any(is_cut_point(e) for e in path[: plan.first_kept_index])
    assert kept + skipped >= keep or everything
    assert plan.calls and all(c.user_prompt for c in plan.calls)
    # Applying the plan never leaves an orphan tool result at the start of the kept region, and the
    # compacted session is then "already compacted".
    b.add("compaction", summary="S", firstKeptEntryId=plan.first_kept_entry_id, tokensBefore=plan.tokens_before)
    new_path = _path(b)
    from batchcompact.core.context import build_session_context

    ctx = build_session_context(new_path).messages
    assert ctx[0].message["role"] == "compactionSummary"
    assert len(ctx) == 1 or ctx[1].message["role"] != "toolResult"
    assert prepare_compaction(new_path, settings_, file_tools=file_tools()).reason == "already compacted"
