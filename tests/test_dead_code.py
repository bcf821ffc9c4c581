"""No dead code (#58 item 2): every function, method and class of batchcompact/ is named somewhere besides its
definition, in the package, bench/, examples/ or the agents' declarations (which name their parts by
string); one only the tests name lives in tests/ (tests/code_helpers.py). What a framework calls by its name
is allowed below, each with its reason. Names are matched as words over the text, so a name that is also a
word elsewhere passes: the check finds the names nothing says, which is what dead code is."""

from __future__ import annotations

import ast
import re
from collections import Counter

from conftest import REPO

# name -> why nothing in the package names it
ALLOWED = {
    "format_commands": "click calls it: cli/__init__.py's group overrides click.Group.format_commands",
    "format_options": "click calls it: cli/command.py's command overrides click.Command.format_options",
}


def _definitions() -> list[tuple[str, int, str]]:
    out = []
    for path in sorted((REPO / "batchcompact").rglob("*.py")):
        tree = ast.parse(path.read_text(encoding="utf-8"))
        for node in tree.body:
            nodes = [node] + (node.body if isinstance(node, ast.ClassDef) else [])
            for item in nodes:
                if isinstance(item, ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef) and not (
                        item.name.startswith("__") or item is not node and item.decorator_list):
                    out.append((str(path.relative_to(REPO)), item.lineno, item.name))
    return out


def _text(*folders: str) -> str:
    files = [p for folder in folders for p in sorted((REPO / folder).rglob("*"))
             if p.suffix in (".py", ".js", ".toml") and "__pycache__" not in p.parts]
    return "\n".join(p.read_text(encoding="utf-8") for p in files) + (REPO / "pyproject.toml").read_text()


def test_every_definition_is_named_outside_itself_and_not_only_by_tests():
    definitions = _definitions()
    package = Counter(re.findall(r"\w+", _text("batchcompact", "bench", "examples")))
    tests = Counter(re.findall(r"\w+", _text("tests")))
    defined = Counter(name for _, _, name in definitions)
    dead, test_only = [], []
    for path, line, name in definitions:
        if name in ALLOWED or package[name] - defined[name] > 0:
            continue
        (test_only if tests[name] else dead).append(f"{path}:{line} {name}")
    assert not dead, "named only where defined: " + ", ".join(dead)
    assert not test_only, "named only by tests (move to tests/code_helpers.py): " + ", ".join(test_only)


def test_the_allow_list_names_what_exists():
    names = {name for _, _, name in _definitions()}
    assert set(ALLOWED) <= names
