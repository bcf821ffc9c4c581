"""The command-line vocabulary: option placement, where settings come from, empty input, old spellings,
tables that fit, and a crontab-style run."""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from click.testing import CliRunner
from conftest import BROKEN_SAMPLES, SAMPLES

from batchcompact.cli import cli
from batchcompact.cli.output import format_table, middle_ellipsis, reason_kind

COMMANDS = ("validate", "show", "plan", "run", "report", "config", "batches")


def invoke(*args, env=None):
    return CliRunner().invoke(cli, [str(a) for a in args], env=env)


def _small_archive(tmp_path: Path) -> Path:
    src = tmp_path / "in"
    src.mkdir()
    shutil.copy(SAMPLES / "pi" / "branched.jsonl", src / "branched.jsonl")
    shutil.copy(SAMPLES / "pi" / "small-fix.jsonl", src / "small-fix.jsonl")
    return src


def _plan_rows(*args, env=None) -> dict[str, dict]:
    result = invoke("plan", *args, "--format", "jsonl", "--jobs", "1", env=env)
    assert result.exit_code == 0, result.output
    return {Path(r["path"]).name: r for r in map(json.loads, result.stdout.splitlines())}


# -- global options ---------------------------------------------------------------------------
@pytest.mark.parametrize("command", COMMANDS)
def test_every_command_lists_the_global_options(command):
    result = invoke(command, "--help")
    assert result.exit_code == 0
    for flag in ("-q, --quiet", "-v, --verbose", "--config FILE"):
        assert flag in result.output
    assert "Global options:" in result.output


@pytest.mark.parametrize("placement", ["before", "after"])
def test_quiet_and_config_work_before_or_after_the_command(tmp_path, placement):
    config = tmp_path / "c.toml"
    config.write_text('[validate]\nerrors-only = true\n')
    options = ["-q", "--config", str(config)]
    args = [*options, "validate", SAMPLES] if placement == "before" else ["validate", SAMPLES, *options]
    result = invoke(*args)
    assert result.exit_code == 0, result.output
    assert result.stderr == ""  # -q: no "N files checked" line


def test_run_help_groups_options_and_hides_old_spellings():
    text = invoke("run", "--help").output
    for title in ("Input and output:", "Compaction settings:", "Summarizer:", "Cost and rate limits:"):
        assert title in text
    assert "--json" not in text and "--output-dir" in text and "-o, --output FILE" in text


@pytest.mark.parametrize("command", ["show", "plan", "validate", "report", "run", "eval", "config", "batches"])
def test_format_help_names_only_the_formats_the_command_offers(command):
    """`show --help` said "csv, parquet", which show refuses."""
    text = " ".join(invoke(command, "--help").output.split())
    offered = re.search(r"--format \[([a-z|]+)\]", text).group(1).split("|")
    described = text.split("--format [", 1)[1].split("[default: table]", 1)[0]
    for name in ("csv", "parquet", "jsonl"):
        assert (name in described) == (name in offered), (name, described)


# -- precedence -------------------------------------------------------------------------------
def _settings(*args, env=None) -> dict[str, dict]:
    result = invoke(*args, "config", "plan", "--format", "json", env=env)
    assert result.exit_code == 0, result.output
    return {row["option"]: row for row in json.loads(result.stdout)["rows"]}


