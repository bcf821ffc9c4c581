"""The command line on real files: exit codes, exact lines, JSON shapes."""

from __future__ import annotations

import json
import re
import shutil
import subprocess
import sys

import polars as pl
import pytest
from click.testing import CliRunner
from conftest import REPO, fixture_path
from factories import Builder

from batchcompact.agents import AGENTS, describe
from batchcompact.cli import cli

PLAN_KEYS = {
    "path", "session_id", "status", "reason", "model", "context_window", "tokens_before", "first_kept_entry_id",
    "first_kept_line", "turn_start_line", "split_turn", "messages_to_summarize", "turn_prefix_messages",
    "read_files", "modified_files", "calls", "prompt_tokens", "est_output_tokens", "est_cost_usd",
    "est_batch_cost_usd",
}


def invoke(*args: str):
    result = CliRunner().invoke(cli, list(args), catch_exceptions=False)
    return result


def test_version_and_help():
    out = subprocess.run([sys.executable, "-m", "batchcompact", "--version"], capture_output=True, text=True)
    assert out.returncode == 0 and out.stdout.startswith("batchcompact, version ")
    helped = subprocess.run([sys.executable, "-m", "batchcompact", "--help"], capture_output=True, text=True)
    for command in ("validate", "show", "plan", "run", "report"):
        assert command in helped.stdout


@pytest.mark.parametrize("args, said", [
    ((), "Usage: "),  # a new user's first command: the help (click 8.2+ raised it)
    (("-q",), "Error: Missing command."),
    (("-v",), "Error: Missing command."),
    (("-vv",), "Error: Missing command."),
    (("--config", "nosuch.toml"), "Error: Missing command."),
    (("--config",), "Error: Option '--config' requires an argument."),
])
def test_the_bare_command_and_global_options_alone_are_a_usage_error_without_a_traceback(args, said):
    """`batchcompact` alone ended in `AttributeError: 'NoneType' object has no attribute 'color'` with the click
    pip installs today (8.2+ raises NoArgsIsHelpError, whose ctx the group had cleared)."""
    done = subprocess.run([sys.executable, "-m", "batchcompact", *args], capture_output=True, text=True)
    assert done.returncode == 2, done.stderr
    assert "Traceback" not in done.stderr and done.stdout == ""
    assert done.stderr.startswith(said), done.stderr
    if not args:
        assert "[OPTIONS] COMMAND" in done.stderr and "Commands:" in done.stderr and "validate" in done.stderr


def test_help_and_the_package_description_name_what_is_compacted_and_reported():
    """Every agent of the registry is named in `--help` (from the registry: both it and the package description
    said "(pi, Claude Code, Codex)" after Gemini CLI and Qwen Code were added); the package description names
    none, so that adding an agent touches its folder and the registry alone and nothing goes stale."""
    import tomllib

    helped = subprocess.run([sys.executable, "-m", "batchcompact", "--help"], capture_output=True, text=True)
    text = " ".join(helped.stdout.split())
    description = tomllib.loads((REPO / "pyproject.toml").read_text())["project"]["description"]
    for agent in AGENTS:
        named = re.compile(rf"\b{re.escape(agent.display_name)}\b")
        assert named.search(text), agent.display_name
        if agent.writer is not None:
            assert named.search(text.split(" and report ")[0]), agent.display_name
        assert not named.search(description), agent.display_name


def test_plan_json_on_fixtures_has_the_documented_keys(tmp_path):
    folder = fixture_path("pi")
    out = tmp_path / "plan.json"
    result = invoke("plan", str(folder), "--force", "--jobs", "2", "--format", "json", "-o", str(out),
                    "--summary-model", "gpt-4o-mini")
    assert result.exit_code == 0, result.output
    rows = json.loads(out.read_text())["rows"]
    assert {r["path"].rsplit("/", 1)[-1] for r in rows} == {"large-session.jsonl", "before-compaction.jsonl"}
    for row in rows:
        assert PLAN_KEYS <= set(row)
        assert row["status"] == "compact" and row["calls"] == 2 and row["prompt_tokens"] > 90_000
        assert 0 < row["est_batch_cost_usd"] < row["est_cost_usd"]
    large = next(r for r in rows if r["path"].endswith("large-session.jsonl"))
    assert (large["first_kept_line"], large["turn_start_line"], large["split_turn"]) == (839, 836, True)


