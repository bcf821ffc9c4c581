"""Reports over a mixed archive (all fixtures + a batchcompact run report), checked against totals
computed here independently, and the per-file cache."""

from __future__ import annotations

import json
import os
from collections import defaultdict
from datetime import UTC, date, datetime
from pathlib import Path

import pytest
from conftest import RECORDED_FAMILIES, fixture_path, shared_fixtures
from run_reports import run_rows, write_run_report

from batchcompact.report import ReportSettings, build_report, collect_usage, run_report
from batchcompact.report import part_cache as extract_module


def _ts(value) -> datetime | None:
    try:
        return datetime.fromisoformat(value.replace("Z", "+00:00")).astimezone(UTC)
    except (AttributeError, ValueError):
        return None


def reference_rows(roots: list[Path]) -> list[dict]:
    """Usage rows computed the simple way: whole-file json parsing, no cheap skips, no cache."""
    out: list[dict] = []
    claude: dict[tuple, dict] = {}
    for path in sorted(path for root in roots for path in root.rglob("*.jsonl")):
        objs = []
        for line in path.read_text().splitlines():
            try:
                objs.append(json.loads(line))
            except ValueError:
                pass
        if objs and objs[0].get("type") == "session":  # pi
            head = objs[0]
            for o in objs[1:]:
                m = o.get("message") or {}
                if o.get("type") == "message" and m.get("role") == "assistant" and m.get("usage"):
                    u = m["usage"]
                    out.append(
                        dict(
                            ts=_ts(o["timestamp"]),
                            model=m["model"],
                            project=head["cwd"],
                            session=head["id"],
                            output=u["output"],
                            total=u["input"] + u["output"] + u["cacheRead"] + u["cacheWrite"],
                        )
                    )
        elif objs and "payload" in objs[0]:  # codex
            meta = next(o["payload"] for o in objs if o["type"] == "session_meta")
            model, prev = None, None
            for o in objs:
                p = o["payload"]
                if o["type"] == "turn_context":
                    model = p.get("model") or model
                if o["type"] == "event_msg" and p.get("type") == "token_count" and p.get("info"):
                    total = p["info"]["total_token_usage"]
                    if total == prev:
                        continue
                    prev = total
                    last = p["info"]["last_token_usage"]
                    out.append(
                        dict(
                            ts=_ts(o["timestamp"]),
                            model=model,
                            project=meta["cwd"],
                            session=meta["id"],
                            output=last["output_tokens"],
                            total=last["total_tokens"],
                        )
                    )
        else:  # claude
            project = path.parent.parent.parent.name if path.parent.name == "subagents" else path.parent.name
            for line in objs:
                o, sidechain = line, False
                data = line.get("data") if line.get("type") == "progress" else None
                if isinstance(data, dict) and data.get("type") == "agent_progress":  # Task sub-agent usage
                    o, sidechain = data.get("message") or {}, True
                m = o.get("message") if o.get("type") == "assistant" else None
                if not isinstance(m, dict) or not m.get("usage") or m.get("model") == "<synthetic>":
                    continue
                u = m["usage"]
                total = sum(
                    u.get(k, 0)
                    for k in (
                        "input_tokens",
                        "output_tokens",
                        "cache_read_input_tokens",
                        "cache_creation_input_tokens",
                    )
                )
                row = dict(
                    ts=_ts(o.get("timestamp")),
                    model=m["model"],
                    project=line.get("cwd") or project,
                    session=line.get("sessionId"),
                    sidechain=sidechain,
                    output=u["output_tokens"],
                    total=total,
                )
                key = (m.get("id"), o.get("requestId"))
                # the largest usage wins; on a tie the first line, unless it was a sub-agent copy
                if key not in claude or (row["output"], total, claude[key]["sidechain"]) > (
                    claude[key]["output"],
                    claude[key]["total"],
                    sidechain,
                ):
                    claude[key] = row
    out.extend(claude.values())
    for r in run_rows():  # the batchcompact run report
        if r["calls"]:
            out.append(
                dict(
                    ts=r["ended_at"],
                    model=r["model"],
                    project=str(Path(r["input_path"]).parent),
                    session=r["session_id"],
                    output=r["completion_tokens"],
                    total=r["prompt_tokens"] + r["completion_tokens"],
                )
            )
    return [r for r in out if r["total"] > 0]  # requests with no tokens at all are left out