def test_precedence_cli_over_environment_over_file_over_agent_settings_over_default(tmp_path, monkeypatch):
    agent = tmp_path / "agent"
    agent.mkdir()
    (agent / "settings.json").write_text(json.dumps({"compaction": {"keepRecentTokens": 6000,
                                                                    "reserveTokens": 1000}}))
    monkeypatch.setenv("PI_CODING_AGENT_DIR", str(agent))
    config = tmp_path / "c.toml"
    config.write_text("jobs = 1\n[plan]\nkeep-recent-tokens = 5000\nthreshold-tokens = 50000\n")
    env = {"BATCHCOMPACT_PLAN_THRESHOLD_TOKENS": "40000"}

    shown = _settings("--config", config, env=env)
    assert shown["keep-recent-tokens"]["value"] == 5000 and shown["keep-recent-tokens"]["source"].startswith("config")
    assert shown["threshold-tokens"]["value"] == "40000"
    assert shown["threshold-tokens"]["source"] == "environment BATCHCOMPACT_PLAN_THRESHOLD_TOKENS"
    assert shown["reserve-tokens"]["value"] == 1000 and shown["reserve-tokens"]["source"].startswith("pi settings")
    assert shown["jobs"]["source"].startswith("config") and shown["jobs"]["value"] == 1
    assert shown["context-window"]["source"] == "default"

    path = SAMPLES / "pi" / "branched.jsonl"
    explicit = _plan_rows(path, "--keep-recent-tokens", "5000", "--threshold-tokens", "40000",
                          "--reserve-tokens", "1000", "--no-agent-settings")["branched.jsonl"]
    resolved = _plan_rows(path, "--config", config, env=env)["branched.jsonl"]
    assert resolved["tokens_after_est"] == explicit["tokens_after_est"]
    assert resolved["first_kept_line"] == explicit["first_kept_line"]
    # the command line beats all of them
    cli_row = _plan_rows(path, "--config", config, "--keep-recent-tokens", "3000", env=env)["branched.jsonl"]
    assert cli_row["tokens_after_est"] < resolved["tokens_after_est"]
    # the agent's settings beat the defaults for pi sessions when nothing else sets them
    agent_only = _plan_rows(path)["branched.jsonl"]
    assert agent_only["tokens_after_est"] == _plan_rows(path, "--keep-recent-tokens", "6000",
                                                        "--reserve-tokens", "1000")["branched.jsonl"][
        "tokens_after_est"]


def test_generic_environment_variable_and_config_variable(tmp_path):
    config = tmp_path / "elsewhere.toml"
    config.write_text("[plan]\nforce = true\n")
    env = {"BATCHCOMPACT_CONFIG": str(config), "BATCHCOMPACT_KEEP_RECENT_TOKENS": "2500"}
    shown = _settings(env=env)
    assert shown["force"]["value"] is True and shown["force"]["source"] == f"config {config}"
    assert shown["keep-recent-tokens"]["source"] == "environment BATCHCOMPACT_KEEP_RECENT_TOKENS"
    rows = _plan_rows(SAMPLES / "pi" / "small-fix.jsonl", env=env)
    assert rows["small-fix.jsonl"]["status"] == "compact"  # force from the file


def test_project_pi_settings_under_the_session_cwd_disable_compaction(tmp_path):
    project = tmp_path / "project"
    (project / ".pi").mkdir(parents=True)
    (project / ".pi" / "settings.json").write_text('{"compaction": {"enabled": false}}')
    source = (SAMPLES / "pi" / "branched.jsonl").read_text().split("\n", 1)
    header = json.loads(source[0])
    header["cwd"] = str(project)
    session = tmp_path / "s.jsonl"
    session.write_text(json.dumps(header) + "\n" + source[1])
    row = _plan_rows(session)["s.jsonl"]
    assert row["status"] == "skip" and "compaction disabled in pi settings" in row["reason"]
    assert _plan_rows(session, "--force")["s.jsonl"]["status"] == "compact"
    assert _plan_rows(session, "--no-agent-settings")["s.jsonl"]["status"] == "compact"


def test_presets_set_documented_defaults_below_the_config_file(tmp_path):
    shown = _settings("--config", _write(tmp_path / "c.toml", "[plan]\npreset = 'flue'\n"))
    assert shown["keep-recent-tokens"]["value"] == 8000 and shown["keep-recent-tokens"]["source"] == "preset flue"
    shown = _settings("--config", _write(tmp_path / "d.toml", "[plan]\npreset = 'codex'\nthreshold-percent = 80\n"))
    assert shown["threshold-percent"]["value"] == 80 and shown["threshold-percent"]["source"].startswith("config")
    rows = _plan_rows(SAMPLES / "pi" / "small-fix.jsonl", "--preset", "codex")
    assert rows["small-fix.jsonl"]["status"] == "skip"


