"""Where the agents keep their sessions: the folders `report`, `plan`, `run` and `validate` read when
they are given no path. Standard library only (it runs before any command's heavy imports).

Rules (the agents' own, and ccusage's; ../shared/reference/agents.md). An environment variable that names
folders is a comma-separated list and REPLACES the defaults (they are not also read).
- Claude Code: `$CLAUDE_CONFIG_DIR` (comma-separated; each a config folder holding `projects/`, or the
  `projects/` folder itself) REPLACES the defaults; without it `$XDG_CONFIG_HOME/claude/projects`
  (`~/.config/claude/projects`) and `~/.claude/projects`.
- Codex: `$CODEX_HOME` (comma-separated) or `~/.codex`; in each, `sessions/` and `archived_sessions/`.
- pi: `$PI_CODING_AGENT_DIR` (pi's agent folder) or `~/.pi/agent`, then its `sessions/`; ccusage's
  `$PI_AGENT_DIR` (comma-separated sessions folders) is read too.
- pi's descendants, same layout under their own agent folder: Atomic `$ATOMIC_CODING_AGENT_DIR` or
  `~/.atomic/agent`, indusagi `$INDUSAGI_CODING_AGENT_DIR` or `~/.indusagi/agent`, oh-my-pi
  `~/.omp/agent`.
Those are the agents batchcompact compacts; `plan`, `run` and `validate` read only them. `report` also
reads (`REPORT_ONLY`), with `<data>` = `$XDG_DATA_HOME` and `~/.local/share` (both, each once):
- OpenCode: `$OPENCODE_DATA_DIR` or `<data>/opencode`: `opencode.db`, every channel `opencode-*.db`,
  legacy `storage/message/`. Kilo: `$KILO_DATA_DIR` or `<data>/kilo`: `kilo.db`, `kilo-*.db`.
- Gemini CLI: `$GEMINI_DATA_DIR` or `~/.gemini/tmp`. Qwen Code: `$QWEN_DATA_DIR` or `~/.qwen`, its `projects/`.
- Amp: `$AMP_DATA_DIR` or `<data>/amp`, its `threads/`. Droid: `$DROID_SESSIONS_DIR` or `~/.factory/sessions`.
- Goose: `$GOOSE_PATH_ROOT/data/sessions`, else the first of `<data>/goose/sessions`,
  `~/Library/Application Support/goose/sessions`, `~/.local/share/Block/goose/sessions`.
- Copilot CLI: `$COPILOT_HOME` or `~/.copilot`, its `otel/` and `session-state/`, and the file
  `$COPILOT_OTEL_FILE_EXPORTER_PATH`.
- Kimi: `$KIMI_DATA_DIR` (or Kimi CLI's own `$KIMI_SHARE_DIR`) or `~/.kimi`, its `sessions/`; Kimi Code:
  `$KIMI_CODE_HOME` or `~/.kimi-code`, its `sessions/`.
- Codebuff: `$CODEBUFF_DATA_DIR` or `$XDG_CONFIG_HOME`/`~/.config` `manicode`, `manicode-dev`,
  `manicode-staging`, their `projects/`.
- Grok Build CLI: `$GROK_HOME` or `~/.grok`, its `sessions/`. ZCode: `$ZCODE_HOME` or `~/.zcode`: `cli/db/db.sqlite`.
- Hermes: `$HERMES_HOME` or `~/.hermes`: `state.db`. OpenClaw: `$OPENCLAW_DIR` (ccusage's) or OpenClaw's own
  `$OPENCLAW_STATE_DIR`, else `~/.openclaw`, `~/.clawdbot`, `~/.moltbot`, `~/.moldbot`.
Only places that exist are returned, each once (by resolved path), in the order above.
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


COMPACTION_AGENTS = ("claude", "codex", "pi", "atomic", "indusagi", "oh-my-pi")
# The agents `report` reads besides those (their readers: batchcompact.report.readers).
REPORT_ONLY = ("opencode", "kilo", "gemini", "qwen", "amp", "droid", "goose", "copilot", "kimi", "codebuff",
               "hermes", "openclaw", "grok", "zcode")
ALL_AGENTS = COMPACTION_AGENTS + REPORT_ONLY


def discover_sources(
    env: Mapping[str, str] | None = None,
    home: str | Path | None = None,
    *,
    agents: tuple[str, ...] | None = None,
    report: bool = False,
) -> list[SessionSource]:
    """Every agent session folder (or database, or file) present on this machine (module docstring).

    `report` adds the agents only `report` reads; `agents` keeps only those agents."""
    env = os.environ if env is None else env
    home = Path(home) if home is not None else Path(env.get("HOME") or os.path.expanduser("~"))
    found: list[SessionSource] = []

    def add(agent: str, path: Path, origin: str) -> None:
        if path.is_dir() or (agent in REPORT_ONLY and path.is_file()):
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
    if report:
        _report_only(env, home, add)

    unique: list[SessionSource] = []
    seen: set[Path] = set()
    for source in found:
        if agents is not None and source.agent not in agents:
            continue
        key = source.path.resolve()
        if key not in seen:
            seen.add(key)
            unique.append(source)
    return unique


def _roots(env: Mapping[str, str], home: Path, variable: str | None, defaults: list[Path]) -> list[tuple[Path, str]]:
    """(folder, origin) pairs: the variable's comma-separated folders, or else the defaults."""
    named = _split(env.get(variable, "")) if variable else []
    if named:
        return [(_expand(raw, home), variable) for raw in named]
    return [(path, "default") for path in defaults]


