"""`python -m bench.fuzz --cases 10000`: mutated copies of every agent's sessions through every command.

Seeded and bounded. The seeds are every registered agent's files that the repository and
../shared/fixtures hold (`sample_sessions/`, the recorded pi / Claude Code / Codex fixtures, the other
agents' fixtures laid out in a HOME as the tests lay them out, the files under `tests/data/`, and the
Kimi Code, Grok, OpenClaw, ZCode, Buzz and Claude Science files the tests write). Each case copies one
seed (with the small files of its agent beside it, so detection sees the folder it expects), mutates the
copy once, and runs one command on it in this process (`batchcompact.cli.main`, as tests/conftest.py's
`bc` does), with a per-case timeout.

Mutations (JSON lines, JSON documents, SQLite databases): a value's type changed, the file or a line cut
short, `[]` / `null` / another value inserted, a line or a key deleted, quotes swapped, bytes that are not
UTF-8, huge numbers, impossible dates, deep nesting, duplicate ids and cyclic parent ids; in a database,
a cell's type changed, a row dropped or duplicated, the file cut or a byte flipped.

The oracle: no traceback, never exit 4 (an internal error: a bug), no hang (`--timeout` per case), an
exit code in the documented set (0, 1, 2, 3: docs/cli.md "Exit codes and errors"). A failing case is
rerun with BATCHCOMPACT_DEBUG=1 to print its traceback, and kept under `--keep DIR` to replay it. A few
cases also run as a subprocess of the installed command line (`--spot`). Prints its figures (cases per
agent and command, exit 4s, hangs, tracebacks, max RSS) and `FIGURE` lines; exits 1 when a case failed.
"""

from __future__ import annotations

import argparse
import io
import json
import os
import random
import resource
import shutil
import signal
import sqlite3
import subprocess
import sys
import tempfile
import time
import traceback
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
if str(REPO) not in sys.path:
    sys.path.insert(0, str(REPO))

SHARED_FIXTURES = Path(os.environ.get("BATCHCOMPACT_TEST_FIXTURES") or REPO.parent / "shared" / "fixtures")
DOCUMENTED_EXITS = frozenset({0, 1, 2, 3})  # 4 is a bug; 130/143/141 need a signal or a closed pipe
SEED_MAX_BYTES = 400_000  # bigger recorded sessions are left out: a case must stay well under its timeout
GROUP_FILES = 6  # files of the same agent copied beside the mutated one (detection needs their folders)

# label -> arguments after the command; {dir}: the case's folder, {file}: the mutated file, {out}: a folder
COMMANDS: dict[str, list[str]] = {
    "validate": ["validate", "{dir}", "--jobs", "1"],
    "plan": ["plan", "{dir}", "--jobs", "1", "--force", "--format", "json"],
    "run": ["run", "{dir}", "--jobs", "1", "--output-dir", "{out}", "--min-age", "0", "--force", "-q"],
    "run --strategy handoff": ["run", "{dir}", "--jobs", "1", "--output-dir", "{out}", "--min-age", "0",
                               "--force", "--strategy", "handoff", "-q"],
    "show": ["show", "{file}"],
    "show --context": ["show", "{file}", "--context"],
    "report table": ["report", "{dir}", "--jobs", "1", "--no-cache", "--timezone", "UTC"],
    "report json": ["report", "{dir}", "--jobs", "1", "--no-cache", "--timezone", "UTC", "--format", "json",
                    "--by", "session"],
    "report jsonl": ["report", "{dir}", "--jobs", "1", "--no-cache", "--timezone", "UTC", "--format", "jsonl",
                     "--by", "model"],
    "report csv": ["report", "{dir}", "--jobs", "1", "--no-cache", "--timezone", "UTC", "--format", "csv",
                   "--by", "request"],
    "report parquet": ["report", "{dir}", "--jobs", "1", "--no-cache", "--timezone", "UTC", "--format", "parquet",
                       "-o", "{out}.parquet", "--by", "day"],
    "report --html": ["report", "{dir}", "--jobs", "1", "--no-cache", "--timezone", "UTC", "--by", "block",
                      "--html", "{out}.html"],
    "eval": ["eval", "{dir}", "--jobs", "1", "--force", "--summarizer", "builtin", "--state", "{out}.sqlite",
             "--format", "json"],
}

