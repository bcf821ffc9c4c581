"""A session as read from any format: header, entries (pi v3 shape), problems and the tree."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from batchcompact.core.entries import ERROR, Entry, Problem
from batchcompact.core.jsontypes import JsonObject
from batchcompact.core.tree import SessionTree


@dataclass
class Session:
    path: str
    agent: str  # the agent whose reader read the file (its registered name)
    header: JsonObject | None
    entries: list[Entry]
    version: int | None = None
    problems: list[Problem] = field(default_factory=list)
    tree: SessionTree | None = None
    # Format-specific extras (e.g. the raw lines of a Claude/Codex transcript) live here.
    extra: dict[str, Any] = field(default_factory=dict)

    def __post_init__(self) -> None:
        if self.tree is None:
            self.tree = SessionTree(self.entries, self.path)
            self.problems.extend(self.tree.problems)

    @property
    def session_id(self) -> str | None:
        if self.header is None:
            return None
        value = self.header.get("id")
        return value if isinstance(value, str) else None

    @property
    def cwd(self) -> str | None:
        """The session's working folder: the header's `cwd`, else the first entry that records one (Claude Code's
        lines, Codex's turn context)."""
        value = (self.header or {}).get("cwd")
        if isinstance(value, str) and value:
            return value
        for entry in self.entries[:50]:
            value = entry.data.get("cwd")
            if isinstance(value, str) and value:
                return value
        return None

    @property
    def errors(self) -> list[Problem]:
        return [p for p in self.problems if p.severity == ERROR]

    @property
    def compactable(self) -> bool:
        """False when any error was found: later stages never rewrite a file they could not fully read."""
        return not self.errors

    @property
    def migrated(self) -> bool:
        return self.version is not None and self.version < 3

    def path_entries(self) -> list[Entry]:
        assert self.tree is not None
        return self.tree.path()
