"""`Agent`: everything batchcompact knows about one coding agent's transcripts, in one value.

An agent is a transcript *format* (its `name` is `Session.agent`, the report's `agent` and an `--agent`
choice; docs/cli.md, "One word: agent") plus where that agent keeps its sessions. Agents whose files are another agent's
format (pi's descendants Atomic, indusagi and oh-my-pi write pi sessions) are not agents of their own:
they are `Place`s of the format they write, each with its own `label`.

Every part that needs code is a lazy reference, a `"module:attribute"` string resolved on first use
(`load`), so importing the registry imports nothing beyond the standard library: `--help` stays instant,
`core/` stays pure and the report's light path never imports polars.

The contracts of the referenced callables:
- `detect_line(obj: dict, first: bool) -> bool`: one parsed JSONL line (`first`: the file's first
  non-empty line) belongs to this agent. Cheap: it runs on every probed line of every file a report walks.
- `detect_prefix(raw: bytes, kind: str | None, first: bool) -> bool`: the same for a line too long to
  probe whole, judged from its leading bytes (`kind`: its top-level `"type"` value when one was seen).
- `detect_file(path: Path, head: bytes) -> bool`: for files that are not JSON lines (one JSON document),
  judged from the path and the first 64 KB; asked only when no agent's line rule matched.
- `reader(path) -> Session`: never raises on bad content (problems go on the Session).
- `writer`: a module with `build_compaction(session, plan, summary, *, usage, now_iso, from_hook) ->
  list[dict]` (the new lines) and `verify(original, written, plan) -> list[str]` (problems; empty: good).
- `usage(path, rows: UsageRows, stats: ExtractStats) -> None`: appends the file's usage rows (the report).
- `trigger(*, messages, recorded_window, table_window, max_output_tokens, override_window,
  reserve_tokens) -> Trigger`: the agent's own auto-compaction point (its `trigger.py`; the generic
  rule and `Trigger` are `core/triggers.py`'s).
- `settings(session, settings, fields) -> (CompactionSettings, disabled reason | None)`: the agent's
  own compaction settings applied to the settings nobody set.
- `validate(session) -> list[Problem]`: extra checks `validate` runs (a JSON Schema).
- `store`: a module for sessions kept inside a database (`store_names`), each addressed as
  `<database>#<session id>`: `session_ids(db)`, `fingerprint(path) -> (size, mtime_ns, sha256)` and
  `write_session(session, lines, target, verify, *, in_place, backup) -> output path` (one transaction;
  `verify(written session) -> problems` runs before it commits).

Report-only agents (no `writer`) are read by `report` alone: `plan`, `run` and `validate` neither look in
their places nor read their files. Their files need not be JSON lines: `files` claims JSON documents and
SQLite databases by name and place (the walk takes them, detection gives them to the agent before
probing any line), `homes` claims every JSONL file under a folder of that name (an agent writing another
agent's format in its own tree).
"""

from __future__ import annotations

import fnmatch
import importlib
import os
from collections.abc import Mapping
from dataclasses import dataclass, field
from functools import cache
from pathlib import Path
from typing import Any

# Action shapes a tool call can have for the built-in summarizer (`summarize/builtin_tools.py`):
# read (path), write (path, content), edit (path, old/new text or pi's edits), multiedit (Claude's edits),
# notebookedit (path, new_source), patch (an apply_patch envelope), shell (a patch when the command is
# apply_patch, else a command), command (command/cmd), todos (TodoWrite's todos), plan (update_plan's
# plan), delegate (a sub-agent with a description).
TOOL_SHAPES = frozenset(
    {"read", "write", "edit", "multiedit", "notebookedit", "patch", "shell", "command", "todos", "plan", "delegate"}
)

FILE_TOOL_KINDS = frozenset({"read", "write", "edit", "patch", "shell"})