MUTATIONS = ("type", "truncate", "insert", "delete", "quotes", "not utf-8", "huge number", "impossible date",
             "deep nesting", "duplicate id", "cyclic id")
DB_MUTATIONS = ("cell type", "drop row", "duplicate row", "truncate", "flip byte")


@dataclass(frozen=True)
class Seed:
    agent: str
    root: Path  # the folder its relative path is kept under
    rel: str
    group: tuple[str, ...]  # other files (relative to root) of the same agent copied beside it


@dataclass
class Outcome:
    code: int | None  # None: a hang or an exception out of main
    problem: str | None  # what broke the oracle, or None
    seconds: float
    stderr: str = ""


@dataclass
class Tally:
    cases: int = 0
    by_agent: Counter = field(default_factory=Counter)
    by_command: Counter = field(default_factory=Counter)
    by_mutation: Counter = field(default_factory=Counter)
    exits: Counter = field(default_factory=Counter)
    exit4: int = 0
    hangs: int = 0
    tracebacks: int = 0
    odd_exits: int = 0
    spot: int = 0
    failures: list[dict] = field(default_factory=list)
    slowest: float = 0.0


# --- the seeds ---------------------------------------------------------------------------------------------

def _write_generated(home: Path) -> None:
    """The agents' files that the tests write rather than keep (tests/agent_sessions.py and the databases of
    Buzz and Claude Science), plus the HOME of the other agents' shared fixtures."""
    tests = REPO / "tests"
    for folder in (tests, tests / "agents" / "buzz", tests / "agents" / "science"):
        if str(folder) not in sys.path:
            sys.path.insert(0, str(folder))
    import agent_sessions  # tests/agent_sessions.py: the fixtures' HOME and the generated sessions
    import buzz_archive  # tests/agents/buzz/buzz_archive.py
    import science_db  # tests/agents/science/science_db.py

    made = agent_sessions.build_home(home.parent / "generated")
    shutil.copytree(made, home, dirs_exist_ok=True, symlinks=True)
    buzz_archive.write_archive(home / ".buzz" / "archive" / "archive.db")
    science_db.write_db(home / ".claude-science" / "cs-switch-proxy" / "orgs" / "o" / "operon-cli.db")


def build_seeds(work: Path) -> list[Seed]:
    """Every file a registered agent's reader takes, labelled by the agent that detection gives it."""
    from batchcompact.report.detect import detect_usage_source

    roots: list[Path] = [REPO / "sample_sessions", REPO / "tests" / "data"]
    if SHARED_FIXTURES.is_dir():
        home = work / "seed-home"
        home.mkdir(parents=True)
        _write_generated(home)
        roots.append(home)
        for family in ("pi", "claude", "codex"):
            roots.append(SHARED_FIXTURES / family)
        roots.append(SHARED_FIXTURES / "agents")
    found: dict[tuple[Path, str], list[tuple[str, int]]] = {}
    for root in roots:
        for path in sorted(root.rglob("*")):
            if not path.is_file() or path.suffix in (".md", ".py", ".gz", ".toml") or path.name == "NOTICE":
                continue
            size = path.stat().st_size
            if size > SEED_MAX_BYTES or path.name.endswith(("-wal", "-shm")):
                continue
            try:
                agent = detect_usage_source(path)
            except Exception:  # a seed that detection cannot read is no seed (the fuzzer finds those)
                agent = None
            if agent is None or agent in ("batchcompact", "usage-export"):
                continue
            found.setdefault((root, agent), []).append((str(path.relative_to(root)), size))
    seeds: list[Seed] = []
    for (root, agent), files in sorted(found.items(), key=lambda item: (item[0][1], str(item[0][0]))):
        smallest = [rel for rel, _ in sorted(files, key=lambda f: (f[1], f[0]))]
        for rel, _ in files:
            group = tuple(r for r in smallest if r != rel)[:GROUP_FILES]
            seeds.append(Seed(agent, root, rel, group))
    return seeds


