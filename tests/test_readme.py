"""The README's examples: the "First ten minutes" section runs as written, and no example anywhere in the
user docs uses a deprecated spelling (each prints a warning; `run -o DIR` is `--output-dir DIR` now)."""

from __future__ import annotations

import os
import re
import shlex
import shutil
import subprocess
import sys
from pathlib import Path

from conftest import REPO, SAMPLES

README = REPO / "README.md"
USER_DOCS = [README, *sorted((REPO / "docs").glob("*.md"))]


def _section(text: str, heading: str) -> str:
    start = text.index(f"\n## {heading}\n")
    end = text.find("\n## ", start + 1)
    return text[start : end if end >= 0 else None]


def _blocks(text: str, language: str) -> list[str]:
    return re.findall(rf"```{language}\n(.*?)```", text, flags=re.S)


def _commands(block: str) -> list[str]:
    """The shell commands of a block: continuation lines joined, comments and blank lines left out."""
    joined = block.replace("\\\n", " ")
    return [line.strip() for line in joined.splitlines() if line.strip() and not line.lstrip().startswith("#")]


def test_first_ten_minutes_runs_as_written(tmp_path):
    """From a copy of the repository's root (the samples), each command in order: exit 0, no traceback."""
    section = _section(README.read_text(), "First ten minutes")
    commands = [c for block in _blocks(section, "sh") for c in _commands(block)]
    scripts = _blocks(section, "python")
    assert len(commands) >= 5 and scripts
    shutil.copytree(SAMPLES, tmp_path / "sample_sessions")
    env = {**os.environ, "PATH": f"{Path(sys.executable).parent}{os.pathsep}{os.environ.get('PATH', '')}",
           "HOME": str(tmp_path / "home"), "XDG_CACHE_HOME": str(tmp_path / "cache"), "NO_COLOR": "1"}
    env.pop("BATCHCOMPACT_MODEL", None)
    for command in commands:
        done = subprocess.run(["sh", "-c", f"set -e; {command}"], cwd=tmp_path, env=env, capture_output=True,
                              text=True, timeout=300)
        assert done.returncode == 0, f"{command}\n{done.stderr[-2000:]}"
        assert "Traceback" not in done.stderr and "warning" not in done.stderr.lower(), command
        assert done.stdout.strip() or " -o " in command, command  # results, unless written to a file
    for script in scripts:
        done = subprocess.run([sys.executable, "-c", script], cwd=tmp_path, env=env, capture_output=True, text=True,
                              timeout=300)
        assert done.returncode == 0, done.stderr[-2000:]
        assert "cost_usd" in done.stdout
    shown = subprocess.run(["sh", "-c", next(c for c in commands if c.startswith("batchcompact show"))],
                           cwd=tmp_path, env=env, capture_output=True, text=True, timeout=300)
    assert "--- user (compactionSummary" in shown.stdout  # the section's promise: our summary first


DEPRECATED = [
    (re.compile(r"(^|\s)--json(\s|$)"), "--json (use --format json)"),
    (re.compile(r"--format[ =]text\b"), "--format text (use --format table)"),
]


def _deprecated(command: str) -> list[str]:
    found = [what for pattern, what in DEPRECATED if pattern.search(command)]
    try:
        words = shlex.split(command, comments=True)
    except ValueError:
        words = command.split()
    if "batchcompact" in words and "run" in words[words.index("batchcompact"):]:
        if ({"-o", "--output"} & set(words) or any(w.startswith(("-o", "--output=")) for w in words)) \
                and not {"--output-dir", "--in-place"} & set(words):
            found.append("run -o DIR (use --output-dir DIR)")
    return found


def test_no_example_uses_a_deprecated_spelling():
    found = []
    for doc in USER_DOCS:
        for block in _blocks(doc.read_text(), "sh"):
            for command in _commands(block):
                found += [f"{doc.name}: {command}: {what}" for what in _deprecated(command)]
    assert found == []


def test_the_deprecated_spelling_check_finds_them():
    assert _deprecated("batchcompact run archive/ -o compacted --model m") == ["run -o DIR (use --output-dir DIR)"]
    assert _deprecated("batchcompact run a --output-dir o --format json -o rows.json") == []
    assert _deprecated("batchcompact plan a --json") == ["--json (use --format json)"]
    assert _deprecated("batchcompact validate a --format text") == ["--format text (use --format table)"]


def test_what_first_ten_minutes_writes_is_ignored_by_git(tmp_path):
    """Run in a clone, the section's commands leave the files they write (`-o FILE`, `--output-dir DIR`)
    in the repository's root: each is in .gitignore, so `git status` stays clean (usage.parquet was not, nor
    spend.html from `--html`)."""
    section = _section(README.read_text(), "First ten minutes")
    written = []
    for command in (c for block in _blocks(section, "sh") for c in _commands(block)):
        words = shlex.split(command, comments=True)
        written += [words[i + 1] for i, w in enumerate(words[:-1]) if w in ("-o", "--output", "--html", "--chart")]
        written += [words[i + 1].rstrip("/") + "/" for i, w in enumerate(words[:-1]) if w == "--output-dir"]
    assert "usage.parquet" in written and "spend.html" in written
    git = shutil.which("git")
    assert git, "git is needed to read .gitignore as git does"
    subprocess.run([git, "init", "-q", str(tmp_path)], check=True)
    shutil.copyfile(REPO / ".gitignore", tmp_path / ".gitignore")
    for name in written:
        done = subprocess.run([git, "-C", str(tmp_path), "check-ignore", "-q", "--no-index", name])
        assert done.returncode == 0, f"{name} (written by the README's first ten minutes) is not in .gitignore"
