"""The suite's layout and its shared set-up: an agent's tests sit in tests/agents/<name>/ (a registered
agent's name), test file names are unique across the folders (pytest imports them by name, with no
`__init__.py`), no test module imports another (shared helpers live in helper modules), and a judge is
installed once however many test processes ask for it at the same time."""

from __future__ import annotations

import ast
import os
import stat
import threading
from collections import Counter
from pathlib import Path

from agent_judges import npm_cli

from batchcompact.agents import names

TESTS = Path(__file__).resolve().parent


def test_every_agent_folder_is_a_registered_agent():
    folders = sorted(p.name for p in (TESTS / "agents").iterdir() if p.is_dir() and p.name != "__pycache__")
    assert folders, "no tests/agents/<name>/ folder"
    assert [name for name in folders if name not in names()] == []
    assert all(list((TESTS / "agents" / name).glob("test_*.py")) for name in folders)


def test_an_agent_s_tests_are_in_its_folder():
    """A test file named after one agent (`test_<agent>.py`, `test_<agent>_*.py`, `test_judge_<agent>.py`,
    `test_report_<agent>.py`) is in `tests/agents/<agent>/`, where its name finds it."""
    import re

    agents = "|".join(sorted(names(), key=len, reverse=True))
    named = re.compile(rf"test_(?:judge_|report_)?({agents})(?:_.*)?\.py")
    misplaced = [str(p.relative_to(TESTS)) for p in TESTS.rglob("test_*.py")
                 if (match := named.fullmatch(p.name)) and p.parent != TESTS / "agents" / match.group(1)
                 and "data" not in p.relative_to(TESTS).parts]
    assert misplaced == []


def test_test_file_names_are_unique_and_no_test_folder_is_a_package():
    files = [p for p in TESTS.rglob("test_*.py") if "data" not in p.relative_to(TESTS).parts]
    assert len(files) > 50
    assert [name for name, count in Counter(p.name for p in files).items() if count > 1] == []
    assert sorted(str(p.relative_to(TESTS)) for p in TESTS.rglob("__init__.py")) == []


def test_no_test_module_imports_another():
    """A helper two test files share lives in a helper module named for what it holds (tests/factories.py,
    tests/run_cli.py, tests/agents/pi/pi_judges.py, ...), never in one of the tests: importing a test module
    ties its tests' set-up to another file's, and a fixture imported that way is defined twice. Shared fixtures
    go to conftest.py. The benches and examples that build on the tests' data import the same helpers."""
    found = []
    root = TESTS.parent
    for path in sorted([*TESTS.rglob("*.py"), *(root / "bench").rglob("*.py"), *(root / "examples").rglob("*.py")]):
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.Import):
                modules = [alias.name for alias in node.names]
            elif isinstance(node, ast.ImportFrom) and node.module:
                modules = [node.module]
            else:
                continue
            found += [f"{path.relative_to(root)}:{node.lineno}: {module}" for module in modules
                      if module.rpartition(".")[2].startswith("test_")]
    assert found == []


def test_a_judge_asked_for_by_two_processes_at_once_is_installed_once(tmp_path, monkeypatch):
    """pytest-xdist's workers ask for the same judge at the same time: the install runs once, under a
    lock on the cache; the other caller waits for it and finds the installed binary."""
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    calls = tmp_path / "npm-calls"
    fake_npm = bin_dir / "npm"
    # `npm install --prefix PREFIX --... PACKAGE@VERSION`: slow enough for the other caller to arrive
    fake_npm.write_text(
        "#!/bin/sh\n"
        f'echo "$*" >> "{calls}"\n'
        "sleep 1\n"
        'mkdir -p "$3/node_modules/.bin" && printf "#!/bin/sh\\n" > "$3/node_modules/.bin/judge"\n'
    )
    fake_npm.chmod(fake_npm.stat().st_mode | stat.S_IEXEC)
    monkeypatch.setenv("PATH", f"{bin_dir}{os.pathsep}{os.environ['PATH']}")
    monkeypatch.setenv("BATCHCOMPACT_TEST_CACHE", str(tmp_path / "cache"))
    found: list[Path] = []

    def ask() -> None:
        found.append(npm_cli("judge-cli", "1.0.0", "judge"))

    threads = [threading.Thread(target=ask) for _ in range(3)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(timeout=60)
    target = tmp_path / "cache" / "npm" / "judge-cli-1.0.0" / "node_modules" / ".bin" / "judge"
    assert found == [target] * 3
    assert calls.read_text().splitlines() == [f"install --prefix {target.parents[2]} --no-audit --no-fund "
                                              "--loglevel=error judge-cli@1.0.0"]


PARALLEL_CONFTEST = """
import importlib.util
import sys

sys.path.insert(0, {tests!r})
spec = importlib.util.spec_from_file_location("suite_conftest", {conftest!r})
suite = importlib.util.module_from_spec(spec)
spec.loader.exec_module(suite)
suite.SLOW_FILES = ("test_slow.py",)
pytest_collection_modifyitems = suite.pytest_collection_modifyitems
pytest_xdist_make_scheduler = suite.pytest_xdist_make_scheduler
"""

LOGGED_TESTS = """
import os

import pytest


@pytest.fixture(scope="module")
def recording():
    with open({log!r}, "a") as log:
        log.write(f"{{__name__}} {{os.environ['PYTEST_XDIST_WORKER']}}\\n")


@pytest.mark.parametrize("n", range(4))
def test_uses_the_recording(recording, n):
    pass
"""


def test_under_xdist_a_file_s_fixture_is_set_up_once_and_the_ray_files_share_a_worker(tmp_path):
    """`--dist loadfile` with conftest's scheduler: a module fixture is set up once (a file on one worker),
    the `SHARED_WORKER` files (the Ray ones) run on one worker, and `SLOW_FILES` are sent first."""
    import subprocess
    import sys

    log = tmp_path / "setups.log"
    (tmp_path / "conftest.py").write_text(PARALLEL_CONFTEST.format(tests=str(TESTS),
                                                                   conftest=str(TESTS / "conftest.py")))
    for name in ("test_a.py", "test_executor_ray.py", "test_executor_ray_cluster.py", "test_slow.py"):
        (tmp_path / name).write_text(LOGGED_TESTS.format(log=str(log)))
    def run(workers: str) -> list[str]:
        log.unlink(missing_ok=True)
        done = subprocess.run([sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "-n", workers,
                               "--dist", "loadfile", str(tmp_path)], capture_output=True, text=True, cwd=tmp_path,
                              timeout=300)
        assert done.returncode == 0, done.stdout + done.stderr
        assert "16 passed" in done.stdout
        return log.read_text().splitlines()

    setups = dict(line.split() for line in run("2"))
    assert sorted(setups) == ["test_a", "test_executor_ray", "test_executor_ray_cluster", "test_slow"]
    assert setups["test_executor_ray"] == setups["test_executor_ray_cluster"]
    # the order files are sent in: one worker sets them up in that order (two would race to the log)
    assert run("1")[0].startswith("test_slow ")
