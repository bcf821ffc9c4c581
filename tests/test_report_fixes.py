"""Report fixes: verified cache parts, 1-hour cache-write prices, zero-token rows."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from conftest import fixture_path

from batchcompact.pricing import PriceTable
from batchcompact.report import ReportSettings, build_report, collect_usage, run_report
from batchcompact.report import part_cache as extract_module
from batchcompact.report.part_cache import sum_path


def _claude_file(path: Path, usages: list[dict], model: str = "claude-opus-4-6") -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    lines = [
        json.dumps(
            {
                "type": "assistant",
                "sessionId": "s",
                "uuid": f"u{n}",
                "requestId": f"r{n}",
                "cwd": "/work/app",
                "timestamp": f"2026-01-01T0{n}:00:00Z",
                "message": {"id": f"m{n}", "model": model, "usage": usage},
            }
        )
        for n, usage in enumerate(usages)
    ]
    path.write_text("\n".join(lines) + "\n")
    return path


# --- the parse cache is verified -------------------------------------------------------------------


@pytest.fixture
def cached_archive(tmp_path):
    src = fixture_path("claude", "projects", "-home-USER-projects-spotter", "4d5611e5-241a-462a-8d15-5122611a9569.jsonl")
    cache = tmp_path / "xdg" / "batchcompact"  # the default cache folder when XDG_CACHE_HOME is tmp_path/xdg
    first = collect_usage([src], cache_dir=cache, jobs=1)
    totals = build_report(first.parts, ReportSettings()).totals
    return src, cache, Path(first.parts[0]), totals


def same(a: dict, b: dict) -> bool:
    """Report totals equal (cost to float rounding)."""
    return a.keys() == b.keys() and all(
        a[k] == pytest.approx(b[k]) if k == "cost_usd" else a[k] == b[k] for k in a
    )


def _damage(part: Path, offset: int, data: bytes) -> None:
    raw = bytearray(part.read_bytes())
    raw[offset : offset + len(data)] = data
    part.write_bytes(bytes(raw))


@pytest.mark.parametrize("where", ["middle", "footer"])
def test_damaged_cache_part_is_rebuilt_not_trusted(cached_archive, where):
    src, cache, part, totals = cached_archive
    size = part.stat().st_size
    _damage(part, size // 2 if where == "middle" else size - 40, b"\0" * 32)
    again = collect_usage([src], cache_dir=cache, jobs=1)
    assert (again.extracted, again.cached, again.rejected) == (1, 0, 1)
    assert same(build_report(again.parts, ReportSettings()).totals, totals)
    # the rebuilt part is good again
    third = collect_usage([src], cache_dir=cache, jobs=1)
    assert (third.cached, third.rejected) == (1, 0)


def test_part_with_a_wrong_row_count_or_missing_sum_is_rebuilt(cached_archive):
    src, cache, part, totals = cached_archive
    record = json.loads(sum_path(part).read_text())
    sum_path(part).write_text(json.dumps({**record, "rows": record["rows"] + 1}))
    assert collect_usage([src], cache_dir=cache, jobs=1).rejected == 1
    sum_path(part).unlink()
    again = collect_usage([src], cache_dir=cache, jobs=1)
    assert again.extracted == 1 and same(build_report(again.parts, ReportSettings()).totals, totals)


def test_no_cache_never_reads_or_writes_the_cache(cached_archive, monkeypatch):
    src, cache, part, totals = cached_archive
    _damage(part, part.stat().st_size // 2, b"\xff" * 64)
    before = {p: p.read_bytes() for p in cache.rglob("*") if p.is_file()}
    roots: list[Path] = []
    real_init = extract_module.UsageCache.__init__

    def spy(self, cache_dir):
        roots.append(Path(cache_dir))
        real_init(self, cache_dir)

    monkeypatch.setattr(extract_module.UsageCache, "__init__", spy)
    monkeypatch.setenv("XDG_CACHE_HOME", str(cache.parent))  # the default folder is this cache
    report, collected = run_report([src], ReportSettings(), use_cache=False)
    assert same(report.totals, totals) and collected.extracted == 1
    assert roots and all(cache not in [r, *r.parents] for r in roots)
    assert {p: p.read_bytes() for p in cache.rglob("*") if p.is_file()} == before


def test_cli_report_survives_a_corrupt_cache(cached_archive):
    from click.testing import CliRunner

    from batchcompact.cli import cli

    src, cache, part, totals = cached_archive
    _damage(part, part.stat().st_size // 2, b"\0" * 64)
    result = CliRunner().invoke(cli, ["report", str(src), "--cache-dir", str(cache), "--format", "json"])
    assert result.exit_code == 0, result.output
    doc = json.loads(result.stdout)
    assert doc["totals"]["total_tokens"] == totals["total_tokens"]


# --- 1-hour cache writes ---------------------------------------------------------------------------


def test_one_hour_cache_writes_use_the_one_hour_rate(tmp_path):
    usage = {
        "input_tokens": 10,
        "output_tokens": 100,
        "cache_read_input_tokens": 1_000,
        "cache_creation_input_tokens": 3_000,
        "cache_creation": {"ephemeral_5m_input_tokens": 1_000, "ephemeral_1h_input_tokens": 2_000},
    }
    path = _claude_file(tmp_path / "p" / "s.jsonl", [usage])
    report, _ = run_report([path], ReportSettings(cost_mode="calculate"), use_cache=False)
    info = PriceTable.load().lookup("claude-opus-4-6")
    assert info.cache_creation_input_token_cost_above_1hr is not None  # litellm's field is read
    by_hand = (
        10 * info.input_cost_per_token
        + 100 * info.output_cost_per_token
        + 1_000 * info.cache_read_input_token_cost
        + 1_000 * info.cache_creation_input_token_cost
        + 2_000 * info.cache_creation_input_token_cost_above_1hr
    )
    assert report.totals["cost_usd"] == pytest.approx(by_hand)
    assert report.totals["cache_write_tokens"] == 3_000
    five_minute_price = by_hand - 2_000 * (
        info.cache_creation_input_token_cost_above_1hr - info.cache_creation_input_token_cost
    )
    assert report.totals["cost_usd"] > five_minute_price  # the old, low figure


def test_one_hour_rate_falls_back_to_twice_the_input_price():
    from batchcompact.model_price import ModelInfo

    info = ModelInfo.from_entry(
        "m", {"input_cost_per_token": 1e-6, "output_cost_per_token": 5e-6, "cache_creation_input_token_cost": 1.25e-6}
    )
    assert info.cost(input_tokens=0, output_tokens=0, cache_write_tokens=10, cache_write_1h_tokens=10) == pytest.approx(2e-5)
    tiered = ModelInfo.from_entry(
        "t",
        {
            "input_cost_per_token": 1e-6,
            "output_cost_per_token": 5e-6,
            "cache_creation_input_token_cost_above_1hr": 3e-6,
            "input_cost_per_token_above_200k_tokens": 2e-6,
            "cache_creation_input_token_cost_above_1hr_above_200k_tokens": 7e-6,
        },
    )
    small = tiered.cost(input_tokens=0, output_tokens=0, cache_write_tokens=100, cache_write_1h_tokens=100)
    large = tiered.cost(input_tokens=300_000, output_tokens=0, cache_write_tokens=100, cache_write_1h_tokens=100)
    assert small == pytest.approx(100 * 3e-6)
    assert large == pytest.approx(300_000 * 2e-6 + 100 * 7e-6)


def test_fixture_day_with_one_hour_writes_prices_them(fixtures_dir):
    """2026-02-10 (short.jsonl, tool_heavy.jsonl) writes only to the 1-hour cache: $0.37, not $0.25."""
    folder = fixtures_dir / "claude" / "projects" / "-home-USER-projects-spotter"
    report, _ = run_report(
        [folder / "short.jsonl", folder / "tool_heavy.jsonl"], ReportSettings(cost_mode="calculate"), use_cache=False
    )
    assert report.totals["cost_usd"] == pytest.approx(0.371093, abs=1e-6)


# --- Claude side conversations and recorded cost ----------------------------------------------------


def test_sidechain_replay_of_a_parent_message_counts_once(tmp_path):
    """A /btw side conversation replays the parent's message under a new request id: keep the parent."""

    def line(message, request, side, cache_read, output):
        return json.dumps({
            "type": "assistant", "sessionId": "s", "uuid": f"{message}{request}", "isSidechain": side,
            "requestId": request, "timestamp": "2026-03-29T07:00:00Z",
            "message": {"id": message, "model": "claude-sonnet-4-5",
                        "usage": {"input_tokens": 0, "output_tokens": output, "cache_read_input_tokens": cache_read}},
        })

    folder = tmp_path / "projects" / "-w"
    (folder / "s" / "subagents").mkdir(parents=True)
    (folder / "s.jsonl").write_text(line("msg-parent", "req-parent", False, 20, 10) + "\n")
    (folder / "s" / "subagents" / "agent-aside.jsonl").write_text(
        line("msg-parent", "req-replay", True, 50_000, 10) + "\n" + line("msg-answer", "req-answer", True, 700, 30) + "\n"
    )
    report, _ = run_report([tmp_path], ReportSettings(), use_cache=False)
    assert report.totals["requests"] == 2
    assert report.totals["cache_read_tokens"] == 20 + 700


def test_claude_cost_usd_is_the_recorded_cost(tmp_path):
    path = _claude_file(tmp_path / "p" / "s.jsonl", [{"input_tokens": 10, "output_tokens": 10}])
    text = path.read_text().replace('"cwd"', '"costUSD": 0.5, "cwd"')
    path.write_text(text)
    auto, _ = run_report([path], ReportSettings(), use_cache=False)
    computed, _ = run_report([path], ReportSettings(cost_mode="calculate"), use_cache=False)
    assert auto.totals["cost_usd"] == pytest.approx(0.5)
    assert computed.totals["cost_usd"] < 0.01
