"""Where the agents keep their sessions: the folders `report`, `plan`, `run` and `validate` read when
they are given no path. Standard library only (it runs before any command's heavy imports).

Rules (the agents' own, and ccusage's for Claude and Codex):
- Claude Code: `$CLAUDE_CONFIG_DIR` (comma-separated; each a config folder holding `projects/`, or the
  `projects/` folder itself) REPLACES the defaults; without it `$XDG_CONFIG_HOME/claude/projects`
  (`~/.config/claude/projects`) and `~/.claude/projects`.
- Codex: `$CODEX_HOME` (comma-separated) or `~/.codex`; in each, `sessions/` and `archived_sessions/`.
- pi: `$PI_CODING_AGENT_DIR` (pi's agent folder) or `~/.pi/agent`, then its `sessions/`; ccusage's
  `$PI_AGENT_DIR` (comma-separated sessions folders) is read too.
- pi's descendants, same layout under their own agent folder: Atomic `$ATOMIC_CODING_AGENT_DIR` or
  `~/.atomic/agent`, indusagi `$INDUSAGI_CODING_AGENT_DIR` or `~/.indusagi/agent`, oh-my-pi
  `~/.omp/agent`.
Only folders that exist are returned, each once (by resolved path), in the order above.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path

from batchcompact.errors import UsageError

# agent, env var naming its agent folder, default agent folder under HOME
PI_FAMILY = (
    ("pi", "PI_CODING_AGENT_DIR", ".pi/agent"),
    ("atomic", "ATOMIC_CODING_AGENT_DIR", ".atomic/agent"),
    ("indusagi", "INDUSAGI_CODING_AGENT_DIR", ".indusagi/agent"),
    ("oh-my-pi", None, ".omp/agent"),
)


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


def _split(value: str) -> list[str]:
    return [part.strip() for part in value.split(",") if part.strip()]


def _expand(raw: str, home: Path) -> Path:
    if raw == "~":
        return home
    if raw.startswith("~/"):
        return home / raw[2:]
    return Path(raw)


def discover_sources(env: Mapping[str, str] | None = None, home: str | Path | None = None) -> list[SessionSource]:
    """Every agent session folder present on this machine (see the module docstring for the rules)."""
    env = os.environ if env is None else env
    home = Path(home) if home is not None else Path(env.get("HOME") or os.path.expanduser("~"))
    found: list[SessionSource] = []

    def add(agent: str, path: Path, origin: str) -> None:
        if path.is_dir():
            found.append(SessionSource(agent, path, origin))

    claude_dirs = env.get("CLAUDE_CONFIG_DIR", "")
    if _split(claude_dirs):
        for raw in _split(claude_dirs):
            path = _expand(raw, home)
            add("claude", path if path.name == "projects" else path / "projects", "CLAUDE_CONFIG_DIR")
    else:
        xdg = Path(env["XDG_CONFIG_HOME"]) if env.get("XDG_CONFIG_HOME") else home / ".config"
        add("claude", xdg / "claude" / "projects", "default")
        add("claude", home / ".claude" / "projects", "default")

    codex_homes = [(_expand(raw, home), "CODEX_HOME") for raw in _split(env.get("CODEX_HOME", ""))]
    for codex_home, origin in codex_homes or [(home / ".codex", "default")]:
        add("codex", codex_home / "sessions", origin)
        add("codex", codex_home / "archived_sessions", origin)

    for agent, variable, default in PI_FAMILY:
        configured = env.get(variable, "").strip() if variable else ""
        agent_dir = _expand(configured, home) if configured else home / default
        add(agent, agent_dir / "sessions", variable if configured else "default")
    for raw in _split(env.get("PI_AGENT_DIR", "")):
        add("pi", _expand(raw, home), "PI_AGENT_DIR")

    unique: list[SessionSource] = []
    seen: set[Path] = set()
    for source in found:
        key = source.path.resolve()
        if key not in seen:
            seen.add(key)
            unique.append(source)
    return unique


def paths_or_discovered(paths, command: str, echo=None) -> tuple[list[str], list[SessionSource]]:
    """`paths` as given, or, when empty, every discovered session folder (named through `echo`).

    Raises UsageError naming the places looked at when nothing is given and nothing is found.
    """
    if paths:
        return [str(p) for p in paths], []
    sources = discover_sources()
    if not sources:
        raise UsageError(
            f"{command}: no PATHS given and no agent sessions found in the usual places "
            "(~/.claude/projects, ~/.config/claude/projects, $CLAUDE_CONFIG_DIR, ~/.codex/sessions, $CODEX_HOME, "
            "~/.pi/agent/sessions, $PI_CODING_AGENT_DIR, ~/.atomic/agent/sessions, ~/.indusagi/agent/sessions, "
            "~/.omp/agent/sessions); pass the folders to read"
        )
    if echo is not None:
        for source in sources:
            echo(f"reading {source.describe()}")
    return [str(s.path) for s in sources], sources


def cli_paths(paths, command: str) -> list[str]:
    """For a command line: `paths`, or the discovered folders, each named on stderr unless --quiet."""
    import click

    ctx = click.get_current_context(silent=True)
    quiet = bool(ctx and (ctx.find_root().obj or {}).get("quiet"))
    found, _ = paths_or_discovered(paths, command, None if quiet else lambda m: click.echo(m, err=True))
    return found
