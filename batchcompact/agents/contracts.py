"""What each lazy reference of an `Agent` (agents/spec.py) must be, as Protocols, and the typed way to resolve it.

The registry holds an agent's code as `"module:attribute"` strings (`load` resolves one to whatever it names, so the
type checker cannot see through it). Shared code resolves them here instead, and gets the contract the agent's
module keeps (the module docstring of agents/spec.py states each in words):

- `SessionReader` (`Agent.reader`), `DigestReader` (the reader of an agent with `read_appended`) and
  `AppendedReader` (`Agent.read_appended`): a path in, a `Session` out.
- `Writer` (`Agent.writer`, a module): `build_compaction` and `verify`; `HandoffWriter`, one that can also start a
  new session from a handoff document (`build_handoff`).
- `Store` (`Agent.store`, a module): a database of sessions, each addressed as `<database>#<session id>`.
- `TriggerRule` (`Agent.trigger`), `SettingsHook` (`Agent.settings`), `Validator` (`Agent.validate`).

The report's `Agent.usage` (rows appended to `adapters/common`'s `UsageRows`) is `UsageReader` in
adapters/common/usage_reader.py: its argument types live above this layer.

This module imports nothing of the package at run time but the spec: the types it names are the core's,
imported for the checker only.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from pathlib import Path
from typing import TYPE_CHECKING, Protocol

from batchcompact.agents.spec import Agent, load

if TYPE_CHECKING:
    from batchcompact.core.entries import Problem
    from batchcompact.core.jsontypes import JsonObject
    from batchcompact.core.planner import CompactionPlan, CompactionSettings
    from batchcompact.core.session import Session
    from batchcompact.core.triggers import Trigger


class SessionReader(Protocol):
    """`reader(path) -> Session`: never raises on bad content (the problems go on the Session)."""

    def __call__(self, path: str | Path, /) -> Session: ...


class DigestReader(Protocol):
    """The reader of an agent with `read_appended`: with `digest`, the Session records the SHA-256 of the bytes
    it parsed (the file's fingerprint for `run`)."""

    def __call__(self, path: str | Path, /, *, digest: bool = False) -> Session: ...


class AppendedReader(Protocol):
    """`read_appended(original, path, size, sha256, *, prefix_checked)`: the written file read by parsing only the
    lines appended after the `size` bytes that were `original`; None when it must be read whole."""

    def __call__(self, original: Session, path: str | Path, size: int, sha256: str, /, *,
                 prefix_checked: bool = False) -> Session | None: ...


class Writer(Protocol):
    """An agent's `write.py`: the lines a compaction adds, and the check of the file written with them."""

    def build_compaction(self, session: Session, plan: CompactionPlan, summary: str, /, *,
                         usage: JsonObject | None, now_iso: str, from_hook: bool = False) -> list[JsonObject]:
        """The new lines (entries) that record the compaction `plan` with `summary`."""
        ...

    def verify(self, original: Session, written: Session, plan: CompactionPlan, /) -> list[str]:
        """What is wrong with the `written` session (empty: good)."""
        ...


class HandoffWriter(Writer, Protocol):
    """A writer that can also start a new session holding a handoff document (`--strategy handoff`)."""

    def build_handoff(self, session: Session, plan: CompactionPlan, document: str, /, *, usage: JsonObject | None,
                      now_iso: str, parent: str) -> tuple[str, list[JsonObject]]:
        """(the new session's id, its lines)."""
        ...

    def handoff_file_suffix(self, session: Session, plan: CompactionPlan, /) -> str: ...

    def verify_handoff(self, written: Session, parent: str, document: str, /) -> list[str]: ...


class Store(Protocol):
    """An agent's `store.py`: sessions kept inside a database (`Agent.store_names`), each `<database>#<id>`."""

    def session_ids(self, db: str | Path, /) -> list[str]:
        """The sessions the database holds."""
        ...

    def fingerprint(self, path: str | Path, /) -> tuple[int, int, str]:
        """(size, mtime_ns, sha256) of one session's rows."""
        ...

    def write_session(self, session: Session, lines: list[JsonObject], target: str | Path,
                      verify: Callable[[Session], list[str]] | None, /, *, in_place: bool, backup: bool,
                      expect: tuple[int, str]) -> str:
        """Record `lines` for the session in one transaction (`verify(written session)` runs before it commits);
        the output path. `expect`: the (size, sha256) the session was read with."""
        ...

    def copy_session(self, source: str | Path, target: str | Path, /) -> None:
        """An unchanged session to --output-dir."""
        ...


class TriggerRule(Protocol):
    """`Agent.trigger`: the agent's own auto-compaction point (core/triggers.py has the generic rule)."""

    def __call__(self, *, messages: Iterable[JsonObject], recorded_window: int | None, table_window: int | None,
                 max_output_tokens: int | None, override_window: int | None, reserve_tokens: int,
                 agent_limits: JsonObject | None) -> Trigger: ...


class SettingsHook(Protocol):
    """`Agent.settings`: the agent's own compaction settings applied to those nobody set; (settings, why the
    agent's settings disable compaction of this session, or None)."""

    def __call__(self, session: Session, settings: CompactionSettings, fields: tuple[str, ...], /
                 ) -> tuple[CompactionSettings, str | None]: ...


class Validator(Protocol):
    """`Agent.validate`: the extra checks `validate` runs on a session (a JSON Schema)."""

    def __call__(self, session: Session, /) -> list[Problem]: ...


# The typed resolvers. `load` gives `Any` (a name looked up at run time); each answer below is the contract the
# declaration's field promises, which tests/test_contracts.py checks against every registered agent.

def reader(agent: Agent) -> SessionReader:
    """The agent's `reader` (the agent reads sessions: `agent.reader` is set)."""
    return load(str(agent.reader))


def digest_reader(agent: Agent) -> DigestReader:
    """The reader of an agent with `read_appended`, which takes `digest=True`."""
    return load(str(agent.reader))


def appended_reader(agent: Agent) -> AppendedReader:
    return load(str(agent.read_appended))


def writer(agent: Agent) -> Writer:
    """The agent's `write.py` (the agent is compactable: `agent.writer` is set)."""
    return agent.writer_module()


def handoff_writer(agent: Agent) -> HandoffWriter | None:
    """The agent's writer when it can start a new session from a handoff document, else None."""
    module = agent.writer_module()
    return module if hasattr(module, "build_handoff") else None


def store(agent: Agent) -> Store:
    """The agent's `store.py` (the agent keeps sessions in a database: `agent.store` is set)."""
    return load(str(agent.store))


def trigger(agent: Agent) -> TriggerRule:
    return load(agent.trigger)


def settings(agent: Agent) -> SettingsHook:
    return load(str(agent.settings))


def validator(agent: Agent) -> Validator:
    return load(str(agent.validate))