def _write(path: Path, text: str) -> Path:
    path.write_text(text)
    return path


def test_config_file_errors_are_usage_errors(tmp_path):
    result = invoke("--config", tmp_path / "missing.toml", "plan", SAMPLES)
    assert result.exit_code == 2 and "config file not found" in result.output
    bad = _write(tmp_path / "bad.toml", "[plan\n")
    result = invoke("plan", SAMPLES, "--config", bad)
    assert result.exit_code == 2 and "invalid TOML" in result.output and "line 1" in result.output
    typo = _write(tmp_path / "typo.toml", "[plan]\nkeep-recnt-tokens = 1\n")
    result = invoke("validate", SAMPLES, "--config", typo)
    assert result.exit_code == 0  # a [plan] typo does not concern validate
    result = invoke("plan", SAMPLES / "pi" / "small-fix.jsonl", "--config", typo)
    assert "[plan] has no option 'keep-recnt-tokens'" in result.stderr


def test_a_bad_value_from_the_config_file_or_the_environment_says_where_it_came_from(tmp_path):
    """A cron job's command line does not show a value its config file or environment gave: a bad one
    names its source (it said only "Invalid value for '--jobs'"). Durations, sizes and token limits are
    checked while the options are parsed, so they name theirs too."""
    config = _write(tmp_path / "c.toml", 'jobs = "two"\n[run]\nmin_age = "soon"\n')
    result = invoke("--config", config, "plan", SAMPLES)
    assert result.exit_code == 2
    assert f"Invalid value for '--jobs': 'two' is not a whole number (from config {config})" in result.output
    result = invoke("--config", config, "run", SAMPLES, "--jobs", "1", "--output-dir", tmp_path / "out")
    assert result.exit_code == 2 and not (tmp_path / "out").exists()
    assert f"'--min-age': 'soon' is not a duration like 30s, 10m, 2h or 1d (from config {config})" in result.output
    result = invoke("report", SAMPLES, env={"BATCHCOMPACT_CACHE_ABOVE": "huge"})
    assert result.exit_code == 2
    assert "'--cache-above': 'huge': give a size such as 0, 512MB or 2GB (from environment " \
           "BATCHCOMPACT_CACHE_ABOVE)" in result.output
    result = invoke("plan", SAMPLES, "--jobs", "x", env={"BATCHCOMPACT_JOBS": "abc"})  # the command line's own
    assert result.exit_code == 2 and "'x' is not a whole number" in result.output
    assert "(from" not in result.output
    result = invoke("report", SAMPLES, "--by", "block", "--token-limit", "lots")
    assert result.exit_code == 2 and "Invalid value for '--token-limit': 'lots'" in result.output


# -- empty input ------------------------------------------------------------------------------
@pytest.mark.parametrize("command", ["validate", "plan", "run", "report"])
def test_a_folder_without_sessions_exits_2(tmp_path, command):
    empty = tmp_path / "empty"
    empty.mkdir()
    (empty / "notes.txt").write_text("not a session")
    extra = ["--output-dir", tmp_path / "out"] if command == "run" else []
    result = invoke(command, empty, *extra)
    assert result.exit_code == 2, result.output
    assert f"no session files found under {empty}" in result.output
    assert not (tmp_path / "out").exists()  # run wrote no report


