"""Codex usage counted once: sub-agent replays, forks with re-stamped parent history, re-emitted events.

The two ccusage cases are its own test inputs materialised as files (../shared/fixtures/agents/
codex-edge-cases/, PROVENANCE.md); the fork and re-emit cases are written here in the shape the real
Codex writes them (a fork's rollout: its own `session_meta` with `forked_from_id`, then the parent's
`session_meta` and items, every line stamped with the time of the fork).
"""

from __future__ import annotations

import shutil

import pytest
from codex_rollouts import parent_lines, token_count, usage, write, write_fork, write_reemitted  # noqa: F401

from batchcompact.report import ReportSettings, build_report, collect_usage


def totals(paths, tmp_path, by="session"):
    collected = collect_usage(paths, cache_dir=tmp_path / "cache", jobs=1)
    try:
        report = build_report(collected.parts, ReportSettings(by=by))
    finally:
        collected.cleanup()
    rows = {r["session_id"]: (r["requests"], r["total_tokens"]) for r in report.rows.iter_rows(named=True)}
    return report.totals, rows, collected




def test_subagent_replay_counts_the_childs_own_turns(fixtures_dir, tmp_path):
    """ccusage #950: 3,780 tokens before (the replayed parent history counted again), 1,980 now."""
    folder = fixtures_dir / "agents" / "codex-edge-cases" / "ccusage-subagent-replay"
    total, rows, collected = totals([folder], tmp_path)
    assert (total["requests"], total["total_tokens"]) == (4, 1980)
    assert rows["subagent-abc"] == (2, 180)
    child = next(s for s in collected.stats if s["path"].endswith("subagent.jsonl"))
    assert child["inherited_dropped"] == 2


def test_branch_copy_with_original_times_counts_once(fixtures_dir, tmp_path):
    folder = fixtures_dir / "agents" / "codex-edge-cases" / "ccusage-branch-copy-original-timestamps"
    total, rows, _ = totals([folder], tmp_path)
    assert (total["requests"], total["total_tokens"]) == (2, 2050)
    assert rows["2026-05-12T08-02-00-branch"] == (1, 850)


@pytest.mark.parametrize("with_parent", [True, False])
def test_fork_with_restamped_history_counts_the_forks_own_turns(tmp_path, with_parent):
    """ccusage #988/#1349: the copied parent history carries the fork's time, so no time-based key meets
    the parent's; it is recognised as the copy that follows the parent's `session_meta`."""
    write_fork(tmp_path / "sessions", with_parent=with_parent)
    total, rows, _ = totals([tmp_path / "sessions"], tmp_path)
    assert rows["fork-2"] == (2, 115)
    assert total["total_tokens"] == 115 + (1800 if with_parent else 0)


def test_a_reemitted_token_count_counts_once(tmp_path):
    """ccusage #1288: the same event again with a fresh time (a UI or rate-limit refresh)."""
    write_reemitted(tmp_path / "r" / "rollout.jsonl")
    total, rows, collected = totals([tmp_path / "r"], tmp_path)
    assert (total["requests"], total["total_tokens"]) == (2, 1800)
    assert collected.stats[0]["repeats_dropped"] == 2


def test_a_fork_copied_into_two_archives_is_read_once_per_resolved_path(tmp_path, fixtures_dir):
    """The same rollout under sessions/ and through a symlink is one file."""
    folder = fixtures_dir / "agents" / "codex-edge-cases" / "ccusage-subagent-replay"
    shutil.copytree(folder, tmp_path / "a")
    (tmp_path / "b").symlink_to(tmp_path / "a")
    total, _, _ = totals([tmp_path / "a", tmp_path / "b"], tmp_path)
    assert total["total_tokens"] == 1980


def test_a_sub_agents_own_quick_first_call_is_not_taken_for_a_copy(tmp_path):
    """A spawned sub-agent without a copied parent history whose first call is answered within the second
    it was created in: one event in that second is its own, not a replayed burst."""
    day = "2026-05-16"
    meta = {"timestamp": f"{day}T10:00:00.100Z", "type": "session_meta",
            "payload": {"id": "child-q", "source": {"subagent": {"thread_spawn": {"parent_thread_id": "p"}}}}}
    lines = [meta, token_count(f"{day}T10:00:00.900Z", usage(100, 0, 10), usage(100, 0, 10)),
             token_count(f"{day}T10:00:05.000Z", usage(50, 0, 5), usage(150, 0, 15))]
    write(tmp_path / "s" / "child.jsonl", lines)
    total, rows, collected = totals([tmp_path / "s"], tmp_path)
    assert rows["child-q"] == (2, 165) and collected.stats[0]["inherited_dropped"] == 0


def test_cache_writes_are_a_part_of_the_input(tmp_path):
    """Codex 0.16x adds `cache_write_input_tokens`; its `total_tokens` is input + output, so the writes are
    inside `input_tokens` like the cached reads."""
    lines = parent_lines(thread="w-1")
    for line in lines[2:]:
        for usage_ in line["payload"]["info"].values():
            usage_["cache_write_input_tokens"] = 40
    write(tmp_path / "w" / "rollout.jsonl", lines)
    total, _, _ = totals([tmp_path / "w"], tmp_path)
    assert (total["input_tokens"], total["cache_write_tokens"], total["total_tokens"]) == (1500 - 150 - 80, 80, 1800)
