"""Every agent's usage in one report: discovery under HOME, `--agent`, `--by agent`, the agent in every
output, SQLite sources (keyed with their WAL file), and the OpenCode and Kilo readers.

The fixtures are ../shared/fixtures/agents/ (hand-written by other projects; PROVENANCE.md), laid out in
a fake HOME by tests/agent_homes.py; the transcripts the real CLIs write are read in test_judge_agents.py.
"""

from __future__ import annotations

import csv
import io
import json
import sqlite3
from pathlib import Path

import polars as pl
import pytest
from agent_homes import LAYOUT, build_home, clear_agent_env
from click.testing import CliRunner

from batchcompact.agents import names
from batchcompact.cli import cli
from batchcompact.discover import discover_sources
from batchcompact.report import ReportSettings, build_report, collect_usage
from batchcompact.report.files import FileKey

# agent -> (requests, total tokens) on the HOME of agent_homes.py; a reader's test adds its agent here.
EXPECTED = {
    # the sub-agent replay (1,980: the copied parent history not counted again) + the branch copy (2,050)
    "codex": (6, 4030),
    # opencode.db: msg-1 180 (its legacy JSON copy, 1,998, loses to the row) + db-msg-1 216; the channel
    # database 120; legacy files: tokscale 1,800, agent-sessions 136
    "opencode": (5, 2452),
    # row-1: 100 + 50 output + 5 reasoning + 10 + 20; row-2 has no time and is skipped
    "kilo": (1, 185),
    # chat span 19,758 (its reasoning inside output) + the conv-dupe chat span 70 (its log and aggregate
    # dropped) + an old session log's shutdown totals 115
    "copilot": (3, 19_943),
    "kimi": (1, 180),  # one StatusUpdate: 100 + 50 + 10 + 20
    "openclaw": (2, 110_645),  # 110,643 + the repeated line counted once (2)
    "droid": (3, 515),  # session-a 185 (thinking added to output), b 30, c 300 (its archived copy loses)
    "goose": (1, 180),  # accumulated 100 + 50, the total's extra 30 added to output
    "amp": (3, 24_773),  # the ledger event 180 (cache from its message) + two message usages 24,593
    "codebuff": (2, 330),  # 180 + 150 (the OpenAI-style prompt_tokens include the 10 cached)
    "hermes": (1, 1_580),  # 1,200 + 300 + 10 reasoning + 50 + 20
    # session-a 16,276 (input 15,327 includes the 11,526 cached; + 7 tool-use prompt tokens; 919 thoughts
    # beside the output), the legacy chat 110, agentsview's 4,300 (its cached written beside the input)
    "gemini": (4, 20_686),
    # prompt 100 includes the 5 cached, the 10 thoughts inside the 50 output (no total: Qwen Code's default)
    "qwen": (1, 150),
}


@pytest.fixture
def home(tmp_path, monkeypatch, fixtures_dir) -> Path:
    home = tmp_path / "home"
    build_home(fixtures_dir / "agents", home)
    clear_agent_env(monkeypatch)
    monkeypatch.setenv("HOME", str(home))
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "cache"))
    return home


def invoke(*args):
    result = CliRunner().invoke(cli, [str(a) for a in args])
    assert result.exit_code == 0, result.output
    return result


def test_every_agent_folder_under_home_is_discovered(home):
    found = {s.agent for s in discover_sources(report=True)}
    assert found == set(LAYOUT) & set(names())
    # plan, run and validate read only the agents batchcompact compacts
    assert {s.agent for s in discover_sources()} == {"codex", "gemini", "qwen", "copilot", "openclaw", "opencode", "kilo"}
    # OpenCode's database, not its legacy storage/ folder (no file there that `plan` reads)
    assert {s.path.name for s in discover_sources() if s.agent in ("opencode", "kilo")} == {"opencode.db", "kilo.db"}


