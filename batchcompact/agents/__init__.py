"""The agent registry: one `Agent` (batchcompact/agents/spec.py) per transcript format, in a fixed order.

Everything that depends on which agent wrote a file goes through here: detection (`formats/detect.py`,
`report/detect.py`), reading and writing (`pipeline/planning.py`, `pipeline/outcome.py`), the report's
usage extraction (`report/extract_rows.py`), discovery (`discover.py`), presets (`cli/config.py`), the
built-in summarizer's tool table (`summarize/builtin_tools.py`) and the auto-compaction trigger
(`pipeline/planning.py` → the agent's `trigger.py`). Adding an agent is one folder under
`batchcompact/agents/` defining `AGENT`, its code in `batchcompact/adapters/<name>/` named by `AGENT`'s lazy
references, and one `register` line below (docs/architecture.md, "Adding an agent").

Order matters twice: detection asks the agents in this order (the first whose rule matches a line
wins), and discovery lists their folders in this order. Importing this module imports only the
standard library and the small agent folders; every part with code is loaded on first use.
"""

from __future__ import annotations

from collections.abc import Mapping

from batchcompact.agents import (
    amp,
    buzz,
    claude,
    cline,
    codebuff,
    codex,
    copilot,
    devin,
    droid,
    gemini,
    goose,
    grok,
    hermes,
    kilo,
    kimi,
    muse,
    openclaw,
    opencode,
    pi,
    qwen,
    rovo,
    science,
    vibe,
    zcode,
)
from batchcompact.agents.spec import Agent, Files, Place, load

__all__ = [
    "AGENTS",
    "Agent",
    "Files",
    "Place",
    "describe",
    "file_detectors",
    "file_of",
    "file_tools",
    "find",
    "get",
    "load",
    "names",
    "presets",
    "register",
    "session_suffixes",
    "settings_fields",
    "store_agent",
    "store_database",
    "tool_table",
]

AGENTS: list[Agent] = []  # registration order; mutated in place so every importer sees new agents
_BY_NAME: dict[str, Agent] = {}
_TOOLS: dict[str, str] = {}
_FILE_TOOLS: dict[str, tuple[str, tuple[str, ...]]] = {}
_SUFFIXES: list[tuple[str, ...]] = []  # the cached union (one tuple), cleared by register


def register(agent: Agent, before: str | None = None) -> Agent:
    """Add an agent after the others (or just `before` the named one: its line rule must be asked first).
    A name (or a preset name) already taken is an error."""
    if agent.name in _BY_NAME or agent.name == "batchcompact":
        raise ValueError(f"agent {agent.name!r} is already registered")
    taken = set(presets())
    clash = taken & set(agent.presets)
    if clash:
        raise ValueError(f"agent {agent.name!r}: presets {sorted(clash)} already belong to another agent")
    if before is not None:
        AGENTS.insert(AGENTS.index(get(before)), agent)
    else:
        AGENTS.append(agent)
    _BY_NAME[agent.name] = agent
    _TOOLS.clear()
    _FILE_TOOLS.clear()
    _SUFFIXES.clear()
    return agent


def get(name: str) -> Agent:
    """The agent of a format name; KeyError names the known ones."""
    try:
        return _BY_NAME[name]
    except KeyError:
        raise KeyError(f"unknown agent {name!r}; known: {', '.join(names())}") from None


def find(name: str | None) -> Agent | None:
    """The agent of a format name, or None."""
    return _BY_NAME.get(name) if name else None


def names() -> tuple[str, ...]:
    return tuple(a.name for a in AGENTS)


def describe(agents: list[Agent] | None = None) -> str:
    """ "pi, Claude Code or Codex": the display names, for messages."""
    shown = [a.display_name for a in (AGENTS if agents is None else agents)]
    return shown[0] if len(shown) == 1 else ", ".join(shown[:-1]) + " or " + shown[-1]


