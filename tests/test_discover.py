"""No-argument discovery: every agent's session folders under a fake HOME, and the commands that use it."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest
from click.testing import CliRunner

from batchcompact.cli import cli
from batchcompact.discover import discover_sources

ENV_VARS = (
    "CLAUDE_CONFIG_DIR",
    "CODEX_HOME",
    "PI_CODING_AGENT_DIR",
    "PI_AGENT_DIR",
    "ATOMIC_CODING_AGENT_DIR",
    "INDUSAGI_CODING_AGENT_DIR",
    "XDG_CONFIG_HOME",
)


@pytest.fixture
def home(tmp_path, monkeypatch, fixtures_dir) -> Path:
    """A HOME holding every agent's sessions, copied from the shared fixtures."""
    home = tmp_path / "home"
    spotter = fixtures_dir / "claude" / "projects" / "-home-USER-projects-spotter"
    claude = home / ".claude" / "projects" / "-home-USER-projects-spotter"
    claude.mkdir(parents=True)
    shutil.copy(spotter / "short.jsonl", claude / "short.jsonl")
    xdg_claude = home / ".config" / "claude" / "projects" / "sample-project"
    xdg_claude.mkdir(parents=True)
    shutil.copy(
        fixtures_dir / "claude" / "projects" / "sample-project" / "5c0375b4-57a5-4f26-b12d-d022ee4e51b7.jsonl",
        xdg_claude,
    )
    rollouts = sorted((fixtures_dir / "codex" / "sessions").rglob("*.jsonl"))
    day = home / ".codex" / "sessions" / "2026" / "02" / "23"
    day.mkdir(parents=True)
    shutil.copy(rollouts[0], day)
    archived = home / ".codex" / "archived_sessions"
    archived.mkdir(parents=True)
    shutil.copy(rollouts[-1], archived)
    for agent_dir in (".pi", ".atomic", ".indusagi", ".omp"):
        sessions = home / agent_dir / "agent" / "sessions" / "--work-app--"
        sessions.mkdir(parents=True)
        shutil.copy(fixtures_dir / "pi" / "large-session.jsonl", sessions / f"{agent_dir[1:]}.jsonl")
    for name in ENV_VARS:
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv("HOME", str(home))
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "cache"))
    return home


def test_every_agent_folder_is_found_under_home(home):
    found = [(s.agent, s.path.relative_to(home).as_posix(), s.origin) for s in discover_sources()]
    assert found == [
        ("pi", ".pi/agent/sessions", "default"),
        ("atomic", ".atomic/agent/sessions", "default"),
        ("indusagi", ".indusagi/agent/sessions", "default"),
        ("oh-my-pi", ".omp/agent/sessions", "default"),
        ("claude", ".config/claude/projects", "default"),
        ("claude", ".claude/projects", "default"),
        ("codex", ".codex/sessions", "default"),
        ("codex", ".codex/archived_sessions", "default"),
    ]


def test_environment_overrides(home, tmp_path, monkeypatch):
    other = tmp_path / "other-claude"
    (other / "projects").mkdir(parents=True)
    bare = tmp_path / "bare" / "projects"
    bare.mkdir(parents=True)
    monkeypatch.setenv("CLAUDE_CONFIG_DIR", f"{other}, {bare},{tmp_path / 'missing'}")
    codex = tmp_path / "codex-home"
    (codex / "sessions").mkdir(parents=True)
    monkeypatch.setenv("CODEX_HOME", str(codex))
    pi_dir = tmp_path / "pi-agent"
    (pi_dir / "sessions").mkdir(parents=True)
    monkeypatch.setenv("PI_CODING_AGENT_DIR", str(pi_dir))
    atomic = tmp_path / "atomic-agent"
    (atomic / "sessions").mkdir(parents=True)
    monkeypatch.setenv("ATOMIC_CODING_AGENT_DIR", str(atomic))
    found = {(s.agent, s.path, s.origin) for s in discover_sources()}
    assert ("claude", other / "projects", "CLAUDE_CONFIG_DIR") in found
    assert ("claude", bare, "CLAUDE_CONFIG_DIR") in found
    # $CLAUDE_CONFIG_DIR replaces the default Claude folders; $CODEX_HOME replaces ~/.codex
    assert not any(agent == "claude" and origin == "default" for agent, _, origin in found)
    assert {p for a, p, _ in found if a == "codex"} == {codex / "sessions"}
    assert ("pi", pi_dir / "sessions", "PI_CODING_AGENT_DIR") in found
    assert ("atomic", atomic / "sessions", "ATOMIC_CODING_AGENT_DIR") in found
    assert ("indusagi", home / ".indusagi" / "agent" / "sessions", "default") in found


