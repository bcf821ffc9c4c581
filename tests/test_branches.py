"""Branch summaries: abandoned branches, pi's prepareBranchEntries, plans, skips, entries, idempotence."""

from __future__ import annotations

import re

import pytest
from conftest import SAMPLES
from factories import Builder
from hypothesis import given, settings
from hypothesis import strategies as st

from batchcompact.agents import file_tools
from batchcompact.core.branches import (
    BranchPlan,
    BranchSettings,
    BranchSkip,
    BranchSummaryResult,
    build_branch_summary_chain,
    build_branch_summary_entry,
    find_abandoned_branches,
    find_summarized_leaves,
    plan_all_branches,
    plan_branch_summary,
    prepare_branch_entries,
)
from batchcompact.core.calls import BRANCH
from batchcompact.core.context import BRANCH_SUMMARY_PREFIX, build_session_context, convert_to_llm
from batchcompact.core.entries import Entry
from batchcompact.core.planner import CompactionPlan, CompactionSettings, prepare_compaction
from batchcompact.core.prompts import (
    BRANCH_SUMMARY_PREAMBLE,
    SUMMARIZATION_SYSTEM_PROMPT,
    build_branch_summary_prompt,
)
from batchcompact.core.serialize import serialize_conversation
from batchcompact.core.tree import SessionTree

TS = "2026-11-22T04:00:00.000Z"


def _tree(b: Builder) -> SessionTree:
    return SessionTree(b.objects())


def _nested() -> tuple[Builder, dict[str, str]]:
    """u1 a2 (fork) -> [u3 a4 (fork) -> u5 a6 | u7 a8] abandoned; u9 a10 active (last line)."""
    b = Builder()
    ids = {"u1": b.user("start"), "a2": b.assistant("ok")}
    ids["u3"] = b.user("try plan A")
    ids["a4"] = b.assistant("A needs a cache", calls=[("read", {"path": "src/a.py"})])
    ids["u5"] = b.user("go on with A")
    ids["a6"] = b.assistant("A failed", calls=[("edit", {"path": "src/a.py"})])
    ids["u7"] = b.user("try A prime", parent=ids["a4"])
    ids["a8"] = b.assistant("A prime failed too", calls=[("write", {"path": "src/b.py"})])
    ids["u9"] = b.user("plan B", parent=ids["a2"])
    ids["a10"] = b.assistant("B works")
    return b, ids


def _append(tree: SessionTree, entries: list[dict]) -> SessionTree:
    return SessionTree([*tree.entries, *(Entry(e, None) for e in entries)])


def _apply_all(tree: SessionTree, session_id: str = "s-1") -> tuple[SessionTree, list[dict]]:
    plans = [p for p in plan_all_branches(tree, BranchSettings(), file_tools=file_tools()) if isinstance(p, BranchPlan)]
    results = [BranchSummaryResult(p, f"## Goal\nsummary of {p.leaf_id}") for p in plans]
    chain = build_branch_summary_chain(
        results, leaf_id=tree.leaf.id, existing_ids=tree.by_id, session_id=session_id, timestamp=TS
    )
    return _append(tree, chain), chain


# --- finding branches ---------------------------------------------------------------------------------


def test_nested_branches_are_each_walked_from_their_own_leaf_to_the_active_path():
    b, ids = _nested()
    branches = find_abandoned_branches(_tree(b))
    assert [br.leaf_id for br in branches] == [ids["a6"], ids["a8"]]  # file order of the leaves
    first, second = branches
    assert [e.id for e in first.entries] == [ids["u3"], ids["a4"], ids["u5"], ids["a6"]]
    assert [e.id for e in second.entries] == [ids["u3"], ids["a4"], ids["u7"], ids["a8"]]
    # Both reach the active path at a2, not at their own fork a4; u3 a4 are held (and summarized) by both.
    assert first.ancestor_id == second.ancestor_id == ids["a2"]
    assert first.shared_entries == second.shared_entries == 2
    assert first.entry_count == 4
    assert first.tokens > 0


