"""The report reads what the real agent CLIs write: OpenCode (`opencode-ai`) and Kilo (`@kilocode/cli`)
installed from npm, run in a sandbox HOME against a loopback OpenAI-compatible provider whose every reply
carries known usage (tests/report_judges.py: 1,200 prompt tokens of which 1,000 cached, 30 completion
tokens of which 12 reasoning).

Both CLIs store the reply as `tokens {input: 200, output: 18, reasoning: 12, cache: {read: 1000}}` in
their SQLite database (still in its WAL file when the CLI exits): cached tokens beside the input,
reasoning beside the output. The report must give every conversation call the provider answered as one
request of 200 input, 30 output (12 of them reasoning), 1,000 cache reads: 1,230 tokens.
"""

from __future__ import annotations

import json
import sqlite3

import pytest
from click.testing import CliRunner
from report_judges import CACHED, COMPLETION, KILO, OPENCODE, PROMPT, REASONING, record_opencode_like

from batchcompact.cli import cli

pytestmark = pytest.mark.slow

PROMPTS = ("JUDGE-ONE say hi", "JUDGE-TWO say hi again")


@pytest.fixture(scope="module", params=[OPENCODE, KILO], ids=["opencode", "kilo"])
def recorded(request, tmp_path_factory):
    cli_spec = request.param
    root = tmp_path_factory.mktemp(cli_spec[2])
    home, calls = record_opencode_like(cli_spec, root, PROMPTS)
    return cli_spec[2], home, calls


def test_every_call_the_cli_made_is_one_request(recorded, monkeypatch, tmp_path):
    agent, home, calls = recorded
    monkeypatch.setenv("HOME", str(home))
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "cache"))
    for name in ("XDG_DATA_HOME", "OPENCODE_DATA_DIR", "KILO_DATA_DIR"):
        monkeypatch.delenv(name, raising=False)
    database = home / ".local" / "share" / agent / f"{agent}.db"
    assert (database.parent / f"{agent}.db-wal").exists()
    with sqlite3.connect(f"file:{database}?mode=ro", uri=True) as db:
        stored = [json.loads(d) for (d,) in db.execute("SELECT data FROM message")]
    assistant = [m for m in stored if m.get("role") == "assistant"]
    # the shape this reader relies on, as the CLI wrote it
    assert assistant and all(m["tokens"]["input"] == PROMPT - CACHED and m["tokens"]["reasoning"] == REASONING
                             and m["tokens"]["output"] == COMPLETION - REASONING for m in assistant)
    result = CliRunner().invoke(cli, ["report", "--agent", agent, "--by", "session", "--format", "json"])
    assert result.exit_code == 0, result.output
    assert f"reading {agent}: {database}" in result.stderr
    doc = json.loads(result.stdout)
    (row,) = doc["rows"]
    assert row["agent"] == agent and row["requests"] == calls == len(assistant) >= len(PROMPTS)
    assert (row["input_tokens"], row["cache_read_tokens"]) == (calls * (PROMPT - CACHED), calls * CACHED)
    assert (row["output_tokens"], row["reasoning_tokens"]) == (calls * COMPLETION, calls * REASONING)
    assert row["total_tokens"] == calls * (PROMPT + COMPLETION)
    assert row["project"].endswith("/project")
