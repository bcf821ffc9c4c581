"""The type checker passes over the package, and every `Any` left in it says why.

mypy (configured in pyproject's [tool.mypy]: every function has a signature, every body is checked) runs
over batchcompact/ in this process; an error anywhere fails here with mypy's own lines. An `Any` is allowed
where the value is truly unknown, and then its line, or the line above it, says why in a `# Any: ...`
comment; parsed JSON says it once, in core/jsontypes.py (`JsonValue`, `JsonObject`).
"""

from __future__ import annotations

import io
import tokenize
from pathlib import Path

from mypy import api

ROOT = Path(__file__).resolve().parent.parent
PACKAGE = ROOT / "batchcompact"


def test_mypy_finds_no_error_in_the_package():
    stdout, stderr, status = api.run(["--config-file", str(ROOT / "pyproject.toml"),
                                      "--cache-dir", str(ROOT / ".mypy_cache")])
    assert status == 0, stdout + stderr


def _unreasoned_any(source: str) -> list[int]:
    """The lines whose `Any` (a name, not a word in a string or comment) has no `# Any:` reason beside or
    above it; `import` lines excepted."""
    lines = source.splitlines()
    found: list[int] = []
    for token in tokenize.generate_tokens(io.StringIO(source).readline):
        if token.type != tokenize.NAME or token.string != "Any":
            continue
        row = token.start[0]
        line = lines[row - 1]
        if line.lstrip().startswith(("from ", "import ")):
            continue
        above = lines[row - 2].strip() if row > 1 else ""
        if "# Any:" in line or above.startswith("# Any:"):
            continue
        found.append(row)
    return found


def test_the_reason_check_sees_an_unreasoned_any():
    source = ("from typing import Any\n"
              "def f(x: Any) -> int:\n    return 1\n"
              "# Any: the caller's own object, passed through untouched\n"
              "def g(x: Any) -> int:\n    return 1\n"
              "def h(x: 'int') -> int:  # Any: not a name here\n    return 'Any'\n")
    assert _unreasoned_any(source) == [2]


def test_every_any_in_the_package_says_why():
    unreasoned = []
    for path in sorted(PACKAGE.rglob("*.py")):
        for row in _unreasoned_any(path.read_text()):
            unreasoned.append(f"{path.relative_to(ROOT)}:{row}")
    assert not unreasoned, f"{len(unreasoned)} `Any` without a `# Any:` reason:\n" + "\n".join(unreasoned[:50])