def test_a_branch_sharing_no_entry_with_the_active_path_has_no_ancestor():
    b = Builder()
    old = [b.user("first attempt"), b.assistant("first answer")]
    b.user("a fresh start", parent=None)
    b.assistant("fresh answer")
    tree = _tree(b)
    (branch,) = find_abandoned_branches(tree)
    assert branch.ancestor is None and branch.ancestor_id is None
    assert [e.id for e in branch.entries] == old
    plan = plan_branch_summary(tree, branch, BranchSettings(), file_tools=file_tools())
    assert isinstance(plan, BranchPlan)
    assert plan.from_id == old[-1]  # the abandoned leaf, never pi's "root"
    entry = build_branch_summary_entry(
        plan, "text", parent_id=tree.leaf.id, existing_ids=tree.by_id, session_id="s", timestamp=TS
    )
    assert entry["fromId"] == old[-1] and entry["parentId"] == tree.leaf.id


def test_the_walk_does_not_stop_at_a_compaction_entry():
    b = Builder()
    fork = [b.user("u"), b.assistant("a")][-1]
    b.user("branch start")
    b.add("compaction", summary="S" * 40, firstKeptEntryId="x", tokensBefore=5, fromHook=False)
    b.assistant("after the compaction")
    b.user("active", parent=fork)
    (branch,) = find_abandoned_branches(_tree(b))
    assert [e.type for e in branch.entries] == ["message", "compaction", "message"]
    messages, _, _ = prepare_branch_entries(branch.entries, file_tools=file_tools())
    assert [m["role"] for m in messages] == ["user", "compactionSummary", "assistant"]


def test_no_branches_in_a_linear_session_or_an_empty_one():
    b = Builder()
    b.user("u")
    b.assistant("a")
    assert find_abandoned_branches(_tree(b)) == []
    assert find_abandoned_branches(SessionTree([])) == []
    assert plan_all_branches(SessionTree([]), BranchSettings(), file_tools=file_tools()) == []


# --- prepare_branch_entries ---------------------------------------------------------------------------


def _entries(b: Builder) -> list[Entry]:
    return b.objects()


def test_tool_results_are_skipped_entirely_and_metadata_gives_nothing():
    b = Builder()
    b.user("u" * 8)
    b.assistant("", calls=[("read", {"path": "r.py"})])
    b.tool_result("x" * 40000)
    b.meta()
    b.add("model_change", provider="p", modelId="m")
    b.add("custom", customType="ext", data={})
    b.add("label", targetId="00000001", label="here")
    b.assistant("done")
    messages, ops, total = prepare_branch_entries(_entries(b), 100, file_tools=file_tools())
    assert [m["role"] for m in messages] == ["user", "assistant", "assistant"]
    assert total == 2 + 5 + 1  # the 10000-token tool result neither counts nor stops the walk
    assert ops.lists() == (["r.py"], [])


def test_custom_messages_and_branch_summaries_are_mapped():
    b = Builder()
    b.add("custom_message", customType="note", content="hello", display=True)
    b.add("branch_summary", fromId="x", summary="", fromHook=False)  # pi maps even an empty one
    messages, _, _ = prepare_branch_entries(_entries(b), file_tools=file_tools())
    assert [m["role"] for m in messages] == ["custom", "branchSummary"]
    assert messages[1]["summary"] == ""


@pytest.mark.parametrize(
    ("budget", "expected"),
    [
        (0, ["old", "mid", "new"]),  # no budget: everything
        (250, ["mid", "new"]),  # 100 + 100 fit, 300 > 250 stops the walk
        (300, ["old", "mid", "new"]),  # exactly the budget still fits
        (150, ["new"]),
        (50, []),  # the newest alone passes the budget: nothing, as in pi
    ],
)
def test_budget_takes_messages_newest_first_and_stops_at_the_first_that_does_not_fit(budget, expected):
    b = Builder()
    for name in ("old", "mid", "new"):
        b.user(name.ljust(400, "."))  # 100 tokens each
    messages, _, total = prepare_branch_entries(_entries(b), budget, file_tools=file_tools())
    assert [m["content"][:3] for m in messages] == expected
    assert total == 100 * len(expected)


