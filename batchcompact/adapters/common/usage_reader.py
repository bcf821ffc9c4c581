"""The contract of an agent's `Agent.usage` reference (its `report.py`'s reader), and the typed way to resolve it.

agents/contracts.py types an agent's other references; this one is here because its arguments, `UsageRows` and
`ExtractStats`, live in this folder, above the agents' layer.
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Protocol

from batchcompact.agents.spec import Agent, load

if TYPE_CHECKING:
    from batchcompact.adapters.common.lines import ExtractStats
    from batchcompact.adapters.common.usage_rows import UsageRows


class UsageReader(Protocol):
    """`usage(path, rows, stats)`: appends every usage row of the file to `rows` and says what it saw in `stats`
    (lines, warnings, a refusal); never raises for bad content."""

    def __call__(self, path: str | Path, rows: UsageRows, stats: ExtractStats, /) -> None: ...


def usage_reader(agent: Agent) -> UsageReader:
    """The agent's usage reader (the agent is reported: `agent.usage` is set)."""
    return load(str(agent.usage))