@pytest.mark.parametrize("command", ["validate", "plan", "run", "eval", "report"])
def test_a_path_without_sessions_among_others_exits_2_naming_it(tmp_path, command):
    """`validate sample_sessions bad/nosessions` exited 0 without a word: each PATH is checked on its own,
    before any work (a crontab's typo must not pass because the line's other PATH was right)."""
    empty = tmp_path / "empty"
    empty.mkdir()
    (empty / "notes.txt").write_text("not a session")
    extra = ["--output-dir", tmp_path / "out", "--min-age", "0"] if command == "run" else []
    for bad, said in ((empty, f"no session files found under {empty}"),
                      (tmp_path / "nope", f"path not found: {tmp_path / 'nope'}"),
                      (tmp_path / "*.jsonl", f"no session files found under '{tmp_path / '*.jsonl'}' (no file matches)")):
        if command == "report" and bad.name != "empty":
            continue  # report's PATHS are checked by click (they must exist; no globs)
        result = invoke(command, SAMPLES / "pi", bad, *extra)
        assert result.exit_code == 2, result.output
        assert result.stdout == "" and result.stderr.splitlines()[-1] == f"Error: {said}"
        assert not (tmp_path / "out").exists()  # run did no work and wrote no report


def test_show_of_a_missing_file_exits_2(tmp_path):
    result = invoke("show", tmp_path / "nope.jsonl")
    assert result.exit_code == 2 and result.stdout == ""
    assert result.stderr == f"Error: path not found: {tmp_path / 'nope.jsonl'}\n"


@pytest.mark.parametrize("command", ["validate", "plan", "run", "eval", "report", "show"])
def test_a_usage_error_is_one_line_on_every_command(tmp_path, command):
    """`report`/`show` gave click's three-line usage block for a missing path, the others one `Error:` line."""
    extra = ["--output-dir", tmp_path / "out"] if command == "run" else []
    result = invoke(command, tmp_path / "nope.jsonl", *extra)
    assert result.exit_code == 2 and result.stdout == ""
    assert result.stderr == f"Error: path not found: {tmp_path / 'nope.jsonl'}\n"
    result = invoke(command, SAMPLES, "--no-such-option")
    assert result.exit_code == 2 and result.stderr.startswith("Error: No such option '--no-such-option'")
    assert result.stderr.count("\n") == 1, result.stderr
    result = invoke("--no-such-option", command)
    assert result.exit_code == 2 and result.stderr == "Error: No such option '--no-such-option'.\n"


def test_quoted_tilde_and_variables_are_expanded(tmp_path):
    home = tmp_path / "home"
    (home / "sessions").mkdir(parents=True)
    shutil.copy(SAMPLES / "pi" / "small-fix.jsonl", home / "sessions" / "a.jsonl")
    env = {"HOME": str(home), "ARCHIVE": str(home / "sessions")}
    for pattern in ("~/sessions/**/*.jsonl", "$ARCHIVE", "${ARCHIVE}/a.jsonl"):
        result = invoke("validate", pattern, env=env)
        assert result.exit_code == 0, (pattern, result.output)
        assert "1 file checked: 1 valid" in result.stderr
    session_id = "932dd87f-f255-4702-8fff-b7e98d47d103"  # small-fix.jsonl's
    shown = invoke("show", "~/sessions/a.jsonl", "--format", "json", env=env)
    assert shown.exit_code == 0, shown.output
    assert json.loads(shown.stdout)["rows"][0]["path"] == str(home / "sessions" / "a.jsonl")
    reported = invoke("report", "~/sessions", "--by", "session", "--format", "json", env=env)
    assert reported.exit_code == 0, reported.output
    assert [r["session_id"] for r in json.loads(reported.stdout)["rows"]] == [session_id]


# -- one output vocabulary ----------------------------------------------------------------------
@pytest.mark.parametrize("command", ["validate", "plan", "report"])
def test_json_jsonl_and_csv_carry_the_same_rows(tmp_path, command):
    path = SAMPLES / "pi"
    doc = json.loads(invoke(command, path, "--format", "json").stdout)
    lines = [json.loads(line) for line in invoke(command, path, "--format", "jsonl").stdout.splitlines()]
    assert isinstance(doc["rows"], list) and doc["rows"] == lines and lines
    out = tmp_path / "rows.csv"
    assert invoke(command, path, "--format", "csv", "-o", out).exit_code == 0
    assert len(out.read_text().strip().splitlines()) == len(lines) + 1