def _report_only(env: Mapping[str, str], home: Path, add) -> None:
    """The places of the agents only `report` reads (module docstring)."""
    data = [home / ".local" / "share"]
    if env.get("XDG_DATA_HOME"):
        data.insert(0, Path(env["XDG_DATA_HOME"]))
    config = [Path(env["XDG_CONFIG_HOME"])] if env.get("XDG_CONFIG_HOME") else []
    config.append(home / ".config")

    for root, origin in _roots(env, home, "OPENCODE_DATA_DIR", [d / "opencode" for d in data]):
        for db in _databases(root, "opencode"):
            add("opencode", db, origin)
        add("opencode", root / "storage" / "message", origin)
    for root, origin in _roots(env, home, "KILO_DATA_DIR", [d / "kilo" for d in data]):
        for db in _databases(root, "kilo"):
            add("kilo", db, origin)
    for root, origin in _roots(env, home, "GEMINI_DATA_DIR", [home / ".gemini" / "tmp"]):
        add("gemini", root, origin)
    for root, origin in _roots(env, home, "QWEN_DATA_DIR", [home / ".qwen"]):
        add("qwen", root / "projects", origin)
    for root, origin in _roots(env, home, "AMP_DATA_DIR", [d / "amp" for d in data]):
        add("amp", root / "threads", origin)
    for root, origin in _roots(env, home, "DROID_SESSIONS_DIR", [home / ".factory" / "sessions"]):
        add("droid", root, origin)
    if env.get("GOOSE_PATH_ROOT", "").strip():
        add("goose", _expand(env["GOOSE_PATH_ROOT"].strip(), home) / "data" / "sessions", "GOOSE_PATH_ROOT")
    else:
        goose = [d / "goose" / "sessions" for d in data]
        goose += [home / "Library" / "Application Support" / "goose" / "sessions",
                  home / ".local" / "share" / "Block" / "goose" / "sessions"]
        first = next((g for g in goose if g.is_dir()), None)
        if first is not None:
            add("goose", first, "default")
    for root, origin in _roots(env, home, "COPILOT_HOME", [home / ".copilot"]):  # Copilot's own override
        add("copilot", root / "otel", origin)
        add("copilot", root / "session-state", origin)
    if env.get("COPILOT_OTEL_FILE_EXPORTER_PATH", "").strip():
        add("copilot", _expand(env["COPILOT_OTEL_FILE_EXPORTER_PATH"].strip(), home), "COPILOT_OTEL_FILE_EXPORTER_PATH")
    kimi_variable = "KIMI_DATA_DIR" if _split(env.get("KIMI_DATA_DIR", "")) else "KIMI_SHARE_DIR"
    for root, origin in _roots(env, home, kimi_variable, [home / ".kimi"]):
        add("kimi", root / "sessions", origin)
    for root, origin in _roots(env, home, "KIMI_CODE_HOME", [home / ".kimi-code"]):
        add("kimi", root / "sessions", origin)
    channels = [c / name for c in config for name in ("manicode", "manicode-dev", "manicode-staging")]
    for root, origin in _roots(env, home, "CODEBUFF_DATA_DIR", channels):
        add("codebuff", root / "projects", origin)
    for root, origin in _roots(env, home, "GROK_HOME", [home / ".grok"]):
        add("grok", root / "sessions", origin)
    for root, origin in _roots(env, home, "ZCODE_HOME", [home / ".zcode"]):
        add("zcode", root / "cli" / "db" / "db.sqlite", origin)
    for root, origin in _roots(env, home, "HERMES_HOME", [home / ".hermes"]):
        add("hermes", root / "state.db", origin)
    claws = [home / name for name in (".openclaw", ".clawdbot", ".moltbot", ".moldbot")]
    claw_variable = "OPENCLAW_DIR" if _split(env.get("OPENCLAW_DIR", "")) else "OPENCLAW_STATE_DIR"  # OpenClaw's own
    for root, origin in _roots(env, home, claw_variable, claws):
        add("openclaw", root, origin)


def _databases(root: Path, name: str) -> list[Path]:
    """`<name>.db` and the channel databases `<name>-*.db` in `root`, in name order."""
    try:
        entries = sorted(p for p in root.iterdir() if p.name == f"{name}.db"
                         or (p.name.startswith(f"{name}-") and p.name.endswith(".db")))
    except OSError:
        return []
    return [p for p in entries if p.is_file()]


def paths_or_discovered(
    paths, command: str, echo=None, agents: tuple[str, ...] | None = None
) -> tuple[list[str], list[SessionSource]]:
    """`paths` as given, or, when empty, every discovered session folder (named through `echo`).
    `report` reads every agent's places, the other commands those of the agents they compact;
    `agents` keeps only those agents' places.

    Raises UsageError naming the places looked at when nothing is given and nothing is found.
    """
    if paths:
        return [str(p) for p in paths], []
    sources = discover_sources(agents=agents or None, report=command == "report")
    if not sources:
        more = (", ~/.gemini/tmp, ~/.qwen, ~/.local/share/opencode and the other agents' folders"
                if command == "report" else "")
        raise UsageError(
            f"{command}: no PATHS given and no agent sessions found in the usual places "
            "(~/.claude/projects, ~/.config/claude/projects, $CLAUDE_CONFIG_DIR, ~/.codex/sessions, $CODEX_HOME, "
            "~/.pi/agent/sessions, $PI_CODING_AGENT_DIR, ~/.atomic/agent/sessions, ~/.indusagi/agent/sessions, "
            f"~/.omp/agent/sessions{more}); pass the folders to read"
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
