"""The suite's own rule: with CI set, a test never skips because something CI installs is missing.

CI (`.ci/run`) installs the `test` and `ray` extras and puts ../shared/fixtures beside the clone; a test that
needs one goes through `conftest.unavailable` (`required_module`, `fixture_path`, ...), which skips on a
developer's machine and fails in CI."""

from __future__ import annotations

import ast
import os
import subprocess
import sys
from pathlib import Path

TESTS = Path(__file__).resolve().parent

NEEDS_MISSING = """
import sys
sys.path.insert(0, {tests!r})
from conftest import required_module

required_module("batchcompact_no_such_module", "ray")


def test_uses_it():
    pass
"""


def _pytest(folder: Path, ci: str | None) -> subprocess.CompletedProcess:
    env = {k: v for k, v in os.environ.items() if k != "CI"}
    if ci is not None:
        env["CI"] = ci
    return subprocess.run([sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "-rs", str(folder)],
                          capture_output=True, text=True, cwd=folder, env=env, timeout=120)


def test_a_missing_extra_fails_in_ci_and_skips_elsewhere(tmp_path):
    (tmp_path / "test_needs.py").write_text(NEEDS_MISSING.format(tests=str(TESTS)))
    (tmp_path / "test_other.py").write_text("def test_runs():\n    pass\n")
    here = _pytest(tmp_path, None)
    assert here.returncode == 0, here.stdout + here.stderr
    assert "1 passed, 1 skipped" in here.stdout
    assert "batchcompact_no_such_module is not installed" in here.stdout
    ci = _pytest(tmp_path, "true")
    assert ci.returncode != 0, ci.stdout + ci.stderr
    assert "skipped" not in ci.stdout
    assert "batchcompact_no_such_module is not installed" in ci.stdout
    assert "CI is set" in ci.stdout


def test_no_test_imports_an_extra_with_importorskip():
    """`pytest.importorskip` skips in CI too: an extra CI installs goes through `conftest.required_module`."""
    found = []
    for path in sorted(TESTS.rglob("*.py")):
        for node in ast.walk(ast.parse(path.read_text(), str(path))):
            if (isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute)
                    and node.func.attr == "importorskip"):
                found.append(f"{path.relative_to(TESTS)}:{node.lineno}")
    assert found == []