def test_the_walk_stops_even_when_an_older_message_would_fit():
    b = Builder()
    b.user("tiny")
    b.user("x" * 4000)  # 1000 tokens
    b.user("y" * 400)  # 100 tokens
    messages, _, total = prepare_branch_entries(_entries(b), 500, file_tools=file_tools())
    assert [m["content"][0] for m in messages] == ["y"] and total == 100


@pytest.mark.parametrize(
    ("kind", "budget", "taken"),
    [
        ("branch_summary", 250, True),  # 200 < 0.9 * 250 = 225: the summary still goes in
        ("branch_summary", 220, False),  # 200 >= 198: no
        ("compaction", 250, True),
        ("compaction", 220, False),
        ("message", 250, False),  # an ordinary message never does
    ],
)
def test_an_earlier_summary_past_the_budget_is_kept_while_under_ninety_percent(kind, budget, taken):
    b = Builder()
    b.user("lost".ljust(400, "."))  # older than the summary: never reached
    if kind == "message":
        b.user("S" * 400)
    elif kind == "compaction":
        b.add(kind, summary="S" * 400, firstKeptEntryId="x", tokensBefore=1, fromHook=False)
    else:
        b.add(kind, fromId="x", summary="S" * 400, fromHook=False)
    b.user("m".ljust(400, "."))
    b.user("n".ljust(400, "."))
    messages, _, total = prepare_branch_entries(_entries(b), budget, file_tools=file_tools())
    assert len(messages) == (3 if taken else 2)
    assert total == (300 if taken else 200)
    assert all(m.get("content", "")[:4] != "lost" for m in messages if m["role"] == "user")


def test_file_ops_come_from_earlier_non_hook_branch_summaries_and_from_messages_past_the_budget():
    b = Builder()
    b.add(
        "branch_summary",
        fromId="x",
        summary="s",
        fromHook=False,
        details={"readFiles": ["old_read.py"], "modifiedFiles": ["old_mod.py"]},
    )
    b.add(
        "branch_summary",
        fromId="y",
        summary="s",
        fromHook=True,
        details={"readFiles": ["hook.py"], "modifiedFiles": ["hook_mod.py"]},
    )
    b.add("branch_summary", fromId="z", summary="s")  # no details
    b.assistant("x" * 4000, calls=[("edit", {"path": "big.py"})])  # does not fit, its file ops count
    b.assistant("", calls=[("read", {"path": "old_mod.py"}), ("read", {"path": "new.py"})])
    messages, ops, _ = prepare_branch_entries(_entries(b), 100, file_tools=file_tools())
    assert len(messages) == 1
    assert ops.lists() == (["new.py", "old_read.py"], ["big.py", "old_mod.py"])


# --- planning -----------------------------------------------------------------------------------------


def test_plan_builds_one_branch_call_with_pis_prompt_and_budget():
    b, ids = _nested()
    tree = _tree(b)
    settings = BranchSettings(instructions="focus on caching")
    first = plan_branch_summary(tree, find_abandoned_branches(tree)[0], settings, file_tools=file_tools())
    assert isinstance(first, BranchPlan)
    assert first.budget == 128000 - 16384 and first.context_window == 128000
    assert first.from_id == ids["a6"] and first.ancestor_id == ids["a2"]
    messages, _, total = prepare_branch_entries(first.branch.entries, first.budget, file_tools=file_tools())
    call = first.call
    assert call.kind == BRANCH and first.calls == [call]
    assert call.system_prompt == SUMMARIZATION_SYSTEM_PROMPT
    assert call.user_prompt == build_branch_summary_prompt(
        serialize_conversation(convert_to_llm(messages)), "focus on caching", budget=2048
    )
    assert "The whole summary must fit in 2,048 tokens" in call.user_prompt  # the model is told its budget
    assert call.max_tokens == 2048 and call.instructions == "focus on caching"
    assert first.messages == 4 and first.total_tokens == total and not first.truncated
    assert (first.read_files, first.modified_files) == ([], ["src/a.py"])


