"""The report reads what the real Cline CLI writes: `cline` (npm, pinned in tests/report_judges.py) run in a
sandbox HOME against a loopback OpenAI-compatible provider whose every reply reports 1,200 prompt tokens
of which 1,000 cached and 30 completion tokens (12 of them reasoning).

Cline records each call as `metrics {inputTokens: 1200, cacheReadTokens: 1000, outputTokens: 30}`: its
input count INCLUDES the cache reads. The report must give every call the provider answered as one request
of 200 input, 1,000 cache reads and 30 output tokens (1,230), in the session and project the CLI recorded.
ccusage 20 reads no Cline files; a reader that took inputTokens as uncached (ccusage's newer Cline adapter)
would count 2,230 tokens a call (batchcompact/adapters/cline/README.md).
"""

from __future__ import annotations

import json

import pytest
from click.testing import CliRunner
from report_judges import CACHED, COMPLETION, MODEL, PROMPT, record_cline

from batchcompact.cli import cli

pytestmark = pytest.mark.slow

PROMPTS = ("JUDGE-ONE say hi", "JUDGE-TWO say hi again")


@pytest.fixture(scope="module")
def recorded(tmp_path_factory):
    root = tmp_path_factory.mktemp("cline")
    home, calls = record_cline(root, PROMPTS)
    return root, home, calls


def test_every_call_the_cli_made_is_one_request(recorded, monkeypatch, tmp_path):
    root, home, calls = recorded
    monkeypatch.setenv("HOME", str(home))
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "cache"))
    for name in ("XDG_CONFIG_HOME", "CLINE_HOME"):
        monkeypatch.delenv(name, raising=False)
    files = sorted((home / ".cline" / "data" / "sessions").glob("*/*.messages.json"))
    assert len(files) == len(PROMPTS) == calls  # one session per `cline PROMPT`, one call each
    for path in files:  # the shape the reader relies on, as the CLI wrote it
        doc = json.loads(path.read_text())
        (call,) = [m for m in doc["messages"] if m.get("role") == "assistant"]
        assert call["modelInfo"]["id"] == MODEL
        assert (call["metrics"]["inputTokens"], call["metrics"]["cacheReadTokens"]) == (PROMPT, CACHED)
    result = CliRunner().invoke(cli, ["report", "--agent", "cline", "--by", "session", "--format", "json"])
    assert result.exit_code == 0, result.output
    assert f"reading cline: {home / '.cline' / 'data'}" in result.stderr
    rows = json.loads(result.stdout)["rows"]
    assert sorted(r["session_id"] for r in rows) == sorted(json.loads(p.read_text())["sessionId"] for p in files)
    for row in rows:
        assert row["agent"] == "cline" and row["requests"] == 1 and row["project"] == str(root / "project")
        assert (row["input_tokens"], row["cache_read_tokens"], row["output_tokens"]) == (
            PROMPT - CACHED, CACHED, COMPLETION)
        assert row["total_tokens"] == PROMPT + COMPLETION and row["models"] == [MODEL]
        assert row["cost_usd"] == pytest.approx(((PROMPT - CACHED) * 0.4 + CACHED * 0.1 + COMPLETION * 1.6) / 1e6)