# --- the mutations -----------------------------------------------------------------------------------------

ID_KEYS = ("id", "uuid", "sessionId", "session_id", "messageId", "message_id", "callID", "call_id")
PARENT_KEYS = ("parentId", "parentUuid", "parent_id", "parentID", "parent", "logicalParentUuid")
IMPOSSIBLE_DATES = ("2026-02-30T25:61:61.000Z", "0000-00-00T00:00:00Z", "9999-99-99", "", "yesterday",
                    "2026-13-01", "-000001-01-01T00:00:00Z", "2026-01-01T00:00:00+99:99", "1e999")
HUGE_NUMBERS = ("1e999", "-1e999", "18446744073709551616", "-9223372036854775809", "1" + "0" * 400,
                "9007199254740993.5", "-0", "1e-400", "NaN", "Infinity")
ODD_VALUES = ("[]", "null", "{}", '""', "0", "-1", "true", '"x"', "[null]", '{"type": []}', "1.5")
BAD_BYTES = (b"\xff", b"\xfe\xff", b"\xc3\x28", b"\xed\xa0\x80", b"\x00", b"\xf4\x90\x80\x80", b"\x80abc")


def _paths(value, prefix=()):
    """Every (path, value) inside a JSON value, containers included."""
    yield prefix, value
    if isinstance(value, dict):
        for key, item in value.items():
            yield from _paths(item, prefix + (key,))
    elif isinstance(value, list):
        for index, item in enumerate(value):
            yield from _paths(item, prefix + (index,))


def _set(root, path, value):
    if not path:
        return value
    target = root
    for key in path[:-1]:
        target = target[key]
    target[path[-1]] = value
    return root


def _delete(root, path):
    target = root
    for key in path[:-1]:
        target = target[key]
    del target[path[-1]]
    return root


def _another_type(value, rng: random.Random):
    options = [[], {}, None, "", "text", 0, -1, 1.5, True, [value], {"value": value}, ["a", {"b": None}]]
    return rng.choice([o for o in options if type(o) is not type(value)])


def _dump(value) -> str:
    return json.dumps(value, ensure_ascii=False, separators=(",", ":"))