def test_report_without_paths_reads_every_agent_counted_once(home):
    result = invoke("report", "--by", "agent", "--format", "json")
    named = [line for line in result.stderr.splitlines() if line.startswith("reading ")]
    assert {line.split(":")[0].removeprefix("reading ") for line in named} == set(LAYOUT) & set(names())
    assert "reading opencode: " + str(home / ".local/share/opencode/opencode-beta.db") in named
    doc = json.loads(result.stdout)
    assert doc["keys"] == ["agent"]
    got = {row["agent"]: (row["requests"], row["total_tokens"]) for row in doc["rows"]}
    assert {agent: got.get(agent) for agent in EXPECTED} == EXPECTED


def test_agent_option_reads_only_that_agents_places(home):
    result = invoke("report", "--agent", "opencode", "--agent", "kilo", "--by", "session", "--format", "json")
    named = {line.split(":")[0] for line in result.stderr.splitlines() if line.startswith("reading ")}
    assert named == {"reading opencode", "reading kilo"}
    doc = json.loads(result.stdout)
    assert {row["agent"] for row in doc["rows"]} == {"opencode", "kilo"}
    assert doc["totals"]["total_tokens"] == EXPECTED["opencode"][1] + EXPECTED["kilo"][1]
    # with PATHS, --agent filters the rows
    everything = home / ".local" / "share"
    only = json.loads(invoke("report", everything, "--agent", "kilo", "--format", "json").stdout)
    assert only["totals"]["total_tokens"] == EXPECTED["kilo"][1] and only["totals"]["agents"] == ["kilo"]


def test_the_agent_is_in_every_output(home, tmp_path):
    data = home / ".local" / "share"
    rows = json.loads(invoke("report", data, "--by", "session", "--format", "json").stdout)["rows"]
    assert {(r["session_id"], r["agent"]) for r in rows} >= {("db-session-a", "opencode"), ("session-a", "kilo")}
    text = invoke("report", data, "--by", "day", "--format", "csv").stdout
    days = list(csv.DictReader(io.StringIO(text)))
    assert {d["agents"] for d in days} >= {"kilo;opencode"}
    out = tmp_path / "r.parquet"
    invoke("report", data, "--by", "agent", "--format", "parquet", "--output", out)
    frame = pl.read_parquet(out)
    assert sorted(frame["agent"].to_list()) == ["amp", "goose", "kilo", "opencode"]  # all under ~/.local/share
    usage = collect_usage([data], cache_dir=tmp_path / "c", jobs=1)
    table = pl.read_parquet(usage.parts)
    assert set(table["agent"].to_list()) == {"amp", "goose", "kilo", "opencode"} and table["agent"].null_count() == 0


def test_opencode_counts_reasoning_and_the_database_row_wins(tmp_path):
    data = tmp_path / "opencode"
    (data / "storage" / "message" / "ses_1").mkdir(parents=True)
    db = sqlite3.connect(data / "opencode.db")
    db.execute("CREATE TABLE session (id TEXT PRIMARY KEY, directory TEXT, parent_id TEXT)")
    db.execute("CREATE TABLE message (id TEXT PRIMARY KEY, session_id TEXT, time_created INTEGER, data TEXT)")
    db.execute("INSERT INTO session VALUES ('ses_1', '/work/app', NULL)")
    db.execute("INSERT INTO session VALUES ('ses_task', '/work/app', 'ses_1')")  # a sub-agent's session
    final = {"role": "assistant", "modelID": "gpt-5", "providerID": "openai", "time": {"created": 1767312000000},
             "tokens": {"input": 100, "output": 20, "reasoning": 30, "cache": {"read": 400, "write": 0}}, "cost": 0}
    db.execute("INSERT INTO message VALUES ('msg_1', 'ses_1', 1, ?)", (json.dumps(final),))
    user = {"role": "user", "time": {"created": 1767311999000}, "model": {"providerID": "openai", "modelID": "gpt-5"}}
    db.execute("INSERT INTO message VALUES ('msg_0', 'ses_1', 0, ?)", (json.dumps(user),))
    task = {**final, "tokens": {"input": 7, "output": 3}}
    db.execute("INSERT INTO message VALUES ('msg_t', 'ses_task', 2, ?)", (json.dumps(task),))
    db.commit()
    db.close()
    # a stale legacy copy of the same message, written mid-stream with more output than it ended with
    stale = {**final, "id": "msg_1", "sessionID": "ses_1", "tokens": {"input": 100, "output": 90}}
    (data / "storage" / "message" / "ses_1" / "msg_1.json").write_text(json.dumps(stale))
    collected = collect_usage([data], cache_dir=tmp_path / "c", jobs=1)
    report = build_report(collected.parts, ReportSettings(by="session"))
    row, task = sorted(report.rows.to_dicts(), key=lambda r: r["session_id"])
    assert (task["session_id"], task["total_tokens"]) == ("ses_task", 10)
    kinds = pl.read_parquet(collected.parts).select("dedupe_key", "kind").sort("dedupe_key").rows()
    assert kinds == [("opencode:msg_1", "main"), ("opencode:msg_1", "main"), ("opencode:msg_t", "sidechain")]
    assert (row["requests"], row["input_tokens"], row["output_tokens"], row["reasoning_tokens"]) == (1, 100, 50, 30)
    assert (row["cache_read_tokens"], row["total_tokens"], row["project"]) == (400, 550, "/work/app")
    # no recorded cost (0): computed from gpt-5's prices, reasoning at the output rate
    assert row["cost_usd"] == pytest.approx(100 * 1.25e-6 + 50 * 1e-5 + 400 * 1.25e-7)