def test_run_rows_go_to_a_file_and_the_folder_is_output_dir(tmp_path):
    src = _small_archive(tmp_path)
    rows_file = tmp_path / "rows.jsonl"
    result = invoke("run", src, "--output-dir", tmp_path / "out", "--min-age", "0", "--format", "jsonl",
                    "-o", rows_file)
    assert result.exit_code == 0, result.output
    rows = [json.loads(line) for line in rows_file.read_text().splitlines()]
    assert {r["status"] for r in rows} == {"compacted", "skipped"}
    assert (tmp_path / "out" / "branched.jsonl").is_file()
    parquet = tmp_path / "rows.parquet"
    again = invoke("run", src, "--output-dir", tmp_path / "out", "--min-age", "0", "--format", "parquet",
                   "-o", parquet)
    assert again.exit_code == 0
    import polars as pl

    assert pl.read_parquet(parquet).height == 2


@pytest.mark.parametrize(
    ("args", "warning"),
    [
        (("run", "{src}", "-o", "{out}", "--min-age", "0"), "run -o DIR is deprecated; use --output-dir DIR"),
        (("run", "{src}", "--output-dir", "{out}", "--min-age", "0", "--json"),
         "--json is deprecated; use --format json"),
        (("plan", "{src}", "--json"), "--json is deprecated; use --format json"),
        (("validate", "{src}", "--format", "text"), "--format text is deprecated; use --format table"),
        (("show", "{src}/small-fix.jsonl", "--format", "text"), "--format text is deprecated"),
    ],
)
def test_old_spellings_still_work_with_a_deprecation_warning(tmp_path, args, warning):
    src = _small_archive(tmp_path)
    argv = [a.format(src=src, out=tmp_path / "out") for a in args]
    result = invoke(*argv)
    assert result.exit_code == 0, result.output
    assert f"warning: {warning}" in result.stderr
    if "--json" in argv:
        assert isinstance(json.loads(result.stdout)["rows"], list)
    if argv[0] == "run":
        assert (tmp_path / "out" / "branched.jsonl").is_file()


# -- run summary ------------------------------------------------------------------------------
def test_summary_counts_skips_by_reason(tmp_path):
    src = _small_archive(tmp_path)
    result = invoke("run", src, "--output-dir", tmp_path / "out")
    assert result.exit_code == 0
    assert "2 skipped: 2 modified within --min-age 10m (live?)" in result.output
    result = invoke("run", src, "--output-dir", tmp_path / "out", "--min-age", "0")
    assert "1 skipped: 1 below threshold" in result.output


def test_known_invalid_files_fail_once_then_are_reported_without_failing(tmp_path):
    src = _small_archive(tmp_path)
    shutil.copy(BROKEN_SAMPLES / "pi" / "malformed.jsonl", src / "malformed.jsonl")
    args = ("run", src, "--output-dir", tmp_path / "out", "--min-age", "0")
    first = invoke(*args)
    assert first.exit_code == 1
    assert "malformed.jsonl: line 19: line is a JSON list, not an object" in first.output
    second = invoke(*args, "--format", "json")
    assert second.exit_code == 0, second.output
    (row,) = [r for r in json.loads(second.stdout)["rows"] if r["input_path"].endswith("malformed.jsonl")]
    run_id = json.loads(invoke(*args, "--format", "json").stdout)["run_id"]
    assert row["status"] == "known_invalid" and row["reason"].startswith("known invalid since ")
    assert run_id not in row["reason"]  # "since" names the first run that saw it
    strict = invoke(*args, "--strict", "--format", "json")
    assert strict.exit_code == 1
    (row,) = [r for r in json.loads(strict.stdout)["rows"] if r["input_path"].endswith("malformed.jsonl")]
    assert row["status"] == "failed" and "line 19: line is a JSON list" in row["reason"], row
    with (src / "malformed.jsonl").open("a") as handle:  # changed bytes: reported (and failing) again
        handle.write("\n{broken\n")
    changed = invoke(*args, "--format", "json")
    assert changed.exit_code == 1
    (row,) = [r for r in json.loads(changed.stdout)["rows"] if r["input_path"].endswith("malformed.jsonl")]
    assert row["status"] == "failed" and row["reason"].startswith("line 19: line is a JSON list")