GROUPERS = {
    "day": lambda r: r["ts"].strftime("%Y-%m-%d") if r["ts"] else "unknown",
    "month": lambda r: r["ts"].strftime("%Y-%m") if r["ts"] else "unknown",
    "model": lambda r: r["model"],
    "project": lambda r: r["project"],
    "session": lambda r: r["session"],
}


@pytest.fixture(scope="module")
def archive(
    tmp_path_factory,
):
    fixtures = shared_fixtures()
    runs = tmp_path_factory.mktemp("runs")
    write_run_report(runs / "compactions-r1.parquet", run_rows())
    cache = tmp_path_factory.mktemp("cache")
    families = [fixtures / family for family in RECORDED_FAMILIES]
    collected = collect_usage([*families, runs], cache_dir=cache, jobs=1)
    return fixtures, collected, reference_rows(families)


@pytest.mark.parametrize("by", ["day", "month", "session", "project", "model"])
def test_report_groups_match_independent_totals(archive, by):
    _, collected, reference = archive
    expect: dict = defaultdict(lambda: [0, 0, 0])
    for r in reference:
        cell = expect[GROUPERS[by](r)]
        cell[0] += 1
        cell[1] += r["output"]
        cell[2] += r["total"]
    report = build_report(collected.parts, ReportSettings(by=by))
    key = {"day": "date"}.get(by, "session_id" if by == "session" else by)
    got = {
        row[key]: [row["requests"], row["output_tokens"], row["total_tokens"]]
        for row in report.rows.iter_rows(named=True)
    }
    assert got == dict(expect)
    assert report.totals["requests"] == len(reference)
    assert report.totals["output_tokens"] == sum(r["output"] for r in reference)


def test_mixed_archive_has_every_source_and_kind(archive):
    _, collected, _ = archive
    report = build_report(collected.parts, ReportSettings(by="model", breakdown=False))
    assert report.totals["requests"] > 1400
    by_source = {
        s: build_report(collected.parts, ReportSettings(by="day", agents=(s,))).totals["requests"]
        for s in ("pi", "claude", "codex", "batchcompact")
    }
    assert by_source == {"pi": 910, "claude": 186, "codex": 375, "batchcompact": 1}


def test_since_until_and_timezone(archive):
    _, collected, reference = archive
    settings = ReportSettings(by="day", since=date(2026, 2, 23), until=date(2026, 2, 23), agents=("codex",))
    report = build_report(collected.parts, settings)
    expect = [
        r
        for r in reference
        if r["ts"] and r["ts"].date() == date(2026, 2, 23) and r["model"] == "gpt-5.3-codex"
    ]
    assert report.totals["requests"] == len(expect)
    # Berlin is UTC+1: events after 23:00 UTC move to the next day
    berlin = build_report(
        collected.parts, ReportSettings(by="day", agents=("codex",), timezone="Europe/Berlin")
    )
    assert "2026-02-24" in berlin.rows["date"].to_list()


def test_cost_modes(archive):
    _, collected, _ = archive
    pi_only = ("pi",)
    recorded = build_report(
        collected.parts, ReportSettings(by="month", agents=pi_only, cost_mode="recorded")
    )
    auto = build_report(collected.parts, ReportSettings(by="month", agents=pi_only, cost_mode="auto"))
    calc = build_report(collected.parts, ReportSettings(by="month", agents=pi_only, cost_mode="calculate"))
    assert recorded.totals["cost_usd"] == pytest.approx(auto.totals["cost_usd"])  # pi records every cost
    assert calc.totals["cost_usd"] > 0
    runs = build_report(
        collected.parts, ReportSettings(by="day", agents=("batchcompact",), cost_mode="calculate")
    )
    # gpt-4o-mini: 8,000 input * 1.5e-7 + 1,000 output * 6e-7 + 2,000 cache read * 7.5e-8
    assert runs.totals["cost_usd"] == pytest.approx(8000 * 1.5e-7 + 1000 * 6e-7 + 2000 * 7.5e-8)


