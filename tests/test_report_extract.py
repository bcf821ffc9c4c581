"""Usage extraction per source, pinned on the real fixtures in ../shared/fixtures."""

from __future__ import annotations

import json
from datetime import UTC, datetime

import pyarrow as pa
import pyarrow.compute as pc
import pytest
from conftest import fixture_path
from run_reports import run_rows, write_run_report

from batchcompact.adapters.common.usage_rows import USAGE_SCHEMA, USAGE_SCHEMA_VERSION
from batchcompact.report.detect import detect_usage_source
from batchcompact.report.part_cache import extract_file

SPOTTER = ("claude", "projects", "-home-USER-projects-spotter")
CLAUDE_MAIN = (*SPOTTER, "4d5611e5-241a-462a-8d15-5122611a9569.jsonl")
CLAUDE_COMPACT = (
    *SPOTTER,
    "4d5611e5-241a-462a-8d15-5122611a9569",
    "subagents",
    "agent-acompact-e1f845.jsonl",
)
CODEX_BIG = (
    "codex",
    "sessions",
    "2026",
    "02",
    "23",
    "rollout-2026-02-23T12-54-34-019c8a59-e9dd-71f0-9ae3-4079fe9726a9.jsonl",
)


def col_sum(table: pa.Table, name: str) -> int:
    return sum(v for v in table.column(name).to_pylist() if v is not None)


def test_schema_is_versioned():
    assert USAGE_SCHEMA.metadata[b"batchcompact.usage_schema_version"] == str(USAGE_SCHEMA_VERSION).encode()
    assert "input_tokens" in USAGE_SCHEMA.names and USAGE_SCHEMA.field("timestamp").type == pa.timestamp(
        "us", "UTC"
    )


@pytest.mark.parametrize(
    ("parts", "fmt"),
    [
        (CLAUDE_MAIN, "claude"),
        (CLAUDE_COMPACT, "claude"),
        (CODEX_BIG, "codex"),
        (("pi", "large-session.jsonl"), "pi"),
        (("claude", "coverage", "agent-sessions_claude_small.jsonl"), "claude"),
        (("codex", "coverage", "agent-sessions_codex_small.jsonl"), "codex"),
    ],
)
def test_detect_format(parts, fmt):
    assert detect_usage_source(fixture_path(*parts)) == fmt


def test_detect_rejects_non_transcripts(tmp_path):
    other = tmp_path / "notes.jsonl"
    other.write_text('{"hello": 1}\n')
    assert detect_usage_source(other) is None


def test_claude_main_session_139_requests_28755_output():
    table, stats = extract_file(fixture_path(*CLAUDE_MAIN))
    main = table.filter(pc.equal(table.column("kind"), "main"))
    assert main.num_rows == 139
    assert col_sum(main, "output_tokens") == 28_755
    # summing every line would count cache reads ~20.5M; one per request gives ~11.6M
    assert 11_500_000 < col_sum(main, "cache_read_tokens") < 11_700_000
    assert stats.skipped_cheap > 1000  # progress lines without usage never reach json.loads
    assert set(main.column("project").to_pylist()) == {"/home/USER/projects/spotter-worktrees/spotter-dov"}


def test_claude_agent_progress_subagent_usage_counted_once_per_request():
    """67 agent_progress lines carry 11 unique Task sub-agent requests (sonnet 4.5): each is one row."""
    table, stats = extract_file(fixture_path(*CLAUDE_MAIN))
    sub = table.filter(pc.equal(table.column("kind"), "sidechain"))
    assert sub.num_rows == 11
    assert set(sub.column("model").to_pylist()) == {"claude-sonnet-4-5-20250929"}
    assert len(set(sub.column("dedupe_key").to_pylist())) == 11
    assert col_sum(sub, "output_tokens") == 135
    assert col_sum(sub, "total_tokens") == 604_344
    # the time is the sub-agent message's own timestamp, the session the parent's
    assert set(sub.column("session_id").to_pylist()) == {"4d5611e5-241a-462a-8d15-5122611a9569"}
    assert stats.duplicates == (254 - 139) + (33 - 11)  # 33 of the 67 progress lines are assistant ones