@pytest.mark.parametrize(
    ("settings", "window", "budget"),
    [
        (BranchSettings(), None, 128000 - 16384),
        (BranchSettings(), 200000, 200000 - 16384),
        (BranchSettings(context_window=32000), 200000, 32000 - 16384),
        (BranchSettings(reserve_tokens=1000, default_context_window=5000), None, 4000),
    ],
)
def test_budget_is_the_window_minus_the_reserve(settings, window, budget):
    b, _ = _nested()
    tree = _tree(b)
    plan = plan_branch_summary(tree, find_abandoned_branches(tree)[0], settings, window, file_tools=file_tools())
    assert plan.budget == budget


def test_a_branch_over_the_budget_is_marked_truncated():
    b = Builder()
    fork = b.user("u")
    for index in range(6):
        b.user(f"{index}".ljust(400, "."))
    b.user("active", parent=fork)
    tree = _tree(b)
    plan = plan_branch_summary(tree, find_abandoned_branches(tree)[0], BranchSettings(reserve_tokens=0), 250, file_tools=file_tools())
    assert plan.truncated and plan.messages == 2 and plan.total_tokens == 200


def test_skips_a_branch_with_no_messages_with_no_text_and_below_min_tokens():
    b = Builder()
    fork = b.user("u")
    b.add("label", parent=fork, targetId=fork, label="mark")  # a branch of one label: no messages
    b.assistant("", parent=fork)  # a message with no text
    b.user("tiny", parent=fork)
    b.user("the active path", parent=fork)
    tree = _tree(b)
    results = plan_all_branches(tree, BranchSettings(min_branch_tokens=5), file_tools=file_tools())
    assert [r.reason for r in results] == [
        "nothing to summarize (no messages on the branch)",
        "nothing to summarize (the branch has no text)",
        "below min_branch_tokens (1 < 5)",
    ]
    assert isinstance(plan_all_branches(tree, BranchSettings(), file_tools=file_tools())[2], BranchPlan)


# --- entries, chains, idempotence ---------------------------------------------------------------------


def test_entry_fields_order_summary_and_id():
    b, ids = _nested()
    tree = _tree(b)
    plan = plan_all_branches(tree, BranchSettings(), file_tools=file_tools())[1]
    usage = {"input": 10, "output": 5, "cacheRead": 0, "cacheWrite": 0, "totalTokens": 15}
    entry = build_branch_summary_entry(
        plan,
        "## Goal\nG",
        parent_id=ids["a10"],
        existing_ids=tree.by_id,
        session_id="s-1",
        timestamp=TS,
        usage=usage,
    )
    assert list(entry) == [
        "type",
        "id",
        "parentId",
        "timestamp",
        "fromId",
        "summary",
        "details",
        "fromHook",
        "usage",
    ]
    assert re.fullmatch(r"[0-9a-f]{8}", entry["id"]) and entry["id"] not in tree.by_id
    assert entry["parentId"] == ids["a10"] and entry["fromId"] == ids["a8"]
    assert entry["summary"] == (
        BRANCH_SUMMARY_PREAMBLE + "## Goal\nG\n\n<read-files>\nsrc/a.py\n</read-files>"
        "\n\n<modified-files>\nsrc/b.py\n</modified-files>"
    )
    assert entry["details"] == {"readFiles": ["src/a.py"], "modifiedFiles": ["src/b.py"]}
    assert entry["fromHook"] is False and entry["usage"] == usage
    again = build_branch_summary_entry(
        plan, "other", parent_id=ids["a10"], existing_ids=tree.by_id, session_id="s-1", timestamp=TS
    )
    assert again["id"] == entry["id"] and "usage" not in again  # deterministic, usage optional
    taken = build_branch_summary_entry(
        plan, "x", parent_id=None, existing_ids={*tree.by_id, entry["id"]}, session_id="s-1", timestamp=TS
    )
    assert taken["id"] != entry["id"]


