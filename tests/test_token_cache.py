"""Exact token counts remembered across runs: the same prompts are never tokenized twice."""

from __future__ import annotations

import sqlite3

import pytest

from batchcompact import token_cache, tokenizer
from batchcompact.core.calls import HISTORY, SummaryCall
from batchcompact.pipeline.planning import count_call_tokens


@pytest.fixture
def counted(monkeypatch):
    """Counts the calls that reach the real tokenizer."""
    calls = []
    real = tokenizer.count_tokens

    def spy(text, model=None):
        calls.append(len(text))
        return real(text, model)

    monkeypatch.setattr(tokenizer, "count_tokens", spy)
    return calls


def _call(text: str) -> SummaryCall:
    return SummaryCall(kind=HISTORY, system_prompt="sys", user_prompt=text, max_tokens=100)


def test_a_long_prompt_is_tokenized_once_across_processes_worth_of_runs(tmp_path, monkeypatch, counted):
    monkeypatch.setenv("BATCHCOMPACT_TOKEN_CACHE", str(tmp_path / "c.sqlite"))
    token_cache.reset_shared_cache()
    text = "word " * 2000
    first = count_call_tokens([_call(text)], "gpt-4o-mini")[0].prompt_tokens
    assert counted == [len("sys"), len(text)]
    token_cache.reset_shared_cache()  # a new run: a fresh connection to the same file
    again = count_call_tokens([_call(text)], "gpt-4o-mini")[0].prompt_tokens
    assert counted == [len("sys"), len(text)]  # nothing tokenized again
    assert again == first == tokenizer.count_tokens("sys", "gpt-4o-mini") + tokenizer.count_tokens(text, "gpt-4o-mini")
    rows = sqlite3.connect(tmp_path / "c.sqlite").execute("SELECT count(*) FROM counts").fetchone()[0]
    assert rows == 1


def test_the_encoding_is_part_of_the_key(tmp_path, monkeypatch):
    monkeypatch.setenv("BATCHCOMPACT_TOKEN_CACHE", str(tmp_path / "c.sqlite"))
    token_cache.reset_shared_cache()
    text = "héllo wörld, " * 400
    o200k = token_cache.count_prompt_tokens("", text, "gpt-4o")
    cl100k = token_cache.count_prompt_tokens("", text, "claude-haiku-4-5")
    assert o200k == tokenizer.count_tokens(text, "gpt-4o")
    assert cl100k == tokenizer.count_tokens(text, "claude-haiku-4-5")


def test_a_broken_cache_file_never_fails_counting(tmp_path, monkeypatch):
    bad = tmp_path / "c.sqlite"
    bad.write_bytes(b"this is not a database" * 100)
    monkeypatch.setenv("BATCHCOMPACT_TOKEN_CACHE", str(bad))
    token_cache.reset_shared_cache()
    text = "token " * 1000
    assert token_cache.count_prompt_tokens("", text) == tokenizer.count_tokens(text)
    assert token_cache.shared_cache().disabled


def test_off_disables_it(monkeypatch):
    monkeypatch.setenv("BATCHCOMPACT_TOKEN_CACHE", "off")
    token_cache.reset_shared_cache()
    assert token_cache.shared_cache().disabled


def _loads(stderr: str) -> int:
    return stderr.count("loading the ")  # tokenizer._load's debug line, from any process of the command


def test_a_rerun_or_a_run_after_plan_loads_no_encoding_in_any_process(tmp_path):
    """The first `plan` (no cache file yet) loads the encoding once, in the parent before it forks (the
    workers share it); a second `plan` finds every count remembered, short prompts included, and loads it
    in no process (-vv shows each load, the workers' too); a built-in `run` loads it once, in the parent."""
    import os
    import subprocess
    import sys
    from pathlib import Path

    sessions = Path(__file__).resolve().parent.parent / "sample_sessions" / "pi"
    env = dict(os.environ, BATCHCOMPACT_TOKEN_CACHE=str(tmp_path / "counts.sqlite"), XDG_CACHE_HOME=str(tmp_path / "cache"))
    env.pop("BATCHCOMPACT_DEBUG", None)

    def bc(*args: str) -> str:
        done = subprocess.run([sys.executable, "-m", "batchcompact", "-vv", *args], env=env, cwd=tmp_path,
                              capture_output=True, text=True, timeout=300)
        assert done.returncode == 0, done.stderr[-2000:]
        return done.stderr

    plan = ("plan", str(sessions), "--force", "--jobs", "2", "--format", "json", "-o", os.devnull)
    assert _loads(bc(*plan)) == 1
    assert _loads(bc(*plan)) == 0
    # The built-in summarizer counts each summary against its budget with the same encoding (#47), so a
    # built-in `run` loads it once, in the parent before it forks, whatever the cache holds (it was 0).
    assert _loads(bc("run", str(sessions), "--force", "--jobs", "2", "--min-age", "0",
                     "--output-dir", str(tmp_path / "out"))) == 1
    assert any((tmp_path / "out").rglob("*.jsonl"))  # it compacted


def test_short_prompts_are_remembered_too(tmp_path, monkeypatch, counted):
    monkeypatch.setenv("BATCHCOMPACT_TOKEN_CACHE", str(tmp_path / "c.sqlite"))
    token_cache.reset_shared_cache()
    first = count_call_tokens([_call("a short prompt")], "gpt-4o-mini")[0].prompt_tokens
    assert counted  # counted once
    counted.clear()
    token_cache.reset_shared_cache()
    assert count_call_tokens([_call("a short prompt")], "gpt-4o-mini")[0].prompt_tokens == first
    assert counted == []  # the second time from the cache: no encoding needed


def test_warm_up_before_forking_only_when_no_cache_answers(tmp_path, monkeypatch):
    from batchcompact.pipeline import planning

    loaded = []
    monkeypatch.setattr(tokenizer, "warm_up", lambda model=None: loaded.append(model))
    monkeypatch.setenv("BATCHCOMPACT_TOKEN_CACHE", str(tmp_path / "c.sqlite"))
    planning.warm_up_before_forking("builtin")
    assert loaded == [None]  # no cache file yet: every count is made, once, in the parent
    (tmp_path / "c.sqlite").write_bytes(b"")
    planning.warm_up_before_forking("gpt-4o")
    assert loaded == [None]  # a cache to answer from: the workers load it at their first miss
    monkeypatch.setenv("BATCHCOMPACT_TOKEN_CACHE", "off")
    planning.warm_up_before_forking("gpt-4o")
    assert loaded == [None, "gpt-4o"]