def test_claude_agent_progress_lines_survive_the_pre_parse_skip(tmp_path):
    """A cheap skip rule must let progress lines with usage through (they carry sub-agent requests)."""
    inner = {
        "type": "assistant",
        "timestamp": "2026-02-12T16:02:51.467Z",
        "requestId": "req_sub",
        "message": {"id": "msg_sub", "model": "claude-sonnet-4-5", "role": "assistant",
                    "usage": {"input_tokens": 3, "output_tokens": 7, "cache_read_input_tokens": 0,
                              "cache_creation_input_tokens": 100}},
    }
    progress = {"type": "progress", "sessionId": "s1", "cwd": "/work/app", "uuid": "u1",
                "timestamp": "2026-02-12T16:02:52.000Z",
                "data": {"type": "agent_progress", "agentId": "a1", "message": inner}}
    bash = {"type": "progress", "sessionId": "s1", "uuid": "u2", "data": {"type": "bash_progress"}}
    path = tmp_path / "s1.jsonl"
    # compact separators (how Claude Code writes) and spaced ones: the skip must not depend on either
    path.write_text(
        json.dumps(progress, separators=(",", ":")) + "\n" + json.dumps(bash) + "\n"
        + json.dumps({**progress, "uuid": "u3"}) + "\n"
    )
    table, stats = extract_file(path, "claude")
    assert table.num_rows == 1
    row = table.to_pylist()[0]
    assert (row["kind"], row["output_tokens"], row["cache_write_tokens"]) == ("sidechain", 7, 100)
    assert (row["project"], row["dedupe_key"]) == ("/work/app", "msg_sub:req_sub")
    assert row["timestamp"].isoformat().startswith("2026-02-12T16:02:51.467")


def test_claude_progress_copy_and_subagent_file_count_once(tmp_path):
    """The same sub-agent request in the parent's progress line and in subagents/agent-*.jsonl: once."""
    from batchcompact.report import ReportSettings, build_report, collect_usage

    usage = {"input_tokens": 5, "output_tokens": 11, "cache_read_input_tokens": 1000,
             "cache_creation_input_tokens": 0}
    inner = {"type": "assistant", "timestamp": "2026-03-01T10:00:00Z", "requestId": "req_x",
             "isSidechain": True, "sessionId": "parent", "cwd": "/w",
             "message": {"id": "msg_x", "model": "claude-sonnet-4-5", "usage": usage}}
    project = tmp_path / "projects" / "-w"
    (project / "parent" / "subagents").mkdir(parents=True)
    (project / "parent.jsonl").write_text(json.dumps(
        {"type": "progress", "sessionId": "parent", "cwd": "/w", "uuid": "p1",
         "data": {"type": "agent_progress", "message": inner}}) + "\n")
    (project / "parent" / "subagents" / "agent-a1.jsonl").write_text(json.dumps({**inner, "uuid": "s1"}) + "\n")
    collected = collect_usage([tmp_path], use_cache=False, jobs=1)
    try:
        report = build_report(collected.parts, ReportSettings(by="session"))
    finally:
        collected.cleanup()
    assert report.totals["requests"] == 1
    assert report.totals["output_tokens"] == 11


def test_claude_compaction_subagent_counted_once_as_compaction():
    table, _ = extract_file(fixture_path(*CLAUDE_COMPACT))
    assert table.num_rows == 1
    row = table.to_pylist()[0]
    assert row["kind"] == "compaction"
    assert row["session_id"] == "4d5611e5-241a-462a-8d15-5122611a9569"
    assert row["project"] == "/home/USER/projects/spotter-worktrees/spotter-dov"  # the line's cwd, not the slug
    assert row["cache_read_tokens"] == 164_830


def test_claude_inline_sidechains_labelled():
    table, _ = extract_file(
        fixture_path("claude", "projects", "sample-project", "5c0375b4-57a5-4f26-b12d-d022ee4e51b7.jsonl")
    )
    kinds = table.column("kind").to_pylist()
    assert kinds.count("sidechain") > 0 and kinds.count("main") > 0