def _mutate_value(obj, mutation: str, rng: random.Random, ids: list[str]) -> str | None:
    """A mutated JSON text of `obj`, or None when this mutation has nothing to change in it."""
    paths = list(_paths(obj))
    inner = [p for p, _ in paths if p]
    if mutation == "type":
        path = rng.choice(inner) if inner and rng.random() < 0.9 else ()
        if path == () or not inner:
            return _dump(_another_type(obj, rng))
        _, value = next((p, v) for p, v in paths if p == path)
        if path[-1] == "type" or rng.random() < 0.3:  # the key every reader dispatches on: a list, an object
            typed = [p for p in inner if p[-1] == "type"]
            path = rng.choice(typed) if typed else path
            return _dump(_set(obj, path, rng.choice([["message"], {"a": 1}, None, 3, "", ["x", ["y"]]])))
        return _dump(_set(obj, path, _another_type(value, rng)))
    if mutation == "insert":
        containers = [p for p, v in paths if isinstance(v, dict | list)]
        path = rng.choice(containers)
        target = obj
        for key in path:
            target = target[key]
        marker = "\x00FUZZ\x00"
        if isinstance(target, dict):
            target[rng.choice(["type", "message", "content", "usage", "extra", "id"])] = marker
        else:
            target.insert(rng.randint(0, len(target)), marker)
        return _dump(obj).replace(_dump(marker), rng.choice(ODD_VALUES))
    if mutation == "delete":
        if not inner:
            return None
        return _dump(_delete(obj, rng.choice(inner)))
    if mutation == "huge number":
        numbers = [p for p, v in paths if p and isinstance(v, int | float) and not isinstance(v, bool)]
        path = rng.choice(numbers or inner or [()])
        if not path:
            return None
        marker = "\x00HUGE\x00"
        return _dump(_set(obj, path, marker)).replace(_dump(marker), rng.choice(HUGE_NUMBERS))
    if mutation == "impossible date":
        dated = [p for p, v in paths if p and isinstance(p[-1], str)
                 and any(word in p[-1].lower() for word in ("time", "date", "created", "updated", "ts"))]
        path = rng.choice(dated or inner or [()])
        if not path:
            return None
        value = rng.choice(IMPOSSIBLE_DATES + (10**18, -1, 2**63, 0.5))
        if value == "1e999":
            marker = "\x00DATE\x00"
            return _dump(_set(obj, path, marker)).replace(_dump(marker), "1e999")
        return _dump(_set(obj, path, value))
    if mutation == "deep nesting":
        depth = rng.choice((100, 1000, 5000, 100_000))
        path = rng.choice(inner or [()])
        marker = "\x00DEEP\x00"
        text = _dump(_set(obj, path, marker)) if path else _dump(marker)
        return text.replace(_dump(marker), "[" * depth + "]" * depth if rng.random() < 0.5
                            else '{"a":' * depth + "1" + "}" * depth)
    if mutation in ("duplicate id", "cyclic id"):
        keys = PARENT_KEYS if mutation == "cyclic id" else ID_KEYS
        hits = [p for p, v in paths if p and p[-1] in keys and isinstance(v, str | int | None)]
        if not hits:
            return None
        path = rng.choice(hits)
        own = next((v for p, v in paths if p == path[:-1] + ("id",) or p == path[:-1] + ("uuid",)), None)
        choice = rng.choice(ids) if ids else "x"
        if mutation == "cyclic id" and own is not None and rng.random() < 0.5:
            choice = own  # its own parent
        return _dump(_set(obj, path, choice))
    return None


def _text_mutation(data: bytes, mutation: str, rng: random.Random) -> bytes:
    """The mutations that work on the bytes whatever they hold."""
    if mutation == "truncate":
        return data[: rng.randint(0, max(len(data) - 1, 0))]
    if mutation == "quotes":
        spots = [i for i, b in enumerate(data) if b in b"\"'"]
        out = bytearray(data)
        for i in rng.sample(spots, min(len(spots), rng.choice((1, 1, 3, 50)))):
            out[i] = ord("'") if out[i] == ord('"') else ord('"')
        return bytes(out)
    if mutation == "not utf-8":
        at = rng.randint(0, len(data))
        return data[:at] + rng.choice(BAD_BYTES) + data[at:]
    raise ValueError(mutation)


def _ids(objs: list) -> list:
    return [v for obj in objs for p, v in _paths(obj) if p and p[-1] in ID_KEYS and isinstance(v, str)][:200]


def mutate_json_lines(data: bytes, mutation: str, rng: random.Random) -> bytes:
    lines = data.split(b"\n")
    if mutation in ("truncate", "quotes", "not utf-8"):
        if mutation == "truncate" and rng.random() < 0.5 and len(lines) > 1:  # one line cut short
            i = rng.randrange(len(lines))
            lines[i] = lines[i][: rng.randint(0, max(len(lines[i]) - 1, 0))]
            return b"\n".join(lines)
        if rng.random() < 0.5 and lines:  # inside one line only
            i = rng.randrange(len(lines))
            lines[i] = _text_mutation(lines[i], mutation, rng)
            return b"\n".join(lines)
        return _text_mutation(data, mutation, rng)
    if mutation == "delete" and rng.random() < 0.5 and len(lines) > 1:
        del lines[rng.randrange(len(lines))]
        return b"\n".join(lines)
    if mutation == "insert" and rng.random() < 0.4:
        lines.insert(rng.randint(0, len(lines)), rng.choice(ODD_VALUES).encode())
        return b"\n".join(lines)
    if mutation == "duplicate id" and rng.random() < 0.4 and len(lines) > 1:
        lines.insert(rng.randint(0, len(lines)), lines[rng.randrange(len(lines))])  # a whole entry twice
        return b"\n".join(lines)
    parsed = []
    for i, raw in enumerate(lines):
        try:
            parsed.append((i, json.loads(raw)))
        except ValueError:
            continue
    if not parsed:
        return _text_mutation(data, "not utf-8", rng)
    ids = _ids([obj for _, obj in parsed])
    for _ in range(8):
        i, obj = rng.choice(parsed)
        text = _mutate_value(json.loads(lines[i]), mutation, rng, ids)
        if text is not None:
            lines[i] = text.encode("utf-8", "surrogatepass")
            return b"\n".join(lines)
    return _text_mutation(data, "truncate", rng)


