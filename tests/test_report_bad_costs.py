"""A recorded cost that is no cost (NaN, 1e400, a billion dollars) is dropped with a warning naming its line,
and the request priced from its tokens: every report path, never an internal error (a 1e400 ended
`report --format json` with exit 4, polars refusing to cast an infinity to picodollars)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from click.testing import CliRunner

from batchcompact.cli import cli


def session(path: Path, cost: str | None) -> Path:
    usage = '"input":1000,"output":500,"cacheRead":0,"cacheWrite":0'
    if cost is not None:
        usage += f',"cost":{{"total":{cost}}}'
    path.write_text(
        '{"type":"session","version":3,"id":"s1","timestamp":"2026-03-01T10:00:00.000Z","cwd":"/p"}\n'
        '{"type":"message","id":"a1","parentId":null,"timestamp":"2026-03-01T10:00:00.000Z",'
        '"message":{"role":"user","content":"hi","timestamp":1}}\n'
        '{"type":"message","id":"a2","parentId":"a1","timestamp":"2026-03-01T10:00:01.000Z",'
        '"message":{"role":"assistant","content":[{"type":"text","text":"x"}],"provider":"openai",'
        f'"model":"gpt-4o","usage":{{{usage}}},"stopReason":"stop","timestamp":2}}}}\n',
        encoding="utf-8",
    )
    return path


def report(path: Path, *args: str):
    result = CliRunner().invoke(cli, ["report", str(path), "--format", "json", *args])
    return result.exit_code, result.stdout, result.stderr


@pytest.mark.parametrize("cost", ["1e400", "-1e400", "NaN", "1e9"])
@pytest.mark.parametrize("engine", [("--no-cache",), ("--cache-above", "0")])
def test_a_cost_that_is_no_cost_is_named_and_priced_from_tokens(tmp_path, cost, engine):
    cache = ("--cache-dir", str(tmp_path / "cache")) if engine[0] == "--cache-above" else ()
    code, out, err = report(session(tmp_path / "bad.jsonl", cost), *engine, *cache)
    assert code == 0, err
    assert "bad.jsonl:3: recorded cost " in err and "priced from its tokens instead" in err
    clean = tmp_path / "clean"
    clean.mkdir()
    _, expected, _ = report(session(clean / "s.jsonl", None), "--no-cache")
    assert json.loads(out)["totals"] == json.loads(expected)["totals"]
    assert json.loads(out)["totals"]["cost_usd"] > 0


def test_a_recorded_cost_is_kept(tmp_path):
    code, out, err = report(session(tmp_path / "s.jsonl", "0.25"), "--no-cache")
    assert code == 0 and "recorded cost" not in err
    assert json.loads(out)["totals"]["cost_usd"] == 0.25