def test_plan_parquet_and_csv(tmp_path):
    folder = fixture_path("pi")
    pq = tmp_path / "plan.parquet"
    assert invoke("plan", str(folder), "--force", "--jobs", "1", "--format", "parquet", "-o", str(pq)).exit_code == 0
    frame = pl.read_parquet(pq)
    assert frame.height == 2 and set(frame["status"]) == {"compact"}
    csv = tmp_path / "plan.csv"
    assert invoke("plan", str(folder), "--jobs", "1", "--format", "csv", "-o", str(csv)).exit_code == 0
    assert csv.read_text().splitlines()[0].startswith("path,format,session_id,status")


def test_plan_parquet_without_output_is_a_usage_error(tmp_path):
    b = Builder()
    b.user("x")
    path = b.write(tmp_path / "s.jsonl")
    result = invoke("plan", str(path), "--format", "parquet")
    assert result.exit_code == 2
    assert "--format parquet needs --output FILE" in result.output


def test_plan_unknown_price_is_null_with_a_warning(tmp_path):
    """A model litellm places (an OpenAI-compatible server's) whose price nobody knows: planned, cost null."""
    folder = fixture_path("pi")
    result = CliRunner().invoke(cli, ["plan", str(folder), "--force", "--jobs", "1", "--format", "json",
                                      "--summary-model", "openai/imaginary-model"])
    assert result.exit_code == 0
    assert "warning: no price known for 'openai/imaginary-model'" in result.stderr
    rows = json.loads(result.stdout)["rows"]
    assert len(rows) == 2 and {r["status"] for r in rows} == {"compact"}
    assert all(r["est_cost_usd"] is None and r["est_batch_cost_usd"] is None for r in rows)
    assert all(r["prompt_tokens"] > 0 for r in rows)  # planned all the same: only the price is unknown


@pytest.mark.parametrize("command", ["plan", "run"])
def test_an_unknown_summary_model_is_refused_by_plan_as_by_run(tmp_path, command):
    """`plan --summary-model gpt-4o-mni` exited 0 with a $0.0000 estimate while `run --model gpt-4o-mni`
    exited 2: one rule (litellm must place the model), one message, before any file is read."""
    option = {"plan": ["--summary-model"], "run": ["--output-dir", str(tmp_path / "out"), "--model"]}[command]
    result = CliRunner().invoke(cli, [command, str(fixture_path("pi")), "--format", "json", *option, "gpt-4o-mni"])
    assert result.exit_code == 2, result.output
    assert result.stdout == "" and not (tmp_path / "out").exists()
    line = result.stderr.strip().splitlines()[-1]
    assert line.startswith("Error: unknown model 'gpt-4o-mni': litellm cannot tell its provider (did you mean "
                           "'gpt-4o-mini'?); name it provider/model"), line
    server = " --api-base http://127.0.0.1:8000/v1" if command == "run" else ""
    assert line.endswith(f"use --model openai/gpt-4o-mni{server}"), line  # plan's --summary-model: --model's old name


@pytest.mark.parametrize("option", ["--summarizer", "--judge-model"])
def test_evals_unknown_model_names_no_option_eval_lacks(option):
    """eval's unknown-model line suggested `--model openai/...`, an option eval does not have."""
    result = CliRunner().invoke(cli, ["eval", str(fixture_path("pi")), option, "gpt-4o-mni"])
    assert result.exit_code == 2, result.output
    line = result.stderr.strip().splitlines()[-1]
    assert line.startswith("Error: unknown model 'gpt-4o-mni'") and "--model" not in line, line
    assert line.endswith("use openai/gpt-4o-mni --api-base http://127.0.0.1:8000/v1"), line