@cache
def load(ref: str) -> Any:  # Any: whatever the string names; agents/contracts.py gives each field's type
    """The object a `"package.module:attribute"` reference names (a module for `"package.module"`)."""
    module_name, _, attribute = ref.partition(":")
    module = importlib.import_module(module_name)
    return getattr(module, attribute) if attribute else module


@dataclass(frozen=True)
class Files:
    """Files an agent claims by name: `names` patterns (fnmatch, case-sensitive), only below one of the
    `under` folders when given ("storage/message": consecutive folders); `sqlite`: they are databases
    (one source with their `-wal` file: report/files.py `FileKey`)."""

    names: tuple[str, ...]
    under: tuple[str, ...] = ()
    sqlite: bool = False

    def match_name(self, name: str) -> bool:
        return any(fnmatch.fnmatchcase(name, pattern) for pattern in self.names)

    def match(self, name: str, folders: tuple[str, ...]) -> bool:
        return self.match_name(name) and (not self.under or any(_below(folders, under) for under in self.under))


def _below(folders: tuple[str, ...], under: str) -> bool:
    """Whether `under` ("a" or "a/b": consecutive folders) is among `folders`."""
    wanted = tuple(under.split("/"))
    size = len(wanted)
    return any(folders[i : i + size] == wanted for i in range(len(folders) - size + 1))


@dataclass(frozen=True)
class Place:
    """One kind of folder where an agent keeps sessions.

    `defaults` are agent folders under HOME (`~/.codex`) or under an XDG base (`$XDG_CONFIG_HOME/claude`,
    `$XDG_DATA_HOME/...`, with the XDG defaults when the variable is unset); `env` names a variable that
    replaces them (`env_list`: a comma-separated list). The session folders are `sessions` inside each
    agent folder (`""`: the folder itself); with `env_may_be_sessions`, a folder named in `env` whose
    name is one of `sessions` is taken as is. `label` is the agent shown for these folders (default:
    the format's name). `files` (glob patterns) are files in each agent folder to read as well (a
    database beside the session folders: `opencode.db`, `opencode-*.db`); `first`: only the first
    default folder that exists is used (an agent that moved its folder between versions).
    """

    defaults: tuple[str, ...] = ()
    env: str | None = None
    sessions: tuple[str, ...] = ("sessions",)
    env_list: bool = False
    env_may_be_sessions: bool = False
    label: str | None = None
    files: tuple[str, ...] = ()
    first: bool = False
    env_fallback: str | None = None  # a second variable, read when `env` is unset (the agent's own name for it)
    env_sessions: tuple[str, ...] | None = None  # the session folders inside a folder `env` names, if not `sessions`

    def _named(self, env: Mapping[str, str]) -> tuple[list[str], str]:
        """The folders the variables name (`env`, else `env_fallback`), and which variable named them."""
        for variable in (self.env, self.env_fallback):
            raw = env.get(variable, "") if variable else ""
            named = _split(raw) if self.env_list else ([raw.strip()] if raw.strip() else [])
            if named:
                return named, variable or "default"
        return [], "default"

    def sources(self, env: Mapping[str, str], home: Path) -> list[tuple[Path, str]]:
        """(existing folder or file, origin): the session folders, and the `files` in each agent folder."""
        out = [(path, origin) for path, origin in self.folders(env, home) if path.is_dir() or path.is_file()]
        if self.files:
            for agent_dir, origin in self.agent_dirs(env, home):
                try:
                    names = sorted(entry.name for entry in os.scandir(agent_dir) if entry.is_file())
                except OSError:
                    continue
                out.extend((agent_dir / name, origin) for name in names
                           if any(fnmatch.fnmatchcase(name, pattern) for pattern in self.files))
        return out

    def agent_dirs(self, env: Mapping[str, str], home: Path) -> list[tuple[Path, str]]:
        """(agent folder, origin): the variable's folders, else the defaults (with `first`, the first that exists)."""
        named, origin = self._named(env)
        if named:
            return [(expand_home(text, home), origin) for text in named]
        dirs = [(_default_dir(default, env, home), "default") for default in self.defaults]
        if self.first:
            dirs = [d for d in dirs if d[0].is_dir()][:1]
        return dirs

    def folders(self, env: Mapping[str, str], home: Path) -> list[tuple[Path, str]]:
        """(session folder, origin) for this place, existing or not; origin is "default" or the variable."""
        named, origin = self._named(env)
        out: list[tuple[Path, str]] = []
        if named:
            sessions = self.sessions if self.env_sessions is None else self.env_sessions
            for text in named:
                agent_dir = expand_home(text, home)
                if self.env_may_be_sessions and agent_dir.name in sessions:
                    out.append((agent_dir, origin))
                    continue
                out.extend((agent_dir / sub if sub else agent_dir, origin) for sub in sessions)
            return out
        for agent_dir, origin in self.agent_dirs(env, home):
            out.extend((agent_dir / sub if sub else agent_dir, origin) for sub in self.sessions)
        return out

    def hint(self) -> list[str]:
        """The places named in the "nothing found" message: the default folders and the variable."""
        shown = [f"{d}/{s}" if s else d for d in self.defaults for s in self.sessions[:1]]
        return shown + [f"${v}" for v in (self.env, self.env_fallback) if v]


