"""Where an agent compacts on its own: the window it works in and its auto-compaction threshold.

A session is compacted (without --force) when its context tokens exceed the threshold. The default
follows the agent that wrote the session, so a default run compacts where the agent itself would: each
agent's rule is its `trigger` (`Agent.trigger`, a function in `batchcompact/adapters/<name>/trigger.py`, which
says where its constants were read). Agents without one use `window_trigger`: the model's window (price
table, or --context-window) minus reserve_tokens (pi's rule).

--threshold-tokens / --threshold-percent override every agent's rule; --context-window replaces the window.
Pure: no I/O.
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class Trigger:
    """The window a session is judged against, where it came from, and the threshold (None: unknown)."""

    window: int | None
    window_source: str
    threshold: int | None


def window_trigger(*, table_window: int | None = None, override_window: int | None = None,
                   reserve_tokens: int, **_: object) -> Trigger:
    """The generic rule: --context-window or the price table's window, minus reserve_tokens."""
    window = override_window or table_window
    source = "--context-window" if override_window else ("price table" if table_window else "unknown")
    return Trigger(window, source, window - reserve_tokens if window else None)


def chosen_window(override_window: int | None, recorded_window: int | None, recorded_source: str,
                  table_window: int | None) -> tuple[int | None, str]:
    """(window, where it came from): `--context-window`, else what the agent recorded or configured, else
    the price table's; (None, "unknown") when none is known."""
    if override_window:
        return override_window, "--context-window"
    if recorded_window:
        return recorded_window, recorded_source
    if table_window:
        return table_window, "price table"
    return None, "unknown"