def test_a_file_that_is_no_transcript_is_named_once_and_its_reason_groups(tmp_path):
    """`x.jsonl: error: x.jsonl: not a pi ... (pass the format explicitly if it is)`: the path twice (so
    the run summary could not group two such files) and an option that does not exist."""
    archive = tmp_path / "a"
    archive.mkdir()
    for name in ("x.jsonl", "y.jsonl"):
        (archive / name).write_text('{"foo": 1}\n')
    shutil.copy(fixture_path("pi", "large-session.jsonl"), archive / "s.jsonl")
    readers = describe([a for a in AGENTS if a.reader is not None])  # the agents `run` reads, from the registry
    why = f"not a {readers} transcript (none of its first 20 lines is an entry of theirs)"
    result = CliRunner().invoke(cli, ["validate", str(archive)])
    assert result.exit_code == 1
    assert result.stdout.splitlines() == [f"{archive / 'x.jsonl'}: error: {why}", f"{archive / 'y.jsonl'}: error: {why}"]
    result = CliRunner().invoke(cli, ["run", str(archive), "--output-dir", str(tmp_path / "out"), "--min-age", "0",
                                      "--state", str(tmp_path / "s.db")])
    assert result.exit_code == 1
    assert f"  2 failed: 2 not a {readers} transcript\n" in result.output
    assert f"  failed: {archive / 'x.jsonl'}: {why}\n" in result.output
    rows = json.loads(CliRunner().invoke(cli, ["plan", str(archive), "--format", "json"]).stdout)["rows"]
    assert [r["reason"] for r in rows if r["status"] == "error"] == [why, why]
    result = CliRunner().invoke(cli, ["show", str(archive / "x.jsonl")])
    assert result.exit_code == 1 and result.stderr.splitlines() == [f"Error: {archive / 'x.jsonl'}: {why}"]


def test_counts_of_one_are_singular(tmp_path):
    """"1 files checked", "1 sessions": a count names its noun in the singular for one."""
    one = str(fixture_path("pi", "large-session.jsonl"))
    result = CliRunner().invoke(cli, ["validate", one])
    assert result.stderr == "1 file checked: 1 valid, 0 invalid (0 errors, 0 warnings)\n"
    result = CliRunner().invoke(cli, ["plan", one, "--force", "--summary-model", "gpt-4o-mini"])
    summary = result.stdout.split("\n\n", 1)[1]
    assert summary.startswith("1 session: 1 compact\nto compact: 1 session, ")
    assert ", 2 calls, " in summary
    result = CliRunner().invoke(cli, ["run", one, "--output-dir", str(tmp_path / "out"), "--min-age", "0",
                                      "--state", str(tmp_path / "s.db")])
    assert re.search(r"^run \S+: 1 session: 1 ", result.stderr + result.stdout, re.M), result.output


def test_plan_and_validate_say_an_unreadable_file_alike(tmp_path):
    """plan said "not a pi, ... transcript" of an empty or gzip file, validate "empty file", "gzip-compressed"."""
    import gzip

    (tmp_path / "empty.jsonl").write_bytes(b"")
    (tmp_path / "packed.jsonl").write_bytes(gzip.compress(b'{"type": "session"}\n'))
    shutil.copy(fixture_path("pi", "large-session.jsonl"), tmp_path / "s.jsonl")
    rows = json.loads(CliRunner().invoke(cli, ["plan", str(tmp_path), "--format", "json"]).stdout)["rows"]
    planned = {r["path"]: r["reason"] for r in rows if r["status"] == "error"}
    lines = CliRunner().invoke(cli, ["validate", str(tmp_path)]).stdout.splitlines()
    assert sorted(f"{path}: error: {reason}" for path, reason in planned.items()) == sorted(lines)
    assert planned[str(tmp_path / "empty.jsonl")] == "empty file: no session entries"
    assert planned[str(tmp_path / "packed.jsonl")].startswith("gzip-compressed")


