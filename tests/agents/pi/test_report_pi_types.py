"""pi's usage reader (batchcompact/adapters/pi/report.py) and token counts of the wrong type: such a count is 0,
and the file's first one is named once, with its line, from the CLI."""

from __future__ import annotations

import json

from click.testing import CliRunner

from batchcompact.cli import cli


def message(entry_id: str, second: int, usage: dict) -> dict:
    return {"type": "message", "id": entry_id, "parentId": None, "timestamp": f"2026-01-01T00:00:0{second}Z",
            "message": {"role": "assistant", "provider": "anthropic", "model": "claude-haiku-4-5", "usage": usage,
                        "content": [], "timestamp": second}}


def write_session(path, *usages: dict):
    lines = [{"type": "session", "version": 3, "id": "s1", "timestamp": "2026-01-01T00:00:00Z", "cwd": "/w"}]
    lines += [message(f"a{i}", i + 1, usage) for i, usage in enumerate(usages)]
    path.write_text("".join(json.dumps(x) + "\n" for x in lines))
    return path


def report(path) -> tuple[dict, str]:
    result = CliRunner().invoke(cli, ["report", str(path), "--by", "session", "--format", "json"])
    assert result.exit_code == 0, result.output
    (row,) = json.loads(result.stdout)["rows"]
    return row, result.stderr


def test_a_token_count_of_the_wrong_type_is_zero_and_named_once_with_its_line(tmp_path, monkeypatch):
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "cache"))
    good = {"input": 100, "output": 20, "cacheRead": 5, "cacheWrite": 1}
    path = write_session(tmp_path / "s.jsonl", good, {**good, "input": "many"},
                         {**good, "cacheRead": [1], "output": True}, good)
    row, err = report(path)
    assert (row["input_tokens"], row["output_tokens"], row["cache_read_tokens"], row["cache_write_tokens"]) == (
        300, 60, 15, 4)
    assert row["requests"] == 4
    warning = (f'{path}:3: `usage.input` is "many", not a token count; counted as 0 (3 such counts in this file; '
               "the first is named)")
    assert warning in err
    assert err.count("not a token count") == 1


def test_one_wrong_count_is_named_alone_and_good_files_warn_nothing(tmp_path, monkeypatch):
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "cache"))
    good = {"input": 100, "output": 20, "cacheRead": 5, "cacheWrite": 1}
    path = write_session(tmp_path / "one.jsonl", good, {**good, "cacheWrite": "2"})
    row, err = report(path)
    assert f'{path}:3: `usage.cacheWrite` is "2", not a token count; counted as 0\n' in err
    assert row["cache_write_tokens"] == 1
    # absent and null counts are no error: pi leaves out what it did not get
    clean = write_session(tmp_path / "clean.jsonl", good, {"input": 7, "output": None})
    row, err = report(clean)
    assert "not a token count" not in err and row["input_tokens"] == 107