def mutate_json_document(data: bytes, mutation: str, rng: random.Random) -> bytes:
    if mutation in ("truncate", "quotes", "not utf-8"):
        return _text_mutation(data, mutation, rng)
    try:
        obj = json.loads(data)
    except ValueError:
        return _text_mutation(data, "not utf-8", rng)
    text = _mutate_value(obj, mutation, rng, _ids([obj]))
    return _text_mutation(data, "truncate", rng) if text is None else text.encode("utf-8", "surrogatepass")


def mutate_database(path: Path, mutation: str, rng: random.Random) -> None:
    if mutation in ("truncate", "flip byte"):
        data = bytearray(path.read_bytes())
        if mutation == "truncate":
            del data[rng.randint(0, max(len(data) - 1, 0)):]
        elif data:
            i = rng.randrange(len(data))
            data[i] ^= 1 << rng.randrange(8)
        path.write_bytes(bytes(data))
        return
    con = sqlite3.connect(path)
    try:
        tables = [r[0] for r in con.execute("SELECT name FROM sqlite_master WHERE type='table' "
                                            "AND name NOT LIKE 'sqlite_%'")]
        rng.shuffle(tables)
        for table in tables:
            rows = con.execute(f'SELECT rowid, * FROM "{table}"').fetchall()
            if not rows:
                continue
            columns = [d[0] for d in con.execute(f'SELECT * FROM "{table}" LIMIT 0').description]
            rowid = rng.choice(rows)[0]
            try:
                if mutation == "drop row":
                    con.execute(f'DELETE FROM "{table}" WHERE rowid = ?', (rowid,))
                elif mutation == "duplicate row":
                    con.execute(f'INSERT INTO "{table}" SELECT * FROM "{table}" WHERE rowid = ?', (rowid,))
                else:
                    column = rng.choice(columns)
                    value = rng.choice([None, "text", "[]", "null", "{\"type\": []}", 2**63 - 1, -1, 1.5e308,
                                        b"\xff\xfe", "2026-02-30T25:61:61Z", "[" * 5000 + "]" * 5000, 0])
                    con.execute(f'UPDATE "{table}" SET "{column}" = ? WHERE rowid = ?', (value, rowid))
            except sqlite3.DatabaseError:  # a constraint (a primary key, NOT NULL, STRICT): another table
                continue
            con.commit()
            return
    finally:
        con.close()


def mutate(path: Path, mutation: str, rng: random.Random) -> None:
    head = path.read_bytes()[:16]
    if head.startswith(b"SQLite format 3"):
        return mutate_database(path, mutation, rng)
    data = path.read_bytes()
    if path.suffix == ".json":
        path.write_bytes(mutate_json_document(data, mutation, rng))
    else:
        path.write_bytes(mutate_json_lines(data, mutation, rng))


# --- one case ----------------------------------------------------------------------------------------------

class CaseTimeout(BaseException):
    """Raised by the alarm inside a command that ran past its time (a BaseException: no `except
    Exception` in the command may take it for an error of its own)."""


def _alarm(signum, frame):
    raise CaseTimeout()