def test_codex_repeats_dropped():
    table, stats = extract_file(fixture_path(*CODEX_BIG))
    assert stats.token_events == 573
    assert stats.repeats_dropped == 286
    assert stats.info_null == 1
    assert table.num_rows == 573 - 286 - 1
    assert set(table.column("model").to_pylist()) == {"gpt-5.3-codex"}


def test_codex_normalized_to_non_cached_input():
    path = fixture_path(*CODEX_BIG)
    last_totals = None
    for line in path.read_text().splitlines():  # the file's own final cumulative total
        obj = json.loads(line)
        payload = obj.get("payload") or {}
        if payload.get("type") == "token_count" and payload.get("info"):
            last_totals = payload["info"]["total_token_usage"]
    table, _ = extract_file(path)
    # per-request rows add up to the cumulative total; input excludes cached, cached is cache_read
    assert col_sum(table, "input_tokens") + col_sum(table, "cache_read_tokens") == last_totals["input_tokens"]
    assert col_sum(table, "cache_read_tokens") == last_totals["cached_input_tokens"]
    assert col_sum(table, "output_tokens") == last_totals["output_tokens"]
    assert col_sum(table, "total_tokens") == last_totals["total_tokens"]


@pytest.mark.parametrize("name", ["large-session.jsonl", "before-compaction.jsonl"])
def test_pi_totals_equal_recorded_usage(name):
    path = fixture_path("pi", name)
    expect = {"input": 0, "output": 0, "cacheRead": 0, "cacheWrite": 0, "cost": 0.0, "n": 0}
    for line in path.read_text().splitlines():
        obj = json.loads(line)
        message = obj.get("message") or {}
        usage = message.get("usage") if message.get("role") == "assistant" else obj.get("usage")
        if obj.get("type") in ("message", "compaction", "branch_summary") and isinstance(usage, dict):
            expect["n"] += 1
            for k in ("input", "output", "cacheRead", "cacheWrite"):
                expect[k] += usage.get(k, 0)
            expect["cost"] += usage["cost"]["total"]
    table, stats = extract_file(path)
    assert table.num_rows == expect["n"] > 400
    assert col_sum(table, "input_tokens") == expect["input"]
    assert col_sum(table, "output_tokens") == expect["output"]
    assert col_sum(table, "cache_read_tokens") == expect["cacheRead"]
    assert col_sum(table, "cache_write_tokens") == expect["cacheWrite"]
    assert sum(table.column("recorded_cost_usd").to_pylist()) == pytest.approx(expect["cost"])
    assert stats.warning_count == 0


def test_pi_compaction_and_branch_summary_usage(tmp_path):
    usage = {"input": 100, "output": 20, "cacheRead": 5, "cacheWrite": 0, "cost": {"total": 0.5}}
    lines = [
        {"type": "session", "version": 3, "id": "s1", "timestamp": "2026-01-01T00:00:00Z", "cwd": "/w"},
        {
            "type": "message",
            "id": "a1",
            "parentId": None,
            "timestamp": "2026-01-01T00:00:01Z",
            "message": {
                "role": "assistant",
                "provider": "anthropic",
                "model": "claude-haiku-4-5",
                "usage": usage,
                "content": [],
                "timestamp": 1,
            },
        },
        {
            "type": "compaction",
            "id": "c1",
            "parentId": "a1",
            "timestamp": "2026-01-01T00:00:02Z",
            "summary": "s",
            "firstKeptEntryId": "a1",
            "tokensBefore": 1,
            "usage": usage,
        },
        {
            "type": "branch_summary",
            "id": "b1",
            "parentId": "a1",
            "timestamp": "2026-01-01T00:00:03Z",
            "fromId": "a1",
            "summary": "b",
            "usage": usage,
        },
    ]
    path = tmp_path / "s.jsonl"
    path.write_text("".join(json.dumps(x) + "\n" for x in lines))
    table, _ = extract_file(path)
    rows = table.to_pylist()
    assert [r["kind"] for r in rows] == ["main", "compaction", "branch_summary"]
    assert all(r["model"] == "claude-haiku-4-5" and r["project"] == "/w" for r in rows)
    assert rows[0]["timestamp"] == datetime(2026, 1, 1, 0, 0, 1, tzinfo=UTC)


