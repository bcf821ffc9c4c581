"""Where the agents keep their sessions: the folders `report`, `plan`, `run` and `validate` read when
they are given no path. Standard library only (it runs before any command's heavy imports).

The places are the registered agents' (`Agent.places`, batchcompact/agents/<name>/__init__.py; each agent's
folders, the variables that replace them and their rules are in its adapter's README.md,
batchcompact/adapters/<name>/). A variable naming folders is a comma-separated list and replaces the
defaults; `$XDG_*` defaults fall back to their standard folders.
- `plan`, `run` and `validate` look only in the places of the agents whose sessions batchcompact reads
  (`Agent.reader`: pi and its descendants, Claude Code, Codex, Gemini CLI, Qwen Code, Copilot CLI, OpenCode,
  Kilo, OpenClaw): a folder of the agent's session files (`Agent.suffixes`; OpenClaw's databases are found
  in its folders), or its session database (`Agent.store_names`: `opencode.db`, `kilo.db`; each session read
  as `<db>#<id>`), never a folder of an agent with no session file suffix (OpenCode's legacy `storage/`).
- `report` looks in every agent's places, the report-only agents' included, and reads the files they name
  too (channel databases, JSON documents).
Only folders (and, for `report`, files) that exist are returned, each once (by resolved path), in the
registry's order.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path

from batchcompact.agents import AGENTS, Agent, Place
from batchcompact.errors import UsageError


@dataclass(frozen=True)
class SessionSource:
    """One folder of session files: which agent writes it and why we looked there."""

    agent: str
    path: Path
    origin: str  # "default" or the environment variable that named it

    def describe(self) -> str:
        why = "" if self.origin == "default" else f" (from ${self.origin})"
        return f"{self.agent}: {self.path}{why}"

    def to_dict(self) -> dict:
        return {"agent": self.agent, "path": str(self.path), "origin": self.origin}


def discover_sources(
    env: Mapping[str, str] | None = None,
    home: str | Path | None = None,
    *,
    report: bool = False,
    agents: tuple[str, ...] | None = None,
) -> list[SessionSource]:
    """Every agent session folder present on this machine: each registered agent's `places`, in the
    registry's order (see the module docstring for the rules). `report` adds the report-only agents
    (their places may be files: a database); `agents` keeps only the places of these agents (an agent's
    name, or a place's label such as `atomic`)."""
    env = os.environ if env is None else env
    home = Path(home) if home is not None else Path(env.get("HOME") or os.path.expanduser("~"))
    unique: list[SessionSource] = []
    seen: set[Path] = set()
    for label, place, agent in _places(report, agents):
        for path, origin in place.sources(env, home):
            if not _readable_source(path, agent, report):
                continue
            key = path.resolve()
            if key not in seen:
                seen.add(key)
                unique.append(SessionSource(label, path, origin))
    return unique


def _places(report: bool, agents: tuple[str, ...] | None) -> Iterator[tuple[str, Place, Agent]]:
    """(label, place) of every place discovery looks in: `report` every agent's, the other commands those
    of the agents whose sessions they read; `agents` keeps only those agents' (or labels') places."""
    for agent in AGENTS:
        if not (report or agent.reader is not None):  # plan, run and validate: agents whose sessions they read
            continue
        for place in agent.places:
            label = place.label or agent.name
            if agents is None or label in agents or agent.name in agents:
                yield label, place, agent


def _readable_source(path: Path, agent: Agent, report: bool) -> bool:
    """A place `report` reads (a folder or a file), or one the other commands read: a folder of the agent's
    session files, or its session database (OpenCode's `opencode.db`: `Agent.store_names`)."""
    if report:
        return path.is_dir() or path.is_file()
    if path.is_dir():
        return bool(agent.suffixes)  # OpenCode's legacy storage/ folder holds no file `plan` reads
    return path.name in agent.store_names and path.is_file()


PLACES_SAID = 200  # characters of places a "nothing found" line names; past them, -v lists them one per agent


def _places_said(report: bool, agents: tuple[str, ...] | None) -> str:
    """The places of the "nothing found" line: all when they are few, else each agent's first place up to
    PLACES_SAID and how to see the others (every agent's places made one line of ~3,000 characters). With
    -v each agent's places are logged, one line per place label."""
    import logging

    log = logging.getLogger(__name__)
    hints: list[str] = []
    firsts: dict[str, str] = {}  # an agent -> its first place: what the short line names
    for label, place, agent in _places(report, agents):
        said = list(place.hint())
        log.info("looked in %s: %s", label, ", ".join(said))
        hints += said
        if said:
            firsts.setdefault(agent.name, said[0])
    text = ", ".join(hints)
    if len(text) <= PLACES_SAID:
        return text
    shown: list[str] = []
    for hint in firsts.values():
        if len(", ".join([*shown, hint])) > PLACES_SAID - 60:
            break
        shown.append(hint)
    return f"{', '.join(shown)}, … {len(hints) - len(shown)} more: -v lists them"


def paths_or_discovered(
    paths: Sequence[str | Path], command: str, echo: Callable[[str], None] | None = None,
    agents: tuple[str, ...] | None = None, walk: Callable[[str], Iterator[object]] | None = None, globs: bool = True
) -> tuple[list[str], list[SessionSource]]:
    """`paths` as given, or, when empty, every discovered session folder (named through `echo`).
    `report` looks in every agent's places, the other commands in those of the agents they compact;
    `agents` keeps only those agents' places.

    Raises UsageError naming the places looked at when nothing is given and nothing is found, for an
    empty PATH (`Path("")` is the current folder: a script's unset variable must not plan or compact it),
    and for each PATH given that is missing or holds no session file (`scan.check_each_path`, with the
    command's `walk` of a folder; `globs`: the command expands them); a discovered folder with no session
    yet is no error.
    """
    if paths:
        if any(str(p) == "" for p in paths):
            raise UsageError(f"{command}: a PATH is empty (an unset shell variable?); to mean the current "
                             "folder, pass '.'")
        from batchcompact.formats.scan import check_each_path

        check_each_path(paths, walk, globs=globs)
        return [str(p) for p in paths], []
    report = command == "report"
    sources = discover_sources(report=report, agents=agents or None)
    if not sources:
        which = f"no {' or '.join(agents)} sessions found in their" if agents else "no agent sessions found in the"
        raise UsageError(
            f"{command}: no PATHS given and {which} usual places "
            f"({_places_said(report, agents or None)}); pass the folders to read"
        )
    if echo is not None:
        for source in sources:
            echo(f"reading {source.describe()}")
    return [str(s.path) for s in sources], sources


def cli_paths(paths: Sequence[str | Path], command: str) -> list[str]:
    """For a command line: `paths`, or the discovered folders, each named on stderr unless --quiet."""
    import click

    ctx = click.get_current_context(silent=True)
    quiet = bool(ctx and (ctx.find_root().obj or {}).get("quiet"))
    found, _ = paths_or_discovered(paths, command, None if quiet else lambda m: click.echo(m, err=True))
    return found