# -- tables -----------------------------------------------------------------------------------
def test_tables_fit_the_width_with_an_ellipsis_in_the_middle_of_paths():
    rows = [{"path": "/home/me/projects/webapp/sessions/2026/10/a-very-long-session-name.jsonl",
             "status": "compact", "model": "claude-sonnet-4-5", "tokens": 123456, "reason": "split turn"}]
    columns = [("path", "session"), ("status", "status"), ("model", "model"), ("tokens", "tokens"),
               ("reason", "reason")]
    text = format_table(rows, columns, width=60)
    assert all(len(line) <= 60 for line in text.splitlines())
    assert "/home/" in text and "name.jsonl" in text and "…" in text
    assert "\x1b[" not in text
    assert "\x1b[" in format_table(rows, columns, color=True)
    assert middle_ellipsis("abcdefghij", 5) in ("ab…ij", "a…hij")


def test_plan_table_follows_columns_and_no_color(tmp_path):
    result = invoke("plan", SAMPLES, env={"COLUMNS": "70"})
    table = result.stdout.split("\n\n")[0]
    assert all(len(line) <= 70 for line in table.splitlines())
    assert "session" in table and "status" in table and "reason" in table
    assert "\x1b[" not in result.stdout  # not a terminal: no colour


# -- cron -------------------------------------------------------------------------------------
@pytest.mark.slow
def test_crontab_style_run_is_quiet_and_takes_its_settings_from_the_config_file(tmp_path):
    src = _small_archive(tmp_path)
    out = tmp_path / "compacted"
    config = tmp_path / "config.toml"
    config.write_text(f'[run]\noutput-dir = "{out}"\nmin-age = "0"\nmax-cost = 1.0\n')
    env = {k: v for k, v in os.environ.items() if not k.startswith("BATCHCOMPACT_")}
    env.update(NO_COLOR="1", TERM="dumb")
    command = [sys.executable, "-m", "batchcompact", "run", str(src), "-q", "--config", str(config)]
    done = subprocess.run(command, stdin=subprocess.DEVNULL, capture_output=True, text=True, env=env, timeout=120)
    assert done.returncode == 0, done.stderr
    assert done.stdout == "" and done.stderr == ""
    assert (out / "branched.jsonl").is_file() and list((out / ".batchcompact" / "reports").glob("*.parquet"))
    # a broken file: mail once (stderr, exit 1), then silence while it stays the same
    shutil.copy(BROKEN_SAMPLES / "pi" / "malformed.jsonl", src / "malformed.jsonl")
    first = subprocess.run(command, stdin=subprocess.DEVNULL, capture_output=True, text=True, env=env, timeout=120)
    assert first.returncode == 1 and first.stdout == ""
    assert re.search(r"malformed\.jsonl: line 19: line is a JSON list", first.stderr)
    again = subprocess.run(command, stdin=subprocess.DEVNULL, capture_output=True, text=True, env=env, timeout=120)
    assert again.returncode == 0 and again.stdout == "" and again.stderr == ""


