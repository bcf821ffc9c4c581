"""Shared test fixtures: the outside corpus in ../shared/fixtures and a loopback-only network guard."""

from __future__ import annotations

import importlib
import ipaddress
import os
import socket
from pathlib import Path
from types import ModuleType
from typing import NoReturn

import pytest

REPO = Path(__file__).resolve().parent.parent
SAMPLES = REPO / "sample_sessions"
BROKEN_SAMPLES = REPO / "examples" / "broken"  # sessions broken on purpose (validate shows them off)
# The outside corpus; BATCHCOMPACT_TEST_FIXTURES points elsewhere (e.g. to show what CI does without it).
SHARED_FIXTURES = Path(os.environ.get("BATCHCOMPACT_TEST_FIXTURES") or REPO.parent / "shared" / "fixtures")
# Real sessions from public repositories, gzipped, beside the repository (never copied into it; bench/eval_table.py
# decompresses them into a temporary folder): the held-out set's goals need them.
PUBLIC_SESSIONS = Path(os.environ.get("BATCHCOMPACT_PUBLIC_SESSIONS") or REPO.parent / "shared" / "public-sessions")
# The recorded transcripts of the three families we compact; `agents/` beside them holds other projects'
# hand-written cases for the other agents, which their own tests read.
RECORDED_FAMILIES = ("pi", "claude", "codex")


def in_ci() -> bool:
    """Whether this run is CI's (`CI` set to anything but empty, 0 or false)."""
    return os.environ.get("CI", "").strip().lower() not in ("", "0", "false")


def unavailable(reason: str) -> NoReturn:
    """Skip the test because something it needs is missing; in CI, fail it (CI passes only on what ran)."""
    if in_ci():
        pytest.fail(f"{reason} (CI is set: a missing judge, extra or fixture fails the run)", pytrace=False)
    pytest.skip(reason, allow_module_level=True)


def required_module(name: str, extra: str) -> ModuleType:
    """`import name`, or skip the test (or the module, at its top) when it is not installed; in CI, fail:
    CI installs every extra the tests use (`pytest.importorskip` would skip there too)."""
    try:
        return importlib.import_module(name)
    except ImportError as exc:
        unavailable(f"{name} is not installed ({exc}; pip install -e '.[{extra}]')")


def shared_fixtures() -> Path:
    """../shared/fixtures, or skip the test when that folder is absent (fail it in CI)."""
    if not SHARED_FIXTURES.is_dir():
        unavailable(f"shared fixtures not found at {SHARED_FIXTURES}")
    return SHARED_FIXTURES


def public_sessions() -> Path:
    """../shared/public-sessions, or skip the test when that folder is absent (fail it in CI)."""
    if not PUBLIC_SESSIONS.is_dir():
        unavailable(f"public sessions not found at {PUBLIC_SESSIONS}")
    return PUBLIC_SESSIONS


def fixture_path(*parts: str) -> Path:
    """A file under ../shared/fixtures, or skip the test when it is absent (fail it in CI)."""
    path = shared_fixtures().joinpath(*parts)
    if not path.exists():
        unavailable(f"fixture {path} is missing")
    return path


def copy_archive(root: Path) -> Path:
    """The sample sessions (pi, Claude Code, Codex) plus the shared fixtures (required in CI, used when
    present elsewhere), copied under `root` so runs cannot touch the originals."""
    import shutil

    shutil.copytree(SAMPLES, root / "samples", ignore=shutil.ignore_patterns("*.md", "*.json"))
    if SHARED_FIXTURES.is_dir():
        for family in RECORDED_FAMILIES:
            shutil.copytree(SHARED_FIXTURES / family, root / "fixtures" / family)
    elif in_ci():
        unavailable(f"shared fixtures not found at {SHARED_FIXTURES}")
    return root


def session_outputs(root: Path) -> dict[str, bytes]:
    """Every session file under `root` (relative path -> bytes), the run's own folder left out."""
    return {str(p.relative_to(root)): p.read_bytes() for p in sorted(root.rglob("*.jsonl"))
            if ".batchcompact" not in p.parts}


@pytest.fixture
def bc(capsys, monkeypatch):
    """`batchcompact ARGS...` through `batchcompact.cli:main` in this process: (exit code, stdout, stderr),
    with no model, debug switch or provider key taken from the environment (`cli_invoker`)."""
    return cli_invoker(capsys, monkeypatch)