def invoke(args: list[str], timeout: float, debug: bool = False) -> Outcome:
    """`batchcompact ARGS` in this process, its output captured, stopped after `timeout` seconds."""
    from batchcompact.cli import main

    out = io.TextIOWrapper(io.BytesIO(), encoding="utf-8", errors="replace")
    err = io.TextIOWrapper(io.BytesIO(), encoding="utf-8", errors="replace")
    saved = sys.argv, sys.stdout, sys.stderr
    if debug:
        os.environ["BATCHCOMPACT_DEBUG"] = "1"
    previous = signal.signal(signal.SIGALRM, _alarm)
    started = time.perf_counter()
    code: int | None = None
    problem = None
    try:
        sys.argv, sys.stdout, sys.stderr = ["batchcompact", *args], out, err
        signal.setitimer(signal.ITIMER_REAL, timeout)
        try:
            main()
        except SystemExit as exc:
            code = exc.code if isinstance(exc.code, int) else (0 if exc.code is None else 1)
        finally:
            signal.setitimer(signal.ITIMER_REAL, 0)
    except CaseTimeout:
        problem = f"hang: no exit after {timeout:.0f} s"
    except BaseException as exc:  # noqa: BLE001 - an exception out of main is the bug we look for
        problem = f"exception out of main: {exc!r}\n{traceback.format_exc()}"
    finally:
        sys.argv, sys.stdout, sys.stderr = saved
        signal.signal(signal.SIGALRM, previous)
        os.environ.pop("BATCHCOMPACT_DEBUG", None)
    err.flush()
    stderr = err.buffer.getvalue().decode("utf-8", "replace")
    if problem is None:
        if "Traceback (most recent call last)" in stderr and not debug:
            problem = "traceback on stderr"
        elif code == 4:
            problem = "exit 4 (internal error)"
        elif code not in DOCUMENTED_EXITS:
            problem = f"exit {code}, not a documented code"
    return Outcome(code, problem, time.perf_counter() - started, stderr)


def prepare_case(seed: Seed, case_dir: Path, mutation: str, rng: random.Random) -> Path:
    """The case's folder: the seed and its group copied with their relative paths, the seed mutated."""
    data = case_dir / "in"
    for rel in (seed.rel, *seed.group):
        target = data / rel
        target.parent.mkdir(parents=True, exist_ok=True)
        shutil.copyfile(seed.root / rel, target)
    mutated = data / seed.rel
    mutate(mutated, mutation, rng)
    return mutated


def command_args(label: str, case_dir: Path, mutated: Path) -> list[str]:
    values = {"dir": str(case_dir / "in"), "file": str(mutated), "out": str(case_dir / "out")}
    return [arg.format(**values) for arg in COMMANDS[label]]


def spot_check(args: list[str], timeout: float, env: dict) -> Outcome:
    """The same command through the installed command line, in its own process."""
    started = time.perf_counter()
    try:
        done = subprocess.run([sys.executable, "-m", "batchcompact", *args], capture_output=True, text=True,
                              timeout=timeout + 30, env=env, errors="replace")
    except subprocess.TimeoutExpired:
        return Outcome(None, "hang (subprocess)", time.perf_counter() - started)
    problem = None
    if "Traceback (most recent call last)" in done.stderr:
        problem = "traceback on stderr (subprocess)"
    elif done.returncode == 4:
        problem = "exit 4 (internal error, subprocess)"
    elif done.returncode not in DOCUMENTED_EXITS:
        problem = f"exit {done.returncode}, not a documented code (subprocess)"
    return Outcome(done.returncode, problem, time.perf_counter() - started, done.stderr)


