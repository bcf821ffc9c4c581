"""Which files the report reads and which agent's `usage` reader gets each (the registry's rules).

Standard library only: the warm report path walks folders with it before anything heavy is imported.
How a file finds its agent (`detect.py`), first rule that applies:
1. `compactions*.parquet` -> batchcompact's run report reader;
2. an agent's `files` rules claim its name and place (JSON documents, SQLite databases), or one of the
   agent's `homes` folders is above it (`Agent.claims`);
3. for JSON lines, the first lines: each agent's `detect_line`, in the registry's order
   (formats/detect.py), then the whole-file rules (`detect_file`).
The walk (files.py) takes every file ending in a registered agent's `suffixes` and every file an agent
claims by name (rule 2); nothing else is opened.
"""

from __future__ import annotations

import os

from batchcompact.agents import AGENTS, Agent, Files, names

# pi's descendants write pi's format (pi's reader reads them, its rows say `pi`); `--agent atomic`
# reads their places and selects pi's rows.
PI_FAMILY = ("atomic", "indusagi", "oh-my-pi")


def agent_names() -> tuple[str, ...]:
    """Every name `--agent` accepts: the registered agents and the labels of their places."""
    out = list(names())
    for agent in AGENTS:
        for place in agent.places:
            if place.label and place.label not in out:
                out.append(place.label)
    return tuple(out)


def row_agents(selected: tuple[str, ...]) -> tuple[str, ...]:
    """The row `agent` values that `--agent` names select (a place label selects its agent's rows)."""
    out = list(selected)
    for agent in AGENTS:
        labels = {place.label for place in agent.places if place.label}
        if labels & set(selected) and agent.name not in out:
            out.append(agent.name)
    return tuple(out)


def _split_folders(folder: str) -> tuple[str, ...]:
    return tuple(p for p in folder.replace("\\", "/").split("/") if p)


def claim(path: str) -> tuple[Agent, Files] | None:
    """(agent, rule) when an agent claims `path` by its name and place (rule 2), else None."""
    folder, name = os.path.split(path)
    folders = _split_folders(folder)
    for agent in AGENTS:
        if agent.files or agent.homes:
            rule = agent.claims(name, folders)
            if rule is not None:
                return agent, rule
    return None


def claimed_by(path: str) -> Agent | None:
    found = claim(path)
    return found[0] if found else None


def claims_name(name: str, folder: str) -> bool:
    """Whether some agent's `files` rules claim a file that is not one of the session suffixes."""
    return claim(os.path.join(folder, name)) is not None


def is_sqlite(path: str) -> bool:
    """A database source: its key covers its `-wal` file too."""
    found = claim(path)
    return bool(found and found[1].sqlite)
