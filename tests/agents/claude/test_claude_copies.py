"""Claude kept-tail copies: a fresh message.id per original reply, a copy marker, and usage counted once."""

from __future__ import annotations

import json

from conftest import fixture_path
from factories import plan_forced, write_appended

from batchcompact.adapters.claude import read as claude
from batchcompact.adapters.claude.report import extract_claude
from batchcompact.adapters.common.lines import ExtractStats
from batchcompact.adapters.common.usage_rows import UsageRows
from batchcompact.core.planner import CompactionPlan

MAIN = ("claude", "projects", "-home-USER-projects-spotter", "4d5611e5-241a-462a-8d15-5122611a9569.jsonl")
NOW = "2026-11-22T04:00:00.000Z"


def _compacted(tmp_path, keep=20_000):
    src = fixture_path(*MAIN)
    session = claude.read(src)
    plan = plan_forced(session, keep)
    assert isinstance(plan, CompactionPlan)
    lines = claude.build_compaction(session, plan, "summary", usage=None, now_iso=NOW)
    return src, session, plan, lines


def test_copies_get_fresh_stable_message_ids(tmp_path):
    src, session, plan, lines = _compacted(tmp_path)
    originals = {}
    for line in src.read_text(encoding="utf-8").splitlines():
        obj = json.loads(line)
        if isinstance(obj.get("uuid"), str):
            originals[obj["uuid"]] = obj
    old_ids = {o["message"].get("id") for o in originals.values() if o.get("type") == "assistant"}
    copies = [c for c in lines[2:] if c["type"] == "assistant"]
    assert copies
    by_original: dict[str, set[str]] = {}
    for copy in copies:
        original = originals[copy["batchcompact"]["copyOf"]]
        assert copy["message"]["id"] not in old_ids
        assert copy["message"]["id"].startswith("msg_")
        assert "usage" not in copy["message"]  # Claude Code would measure its context by it
        stripped = {k: v for k, v in original["message"].items() if k not in ("id", "usage")}
        assert {k: v for k, v in copy["message"].items() if k != "id"} == stripped
        assert copy["requestId"] == original.get("requestId")
        by_original.setdefault(original["message"]["id"], set()).add(copy["message"]["id"])
    assert all(len(ids) == 1 for ids in by_original.values())  # one new id per original reply
    assert len({next(iter(ids)) for ids in by_original.values()}) == len(by_original)
    assert all(c["batchcompact"]["copyOf"] in originals for c in lines[2:])
    again = claude.build_compaction(session, plan, "summary", usage=None, now_iso=NOW)
    assert [c.get("message", {}).get("id") for c in again] == [c.get("message", {}).get("id") for c in lines]


def test_written_copies_read_back_and_verify(tmp_path):
    src, session, plan, lines = _compacted(tmp_path)
    written = claude.read(write_appended(src, lines, tmp_path / src.name))
    assert claude.verify(session, written, plan) == []


def _usage_totals(path):
    rows = UsageRows()
    extract_claude(path, rows, ExtractStats(str(path)))
    columns = rows.columns
    return len(rows), sum(columns["input_tokens"]), sum(columns["output_tokens"]), sum(columns["cache_read_tokens"])


def test_report_does_not_count_the_copies(tmp_path):
    src, session, plan, lines = _compacted(tmp_path)
    out = write_appended(src, lines, tmp_path / src.name)
    before = _usage_totals(src)
    assert before[0] > 100
    assert _usage_totals(out) == before
    # A marked copy that still has usage (written by an earlier batchcompact) is skipped by the marker.
    originals = {json.loads(x)["uuid"]: json.loads(x) for x in src.read_text().splitlines() if '"uuid"' in x}
    with_usage = [
        {**line, "message": {**line["message"], "usage": originals[line["batchcompact"]["copyOf"]]["message"]["usage"]}}
        if line.get("type") == "assistant"
        else line
        for line in lines
    ]
    assert _usage_totals(write_appended(src, with_usage, tmp_path / "old-copies.jsonl")) == before
    unmarked = [{k: v for k, v in line.items() if k != "batchcompact"} for line in with_usage]
    doubled = _usage_totals(write_appended(src, unmarked, tmp_path / "unmarked.jsonl"))
    assert doubled[0] > before[0]