def test_a_folder_named_twice_is_read_once(home, monkeypatch):
    monkeypatch.setenv("PI_AGENT_DIR", str(home / ".pi" / "agent" / "sessions"))
    assert [s.agent for s in discover_sources()].count("pi") == 1


def test_report_without_arguments_reads_every_agent(home):
    result = CliRunner().invoke(cli, ["report", "--by", "session", "--format", "json"])
    assert result.exit_code == 0, result.output
    doc = json.loads(result.stdout)
    sources = {(s["agent"], Path(s["path"]).relative_to(home).as_posix()) for s in doc["sources"]}
    assert len(sources) == 8
    for line in (".claude/projects", ".codex/archived_sessions", ".atomic/agent/sessions", ".omp/agent/sessions"):
        assert any(line in text for text in result.stderr.splitlines() if text.startswith("reading "))
    by_source = {}
    for row in doc["rows"]:
        by_source[row["agent"]] = by_source.get(row["agent"], 0) + 1
    # 2 Claude sessions, 2 Codex rollouts, one pi session file per pi-family agent (same session id)
    assert by_source["claude"] == 2 and by_source["codex"] == 2 and by_source["pi"] == 1
    assert "8 files: 8 parsed" in result.stderr


def test_validate_and_plan_without_arguments_use_the_same_discovery(home):
    validate = CliRunner().invoke(cli, ["validate", "--format", "json"])
    assert validate.exit_code in (0, 1), validate.output
    checked = {Path(row["path"]).relative_to(home).parts[0] for row in json.loads(validate.stdout)["rows"]}
    assert checked == {".claude", ".config", ".codex", ".pi", ".atomic", ".indusagi", ".omp"}
    plan = CliRunner().invoke(cli, ["plan", "--format", "json"])
    assert plan.exit_code == 0, plan.output
    assert "reading atomic:" in plan.stderr
    planned = {Path(row["path"]).relative_to(home).as_posix() for row in json.loads(plan.stdout)["rows"]}
    validated = {Path(row["path"]).relative_to(home).as_posix() for row in json.loads(validate.stdout)["rows"]}
    assert planned == validated  # the same files, found the same way


def test_nothing_found_is_a_usage_error_naming_the_places(tmp_path, monkeypatch):
    for name in ENV_VARS:
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv("HOME", str(tmp_path))
    result = CliRunner().invoke(cli, ["report"])
    assert result.exit_code == 2
    [line] = result.stderr.splitlines()  # every agent's places made one line of ~3,000 characters
    assert len(line) < 300 and "~/.codex/sessions" in line and line.endswith("-v lists them); pass the folders to read")
    listed = CliRunner().invoke(cli, ["report", "-v"])
    assert listed.exit_code == 2
    assert "~/.claude/projects" in listed.stderr and "$CODEX_HOME" in listed.stderr
    assert "INFO batchcompact.discover: looked in claude: " in listed.stderr


def test_nothing_found_for_the_named_agents_names_only_their_places(tmp_path, monkeypatch):
    """`--agent opencode --agent kilo` with no data listed every agent's places (~2,000 characters)."""
    for name in (*ENV_VARS, "XDG_DATA_HOME", "OPENCODE_DATA_DIR", "KILO_DATA_DIR"):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv("HOME", str(tmp_path))
    result = CliRunner().invoke(cli, ["report", "--agent", "opencode", "--agent", "kilo"])
    assert result.exit_code == 2 and result.stdout == ""
    assert result.stderr.splitlines() == [
        "Error: report: no PATHS given and no opencode or kilo sessions found in their usual places "
        "($XDG_DATA_HOME/opencode/storage/message, ~/.local/share/opencode/storage/message, $OPENCODE_DATA_DIR, "
        "$KILO_DATA_DIR); pass the folders to read"]


@pytest.mark.parametrize("args", [[], ["--by", "block"], ["--format", "jsonl"], ["--format", "json", "--no-cache"],
                                  ["--by", "model", "--cache-above", "0"]])
def test_an_empty_agent_folder_is_a_report_of_zero(tmp_path, monkeypatch, args):
    """Only an empty ~/.claude/projects (Claude Code installed, nothing kept yet): a report of zero, exit 0;
    it was `no session files found`, exit 2. A PATH given that holds nothing stays a usage error."""
    for name in ENV_VARS:
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv("HOME", str(tmp_path / "home"))
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "cache"))
    projects = tmp_path / "home" / ".claude" / "projects"
    projects.mkdir(parents=True)
    result = CliRunner().invoke(cli, ["report", *args])
    assert result.exit_code == 0, result.output
    assert result.stderr.splitlines() == [f"reading claude: {projects}", "0 files: 0 parsed, 0 from cache"]
    if "json" in args:
        assert json.loads(result.stdout)["totals"]["requests"] == 0
    elif "jsonl" not in args:
        assert result.stdout.splitlines()[-1].split()[:2] == ["TOTAL", "0"]
    given = CliRunner().invoke(cli, ["report", str(projects), *args])
    assert given.exit_code == 2 and given.stderr == f"Error: no session files found under {projects}\n"


