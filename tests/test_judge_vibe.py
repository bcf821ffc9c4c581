"""The report reads what the real Mistral Vibe CLI writes: `vibe` (PyPI `mistral-vibe`, pinned in
tests/report_judges.py, in a Python 3.12+ venv) run in a sandbox HOME against a loopback OpenAI-compatible
provider whose every reply reports 1,200 prompt tokens of which 1,000 cached and 30 completion tokens.

Two prompts with the Unified Harness (the default; the second `--continue`s the session) and two with
`--legacy-harness`: Vibe keeps each session's running totals (prompt 2,400 INCLUDING the 2,000 cached,
completion 60), so the report must give each session one row of 400 input, 2,000 cache reads and 60
output tokens, with the model and provider its config names and the project it ran in.
"""

from __future__ import annotations

import json

import pytest
from click.testing import CliRunner
from report_judges import CACHED, COMPLETION, MODEL, PROMPT, record_vibe

from batchcompact.cli import cli

pytestmark = pytest.mark.slow

RUNS = (("JUDGE-ONE say hi", ()), ("JUDGE-TWO say hi again", ("--continue",)),
        ("JUDGE-THREE legacy", ("--legacy-harness",)), ("JUDGE-FOUR legacy again", ("--legacy-harness", "--continue")))


@pytest.fixture(scope="module")
def recorded(tmp_path_factory):
    root = tmp_path_factory.mktemp("vibe")
    home, calls = record_vibe(root, RUNS)
    return root, home, calls


def test_each_session_is_one_row_of_its_calls(recorded, monkeypatch, tmp_path):
    root, home, calls = recorded
    assert calls == len(RUNS)
    monkeypatch.setenv("HOME", str(home))
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "cache"))
    monkeypatch.delenv("VIBE_HOME", raising=False)
    logs = home / ".vibe" / "logs" / "session"
    metas = sorted([*logs.glob("session_*/meta.json"), *logs.glob("unified/*/meta.json")])
    assert len(metas) == 2  # one session per harness, each resumed once
    result = CliRunner().invoke(cli, ["report", "--agent", "vibe", "--by", "session", "--format", "json"])
    assert result.exit_code == 0, result.output
    assert f"reading vibe: {logs}" in result.stderr and "warning" not in result.stderr
    rows = json.loads(result.stdout)["rows"]
    assert sorted(r["session_id"] for r in rows) == sorted(json.loads(p.read_text())["session_id"] for p in metas)
    for row in rows:
        assert row["agent"] == "vibe" and row["requests"] == 1 and row["project"] == str(root / "project")
        assert (row["input_tokens"], row["cache_read_tokens"], row["output_tokens"]) == (
            2 * (PROMPT - CACHED), 2 * CACHED, 2 * COMPLETION)
        assert row["total_tokens"] == 2 * (PROMPT + COMPLETION) and row["models"] == [MODEL]
        assert row["cost_usd"] == pytest.approx(2 * ((PROMPT - CACHED) * 0.4 + CACHED * 0.1 + COMPLETION * 1.6) / 1e6)
    providers = CliRunner().invoke(cli, ["report", "--agent", "vibe", "--by", "provider", "--format", "json"])
    assert [r["provider"] for r in json.loads(providers.stdout)["rows"]] == ["judge"]
