"""Dependencies point one way: the pure core imports nothing heavy, no module imports one above it, no
import circles (function-level imports included), and --help stays instant."""

from __future__ import annotations

import ast
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
PACKAGE = ROOT / "batchcompact"
CORE = PACKAGE / "core"
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


# The package's layers, lowest first: a module imports only from its own layer or those below
# (docs/architecture.md). The name is the part after `batchcompact.`; `__init__` is the package itself.
LAYERS = (
    ("core",),
    ("__init__", "errors", "folders", "outfile", "lifecycle", "tokenizer", "token_cache", "money", "model_price",
     "json_rows"),
    ("agents",),
    ("formats", "schemas", "pricing", "price_index", "discover"),
    ("adapters",),
    ("summarize",),
    ("pipeline",),
    ("report", "eval"),
    ("cli",),
    ("__main__",),
)


def module_graph() -> dict[str, set[str]]:
    """Every module of the package -> the package modules it imports, anywhere in it (functions too).

    `from a.b import c` is an edge to `a.b.c` when that is a module, else to `a.b`; a package's
    `__init__` is not counted as imported by its submodules (Python runs it, but it is not a dependency
    the code chose). The agents' lazy `"module:attr"` references are strings, not imports."""
    modules: dict[str, Path] = {}
    for path in PACKAGE.rglob("*.py"):
        parts = list(path.relative_to(ROOT).with_suffix("").parts)
        if parts[-1] == "__init__":
            parts.pop()
        modules[".".join(parts)] = path
    graph: dict[str, set[str]] = {}
    for name, path in modules.items():
        package = name.split(".") if path.name == "__init__.py" else name.split(".")[:-1]
        found: set[str] = set()
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, ast.Import):
                found.update(alias.name for alias in node.names)
            elif isinstance(node, ast.ImportFrom):
                base = package[: len(package) - node.level + 1] if node.level else []
                module = ".".join(base + ([node.module] if node.module else []))
                for alias in node.names:
                    found.add(f"{module}.{alias.name}" if f"{module}.{alias.name}" in modules else module)
        graph[name] = {m for m in found if m in modules and m != name}
    return graph


