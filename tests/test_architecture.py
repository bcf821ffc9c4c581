"""Dependencies point one way: the pure core imports nothing heavy, and --help stays instant."""

from __future__ import annotations

import ast
import subprocess
import sys
from pathlib import Path

CORE = Path(__file__).resolve().parent.parent / "batchcompact" / "core"
FORBIDDEN = {"litellm", "pyarrow", "polars", "click", "asyncio", "tiktoken", "tqdm", "jsonschema", "sqlite3",
             "subprocess", "socket", "os", "shutil"}


def _imports(path: Path) -> set[str]:
    tree = ast.parse(path.read_text())
    names: set[str] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            names.update(alias.name.split(".")[0] for alias in node.names)
        elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            names.add(node.module.split(".")[0])
            if node.module.startswith("batchcompact.") and not node.module.startswith("batchcompact.core"):
                names.add(node.module)
    return names


def test_core_imports_only_the_standard_library_and_itself():
    for path in sorted(CORE.glob("*.py")):
        imports = _imports(path)
        assert not imports & FORBIDDEN, f"{path.name} imports {imports & FORBIDDEN}"
        shell = [n for n in imports if n.startswith("batchcompact.") and not n.startswith("batchcompact.core")]
        assert not shell, f"{path.name} imports the shell: {shell}"


def test_help_does_not_import_heavy_modules():
    code = (
        "import sys\n"
        "from batchcompact.cli import cli\n"
        "try:\n    cli.main(['--help'], standalone_mode=False)\nexcept SystemExit:\n    pass\n"
        "heavy = [m for m in ('litellm', 'polars', 'pyarrow', 'tiktoken', 'jsonschema') if m in sys.modules]\n"
        "print('HEAVY:' + ','.join(heavy))\n"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip().splitlines()[-1] == "HEAVY:"


def test_plan_does_not_import_litellm(tmp_path):
    from factories import Builder

    b = Builder()
    b.user("x")
    b.assistant("y")
    path = b.write(tmp_path / "s.jsonl")
    code = (
        "import sys\nfrom batchcompact.cli import cli\n"
        f"cli.main(['plan', {str(path)!r}, '--jobs', '1', '--force', '--summary-model', 'gpt-4o-mini'], standalone_mode=False)\n"
        "print('LITELLM' if 'litellm' in sys.modules else 'CLEAN')\n"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip().splitlines()[-1] == "CLEAN"