def cli_invoker(capsys, monkeypatch):
    """The `bc` fixture's function, for test files that want another return shape around it."""
    import sys

    from batchcompact.cli import main

    for name in ("BATCHCOMPACT_MODEL", "BATCHCOMPACT_DEBUG", "OPENAI_API_KEY", "ANTHROPIC_API_KEY"):
        monkeypatch.delenv(name, raising=False)

    def invoke(*args) -> tuple[int, str, str]:
        capsys.readouterr()
        monkeypatch.setattr(sys, "argv", ["batchcompact", *map(str, args)])
        with pytest.raises(SystemExit) as exit_info:
            main()
        out, err = capsys.readouterr()
        code = exit_info.value.code
        return (code if isinstance(code, int) else (0 if code is None else 1)), out, err

    return invoke


@pytest.fixture
def fixtures_dir() -> Path:
    return shared_fixtures()


def _is_loopback(address) -> bool:
    if isinstance(address, tuple):
        host = address[0]
    else:
        return True  # unix sockets
    if host in ("localhost",):
        return True
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False


_real_connect = socket.socket.connect
_real_connect_ex = socket.socket.connect_ex


def _guarded_connect(self, address):
    if not _is_loopback(address):
        raise RuntimeError(f"test tried to open a connection outside 127.0.0.1: {address!r}")
    return _real_connect(self, address)


def _guarded_connect_ex(self, address):
    if not _is_loopback(address):
        raise RuntimeError(f"test tried to open a connection outside 127.0.0.1: {address!r}")
    return _real_connect_ex(self, address)


@pytest.fixture(autouse=True)
def _registry_references_resolved_per_test():
    """The registry resolves each "module:attr" reference once per process (`agents.spec.load`). A test that
    monkeypatches such a function (pi's `read_pi_appended`) must have it resolved after its patch, and the
    next test on the same worker the real one: the cache starts and ends each test empty."""
    from batchcompact.agents import load

    load.cache_clear()
    yield
    load.cache_clear()


@pytest.fixture(autouse=True)
def _loopback_only(monkeypatch):
    """Fail any test that opens a connection to anything but the loopback interface."""
    monkeypatch.setattr(socket.socket, "connect", _guarded_connect)
    monkeypatch.setattr(socket.socket, "connect_ex", _guarded_connect_ex)
    yield