def test_entry_validates_against_the_written_entry_schema():
    from code_helpers import written_entry_problems as validate
    b, _ = _nested()
    tree, chain = _apply_all(_tree(b))
    assert len(chain) == 2
    for entry in chain:
        assert validate(entry) == []


def test_summaries_chain_on_the_active_path_and_enter_the_context():
    b, ids = _nested()
    before = _tree(b)
    after, chain = _apply_all(before)
    assert chain[0]["parentId"] == ids["a10"]
    assert chain[1]["parentId"] == chain[0]["id"]
    assert after.leaf.id == chain[-1]["id"]
    path = after.path()
    assert [e.id for e in path[: len(before.path())]] == [e.id for e in before.path()]
    context = build_session_context(path)
    summaries = [m.message for m in context.messages if m.message["role"] == "branchSummary"]
    assert [m["fromId"] for m in summaries] == [ids["a6"], ids["a8"]]
    text = convert_to_llm(summaries)[0]["content"][0]["text"]
    assert text.startswith(BRANCH_SUMMARY_PREFIX + BRANCH_SUMMARY_PREAMBLE)
    assert text.endswith("</modified-files></summary>")  # pi's wrapper: no newline before </summary>


def test_a_rerun_skips_every_branch_already_summarized():
    b, _ = _nested()
    after, chain = _apply_all(_tree(b))
    results = plan_all_branches(after, BranchSettings(), file_tools=file_tools())
    assert all(isinstance(r, BranchSkip) for r in results)
    assert [r.summary_id for r in results] == [e["id"] for e in chain]
    assert results[0].reason.startswith("already summarized (branch_summary ")
    _, second = _apply_all(after)
    assert second == []


def test_a_summary_anywhere_in_the_file_counts_but_only_for_its_own_leaf():
    b, ids = _nested()
    # Written off the active path, for the first branch only.
    b.add("branch_summary", parent=ids["u1"], fromId=ids["a6"], summary="done before", fromHook=False)
    b.user("active again", parent=ids["a10"])
    results = plan_all_branches(_tree(b), BranchSettings(), file_tools=file_tools())
    by_leaf = {r.leaf_id: r for r in results}
    assert isinstance(by_leaf[ids["a6"]], BranchSkip)
    assert isinstance(by_leaf[ids["a8"]], BranchPlan)


def test_a_summary_pi_wrote_on_leaving_a_branch_is_recognised():
    # pi's code writes fromId = parentId = the position it returned to, right after the old leaf.
    b = Builder()
    fork = [b.user("u"), b.assistant("a")][-1]
    b.user("branch")
    leaf = b.assistant("branch answer")
    pi_summary = b.add("branch_summary", parent=fork, fromId=fork, summary="s", fromHook=False)
    b.user("continue from the summary")
    tree = _tree(b)
    assert find_summarized_leaves(tree) == {leaf: tree.get(pi_summary)}
    (result,) = plan_all_branches(tree, BranchSettings(), file_tools=file_tools())
    assert isinstance(result, BranchSkip) and result.summary_id == pi_summary


def test_a_pi_summary_back_to_the_root_is_recognised():
    b = Builder()
    b.user("u")
    leaf = b.assistant("a")
    pi_summary = b.add("branch_summary", parent=None, fromId="root", summary="s", fromHook=False)
    b.user("new start")
    (result,) = plan_all_branches(_tree(b), BranchSettings(), file_tools=file_tools())
    assert result.leaf_id == leaf and result.summary_id == pi_summary


def test_a_pi_shaped_summary_not_right_after_the_leaf_does_not_count():
    b = Builder()
    fork = [b.user("u"), b.assistant("a")][-1]
    b.user("branch")
    b.assistant("branch answer")
    b.user("active", parent=fork)
    b.add("branch_summary", fromId=b.leaf, summary="s")  # fromId == parentId, but follows no leaf
    (result,) = plan_all_branches(_tree(b), BranchSettings(), file_tools=file_tools())
    assert isinstance(result, BranchPlan)