def test_a_database_cell_that_is_not_utf8_loses_no_other_row(tmp_path):
    """Python's sqlite3 refuses a text cell that is not UTF-8, and the rest of the table went with it
    ("cannot read the database": two of the three messages lost). The read goes on after the last row it
    gave, such text decoded as U+FFFD, with a warning."""
    data = tmp_path / "opencode"
    data.mkdir()
    db = sqlite3.connect(data / "opencode.db")
    db.execute("CREATE TABLE session (id TEXT PRIMARY KEY, directory TEXT, parent_id TEXT)")
    db.execute("CREATE TABLE message (id TEXT PRIMARY KEY, session_id TEXT, time_created INTEGER, data TEXT)")
    db.execute("INSERT INTO session VALUES ('ses_1', '/work/app', NULL)")
    for n in range(3):
        message = {"role": "assistant", "modelID": "gpt-5", "providerID": "openai", "time": {"created": 1767312000000 + n},
                   "tokens": {"input": 100, "output": 10 * (n + 1)}, "cost": 0, "note": "PLACE"}
        text = json.dumps(message).encode()
        if n == 1:
            text = text.replace(b"PLACE", b"bad \xff byte")
        db.execute("INSERT INTO message VALUES (?, 'ses_1', ?, CAST(? AS TEXT))", (f"msg_{n}", n, text))
    db.commit()
    db.close()

    collected = collect_usage([data], cache_dir=tmp_path / "c", jobs=1)

    report = build_report(collected.parts, ReportSettings(by="session"))
    (row,) = report.rows.to_dicts()
    assert (row["requests"], row["output_tokens"]) == (3, 60)
    warnings = [w for w in collected.warnings if "not UTF-8" in w]
    assert warnings and "`message`: text that is not UTF-8 after rowid 1; read with U+FFFD" in warnings[0]
    # the same from the command line: every message counted, the warning on stderr
    result = invoke("report", data, "--by", "session", "--format", "json", "--no-cache")
    assert [(r["requests"], r["output_tokens"]) for r in json.loads(result.stdout)["rows"]] == [(3, 60)]
    assert "`message`: text that is not UTF-8 after rowid 1; read with U+FFFD in its place" in result.stderr


