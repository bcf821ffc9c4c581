"""Per-agent trigger defaults: a default `plan` compacts where Claude Code / Codex would have."""

from __future__ import annotations

import json
import os
import subprocess
import sys

import pytest
from conftest import fixture_path

from batchcompact.adapters.claude.trigger import CLAUDE_1M_WINDOW, claude_threshold, claude_window
from batchcompact.adapters.codex.trigger import codex_model_window, codex_threshold
from batchcompact.agents import get, load
from batchcompact.core.planner import CompactionSettings
from batchcompact.pipeline.planning import PlanOptions, plan_file

SPOTTER = ("claude", "projects", "-home-USER-projects-spotter")
MAIN = (*SPOTTER, "4d5611e5-241a-462a-8d15-5122611a9569.jsonl")
CODEX_REMOTE = ("codex", "sessions", "2026", "02", "23")


def _cut(source, tmp_path, lines: int, name: str = "cut.jsonl"):
    target = tmp_path / name
    with open(source, encoding="utf-8") as f:
        target.write_text("".join(line for _, line in zip(range(lines), f, strict=False)), encoding="utf-8")
    return target


def _boundary_line(source) -> int:
    with open(source, encoding="utf-8") as f:
        for number, line in enumerate(f, 1):
            if '"compact_boundary"' in line:
                return number
    raise AssertionError("no boundary")


def test_claude_session_compacts_where_claude_code_did(tmp_path):
    """Cut just before Claude Code's own auto-compaction (preTokens 170,251): the default plan compacts."""
    source = fixture_path(*MAIN)
    boundary = _boundary_line(source)
    row = plan_file(str(_cut(source, tmp_path, boundary - 1)), CompactionSettings(), PlanOptions())
    assert row["status"] == "compact", row["reason"]
    assert row["context_window"] == 200_000
    assert row["window_source"] == "claude code 200k"
    assert row["threshold"] == 167_000  # 200k - 20k output reserve - 13k buffer
    assert row["tokens_before"] > 167_000


def test_claude_session_earlier_is_below_claude_codes_threshold(tmp_path):
    """Two replies earlier the context was below the auto-compact point: no compaction, as in Claude Code."""
    source = fixture_path(*MAIN)
    boundary = _boundary_line(source)
    row = plan_file(str(_cut(source, tmp_path, boundary - 60)), CompactionSettings(), PlanOptions())
    assert row["status"] == "skip"
    assert "<= 167,000 tokens" in row["reason"]


def test_threshold_flags_override_the_agent_rule(tmp_path):
    source = fixture_path(*MAIN)
    cut = _cut(source, tmp_path, _boundary_line(source) - 1)
    row = plan_file(str(cut), CompactionSettings(threshold_tokens=180_000), PlanOptions())
    assert row["status"] == "skip" and row["threshold"] == 180_000
    row = plan_file(str(cut), CompactionSettings(context_window=1_000_000), PlanOptions())
    assert row["status"] == "skip"
    assert (row["context_window"], row["window_source"], row["threshold"]) == (1_000_000, "--context-window", 967_000)


def test_claude_window_rules():
    small = {"role": "assistant", "model": "claude-opus-4-6", "usage": {"totalTokens": 150_000}}
    assert claude_window([small]) == (200_000, "claude code 200k")
    tagged = {"role": "assistant", "model": "claude-sonnet-4-5[1m]", "usage": {"totalTokens": 10}}
    assert claude_window([small, tagged]) == (CLAUDE_1M_WINDOW, "claude code 1M ([1m] model)")
    big = {"role": "assistant", "model": "claude-sonnet-4-5", "usage": {"totalTokens": 200_001}}
    assert claude_window([small, big])[0] == CLAUDE_1M_WINDOW
    assert claude_threshold(CLAUDE_1M_WINDOW) == 967_000
    assert claude_threshold(200_000, max_output_tokens=8192) == 200_000 - 8192 - 13_000


def test_codex_rules_follow_its_source():
    # Codex records 95% of the model window; auto-compacts at 90% of the model window.
    assert codex_model_window(258_400) == 272_000
    assert codex_threshold(272_000) == 244_800
    trigger = load(get("codex").trigger)(recorded_window=258_400, reserve_tokens=16384)
    assert (trigger.window, trigger.window_source, trigger.threshold) == (258_400, "codex token_count", 244_800)
    assert load(get("codex").trigger)(reserve_tokens=16384).threshold is None
    pi = load(get("pi").trigger)(table_window=200_000, reserve_tokens=16384)
    assert (pi.window, pi.window_source, pi.threshold) == (200_000, "price table", 183_616)