def circles(graph: dict[str, set[str]]) -> list[list[str]]:
    """The strongly connected components with more than one module (Tarjan, iterative)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    found: list[list[str]] = []
    for root in sorted(graph):
        if root in index:
            continue
        work = [(root, iter(sorted(graph[root])))]
        index[root] = low[root] = len(index)
        stack.append(root)
        on_stack.add(root)
        while work:
            node, children = work[-1]
            child = next(children, None)
            if child is not None:
                if child not in index:
                    index[child] = low[child] = len(index)
                    stack.append(child)
                    on_stack.add(child)
                    work.append((child, iter(sorted(graph[child]))))
                elif child in on_stack:
                    low[node] = min(low[node], index[child])
                continue
            work.pop()
            if work:
                low[work[-1][0]] = min(low[work[-1][0]], low[node])
            if low[node] == index[node]:
                component = []
                while True:
                    member = stack.pop()
                    on_stack.discard(member)
                    component.append(member)
                    if member == node:
                        break
                if len(component) > 1:
                    found.append(sorted(component))
    return found


def test_the_walk_sees_function_level_imports_and_finds_a_circle():
    graph = module_graph()
    # a function-level import (planning reads sessions through formats.detect inside read_session)
    assert "batchcompact.formats.detect" in graph["batchcompact.pipeline.planning"]
    graph = {**graph, "batchcompact.core.entries": graph["batchcompact.core.entries"] | {"batchcompact.core.tree"}}
    assert any({"batchcompact.core.entries", "batchcompact.core.tree"} <= set(c) for c in circles(graph))


def test_no_import_circles():
    assert circles(module_graph()) == []


def _top(module: str) -> str:
    """The folder or top-level module `module` is in (`__init__`: the package itself)."""
    parts = module.split(".")
    return parts[1] if len(parts) > 1 else "__init__"


def _layer(module: str) -> int:
    top = _top(module)
    for number, names in enumerate(LAYERS):
        if top in names:
            return number
    raise AssertionError(f"{module}: batchcompact/{top} is in no layer; add it to LAYERS in {__file__}")


def test_no_circles_between_folders():
    """Drawn by folders (`formats/`, `report/`, ... and the top-level modules), the imports make no circle either:
    two folders of one layer may not import each other."""
    folders: dict[str, set[str]] = {}
    for module, targets in module_graph().items():
        folders.setdefault(_top(module), set()).update(_top(t) for t in targets)
    assert circles({name: found - {name} for name, found in folders.items()}) == []


def test_no_import_runs_back_up_the_layers():
    upward = [
        f"{module} -> {target}"
        for module, targets in sorted(module_graph().items())
        for target in sorted(targets)
        if _layer(target) > _layer(module)
    ]
    assert upward == []


# An adapter stands on the floor (docs/architecture.md, "Adding an agent"): every module under
# `batchcompact/adapters/` (an agent's code and the floor `adapters/common/` itself) imports only these parts of
# the package, function-level imports included; never `pipeline/`, `report/`, `summarize/`, `eval/` or `cli/`,
# nor pricing, discovery or the process machinery. Each allowed part, and why an adapter needs it:
ADAPTER_MAY_IMPORT = {
    "adapters": "the floor (adapters/common/: usage rows, line and store helpers, verify, the SQLite session "
                "store); an agent writing another's format uses that agent's code (OpenClaw: pi's)",
    "core": "the pure core: entries, the session tree, context, planning, triggers",
    "agents": "the registry (an agent's own declaration, `store_agent`)",
    "formats": "bytes on disk: JSON lines, zstd, the walk's helpers",
    "errors": "the error kinds and their exit codes",
    "folders": "batchcompact's XDG folders",
    "outfile": "`fitted_name`: a temp name that fits in a file name",
    "schemas": "the JSON Schema checks of a format (pi's `validate`)",
    "money": "sums of USD amounts",
}


def test_an_adapter_imports_only_the_floor_and_below():
    found = [f"{module} -> {target}" for module, targets in sorted(module_graph().items())
             if module.startswith("batchcompact.adapters.")
             for target in sorted(targets) if _top(target) not in ADAPTER_MAY_IMPORT]
    assert found == []


def test_only_the_floor_of_the_adapters_is_imported_from_outside():
    """An agent's code is reached through the registry's lazy references, never imported: outside
    `adapters/`, the package imports only the floor (which names no agent, and which no declaration points to)."""
    found = [f"{module} -> {target}" for module, targets in sorted(module_graph().items())
             if not module.startswith("batchcompact.adapters")
             for target in sorted(targets)
             if target.startswith("batchcompact.adapters") and not target.startswith("batchcompact.adapters.common")]
    assert found == []
    from batchcompact.agents import AGENTS

    assert "common" not in {agent.name for agent in AGENTS}
    assert not any(str(getattr(agent, field) or "").startswith("batchcompact.adapters.common")
                   for agent in AGENTS for field in ("reader", "writer", "usage", "trigger", "settings", "store"))


# A measure shares no code with what it measures (docs/eval.md): no module under `batchcompact/eval/` imports
# anything of `batchcompact/summarize/` (the package's `__init__` loads the built-in summarizer, so even its
# pool would bring the summarizer's code into the measure). The modules that make eval's probes, baselines
# and scores, and the judge, do not reach it through another module of the package either, counting the
# parent packages an import runs. Eval buys the summaries it scores and the judge's calls through
# `pipeline/model_calls.py` (the worker pool and the summary cache), which reads no transcript and writes no
# summary.
MEASURES = ("eval/text.py", "eval/probes.py", "eval/hindsight.py", "eval/scoring.py", "eval/baselines.py",
            "eval/cuts.py", "eval/judge.py", "eval/pooling.py", "eval/carryover.py")
MEASURE_MAY_USE = {"batchcompact.pipeline.model_calls"}


def _module_file(name: str) -> Path | None:
    parts = name.split(".")[1:]
    for candidate in (PACKAGE.joinpath(*parts).with_suffix(".py"), PACKAGE.joinpath(*parts, "__init__.py")):
        if candidate.exists():
            return candidate
    return None


def _package_imports(path: Path) -> set[str]:
    """Every `batchcompact.…` module `path` imports, function-level imports included."""
    out = set()
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.ImportFrom) and node.module and node.level == 0 and node.module.startswith("batchcompact"):
            out.add(node.module)
            out.update(f"{node.module}.{alias.name}" for alias in node.names
                       if _module_file(f"{node.module}.{alias.name}") is not None)
        elif isinstance(node, ast.Import):
            out.update(alias.name for alias in node.names if alias.name.startswith("batchcompact"))
    return out


def _with_parents(name: str) -> list[str]:
    """`a.b.c` and the packages importing it runs first: `a.b`, `a` (their `__init__`)."""
    parts = name.split(".")
    return [".".join(parts[:n]) for n in range(len(parts), 1, -1)]


def test_nothing_under_eval_imports_the_summarizers():
    for path in sorted((PACKAGE / "eval").glob("*.py")):
        reached = sorted(n for n in _package_imports(path) if n.startswith("batchcompact.summarize"))
        assert reached == [], f"{path.relative_to(PACKAGE)} imports {reached}"


def test_eval_measures_import_no_summarizer():
    for measure in MEASURES:
        seen: set[str] = set()
        stack = sorted(_package_imports(PACKAGE / measure))
        while stack:
            name = stack.pop()
            if name in seen or name in MEASURE_MAY_USE:
                continue
            seen.add(name)
            assert not name.startswith("batchcompact.summarize"), f"{measure} reaches {name}"
            for module in _with_parents(name):
                found = _module_file(module)
                if found is not None and module not in seen | MEASURE_MAY_USE:
                    stack.extend(sorted(_package_imports(found) | ({module} - {name})))


# The registry at the bottom: the `Agent` spec and the ordered list import nothing of the package but the spec
# and the agents' declarations (each `agents/<name>/__init__.py` holds its `AGENT` and imports only the spec, or
# the declaration it is a variant of: Kilo's is OpenCode's), so every layer may ask it without an arrow running
# back up. Everything with code is a lazy "module:attr" string.
def test_the_registry_imports_only_the_spec_and_the_declarations():
    graph = module_graph()
    declarations = {f"batchcompact.agents.{p.parent.name}" for p in (PACKAGE / "agents").glob("*/__init__.py")}
    assert graph["batchcompact.agents.spec"] == set()
    assert graph["batchcompact.agents"] <= {"batchcompact.agents.spec"} | declarations
    for name in sorted(declarations):
        assert graph[name] <= {"batchcompact.agents.spec"} | declarations, f"{name} imports {graph[name]}"


# The same file names in every adapter (docs/architecture.md, "Adding an agent"): each lazy reference of a
# declaration names the file its field lives in, whatever the agent. Report-only agents may keep a line rule beside
# the usage reader it shares code with (their `report.py`); every other rule is `agents/<name>/detect.py`.
FILE_OF_FIELD = {
    "reader": {"adapters.read"}, "read_appended": {"adapters.read"}, "writer": {"adapters.write"},
    "store": {"adapters.store"}, "trigger": {"adapters.trigger"}, "settings": {"adapters.settings"},
    "settings_shown": {"adapters.settings"}, "usage": {"adapters.report"}, "validate": {"adapters.schema"},
    "detect_line": {"agents.detect"}, "detect_prefix": {"agents.detect"}, "detect_file": {"agents.detect"},
}
# Claude Science's file rule opens the database with its reader's column check: it stays beside that reader.
SHARES_ITS_READER = {("science", "detect_file"): "adapters.report"}


def test_every_adapter_names_its_files_alike():
    from batchcompact.agents import get, names

    seen = set()
    for name in names():
        agent = get(name)
        for field, files in FILE_OF_FIELD.items():
            reference = getattr(agent, field, None)
            if not isinstance(reference, str):
                continue
            parts = reference.split(":")[0].split(".")
            if parts[1] not in ("agents", "adapters"):  # a shared rule (core/triggers.py's window_trigger)
                continue
            assert len(parts) == 4, f"{name}.{field} = {reference}"
            allowed = files | {SHARES_ITS_READER.get((name, field))}
            assert f"{parts[1]}.{parts[3]}" in allowed, f"{name}.{field} = {reference}: not in {sorted(files)}"
            seen.add(field)
    assert {"reader", "writer", "store", "trigger", "settings", "usage", "detect_line"} <= seen  # the walk saw them


# Strings that are an agent's name but name a model family or a provider, not the agent (checked one by one).
NOT_AGENTS = {
    ("pricing.py", "gemini"), ("pricing.py", "qwen"), ("pricing.py", "claude"),  # litellm provider prefixes
    ("report/settings.py", "claude"), ("report/settings.py", "gemini"), ("report/settings.py", "grok"),
    ("report/settings.py", "qwen"),  # provider aliases (`--by provider`)
    ("summarize/batch_api.py", "claude"), ("summarize/preflight.py", "gemini"),  # model and provider names
    ("summarize/provider_names.py", "gemini"),  # a provider's key variables
    ("tokenizer.py", "codex"),  # OpenAI's codex models
    ("adapters/droid/report.py", "claude"), ("adapters/droid/report.py", "gemini"), ("adapters/droid/report.py", "grok"),
    ("adapters/hermes/report.py", "claude"), ("adapters/hermes/report.py", "gemini"),  # model families -> provider
}


def _code_strings(path: Path):
    """(line, text) of every string constant in `path` that is not a docstring."""
    tree = ast.parse(path.read_text())
    docstrings = {
        id(node.body[0].value) for node in ast.walk(tree)
        if isinstance(node, ast.Module | ast.ClassDef | ast.FunctionDef | ast.AsyncFunctionDef)
        and node.body and isinstance(node.body[0], ast.Expr) and isinstance(node.body[0].value, ast.Constant)
    }
    for node in ast.walk(tree):
        if isinstance(node, ast.Constant) and isinstance(node.value, str) and id(node) not in docstrings:
            yield node.lineno, node.value


def test_no_agent_is_named_outside_its_folder_and_the_registry():
    """Nothing outside an agent's folder knows its name: shared code asks the registry for a property
    (`Agent.read_appended`, `Agent.provider`, ...), never `format == "pi"`. An agent's folder is the one its
    registration points into (Kilo's code is OpenCode's folder, OpenClaw's reader is pi's)."""
    from batchcompact.agents import AGENTS

    owners: dict[str, str] = {}  # a name or place label -> the agent it belongs to
    folders: dict[str, set[str]] = {}  # an agent -> the folders its references point into
    for agent in AGENTS:
        owners[agent.name] = agent.name
        owners.update({place.label: agent.name for place in agent.places if place.label})
        refs = [getattr(agent, field) for field in ("detect_line", "detect_prefix", "detect_file", "reader",
                                                     "writer", "usage", "trigger", "settings", "store")]
        folders[agent.name] = {agent.name} | {ref.split(".")[2] for ref in refs
                                              if ref and ref.startswith(("batchcompact.agents.",
                                                                         "batchcompact.adapters."))}
    found = []
    for path in sorted(PACKAGE.rglob("*.py")):
        relative = path.relative_to(PACKAGE)
        if relative.as_posix() in ("agents/__init__.py",):
            continue
        folder = relative.parts[1] if relative.parts[0] in ("agents", "adapters") and len(relative.parts) > 2 else None
        for line, text in _code_strings(path):
            owner = owners.get(text)
            if owner is None or folder in folders[owner] or (relative.as_posix(), text) in NOT_AGENTS:
                continue
            found.append(f"batchcompact/{relative}:{line}: {text!r}")
    assert found == []


TOY_AGENT = '''
from batchcompact.agents.spec import Agent, Place

AGENT = Agent(
    name="toy",
    display_name="Toy Agent",
    places=(Place(defaults=("~/.toy",)),),
    detect_line="toyagent.report:detect_line",
    usage="toyagent.report:extract",
    provider="toy-cloud",
)
'''
TOY_REPORT = '''
import json
from datetime import datetime, timezone


def detect_line(obj, first):
    return obj.get("toy") == 1


def extract(path, rows, stats):
    with open(path, encoding="utf-8") as handle:
        for number, line in enumerate(handle, 1):
            obj = json.loads(line)
            rows.add(source="toy", file=str(path), line=number, session_id="s1", project="/work/toy",
                     timestamp=datetime.fromtimestamp(obj["t"], timezone.utc), provider=None, model="gpt-4o",
                     kind="main", dedupe_key=f"toy:{number}", input_tokens=obj["in"], output_tokens=obj["out"],
                     cache_read_tokens=0, cache_write_tokens=0, reasoning_tokens=0)
'''


def test_an_agent_is_one_folder_and_one_registration(tmp_path):
    """Adding an agent touches its folder and one `register` line, nothing else: an agent defined outside the
    package and registered before the command line starts is named in `--help`, found in its place, detected,
    reported by `--by agent` and `--by provider` (its own service), and selected by `--agent`."""
    package = tmp_path / "code" / "toyagent"
    package.mkdir(parents=True)
    (package / "__init__.py").write_text(TOY_AGENT)
    (package / "report.py").write_text(TOY_REPORT)
    home = tmp_path / "home"
    (home / ".toy" / "sessions").mkdir(parents=True)
    (home / ".toy" / "sessions" / "one.jsonl").write_text(
        '{"toy": 1, "t": 1767225600, "in": 100, "out": 7}\n{"toy": 1, "t": 1767229200, "in": 50, "out": 3}\n')
    runner = ("import sys\nfrom batchcompact.agents import register\nimport toyagent\n"
              "register(toyagent.AGENT)\nfrom batchcompact.cli import main\nsys.argv[0] = 'batchcompact'\nmain()\n")
    env = {"PATH": "/usr/bin:/bin", "HOME": str(home), "PYTHONPATH": str(tmp_path / "code"), "TZ": "UTC",
           "XDG_CACHE_HOME": str(tmp_path / "cache"), "XDG_CONFIG_HOME": str(tmp_path / "config"),
           "XDG_DATA_HOME": str(tmp_path / "data"), "XDG_STATE_HOME": str(tmp_path / "state")}

    def cli(*args):
        done = subprocess.run([sys.executable, "-c", runner, *args], capture_output=True, text=True, env=env,
                              cwd=tmp_path)
        assert done.returncode == 0, done.stderr
        return done.stdout

    assert "Toy Agent" in " ".join(cli("--help").split())
    import json

    rows = json.loads(cli("report", "--by", "agent", "--agent", "toy", "--format", "json", "-q"))["rows"]
    assert [(r["agent"], r["input_tokens"], r["output_tokens"]) for r in rows] == [("toy", 150, 10)]
    rows = json.loads(cli("report", "--by", "provider", "--format", "json", "-q"))["rows"]
    assert [r["provider"] for r in rows] == ["toy-cloud"]