def test_plan_reports_broken_sessions_as_error_rows(tmp_path):
    good = Builder()
    good.user("x")
    good.write(tmp_path / "good.jsonl")
    (tmp_path / "bad.jsonl").write_text('{"type":"session","version":3,"id":"s","timestamp":"t","cwd":"/"}\n[1]\n')
    result = invoke("plan", str(tmp_path), "--jobs", "1", "--format", "json", "--context-window", "1000")
    assert result.exit_code == 1  # an error row is an invalid session: exit 1, as validate and run say it
    rows = {r["path"].rsplit("/", 1)[-1]: r for r in json.loads(result.output.split("\n", 0)[0][result.output.index("["):result.output.rindex("]") + 1])}
    assert rows["bad.jsonl"]["status"] == "error"
    assert rows["bad.jsonl"]["reason"] == "line 2: line is a JSON list, not an object"
    assert rows["good.jsonl"]["status"] == "skip"


def test_validate_lines_and_exit_codes(tmp_path):
    b = Builder()
    b.user("x")
    good = b.write(tmp_path / "good.jsonl")
    result = invoke("validate", str(good))
    assert result.exit_code == 0
    bad = tmp_path / "bad.jsonl"
    shutil.copy(good, bad)
    with open(bad, "a") as handle:
        handle.write('{"type":"message","id":"zz","parentId":"nowhere","timestamp":"t","message":{"role":"user","content":"y"}}\n')
        handle.write("[1]\n")
    result = invoke("validate", str(tmp_path))
    assert result.exit_code == 1
    lines = result.output.splitlines()
    assert f"{bad}:3: warning: parentId 'nowhere' points to no entry; a root, as pi takes it (entries before it are " \
           "not in its context)" in lines  # pi's getBranch stops there
    assert f"{bad}:4: error: line is a JSON list, not an object" in lines
    assert "2 files checked: 1 valid, 1 invalid" in result.output


def test_validate_fixtures_are_valid():
    result = invoke("validate", str(fixture_path("pi")), "--jobs", "1")
    assert result.exit_code == 0, result.output
    assert result.stdout == ""  # no problem line, not even a warning
    assert result.stderr == "2 files checked: 2 valid, 0 invalid (0 errors, 0 warnings)\n"


def test_validate_missing_path_is_a_usage_error():
    result = invoke("validate", "/nonexistent/dir")
    assert result.exit_code == 2
    assert result.stdout == "" and result.stderr == "Error: path not found: /nonexistent/dir\n"


def test_show_json_context_lines():
    path = fixture_path("pi", "before-compaction.jsonl")
    result = invoke("show", str(path), "--format", "json")
    assert result.exit_code == 0
    info = json.loads(result.output)["rows"][0]
    assert info["entries"] == 1002 and len(info["compactions"]) == 2
    first, second = info["context_messages"][:2]
    assert first == {"role": "user", "source_role": "compactionSummary", "line": None}
    assert second["line"] == 552  # the latest compaction keeps from its firstKeptEntryId (line 552)


def test_show_context_prints_summary_wrapper():
    result = invoke("show", str(fixture_path("pi", "before-compaction.jsonl")), "--context")
    assert result.exit_code == 0
    assert "--- user (compactionSummary, synthesized)\nThe conversation history before this point was compacted" in result.output