_XDG_DEFAULTS = {"XDG_CONFIG_HOME": ".config", "XDG_DATA_HOME": ".local/share", "XDG_STATE_HOME": ".local/state"}


def _split(value: str) -> list[str]:
    return [part.strip() for part in value.split(",") if part.strip()]


def expand_home(raw: str, home: Path) -> Path:
    """`~` and `~/x` against `home` (not the process's HOME: discovery is tested with a fake one)."""
    if raw == "~":
        return home
    if raw.startswith("~/"):
        return home / raw[2:]
    return Path(raw)


def _default_dir(default: str, env: Mapping[str, str], home: Path) -> Path:
    if default.startswith("$"):
        variable, _, rest = default[1:].partition("/")
        base = Path(env[variable]) if env.get(variable) else home / _XDG_DEFAULTS.get(variable, "")
        return base / rest
    return expand_home(default, home)


@dataclass(frozen=True)
class Agent:
    """One agent's transcript format and everything batchcompact does with it (see the module docstring
    for the contracts of the references). None where the agent does not support a part: a format with
    `usage` but no `writer` is report-only; with no `reader` it is not planned or validated either.

    Two flags tell the report how to count the agent's rows (report/rules.py): `sidechain_replays`, its
    side conversations replay main-line messages under new request ids (the rows sharing a message with a
    side copy count once: Claude Code's `/btw`); `billing_blocks`, it bills in 5-hour windows, so
    `report --by block` shows its rows unless `--agent` chooses others."""

    name: str  # the agent: Session.agent, the report rows' `agent` (and `source`), an --agent choice
    display_name: str
    places: tuple[Place, ...] = ()
    detect_line: str | None = None
    detect_prefix: str | None = None
    detect_file: str | None = None
    suffixes: tuple[str, ...] = (".jsonl", ".jsonl.zst")  # session file names (folders are walked for these)
    reader: str | None = None
    writer: str | None = None
    usage: str | None = None
    files: tuple[Files, ...] = ()  # JSON documents and databases this agent's `usage` reads (report only)
    homes: tuple[str, ...] = ()  # every JSONL file below a folder of one of these names is this agent's
    # tool name (lower case) -> action shape (TOOL_SHAPES) for the built-in summarizer
    tools: Mapping[str, str] = field(default_factory=dict)
    # tool name (as called) -> (kind, argument names): the calls that read, write or edit files, for the file
    # lists a compaction records (`core/fileops.py` says what each kind reads from the arguments)
    file_tools: Mapping[str, tuple[str, tuple[str, ...]]] = field(default_factory=dict)
    trigger: str = "batchcompact.core.triggers:window_trigger"
    trigger_table_window: bool = True  # the price table's window is looked up when nothing else gives one
    trigger_max_output: bool = False  # the trigger needs the model's max output tokens (price table)
    own_threshold: bool = True  # the trigger's threshold is the agent's (False: window - reserve, pi's rule)
    presets: Mapping[str, Mapping[str, object]] = field(default_factory=dict)  # --preset name -> option values
    branch_summaries: bool = False  # abandoned branches of the session tree are summarized (pi)
    prune: bool = False  # tool-output pruning is written (oh-my-pi's, on pi files)
    settings: str | None = None  # the agent's own compaction settings
    # `settings_fields`: the planner settings the agent's own files may set (`--agent-settings`);
    # `settings_shown`: `(cwd) -> (values, files)` (`cwd` None: the global files only), the agent's global settings that `config` lists
    settings_fields: tuple[str, ...] = ()
    settings_shown: str | None = None
    validate: str | None = None  # extra checks for `validate`
    # `read_appended(original, path, size, sha256, *, prefix_checked)` ("module:function"): an appended write
    # verified by parsing only the new lines. An agent with one has a reader that takes `digest=True` and
    # records the SHA-256 of the bytes it parsed (`formats.jsonl.SourceDigest` in
    # `Session.source`), which run takes as the file's fingerprint. None: the written
    # file is read whole, and fingerprinted apart from the read.
    read_appended: str | None = None
    migrate_on_write: bool = False  # a session of an older format version is written whole in the current one
    # a database holding many sessions (OpenClaw's openclaw-agent.sqlite): each is the path "<db>#<session id>";
    # `store` is a module with `session_ids`, `fingerprint`, `write_session` (adapters/openclaw/store.py)
    store: str | None = None
    store_names: tuple[str, ...] = ()  # the database file names
    provider: str | None = None  # who serves every request when the agent's rows name no provider (its own service)
    sidechain_replays: bool = False  # side conversations replay main-line messages (the report counts them once)
    billing_blocks: bool = False  # bills in 5-hour windows: `report --by block` shows these rows by default

    def __post_init__(self) -> None:
        unknown = set(self.tools.values()) - TOOL_SHAPES
        if unknown:
            raise ValueError(f"agent {self.name!r}: unknown tool shapes {sorted(unknown)}")
        kinds = {kind for kind, _ in self.file_tools.values()} - FILE_TOOL_KINDS
        if kinds:
            raise ValueError(f"agent {self.name!r}: unknown file tool kinds {sorted(kinds)}")

    @property
    def compactable(self) -> bool:
        """batchcompact can read and rewrite this agent's sessions."""
        return self.reader is not None and self.writer is not None

    def writer_module(self) -> Any:  # Any: a module resolved by name; agents/contracts.py `writer` types it
        """The module with `build_compaction` and `verify`; None when the agent is report-only."""
        return load(self.writer) if self.writer else None

    def matches_line(self, obj: dict, first: bool) -> bool:
        return self.detect_line is not None and load(self.detect_line)(obj, first)

    def matches_prefix(self, raw: bytes, kind: str | None, first: bool) -> bool:
        return self.detect_prefix is not None and load(self.detect_prefix)(raw, kind, first)

    def claims(self, name: str, folders: tuple[str, ...]) -> Files | None:
        """The rule under which a file `name` in `folders` (outermost first) is this agent's, or None."""
        for rule in self.files:
            if rule.match(name, folders):
                return rule
        if self.homes and name.endswith(self.suffixes) and any(f in self.homes for f in folders):
            return HOME_FILES
        return None

    def owns_store(self, path: str | os.PathLike) -> bool:
        """`path` is `<one of store_names>#<session id>` (a session inside this agent's database)."""
        db, sep, session = str(path).rpartition("#")
        return bool(self.store and sep and session and os.path.basename(db) in self.store_names)

    def matches_file(self, path: Path, head: bytes) -> bool:
        return self.detect_file is not None and load(self.detect_file)(path, head)


HOME_FILES = Files(names=("*",))  # the rule `Agent.claims` answers for a file under one of its `homes`