def isolate(work: Path) -> dict:
    """An empty HOME and XDG folders under `work`, and no variable that would point the commands at real
    agent folders, a model or a key; returns the environment (also set in this process)."""
    from batchcompact import agents

    for name in list(os.environ):
        if (name.startswith(("BATCHCOMPACT_", "XDG_")) or name.endswith(("_API_KEY", "_DIR", "_HOME"))
                or name in ("CODEX_HOME", "GOOSE_PATH_ROOT", "COPILOT_OTEL_FILE_EXPORTER_PATH")):
            del os.environ[name]
    for place in (p for a in agents.AGENTS for p in a.places):
        for variable in (place.env, place.env_fallback):
            if variable:
                os.environ.pop(variable, None)
    home = work / "home"
    home.mkdir(parents=True, exist_ok=True)
    os.environ.update({"HOME": str(home), "XDG_CONFIG_HOME": str(home / ".config"),
                       "XDG_CACHE_HOME": str(home / ".cache"), "XDG_STATE_HOME": str(home / ".state"),
                       "XDG_DATA_HOME": str(home / ".local" / "share"), "NO_COLOR": "1",
                       "BATCHCOMPACT_TOKEN_CACHE": "off", "TZ": "UTC", "PYTHONPATH": str(REPO)})
    return dict(os.environ)