@pytest.mark.parametrize("name", ["large-session.jsonl", "before-compaction.jsonl"])
def test_run_builtin_on_fixtures_then_outputs_validate_and_show_summary_first(tmp_path, name):
    src = tmp_path / "in"
    src.mkdir()
    shutil.copy(fixture_path("pi", name), src / name)
    before = (src / name).read_bytes()
    out = tmp_path / "out"
    result = invoke("run", str(src), "--output-dir", str(out), "--min-age", "0", "--force", "--jobs", "1")
    assert result.exit_code == 0, result.output
    assert (src / name).read_bytes() == before
    written = out / name
    original = [json.loads(line) for line in before.decode().splitlines()]
    lines = [json.loads(line) for line in written.read_text().splitlines()]
    # A v1 input is written as v3 (ids, parentIds, firstKeptEntryId), every original line kept in order,
    # then the new compaction appended, pointing at an entry of the file.
    assert lines[0]["version"] == 3 and lines[0]["id"] == original[0]["id"]
    for old, new in zip(original[1:], lines[1 : len(original)], strict=True):
        kept = {k: v for k, v in old.items() if k != "firstKeptEntryIndex"}
        assert {k: new[k] for k in kept} == kept and new["id"] and "parentId" in new
    appended = lines[len(original) :]
    assert [o["type"] for o in appended] == ["compaction"]
    assert appended[0]["firstKeptEntryId"] in {o.get("id") for o in lines[1 : len(original)]}
    validated = invoke("validate", str(written))
    assert validated.exit_code == 0 and validated.stdout == ""
    assert validated.stderr.startswith("1 file checked: 1 valid, 0 invalid (0 errors")
    info = json.loads(invoke("show", str(written), "--format", "json").output)["rows"][0]
    roles = [m["source_role"] for m in info["context_messages"]]
    assert roles[0] == "compactionSummary" and roles[1] != "toolResult"
    report = pl.read_parquet(str(out / ".batchcompact" / "reports" / "*.parquet"))
    assert report["status"].to_list() == ["compacted"]
    again = invoke("run", str(src), "--output-dir", str(out), "--min-age", "0", "--force", "--jobs", "1")
    assert again.exit_code == 0 and "1 skipped" in again.output


def test_validate_every_fixture_and_sample():
    from conftest import BROKEN_SAMPLES, RECORDED_FAMILIES, SAMPLES, shared_fixtures

    formats = [str(shared_fixtures() / name) for name in RECORDED_FAMILIES]  # agents/ holds other formats
    fixtures = invoke("validate", *formats, "--jobs", "1", "--errors-only")
    assert fixtures.exit_code == 0 and fixtures.stdout == ""
    assert re.search(r"^(\d+) files checked: \1 valid, 0 invalid \(0 errors", fixtures.stderr, re.M), fixtures.stderr
    result = CliRunner().invoke(cli, ["validate", str(SAMPLES), "--jobs", "1"])
    assert result.exit_code == 0 and result.stdout == ""
    assert "9 files checked: 9 valid, 0 invalid" in result.stderr
    result = CliRunner().invoke(cli, ["validate", str(BROKEN_SAMPLES), "--jobs", "1", "--errors-only"])
    assert result.exit_code == 1
    errors = [line for line in result.stdout.splitlines() if ": error: " in line]
    assert [line.split(":")[1] for line in errors] == ["19", "39"]  # 16 is invalid JSON pi skips: a warning
    assert all(line.startswith(str(BROKEN_SAMPLES / "pi" / "malformed.jsonl")) for line in errors)
    assert "1 file checked: 0 valid, 1 invalid" in result.stderr


def test_run_prints_no_progress_bars_when_stderr_is_not_a_terminal(tmp_path):
    """Cron mail stays clean: with stderr redirected, a run writes nothing there (and the summary to stdout)."""
    from conftest import SAMPLES

    src = tmp_path / "in"
    src.mkdir()
    shutil.copy(SAMPLES / "pi" / "small-fix.jsonl", src / "small-fix.jsonl")
    shutil.copy(SAMPLES / "pi" / "huge-last-turn.jsonl", src / "huge-last-turn.jsonl")
    out = subprocess.run([sys.executable, "-m", "batchcompact", "run", str(src), "--output-dir", str(tmp_path / "out"),
                          "--min-age", "0", "--jobs", "1"], capture_output=True, text=True)
    assert out.returncode == 0, out.stderr
    assert out.stderr == ""
    assert out.stdout.startswith("run ") and "1 compacted, 1 skipped" in out.stdout