def test_malformed_lines_warn_with_file_and_line(tmp_path):
    src = fixture_path("claude", "projects", "-home-USER-projects-spotter", "short.jsonl")
    lines = src.read_text().splitlines()
    broken = tmp_path / "proj" / "broken.jsonl"
    broken.parent.mkdir()
    # A torn last line that could carry usage is parsed and reported (lines without "usage" are skipped
    # by the cheap substring check and never parsed at all).
    broken.write_text(
        "\n".join(lines[:3] + ['{"type":"assistant","usage": nope'] + lines[3:])
        + "\n"
        + '{"type":"assistant","message":{"usage":{"in'
    )
    table, stats = extract_file(broken)
    good, _ = extract_file(src)
    assert table.num_rows == good.num_rows
    assert stats.malformed == 2
    assert any(w.startswith(f"{broken}:4: invalid JSON") for w in stats.warnings)
    assert any(f"{broken}:{len(lines) + 2}: invalid JSON (torn last line?)" in w for w in stats.warnings)


def test_zst_without_zstandard_says_how_to_fix(tmp_path, monkeypatch):
    import sys

    monkeypatch.setitem(sys.modules, "zstandard", None)
    path = tmp_path / "rollout-x.jsonl.zst"
    path.write_bytes(b"\x28\xb5\x2f\xfd")
    table, stats = extract_file(path, source="codex")
    assert table.num_rows == 0
    assert "pip install 'batchcompact[zstd]'" in stats.warnings[0]


def test_batchcompact_run_report(tmp_path):
    path = tmp_path / "compactions-r1.parquet"
    write_run_report(path, run_rows())
    assert detect_usage_source(path) == "batchcompact"
    table, _ = extract_file(path)
    rows = table.to_pylist()
    assert len(rows) == 1  # the skipped session made no calls
    assert rows[0]["source"] == "batchcompact" and rows[0]["kind"] == "compaction"
    assert rows[0]["input_tokens"] == 8_000 and rows[0]["cache_read_tokens"] == 2_000
    assert rows[0]["recorded_cost_usd"] == 0.02 and rows[0]["project"] == "/a"


def test_run_report_rows_from_the_run_command_split_branch_summaries(tmp_path):
    """A row written by `run --branch-summaries`: its branch share becomes kind branch_summary."""
    from datetime import UTC, datetime

    from batchcompact.pipeline.runreport.schema import empty_row
    from batchcompact.pipeline.runreport.write import write_compactions

    row = empty_row()
    now = datetime(2026, 11, 1, 12, 0, tzinfo=UTC)
    row.update(run_id="r9", started_at=now, ended_at=now, input_path="/a/s.jsonl", session_id="s", format="pi",
               status="compacted", calls=4, prompt_tokens=1000, completion_tokens=300, cost_usd=0.5,
               model="openai/gpt-4o-mini", branch_calls=2, branch_prompt_tokens=400, branch_completion_tokens=100,
               branch_cost_usd=0.2)
    builtin = dict(row, session_id="b", model="builtin", cost_usd=0.0, branch_calls=0, branch_cost_usd=0.0)
    path = write_compactions([row, builtin], tmp_path, "r9")
    table, _ = extract_file(path)
    rows = sorted(table.to_pylist(), key=lambda r: r["kind"])
    assert [(r["kind"], r["input_tokens"], r["output_tokens"]) for r in rows] == [
        ("branch_summary", 400, 100),
        ("compaction", 600, 200),
    ]
    assert rows[0]["recorded_cost_usd"] == pytest.approx(0.2) and rows[1]["recorded_cost_usd"] == pytest.approx(0.3)