def test_codex_rollout_plans_against_its_recorded_window():
    folder = fixture_path(*CODEX_REMOTE)
    for path in sorted(folder.glob("rollout-*.jsonl")):
        row = plan_file(str(path), CompactionSettings(), PlanOptions())
        assert (row["context_window"], row["window_source"], row["threshold"]) == (
            258_400,
            "codex token_count",
            244_800,
        ), path.name


def test_codex_remote_compaction_happened_above_codex_limit():
    """In the real rollout with Codex's own compaction, the last usage before it is above 90% of 272k,
    so our rule agrees with where Codex compacted."""
    folder = fixture_path(*CODEX_REMOTE)
    for path in sorted(folder.glob("rollout-*.jsonl")):
        last_total = None
        for line in path.read_text(encoding="utf-8").splitlines():
            obj = json.loads(line)
            payload = obj.get("payload") or {}
            if obj.get("type") == "event_msg" and payload.get("type") == "token_count" and payload.get("info"):
                last_total = payload["info"]["last_token_usage"]["total_tokens"]
            if obj.get("type") == "compacted":
                assert last_total is not None and last_total > 244_800, (path.name, last_total)
                return
    raise AssertionError("no compacted rollout among the fixtures")


def test_plan_command_prints_window_source_and_threshold(tmp_path):
    """From the installed CLI: the text table and JSON rows carry the window, its source and the threshold."""
    source = fixture_path(*MAIN)
    cut = _cut(source, tmp_path, _boundary_line(source) - 1)
    command = [sys.executable, "-m", "batchcompact", "plan", str(cut)]
    env = {**os.environ, "COLUMNS": "250"}
    table = subprocess.run(command, capture_output=True, text=True, timeout=120, env=env)
    assert table.returncode == 0, table.stderr
    assert "claude code 200k" in table.stdout and "167,000" in table.stdout and "compact" in table.stdout
    rows = json.loads(subprocess.run([*command, "--format", "json"], capture_output=True, text=True,
                                     timeout=120).stdout)["rows"]
    assert (rows[0]["window_source"], rows[0]["threshold"], rows[0]["status"]) == ("claude code 200k", 167_000,
                                                                                   "compact")


@pytest.mark.parametrize(("context", "inputs", "usable"), [
    (128_000, {}, 96_000),  # no output limit known: the 32,000 cap
    (128_000, {"output_limit": 16_384}, 111_616),  # limit.output under the cap
    (400_000, {"output_limit": 128_000}, 368_000),  # capped at 32,000
    (400_000, {"input_limit": 272_000, "output_limit": 128_000}, 252_000),  # input limit - min(20,000, 32,000)
    (400_000, {"input_limit": 272_000, "reserved": 50_000}, 222_000),  # compaction.reserved
    (200_000, {"output_limit": 0}, 168_000),  # limit.output 0: the cap (JS `min(0, cap) || cap`)
    (0, {}, 0),  # no context limit: never compacts
    (20_000, {}, 0),
])
def test_opencode_usable_window(context, inputs, usable):
    from batchcompact.adapters.opencode.trigger import opencode_usable

    assert opencode_usable(context, **inputs) == usable


@pytest.mark.parametrize(("usable", "preserve", "tail"), [
    (96_000, None, 15_000), (20_000, None, 5_000), (4_000, None, 2_000), (96_000, 3_000, 3_000)])
def test_opencode_tail_budget(usable, preserve, tail):
    from batchcompact.adapters.opencode.trigger import opencode_tail_tokens

    assert opencode_tail_tokens(usable, preserve) == tail


def test_opencode_trigger():
    from batchcompact.adapters.opencode.trigger import opencode_trigger
    from batchcompact.core.triggers import Trigger

    assert opencode_trigger(table_window=128_000, max_output_tokens=16_384) == Trigger(128_000, "price table", 111_616)
    assert opencode_trigger(override_window=50_000) == Trigger(50_000, "--context-window", 18_000)
    assert opencode_trigger() == Trigger(None, "unknown", None)
    # the user's opencode.json: limit.context (recorded_window), limit.input/output and compaction.reserved
    config = "opencode config limit.context"
    assert opencode_trigger(recorded_window=200_000, table_window=128_000, max_output_tokens=16_384,
                            agent_limits={"output": 8_000}) == Trigger(200_000, config, 192_000)
    assert opencode_trigger(recorded_window=200_000, agent_limits={"input": 150_000, "reserved": 10_000}
                            ) == Trigger(200_000, config, 140_000)
    assert opencode_trigger(recorded_window=200_000, max_output_tokens=64_000) == Trigger(200_000, config, 168_000)
