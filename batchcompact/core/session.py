"""A session as read from any format: header, entries (pi v3 shape), problems and the tree.

What a reader knows beyond the entries is typed two ways. What code shared by every agent reads (the
pipeline, core, adapters/common) is a field of `Session` (`context_window`, `not_writable`, ...). What only
the agent's own adapter reads (its writer, verify, settings) is its record in `Session.extra`: a dataclass
subclass of `SessionExtra` in the adapter's folder that its reader builds (`ClaudeSessionExtra`, ...) and
its other modules read with `ClaudeSessionExtra.of(session)`. A new adapter adds its record there; core
names none of them.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Protocol, Self

from batchcompact.core.context import ContextRules, SessionContext
from batchcompact.core.entries import ERROR, Entry, Problem
from batchcompact.core.jsontypes import JsonObject
from batchcompact.core.tree import SessionTree


class SessionExtra:
    """The base of an adapter's record on `Session.extra` (see the module docstring). A subclass is a
    dataclass whose fields all have defaults: a session its reader did not build (a test's, another
    agent's) reads as the defaults, as a missing key did."""

    @classmethod
    def of(cls, session: Session) -> Self:
        """`session`'s record of this kind, or a default one when its reader put none there."""
        extra = session.extra
        return extra if isinstance(extra, cls) else cls()


class ReadDigest(Protocol):
    """What a reader consumed, hashed as it read (`formats.jsonl.SourceDigest`)."""

    @property
    def size(self) -> int: ...

    @property
    def sha256(self) -> str: ...


@dataclass
class Session:
    path: str
    agent: str  # the agent whose reader read the file (its registered name)
    header: JsonObject | None
    entries: list[Entry]
    version: int | None = None
    problems: list[Problem] = field(default_factory=list)
    tree: SessionTree | None = None
    # What the reader knows that code shared by the agents reads (the module docstring):
    context_window: int | None = None  # the window the session records (its trigger's `recorded_window`)
    agent_limits: JsonObject | None = None  # the agent's own limits, for its trigger (and its settings)
    not_writable: str | None = None  # why the file cannot be rewritten (planning skips it with this reason)
    subagent: bool = False  # a sub-agent's transcript (its parent owns the work)
    size: int | None = None  # bytes read: the appending writers' verify checks them unchanged (adapters/common)
    last_line: int = 0  # the last line read: warnings past it in the written file are the writer's
    source: ReadDigest | None = None  # the bytes read, hashed (a reader asked for a digest)
    context_rules: ContextRules | None = None  # how its agent rebuilds the context (None: pi's; core/context.py)
    # `core.context.written_context`'s result, built once for a file read back to be verified
    rebuilt_context: SessionContext | None = field(default=None, repr=False, compare=False)
    extra: SessionExtra | None = None  # the adapter's own record (the module docstring)

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
