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
    long_counts = [n for n in counted if n >= token_cache.MIN_CHARS]
    assert long_counts == [len(text)]
    token_cache.reset_shared_cache()  # a new run: a fresh connection to the same file
    again = count_call_tokens([_call(text)], "gpt-4o-mini")[0].prompt_tokens
    assert again == first == tokenizer.count_tokens("sys", "gpt-4o-mini") + tokenizer.count_tokens(text, "gpt-4o-mini")
    assert [n for n in counted if n >= token_cache.MIN_CHARS] == [len(text), len(text)]  # the second is ours above
    rows = sqlite3.connect(tmp_path / "c.sqlite").execute("SELECT count(*) FROM counts").fetchone()[0]
    assert rows == 1


def test_the_encoding_is_part_of_the_key(tmp_path, monkeypatch):
    monkeypatch.setenv("BATCHCOMPACT_TOKEN_CACHE", str(tmp_path / "c.sqlite"))
    token_cache.reset_shared_cache()
    text = "héllo wörld, " * 400
    o200k = token_cache.count_tokens_cached(text, "gpt-4o")
    cl100k = token_cache.count_tokens_cached(text, "claude-haiku-4-5")
    assert o200k == tokenizer.count_tokens(text, "gpt-4o")
    assert cl100k == tokenizer.count_tokens(text, "claude-haiku-4-5")


def test_a_broken_cache_file_never_fails_counting(tmp_path, monkeypatch):
    bad = tmp_path / "c.sqlite"
    bad.write_bytes(b"this is not a database" * 100)
    monkeypatch.setenv("BATCHCOMPACT_TOKEN_CACHE", str(bad))
    token_cache.reset_shared_cache()
    text = "token " * 1000
    assert token_cache.count_tokens_cached(text) == tokenizer.count_tokens(text)
    assert token_cache.shared_cache().disabled


def test_off_disables_it(monkeypatch):
    monkeypatch.setenv("BATCHCOMPACT_TOKEN_CACHE", "off")
    token_cache.reset_shared_cache()
    assert token_cache.shared_cache().disabled