@pytest.mark.slow
def test_the_readme_crontab_line_runs_quietly_with_the_readme_config_file(tmp_path):
    """The README's cron recipe, as written: its config file in ~/.config, its crontab command via sh."""
    readme = (Path(__file__).resolve().parent.parent / "README.md").read_text()
    toml = re.search(r"```toml\n(# ~/.config/batchcompact/config.toml\n.*?)```", readme, re.S).group(1)
    line = next(x for x in re.search(r"```crontab\n(.*?)```", readme, re.S).group(1).splitlines()
                if x and not x.startswith("#"))
    command = line.split(None, 5)[5].replace("$HOME/.venv/bin/batchcompact", f"{sys.executable} -m batchcompact")
    home = tmp_path / "home"
    (home / ".config" / "batchcompact").mkdir(parents=True)
    (home / ".config" / "batchcompact" / "config.toml").write_text(toml)
    sessions = home / ".pi" / "agent" / "sessions" / "--home-user-webapp--"
    sessions.mkdir(parents=True)
    for name in ("branched.jsonl", "small-fix.jsonl"):
        shutil.copy(SAMPLES / "pi" / name, sessions / name)
        os.utime(sessions / name, (1_700_000_000, 1_700_000_000))  # older than the file's min-age
    (home / ".local" / "state" / "batchcompact").mkdir(parents=True)  # the README's one-time mkdir
    env = {k: v for k, v in os.environ.items()
           if not k.startswith("BATCHCOMPACT_") and k not in ("XDG_CONFIG_HOME", "XDG_STATE_HOME")}
    # The README's model needs a key and the network; the environment beats the file (that is the point).
    env.update(HOME=str(home), BATCHCOMPACT_RUN_MODEL="builtin", PI_CODING_AGENT_DIR=str(home / ".pi" / "agent"))
    done = subprocess.run(["/bin/sh", "-c", command], stdin=subprocess.DEVNULL, capture_output=True, text=True,
                          env=env, timeout=120)
    assert done.returncode == 0 and done.stdout == "" and done.stderr == ""
    assert (home / ".local" / "state" / "batchcompact" / "cron.log").read_text() == ""
    compacted = home / "archive" / "compacted"  # output-dir = "~/archive/compacted" from the file
    assert (compacted / "--home-user-webapp--" / "branched.jsonl").is_file()
    assert list((compacted / ".batchcompact" / "reports").glob("compactions-*.parquet"))


def test_run_dry_run_keeps_the_command_line_above_pi_settings(tmp_path, monkeypatch):
    agent = tmp_path / "agent"
    agent.mkdir()
    (agent / "settings.json").write_text('{"compaction": {"keepRecentTokens": 3000}}')
    monkeypatch.setenv("PI_CODING_AGENT_DIR", str(agent))
    path = SAMPLES / "pi" / "branched.jsonl"

    def after(*args):
        result = invoke("run", path, "--dry-run", "--format", "jsonl", "--jobs", "1", *args)
        assert result.exit_code == 0, result.output
        return json.loads(result.stdout.splitlines()[0])["tokens_after_est"]

    from_pi = after()
    assert from_pi == after("--keep-recent-tokens", "3000", "--no-agent-settings")
    assert after("--keep-recent-tokens", "20000") == after("--no-agent-settings") != from_pi


@pytest.mark.parametrize("reason,kind", [
    ("gave up after 6 attempts: cannot reach http://127.0.0.1:8000/v1: connection refused",
     "gave up after N attempts: cannot reach http://127.0.0.1:8000/v1: connection refused"),
    ("gave up after 2 attempts: cannot reach 10.0.0.5:8080 (timeout after 600s)",
     "gave up after N attempts: cannot reach 10.0.0.5:8080"),
    ("gave up after 3 attempts: openai/m (HTTP 503): Service unavailable",
     "gave up after N attempts: openai/m (HTTP 503): Service unavailable"),
    ("write failed: [Errno 28] No space left on device", "write failed: [Errno 28] No space left on device"),
    ("below threshold (177,657 <= 183,616 tokens)", "below threshold"),
    ("a.jsonl:12: error: invalid JSON at byte 1234", "invalid JSON at byte N"),
    ("gpt-4o-mini failed 3 times", "gpt-4o-mini failed N times"),
])
def test_a_reasons_kind_drops_figures_and_keeps_addresses_and_codes(reason, kind):
    """Grouped reasons replaced every digit: `cannot reach http://N:N/v1`, `HTTP N`."""
    assert reason_kind(reason) == kind