def fuzz(cases: int, seed: int, timeout: float, spot_every: int, keep: Path | None = None,
         agents_only: set[str] | None = None, commands_only: list[str] | None = None,
         verbose: bool = False, budget: float | None = None) -> Tally:
    """Run `cases` cases (or fewer when `budget` seconds pass first); the tally of what happened."""
    work = Path(tempfile.mkdtemp(prefix="bc-fuzz-"))
    tally = Tally()
    saved_env = dict(os.environ)  # isolate() changes this process's environment: put back at the end
    try:
        env = isolate(work)
        seeds = build_seeds(work)
        by_agent: dict[str, list[Seed]] = {}
        for s in seeds:
            if agents_only is None or s.agent in agents_only:
                by_agent.setdefault(s.agent, []).append(s)
        agent_names = sorted(by_agent)
        labels = commands_only or list(COMMANDS)
        tally.seeds = len(seeds)  # type: ignore[attr-defined]
        tally.agents = agent_names  # type: ignore[attr-defined]
        started = time.perf_counter()
        for number in range(cases):
            if budget is not None and time.perf_counter() - started > budget:
                break
            rng = random.Random(seed * 1_000_003 + number)
            label = labels[number % len(labels)]
            agent = agent_names[(number // len(labels) + number) % len(agent_names)]
            chosen = rng.choice(by_agent[agent])
            case_dir = work / "case"
            shutil.rmtree(case_dir, ignore_errors=True)
            case_dir.mkdir()
            is_db = (chosen.root / chosen.rel).read_bytes()[:16].startswith(b"SQLite format 3")
            mutation = rng.choice(DB_MUTATIONS if is_db else MUTATIONS)
            mutated = prepare_case(chosen, case_dir, mutation, rng)
            pristine = case_dir.parent / "pristine"  # the case's input as the command got it, to keep
            shutil.rmtree(pristine, ignore_errors=True)
            shutil.copytree(case_dir / "in", pristine)
            args = command_args(label, case_dir, mutated)
            outcome = invoke(args, timeout)
            subprocess_run = spot_every and number % spot_every == 0
            if subprocess_run and outcome.problem is None:
                shutil.rmtree(case_dir / "in")
                shutil.copytree(pristine, case_dir / "in")
                for leftover in case_dir.glob("out*"):
                    shutil.rmtree(leftover, ignore_errors=True) if leftover.is_dir() else leftover.unlink()
                outcome = spot_check(args, timeout, env)
                tally.spot += 1
            tally.cases += 1
            tally.by_agent[agent] += 1
            tally.by_command[label] += 1
            tally.by_mutation[mutation] += 1
            tally.exits[outcome.code] += 1
            tally.slowest = max(tally.slowest, outcome.seconds)
            if verbose:
                print(f"case {number}: {agent} {chosen.rel} {mutation} | {label} -> {outcome.code} "
                      f"{outcome.seconds:.2f}s", file=sys.stderr)
            if outcome.problem is None:
                continue
            if outcome.problem.startswith("hang"):
                tally.hangs += 1
            elif "traceback" in outcome.problem or "exception" in outcome.problem:
                tally.tracebacks += 1
            elif outcome.code == 4:
                tally.exit4 += 1
            else:
                tally.odd_exits += 1
            failure = {"case": number, "seed": seed, "agent": agent, "file": chosen.rel, "mutation": mutation,
                       "command": label, "code": outcome.code, "problem": outcome.problem.splitlines()[0],
                       "stderr": outcome.stderr[-600:]}
            if outcome.code == 4:  # the traceback behind the internal error, for the report
                shutil.rmtree(case_dir / "in")
                shutil.copytree(pristine, case_dir / "in")
                again = invoke(args, timeout, debug=True)
                said = again.stderr if "Traceback" in again.stderr else (again.problem or again.stderr)
                failure["traceback"] = said[-1500:]
            if keep is not None:
                target = keep / f"case-{seed}-{number}"
                shutil.rmtree(target, ignore_errors=True)
                shutil.copytree(pristine, target / "in")
                (target / "case.json").write_text(json.dumps({**failure, "args": args}, indent=1))
            tally.failures.append(failure)
            print(f"FAIL case {number}: {agent} {chosen.rel} [{mutation}] {label}: {failure['problem']}",
                  file=sys.stderr)
    finally:
        shutil.rmtree(work, ignore_errors=True)
        os.environ.clear()
        os.environ.update(saved_env)
    return tally


def max_rss_mb() -> tuple[float, float]:
    """Peak resident memory of this process and of its largest waited-for child, in MB."""
    return (resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024,
            resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss / 1024)


def print_figures(tally: Tally, seconds: float) -> None:
    own, child = max_rss_mb()
    print(f"fuzz: {tally.cases:,} cases in {seconds:.0f} s ({tally.seeds} seed files of "  # type: ignore[attr-defined]
          f"{len(tally.agents)} agents; {tally.spot} also as a subprocess)")  # type: ignore[attr-defined]
    print(f"exit 4: {tally.exit4}   hangs: {tally.hangs}   tracebacks: {tally.tracebacks}   "
          f"undocumented exit codes: {tally.odd_exits}   slowest case: {tally.slowest:.1f} s")
    print(f"max RSS: {own:.0f} MB (the fuzzer's process), {child:.0f} MB (largest subprocess)")
    print("exit codes: " + ", ".join(f"{code}: {n:,}" for code, n in sorted(tally.exits.items(), key=str)))
    print("per agent: " + ", ".join(f"{a} {n}" for a, n in sorted(tally.by_agent.items())))
    print("per command: " + ", ".join(f"{c} {n}" for c, n in tally.by_command.items()))
    print("per mutation: " + ", ".join(f"{m} {n}" for m, n in sorted(tally.by_mutation.items())))
    from bench.figures import emit

    emit("fuzz", "cases without a traceback, exit 4 or hang", tally.cases - len(tally.failures), "cases",
         "cases run", tally.cases)
    emit("fuzz", "max RSS, in-process cases", own, "MB", None, None)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--cases", type=int, default=1000)
    parser.add_argument("--seed", type=int, default=56)
    parser.add_argument("--timeout", type=float, default=30.0, help="seconds per case before it is a hang")
    parser.add_argument("--spot", type=int, default=50, metavar="N",
                        help="every Nth case also as a subprocess of the command line (0: none)")
    parser.add_argument("--agent", action="append", default=None, help="only this agent's seeds (repeatable)")
    parser.add_argument("--command", action="append", default=None, choices=list(COMMANDS),
                        help="only this command (repeatable)")
    parser.add_argument("--keep", type=Path, default=None, help="keep each failing case's input under DIR")
    parser.add_argument("--quick", action="store_true", help="300 cases (bench --quick)")
    parser.add_argument("--verbose", action="store_true", help="one line per case on stderr")
    args = parser.parse_args(argv)
    cases = 300 if args.quick and args.cases == 1000 else args.cases
    started = time.perf_counter()
    tally = fuzz(cases, args.seed, args.timeout, args.spot, args.keep, set(args.agent) if args.agent else None,
                 args.command, args.verbose)
    print_figures(tally, time.perf_counter() - started)
    for failure in tally.failures:
        print(json.dumps(failure))
    return 1 if tally.failures else 0


if __name__ == "__main__":
    sys.exit(main())