def tool_table() -> Mapping[str, str]:
    """Tool name (lower case) -> action shape over every agent; an earlier agent's entry wins a clash.
    Messages do not say which agent wrote them, so the built-in summarizer reads one table."""
    if not _TOOLS:
        for agent in reversed(AGENTS):
            _TOOLS.update(agent.tools)
    return _TOOLS


def file_tools() -> Mapping[str, tuple[str, tuple[str, ...]]]:
    """Every agent's file tools (`Agent.file_tools`) in one table, for `core/fileops.py`: a tool two agents
    declare with the same kind reads the argument names of both (the earlier agent's first), else the earlier
    agent's entry wins. Messages do not say which agent wrote them."""
    if not _FILE_TOOLS:
        for agent in AGENTS:
            for name, (kind, names) in agent.file_tools.items():
                seen = _FILE_TOOLS.get(name)
                if seen is None:
                    _FILE_TOOLS[name] = (kind, names)
                elif seen[0] == kind:
                    _FILE_TOOLS[name] = (kind, tuple(dict.fromkeys((*seen[1], *names))))
    return _FILE_TOOLS


def session_suffixes() -> tuple[str, ...]:
    """Every agent's session file suffixes, each once, in registry order (what folder walks look for)."""
    if not _SUFFIXES:
        _SUFFIXES.append(tuple(dict.fromkeys(suffix for agent in AGENTS for suffix in agent.suffixes)))
    return _SUFFIXES[0]


def file_detectors() -> list[Agent]:
    """The agents with a whole-file rule (`detect_file`), in order."""
    return [agent for agent in AGENTS if agent.detect_file]


def store_agent(path: object) -> Agent | None:
    """The agent whose database holds the session `path` (`<database>#<session id>`), or None."""
    text = str(path)
    if "#" not in text:
        return None
    return next((agent for agent in AGENTS if agent.owns_store(text)), None)


def file_of(path: object) -> str:
    """The file a session lives in: the database of `<database>#<session id>`, else the path itself."""
    text = str(path)
    return text.rpartition("#")[0] if store_agent(text) is not None else text


def store_database(name: str) -> Agent | None:
    """The agent whose session database a file of this name is, or None."""
    return next((agent for agent in AGENTS if agent.store and name in agent.store_names), None)


def settings_fields() -> tuple[str, ...]:
    """The planner settings some agent's own settings files may set (`Agent.settings_fields`), each once, in
    registry order."""
    return tuple(dict.fromkeys(name for agent in AGENTS for name in agent.settings_fields))


def product_names() -> dict[str, str]:
    """An agent's product name, as its one preset spells it (`claude-code`, `gemini-cli`, `qwen-code`,
    `copilot-cli`) -> the agent's name (`claude`): every option that takes an agent takes both spellings."""
    out: dict[str, str] = {}
    for agent in AGENTS:
        longer = [name for name in agent.presets if name.startswith(agent.name + "-")]
        if agent.name not in agent.presets and len(longer) == 1:
            out[longer[0]] = agent.name
    return out


def presets() -> dict[str, Mapping[str, object]]:
    """Every agent's presets by name (`--preset`)."""
    out: dict[str, Mapping[str, object]] = {}
    for agent in AGENTS:
        out.update(agent.presets)
    return out


register(pi.AGENT)
register(claude.AGENT)
register(codex.AGENT)
register(gemini.AGENT)
# The other agents, in the order their line rules are asked: OpenCode, Kilo, Copilot CLI and OpenClaw are
# compacted too (sessions in a database, Copilot's event logs), the rest are report-only (batchcompact reads
# their usage, it does not compact them); Copilot CLI's rules are asked before those of the agents after it.
for _agent in (opencode, kilo, copilot, kimi, openclaw, droid, goose, amp, codebuff, grok, hermes, zcode,
               cline, rovo, devin, vibe, muse, buzz, science):
    register(_agent.AGENT)
register(qwen.AGENT, before="claude")  # its records would pass Claude Code's line rule
