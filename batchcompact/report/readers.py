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

import fnmatch
import os
import re

from batchcompact.agents import AGENTS, Agent, Files, names

# The agent of the rows read from batchcompact's own run reports (`compactions-*.parquet`): an `--agent` name
# with no places of its own (the reports are where `run --report-dir` wrote them).
RUN_REPORTS = "batchcompact"


def agent_names() -> tuple[str, ...]:
    """Every name `report --agent` (and its alias `--source`) accepts: the registered agents, the labels of
    their places, and RUN_REPORTS."""
    out = list(names())
    for agent in AGENTS:
        for place in agent.places:
            if place.label and place.label not in out:
                out.append(place.label)
    return (*out, RUN_REPORTS)


def place_agents(selected: tuple[str, ...]) -> tuple[str, ...] | None:
    """The `--agent` names whose places discovery keeps, or None (every agent's places) when they name
    none that has places (only RUN_REPORTS, or nothing)."""
    return tuple(name for name in selected if name != RUN_REPORTS) or None


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


def claim(path: str, *, loose: bool = False) -> tuple[Agent, Files] | None:
    """(agent, rule) when an agent claims `path` by its name and place (rule 2), else None. `loose`: a database
    by its name alone, for a file named explicitly (`$HERMES_HOME/state.db` in a folder of any name)."""
    folder, name = os.path.split(path)
    folders = _split_folders(folder)
    names, homes = _claim_index()
    if names.match(name) is None and homes.isdisjoint(folders):
        return None  # no agent's rule can claim it (most files: every agent's rules took ~50 µs to say so)
    return claim_by_rules(name, folders, loose=loose)


def claim_by_rules(name: str, folders: tuple[str, ...], *, loose: bool = False) -> tuple[Agent, Files] | None:
    """`claim` of a file `name` in `folders` (outermost first), trying every agent's rules in turn."""
    for agent in AGENTS:
        if agent.files or agent.homes:
            rule = agent.claims(name, folders)
            if rule is not None:
                return agent, rule
    if loose:
        for agent in AGENTS:
            for rule in agent.files:
                if rule.sqlite and rule.under and rule.match_name(name):
                    return agent, rule
    return None


def claimed_by(path: str, *, loose: bool = False) -> Agent | None:
    found = claim(path, loose=loose)
    return found[0] if found else None


def claims_name(name: str, folder: str) -> bool:
    """Whether some agent's `files` rules claim a file that is not one of the session suffixes (the walk
    asks this for every such file; `claim` asks its index first)."""
    return claim(os.path.join(folder, name)) is not None


_CLAIMS: dict[tuple, tuple[re.Pattern, frozenset[str]]] = {}


def _claim_index() -> tuple[re.Pattern, frozenset[str]]:
    """(one regular expression of every agent's `files` name patterns, every agent's `homes` folders),
    cached per registry state: a file whose name matches no pattern and that lies in no home folder is
    claimed by no agent (`claim` answers that without trying each agent's rules)."""
    key = tuple(id(agent) for agent in AGENTS)
    found = _CLAIMS.get(key)
    if found is None:
        patterns = [p for agent in AGENTS for rule in agent.files for p in rule.names]
        pattern = re.compile("|".join(f"(?:{fnmatch.translate(p)})" for p in patterns) or "(?!)")
        found = pattern, frozenset(home for agent in AGENTS for home in agent.homes)
        _CLAIMS.clear()
        _CLAIMS[key] = found
    return found


def is_sqlite(path: str) -> bool:
    """A database source: its key covers its `-wal` file too."""
    found = claim(path, loose=True)
    return bool(found and found[1].sqlite)
