"""Devin CLI (batchcompact/agents/devin): ccusage's Devin test transcripts written out as files
(tests/data/devin, with their licence notice; the CLI is on neither npm nor PyPI, so nothing here was
recorded with it), laid out in a HOME and read from the CLI in every --by and format: ATIF 1.7's
prompt_tokens holding both cache counters, ATIF 1.4's metadata metrics, the model from the generation
model or a display name, the legacy `cognition` folder linked to the new one counted once."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest
from agent_reports import FIELDS, agent_report, agent_rows, every_format, summed

DATA = Path(__file__).parents[2] / "data" / "devin" / "transcripts"
# per session, with the tokens ccusage's tests expect for the same transcripts
SESSIONS = {
    "veil-vibraphone": {"requests": 2, "input_tokens": 160_245 + 2_151, "output_tokens": 168,
                        "cache_read_tokens": 160_244, "cache_write_tokens": 0, "total_tokens": 322_808},
    "tasty-centaur": {"requests": 1, "input_tokens": 6, "output_tokens": 164, "cache_read_tokens": 14_473,
                      "cache_write_tokens": 25_474, "total_tokens": 40_117},
    "display-name": {"requests": 1, "input_tokens": 10, "output_tokens": 5, "cache_read_tokens": 0,
                     "cache_write_tokens": 0, "total_tokens": 15},
    "agent-level": {"requests": 1, "input_tokens": 10, "output_tokens": 5, "cache_read_tokens": 0,
                    "cache_write_tokens": 0, "total_tokens": 15},
    "cache-write": {"requests": 1, "input_tokens": 3, "output_tokens": 109, "cache_read_tokens": 9_317,
                    "cache_write_tokens": 17_508, "total_tokens": 26_937},
}
TOTAL = {k: sum(s[k] for s in SESSIONS.values()) for k in ("requests", *FIELDS)}


@pytest.fixture
def home(tmp_path, monkeypatch) -> Path:
    home = tmp_path / "home"
    shutil.copytree(DATA, home / ".local" / "share" / "devin" / "cli" / "transcripts")
    monkeypatch.setenv("HOME", str(home))
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "cache"))
    for name in ("XDG_DATA_HOME", "DEVIN_TRANSCRIPTS_DIR"):
        monkeypatch.delenv(name, raising=False)
    return home


def report(*args: str) -> tuple[str, str]:
    return agent_report("devin", *args)


def rows_by(by: str, *args: str) -> list[dict]:
    return agent_rows("devin", by, *args)[0]


def test_sessions_models_and_prices(home):
    out, err = report("--by", "session", "--format", "json")
    assert f"reading devin: {home / '.local/share/devin/cli/transcripts'}" in err
    rows = {r["session_id"]: r for r in json.loads(out)["rows"]}
    assert {k: {f: r[f] for f in ("requests", *FIELDS)} for k, r in rows.items()} == SESSIONS
    assert rows["display-name"]["models"] == ["swe-1.7-lightning"]  # the step's display name, as an id
    assert rows["agent-level"]["models"] == ["swe-2-high"]  # the agent's, when the step names none
    assert rows["tasty-centaur"]["models"] == ["claude-opus-4-7-medium"]
    # swe-1.7 is priced from the map's cognition/ entry; swe-2-high is in no map: unpriced and flagged
    assert rows["cache-write"]["cost_usd"] > 0 and rows["cache-write"]["unpriced_requests"] == 0
    assert rows["veil-vibraphone"]["unpriced_requests"] == 2
    assert "no price for claude-opus-4-7-medium, swe-2-high" in err
    assert [r["provider"] for r in rows_by("provider")] == ["cognition"]


@pytest.mark.parametrize("by", ["day", "week", "month", "session", "project", "branch", "model", "provider",
                                "agent", "machine", "block", "request"])
def test_every_by_counts_each_step_once(home, by):
    assert summed(rows_by(by)) == TOTAL


def test_every_format_and_a_step_on_its_own_day(home, tmp_path):
    every_format("devin", tmp_path, TOTAL, *SESSIONS, "389,892")
    # a session across midnight: each step on the day it ran
    days = {r["date"]: r["total_tokens"] for r in rows_by("day", "--since", "2026-09-11", "--until", "2026-09-11")}
    assert days == {"2026-09-11": 2_151 + 84 + 160_244}


def test_the_legacy_folder_and_devin_transcripts_dir(home, tmp_path, monkeypatch):
    legacy = home / ".local" / "share" / "cognition" / "cli"
    legacy.mkdir(parents=True)
    (legacy / "transcripts").symlink_to(home / ".local" / "share" / "devin" / "cli" / "transcripts")
    assert summed(rows_by("session")) == TOTAL
    # DEVIN_TRANSCRIPTS_DIR (comma-separated, searched whole) replaces the defaults; a copy counts once
    archive = tmp_path / "archive"
    shutil.copytree(DATA, archive / "transcripts")
    monkeypatch.setenv("DEVIN_TRANSCRIPTS_DIR", f"{archive},{home / '.local/share/devin/cli/transcripts'}")
    out, err = report("--by", "session", "--format", "json")
    assert f"reading devin: {archive}" in err
    assert summed(json.loads(out)["rows"]) == TOTAL


def test_a_file_that_is_no_transcript_is_named(home):
    folder = home / ".local" / "share" / "devin" / "cli" / "transcripts"
    (folder / "broken.json").write_text('{"schema_version": "ATIF-v1.7", "steps": [')
    (folder / "notes.json").write_text('{"unrelated": true}')
    (folder / "no-time.json").write_text(json.dumps({"schema_version": "ATIF-v1.7", "session_id": "t", "steps": [
        {"step_id": 1, "source": "agent", "metrics": {"prompt_tokens": 5, "completion_tokens": 1}}]}))
    out, err = report("--by", "session", "--format", "json")
    assert f"{folder / 'broken.json'}: invalid JSON" in err
    assert f"{folder / 'notes.json'}: not a Devin transcript" in err
    assert f"{folder / 'no-time.json'}: step 1 has usage but no time" in err
    assert summed(json.loads(out)["rows"]) == TOTAL