def test_unpriced_models_are_reported_not_free(tmp_path):
    line = {
        "parentUuid": None,
        "isSidechain": False,
        "sessionId": "s",
        "uuid": "u",
        "type": "assistant",
        "timestamp": "2026-01-01T00:00:00Z",
        "requestId": "req_1",
        "message": {
            "id": "msg_1",
            "model": "mystery-model-9",
            "usage": {"input_tokens": 10, "output_tokens": 5},
        },
    }
    path = tmp_path / "p" / "s.jsonl"
    path.parent.mkdir()
    path.write_text(json.dumps(line) + "\n")
    report, _ = run_report([path], ReportSettings(by="model"), use_cache=False)
    assert report.unpriced_models == ["mystery-model-9"]
    assert report.rows["unpriced_requests"].to_list() == [1]


def test_second_run_parses_nothing(tmp_path, monkeypatch):
    src = fixture_path("claude")
    cache = tmp_path / "cache"
    first = collect_usage([src], cache_dir=cache, jobs=1)
    assert first.extracted == first.files == 8 and first.cached == 0
    parsed_before = build_report(first.parts, ReportSettings(by="session")).rows

    def boom(*args, **kwargs):
        raise AssertionError("extract_file called on a cached file")

    monkeypatch.setattr(extract_module, "extract_file", boom)
    second = collect_usage([src], cache_dir=cache, jobs=1)
    assert second.extracted == 0 and second.cached == 8
    assert build_report(second.parts, ReportSettings(by="session")).rows.equals(parsed_before)


def test_changed_file_is_parsed_again(tmp_path):
    src = fixture_path("claude", "projects", "sample-project")
    copy = tmp_path / "sample-project" / "s.jsonl"
    copy.parent.mkdir()
    text = next(src.glob("*.jsonl")).read_text()
    copy.write_text(text)
    cache = tmp_path / "cache"
    assert collect_usage([copy.parent], cache_dir=cache).extracted == 1
    assert collect_usage([copy.parent], cache_dir=cache).cached == 1
    copy.write_text(text + text.splitlines()[0] + "\n")  # appended: size and mtime change
    os.utime(copy, ns=(1, 1))
    again = collect_usage([copy.parent], cache_dir=cache)
    assert again.extracted == 1 and again.cached == 0


def test_no_cache_leaves_nothing_behind(tmp_path):
    src = fixture_path("pi")
    report, collected = run_report([src], ReportSettings(by="session"), use_cache=False)
    assert collected.extracted == 2 and report.rows.height == 2
    assert collected.temp_dir is None


def test_parallel_extraction_matches_serial(tmp_path):
    src = fixture_path("codex")
    serial, _ = run_report([src], ReportSettings(by="session"), cache_dir=tmp_path / "a", jobs=1)
    parallel, _ = run_report([src], ReportSettings(by="session"), cache_dir=tmp_path / "b", jobs=2)
    assert serial.rows.drop("models").equals(parallel.rows.drop("models"))


def test_week_starts_on_monday(archive):
    _, collected, reference = archive
    report = build_report(collected.parts, ReportSettings(by="week", agents=("codex",)))
    weeks = report.rows["week"].to_list()
    assert "2026-02-23" in weeks  # 2026-02-23 is a Monday
    for week in weeks:
        if week != "unknown":
            assert date.fromisoformat(week).weekday() == 0