# --- summarizer fixtures (summarize/ owner) -------------------------------------------------------------
class FakeSummarizer:
    """A summarizer for pipeline tests: `enqueue(text)` scripts answers (or exceptions); `history` records calls.

    With nothing enqueued it answers with a small valid checkpoint naming the call's kind.
    """

    name = "fake"
    remote = True

    def __init__(self):
        self.queue: list = []
        self.history: list = []

    def enqueue(self, *items) -> None:
        self.queue.extend(items)

    async def summarize(self, call):
        from batchcompact.summarize.base import SummaryResult

        self.history.append(call)
        item = self.queue.pop(0) if self.queue else f"## Goal\nfake {call.kind} summary {len(self.history)}"
        if isinstance(item, BaseException):
            raise item
        if isinstance(item, SummaryResult):
            return item
        return SummaryResult(text=item, model="fake", prompt_tokens=len(call.user_prompt) // 4,
                             completion_tokens=len(item) // 4, cost_usd=0.0)


@pytest.fixture
def fake_summarizer() -> FakeSummarizer:
    return FakeSummarizer()


@pytest.fixture(scope="session")
def ccusage() -> tuple[Path, str]:
    """(the ccusage 20 executable, its version), installed from npm on first use (tests/ccusage_cli.py)."""
    from ccusage_cli import installed_ccusage

    return installed_ccusage()


@pytest.fixture
def llm_server():
    """An OpenAI-compatible server on 127.0.0.1 (tests/llm_server.py); `.api_base` for litellm."""
    import sys

    sys.path.insert(0, str(Path(__file__).parent))
    from llm_server import LLMServer

    server = LLMServer().start()
    yield server
    server.stop()


@pytest.fixture(autouse=True)
def _isolated_settings(monkeypatch, tmp_path_factory):
    """No test reads the user's own settings: config file, BATCHCOMPACT_* variables, pi's settings.json."""
    import os

    home = tmp_path_factory.mktemp("settings-home")
    monkeypatch.setenv("XDG_CONFIG_HOME", str(home / "config"))
    monkeypatch.setenv("PI_CODING_AGENT_DIR", str(home / "pi-agent"))
    monkeypatch.delenv("NO_COLOR", raising=False)
    # Tables fit $COLUMNS when it is set: pytest-xdist's workers get COLUMNS=80, a terminal its own width.
    monkeypatch.delenv("COLUMNS", raising=False)
    for name in list(os.environ):
        if name.startswith("BATCHCOMPACT_") and not name.startswith(("BATCHCOMPACT_DEBUG", "BATCHCOMPACT_TEST",
                                                                      "BATCHCOMPACT_CRASH")):
            monkeypatch.delenv(name)
    # Token counts are remembered in a cache of the test session, never the user's.
    monkeypatch.setenv("BATCHCOMPACT_TOKEN_CACHE", str(_token_cache_file(tmp_path_factory)))
    # So are report caches (usage parts, snapshots, stored reports): a report stored by another checkout's
    # code under the same version must never be replayed into a test.
    monkeypatch.setenv("XDG_CACHE_HOME", str(_token_cache_file(tmp_path_factory).parent / "xdg-cache"))
    # And the default run state: a test never takes (or waits on) the user's run lock.
    monkeypatch.setenv("XDG_STATE_HOME", str(_token_cache_file(tmp_path_factory).parent / "xdg-state"))
    from batchcompact.token_cache import reset_shared_cache

    reset_shared_cache()


_TOKEN_CACHE: list = []


def _token_cache_file(factory) -> object:
    if not _TOKEN_CACHE:
        _TOKEN_CACHE.append(factory.mktemp("token-cache") / "counts.sqlite")
    return _TOKEN_CACHE[0]


# --- running in parallel (pytest-xdist: `-n auto --dist loadfile`, pyproject's addopts) ------------------
# Each file runs on one worker, so a module-scoped fixture (a judge's recording, a copied corpus) is set up
# once. These files share a worker with each other: one Ray at a time on the machine (a local instance and
# a two-node cluster cost more started side by side than they save), and the two Copilot judges, which
# unpack the CLI into one cache folder beside its npm install.
SHARED_WORKER = {
    "test_executor_ray.py": "ray",
    "test_executor_ray_cluster.py": "ray",
    "test_judge_copilot.py": "copilot",
    "test_judge_copilot_compaction.py": "copilot",
}
# The files that take longest (measured with `--durations`; docs/performance.md, "The test suite's time"), longest first: sent to the workers
# before the others, so no long file starts last. Only an order: a file missing here costs time, not a test.
SLOW_FILES = (
    "test_judge_opencode.py",  # OpenCode and Kilo, ~160 s on one core
    "test_judge_openclaw.py",  # five turns of the real OpenClaw, ~145 s
    "test_judge_report_agents.py",  # OpenCode, Kilo, Gemini CLI, Qwen Code, Codex, ~135 s
    "test_bench.py",  # every bench stage at its smallest size, ~80 s, and same_behaviour
    "test_providers.py",
    "test_executor_ray_cluster.py",
    "test_executor_ray.py",
    "test_judge_qwen.py",
    "test_judge_pi.py",
    "test_judge_omp.py",  # oh-my-pi's modules, CLI turns and thresholds, ~35 s
    "test_fuzz.py",  # the fuzzer's 45 s of cases
    "test_faults.py",
    "test_judge_vibe.py",
    "test_judge_cline.py",
    "test_judge_codex.py",
    "test_run_crash.py",
    "test_judge_gemini.py",
    "test_output_files.py",
    "test_eval.py",
)


def work_unit(nodeid: str) -> str:
    """What runs on one worker with the test `nodeid`: its file, or its `SHARED_WORKER` group."""
    path = nodeid.split("::", 1)[0]
    return SHARED_WORKER.get(Path(path).name, path)


def slow_first(items: list[pytest.Item]) -> None:
    """Sort `items` (each file's tests kept together, in order) so `SLOW_FILES` come first, longest first."""
    rank = {name: index for index, name in enumerate(SLOW_FILES)}
    order = {item.nodeid: index for index, item in enumerate(items)}

    def key(item: pytest.Item) -> tuple[int, int]:
        return rank.get(Path(item.nodeid.split("::", 1)[0]).name, len(rank)), order[item.nodeid]

    items.sort(key=key)


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    if hasattr(config, "workerinput"):  # an xdist worker: the controller sends the work in this order
        slow_first(items)


@pytest.hookimpl(optionalhook=True)
def pytest_xdist_make_scheduler(config: pytest.Config, log):
    """`--dist loadfile`, with `SHARED_WORKER`'s files as one unit and the units in collection order."""
    if config.getoption("dist") != "loadfile":
        return None
    from xdist.scheduler import LoadFileScheduling

    class SharedWorkerScheduling(LoadFileScheduling):
        def _split_scope(self, nodeid: str) -> str:
            return work_unit(nodeid)

    config.option.loadscopereorder = False  # the workers' collection is already in the order to send
    return SharedWorkerScheduling(config, log)