def test_recorded_cost_is_used_in_auto_mode_and_recomputed_in_calculate(fixtures_dir, tmp_path):
    folder = fixtures_dir / "agents" / "opencode" / "ccusage-db-vs-json"
    collected = collect_usage([folder / "opencode.db"], cache_dir=tmp_path / "c", jobs=1)
    auto = build_report(collected.parts, ReportSettings(by="day"))
    assert auto.totals["cost_usd"] == pytest.approx(0.06)  # two rows recording $0.03 each
    calculated = build_report(collected.parts, ReportSettings(by="day", cost_mode="calculate"))
    assert calculated.totals["cost_usd"] != pytest.approx(0.06)


def test_a_database_is_keyed_with_its_wal_file(tmp_path):
    """A row committed to the WAL (not yet in the main file) changes the key, so the cache re-reads it."""
    data = tmp_path / "kilo"
    data.mkdir()
    path = data / "kilo.db"
    db = sqlite3.connect(path)
    db.execute("PRAGMA journal_mode=WAL")
    db.execute("PRAGMA wal_autocheckpoint=0")
    db.execute("CREATE TABLE message (id TEXT PRIMARY KEY, session_id TEXT, data TEXT)")
    db.commit()

    def add(n):
        data_json = {"role": "assistant", "modelID": "gpt-5", "providerID": "openai",
                     "time": {"created": 1767312000000 + n}, "tokens": {"input": 10, "output": 1}}
        db.execute("INSERT INTO message VALUES (?, 's', ?)", (f"m{n}", json.dumps(data_json)))
        db.commit()

    def report_total():
        collected = collect_usage([data], cache_dir=tmp_path / "cache", jobs=1)
        return build_report(collected.parts, ReportSettings(by="day")).totals["total_tokens"], collected

    try:
        add(1)
        first = FileKey.of(path)
        assert (tmp_path / "kilo" / "kilo.db-wal").stat().st_size > 0
        assert report_total()[0] == 11
        add(2)
        assert FileKey.of(path) != first and FileKey.of(path).size > first.size
        total, collected = report_total()
        assert total == 22 and collected.extracted == 1
        again, collected = report_total()
        assert again == 22 and collected.cached == 1
        # the stored report is keyed the same way: replayed while nothing changes, rebuilt after a commit
        args = ["report", data, "--format", "json", "--cache-dir", tmp_path / "cache"]
        assert json.loads(invoke(*args).stdout)["totals"]["total_tokens"] == 22
        replay = invoke(*args)
        assert "(the stored report)" in replay.stderr
        add(3)
        fresh = invoke(*args)
        assert "(the stored report)" not in fresh.stderr
        assert json.loads(fresh.stdout)["totals"]["total_tokens"] == 33
    finally:
        db.close()


def test_a_file_that_is_not_a_database_is_a_warning(tmp_path):
    folder = tmp_path / "opencode"
    folder.mkdir()
    (folder / "opencode.db").write_text("not sqlite")
    result = invoke("report", folder, "--no-cache")
    assert "opencode.db: cannot read the database" in result.stderr


def test_a_database_in_a_folder_a_variable_names_is_read(fixtures_dir, tmp_path, monkeypatch):
    """`$HERMES_HOME` may be any folder: its `state.db`, named by discovery, is Hermes's whatever the folder's name."""
    import shutil

    from agent_homes import clear_agent_env

    custom = tmp_path / "my-agent-state"
    custom.mkdir()
    shutil.copy(fixtures_dir / "agents" / "hermes" / ".hermes" / "state.db", custom / "state.db")
    clear_agent_env(monkeypatch)
    monkeypatch.setenv("HOME", str(tmp_path / "empty"))
    monkeypatch.setenv("HERMES_HOME", str(custom))
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "cache"))
    result = invoke("report", "--by", "agent", "--format", "json")
    assert f"reading hermes: {custom / 'state.db'} (from $HERMES_HOME)" in result.stderr
    (row,) = json.loads(result.stdout)["rows"]
    assert (row["agent"], row["requests"], row["total_tokens"]) == ("hermes", 1, 1_580)
    # walking a folder that merely holds a file of that name takes nothing from it
    walked = CliRunner().invoke(cli, ["report", str(tmp_path / "my-agent-state")])
    assert walked.exit_code == 2 and "no session files found" in walked.output