def test_forked_codex_copy_counted_once(tmp_path):
    src = fixture_path("codex", "sessions")
    original = next(src.rglob("rollout-*019c8bfe*.jsonl"))
    fork = tmp_path / "rollout-fork.jsonl"
    lines = original.read_text().splitlines()
    meta = json.loads(lines[0])
    meta["payload"]["id"] = "fork-thread"
    fork.write_text("\n".join([json.dumps(meta), *lines[1:]]) + "\n")  # the fork copies the history
    alone, _ = run_report([original], ReportSettings(by="day"), use_cache=False)
    both, _ = run_report([original, fork], ReportSettings(by="day"), use_cache=False)
    assert both.totals["requests"] == alone.totals["requests"] == 6
    assert both.totals["total_tokens"] == alone.totals["total_tokens"]


def test_warnings_survive_the_cache(tmp_path):
    path = tmp_path / "proj" / "s.jsonl"
    path.parent.mkdir()
    path.write_text('{"type":"user","sessionId":"s","uuid":"u"}\n{"type":"assistant","usage": broken\n')
    first = collect_usage([path], cache_dir=tmp_path / "c")
    second = collect_usage([path], cache_dir=tmp_path / "c")
    assert second.cached == 1
    assert first.warnings == second.warnings and f"{path}:2: invalid JSON" in second.warnings[0]


def test_our_folders_follow_xdg(monkeypatch, tmp_path):
    from batchcompact.folders import cache_folder, config_folder, state_folder

    for variable, folder in (("XDG_CACHE_HOME", cache_folder), ("XDG_STATE_HOME", state_folder),
                             ("XDG_CONFIG_HOME", config_folder)):
        monkeypatch.setenv(variable, str(tmp_path / variable))
        assert folder() == tmp_path / variable / "batchcompact"
        monkeypatch.setenv(variable, "")  # empty: the default, as unset
    monkeypatch.setenv("HOME", str(tmp_path / "home"))
    assert cache_folder() == tmp_path / "home" / ".cache" / "batchcompact"
    assert state_folder() == tmp_path / "home" / ".local" / "state" / "batchcompact"
    assert config_folder() == tmp_path / "home" / ".config" / "batchcompact"


def test_report_cost_uses_tiered_prices_like_the_price_table(tmp_path):
    from batchcompact.pricing import PriceTable

    usage_small = {
        "input_tokens": 1_000,
        "output_tokens": 500,
        "cache_read_input_tokens": 100_000,
        "cache_creation_input_tokens": 2_000,
    }
    usage_large = {**usage_small, "cache_read_input_tokens": 250_000}  # prompt > 200k: tier prices
    lines = []
    for n, usage in enumerate((usage_small, usage_large)):
        lines.append(
            json.dumps(
                {
                    "type": "assistant",
                    "sessionId": "s",
                    "uuid": f"u{n}",
                    "requestId": f"r{n}",
                    "timestamp": "2026-01-01T00:00:00Z",
                    "message": {"id": f"m{n}", "model": "gemini-2.5-pro", "usage": usage},
                }
            )
        )
    path = tmp_path / "p" / "s.jsonl"
    path.parent.mkdir()
    path.write_text("\n".join(lines) + "\n")
    report, _ = run_report([path], ReportSettings(by="day", cost_mode="calculate"), use_cache=False)
    table = PriceTable.load()
    expect = sum(
        table.cost(
            "gemini-2.5-pro",
            provider="anthropic",
            input_tokens=u["input_tokens"],
            output_tokens=u["output_tokens"],
            cache_read_tokens=u["cache_read_input_tokens"],
            cache_write_tokens=u["cache_creation_input_tokens"],
        )
        for u in (usage_small, usage_large)
    )
    # map: base in 1.25e-6 / out 1e-5 / cache read 1.25e-7 / no cache-write price (-> input);
    # above 200k: in 2.5e-6 / out 1.5e-5 / cache read 2.5e-7 / cache write 2.5e-7
    small_by_hand = 1_000 * 1.25e-6 + 500 * 1e-5 + 100_000 * 1.25e-7 + 2_000 * 1.25e-6
    large_by_hand = 1_000 * 2.5e-6 + 500 * 1.5e-5 + 250_000 * 2.5e-7 + 2_000 * 2.5e-7
    assert expect == pytest.approx(small_by_hand + large_by_hand)
    assert report.totals["cost_usd"] == pytest.approx(expect)