@pytest.mark.parametrize("command", ["plan", "run", "validate", "eval"])
def test_an_empty_path_is_a_usage_error_not_the_current_folder(tmp_path, command):
    """`Path("")` is the current folder: `batchcompact run "$ARCHIVE"` with the variable unset in a cron
    script must not plan or compact whatever sits where the script runs."""
    import subprocess
    import sys

    shutil.copy(Path(__file__).resolve().parent.parent / "sample_sessions" / "pi" / "small-fix.jsonl", tmp_path)
    before = sorted(p.name for p in tmp_path.iterdir())
    extra = ["--output-dir", "out", "--min-age", "0"] if command == "run" else []
    for args in ([""], [".", ""]):
        done = subprocess.run([sys.executable, "-m", "batchcompact", command, *args, *extra], cwd=tmp_path,
                              capture_output=True, text=True, timeout=120)
        assert done.returncode == 2, done.stderr
        assert done.stderr.strip().splitlines() == [
            f"Error: {command}: a PATH is empty (an unset shell variable?); to mean the current folder, pass '.'"]
        assert done.stdout == ""
        assert sorted(p.name for p in tmp_path.iterdir()) == before  # nothing written


def test_a_folder_that_cannot_be_listed_is_named_and_the_walk_goes_on(tmp_path, monkeypatch, caplog):
    """Both walks (the sessions' and the report's) pass over a folder they cannot list with a warning
    naming it and why, and find every other file (as root, permissions cannot deny it: the listing fails
    by injection)."""
    import logging
    import os

    from code_helpers import source_files

    from batchcompact.formats import scan
    from batchcompact.formats.scan import iter_session_files

    sample = Path(__file__).resolve().parent.parent / "sample_sessions" / "pi" / "small-fix.jsonl"
    for relative in ("a.jsonl", "locked/b.jsonl", "z/c.jsonl"):
        (tmp_path / relative).parent.mkdir(parents=True, exist_ok=True)
        shutil.copyfile(sample, tmp_path / relative)
    real_scandir = os.scandir

    def scandir(path="."):
        if str(path).endswith("locked"):
            raise PermissionError(13, "Permission denied", str(path))
        return real_scandir(path)

    monkeypatch.setattr(os, "scandir", scandir)
    for walk in (lambda: [item.path for item in iter_session_files([tmp_path])],
                 lambda: source_files([tmp_path])):
        caplog.clear()
        monkeypatch.setattr(scan, "_WARNED", set())  # each walk says it (a process says it once)
        with caplog.at_level(logging.WARNING):
            found = [Path(p).relative_to(tmp_path).as_posix() for p in walk()]
        assert found == ["a.jsonl", "z/c.jsonl"]
        assert [r.getMessage() for r in caplog.records] == [
            f"{tmp_path / 'locked'}: skipped, cannot list this folder: Permission denied"]


@pytest.mark.parametrize("command", ["plan", "report"])
def test_a_folder_too_long_to_list_is_named_once_from_the_cli(tmp_path, command):
    """A real folder the walk cannot list even as root: its path is longer than the system takes (made
    one level at a time from the folder above). One warning line names it, even from `report`, which
    walks the paths twice (the stored result's key, then the report); the session beside it is read."""
    import os
    import subprocess
    import sys

    archive = tmp_path / "w"
    archive.mkdir()
    shutil.copy(Path(__file__).resolve().parent.parent / "sample_sessions" / "pi" / "small-fix.jsonl", archive)
    fd = os.open(archive, os.O_RDONLY)
    for _ in range(18):  # 18 x 251 bytes: past PATH_MAX (4096)
        os.mkdir("x" * 250, dir_fd=fd)
        inner = os.open("x" * 250, os.O_RDONLY, dir_fd=fd)
        os.close(fd)
        fd = inner
    os.close(fd)
    extra = ["--cache-dir", str(tmp_path / "cache")] if command == "report" else []
    done = subprocess.run([sys.executable, "-m", "batchcompact", command, str(archive), "--format", "json", *extra],
                          capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr[-300:]
    warnings = [line for line in done.stderr.splitlines() if line.startswith("warning: ")]
    assert len(warnings) == 1 and warnings[0].endswith(": skipped, cannot list this folder: File name too long")
    rows = json.loads(done.stdout)
    assert (len(rows["rows"]) == 1) if command == "plan" else rows["totals"]["requests"] > 0