def test_the_compaction_is_planned_over_the_path_ending_with_the_summaries():
    b, _ = _nested()
    after, chain = _apply_all(_tree(b))
    path = after.path()
    plan = prepare_compaction(path, CompactionSettings(force=True, keep_recent_tokens=1), file_tools=file_tools())
    assert isinstance(plan, CompactionPlan)
    assert plan.leaf_id == chain[-1]["id"]  # the compaction's parent is the last summary
    # Summary entries add 0 to pi's keep-recent walk, so they always land in the kept tail.
    first_summary = next(i for i, e in enumerate(path) if e.id == chain[0]["id"])
    assert plan.first_kept_index <= first_summary


# --- properties ---------------------------------------------------------------------------------------


@settings(max_examples=150, deadline=None)
@given(
    st.lists(
        st.tuples(st.integers(0, 1000), st.sampled_from(["user", "assistant", "tool", "meta"])),
        min_size=1,
        max_size=25,
    )
)
def test_branches_never_touch_the_active_path_and_end_at_their_leaf(shape):
    b = Builder()
    made: list[str] = []
    for pick, kind in shape:
        parent = made[pick % len(made)] if made and pick % 7 else (made[-1] if made else None)
        if kind == "user":
            made.append(b.user("u" * (pick % 50), parent=parent))
        elif kind == "assistant":
            made.append(b.assistant("a" * (pick % 50), parent=parent))
        elif kind == "tool":
            made.append(b.tool_result("t" * pick, parent=parent))
        else:
            made.append(b.meta(parent=parent))
    tree = _tree(b)
    active = {e.id for e in tree.path()}
    branches = find_abandoned_branches(tree)
    assert {br.leaf_id for br in branches} == {e.id for e in tree.abandoned_leaves()}
    for branch in branches:
        assert branch.entries[-1] is branch.leaf
        assert not active & {e.id for e in branch.entries}
        assert branch.entries[0].parent_id == branch.ancestor_id
        assert branch.ancestor_id is None or branch.ancestor_id in active
        for budget in (0, 40, 400):
            messages, _, total = prepare_branch_entries(branch.entries, budget, file_tools=file_tools())
            assert all(m["role"] != "toolResult" for m in messages)
            assert budget == 0 or total <= budget  # no summaries here, so the budget is never passed
        result = plan_branch_summary(tree, branch, BranchSettings(), file_tools=file_tools())
        assert isinstance(result, (BranchPlan, BranchSkip))


# --- the branched sample ------------------------------------------------------------------------------


def test_branched_sample_gives_one_result_per_abandoned_branch_and_is_idempotent():
    path = SAMPLES / "pi" / "branched.jsonl"
    from batchcompact.adapters.pi.read import read_pi_session

    session = read_pi_session(path)
    tree = session.tree
    branches = find_abandoned_branches(tree)
    results = plan_all_branches(tree, BranchSettings(), 200000, file_tools=file_tools())
    assert len(branches) >= 2
    assert [r.leaf_id for r in results] == [br.leaf_id for br in branches]
    # The sample's first branch was left with a summary (pi's shape): it is not summarized again.
    skips = [r for r in results if isinstance(r, BranchSkip)]
    assert [r.reason.split(" (")[0] for r in skips] == ["already summarized"]
    plans = [r for r in results if isinstance(r, BranchPlan)]
    assert len(plans) == len(branches) - 1
    assert any(br.shared_entries for br in branches)  # the nested pair

    after, chain = _apply_all(tree, session.session_id or "s")
    assert len(chain) == len(plans)
    assert all(isinstance(r, BranchSkip) for r in plan_all_branches(after, BranchSettings(), 200000, file_tools=file_tools()))
    roles = [m.message["role"] for m in build_session_context(after.path()).messages]
    assert roles.count("branchSummary") == len(plans) + 1  # ours, plus pi's on the active path
