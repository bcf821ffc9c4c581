"""The auto-compaction point of pi: the model's window (price table, or --context-window) minus reserve_tokens
(pi's rule).

Pure: no I/O (`core/triggers.py` holds the shared `Trigger` and rules)."""

from __future__ import annotations

from typing import Any

from batchcompact.core.triggers import Trigger, window_trigger


def pi_trigger(*, recorded_window: int | None = None, override_window: int | None = None, **kwargs: Any) -> Trigger:
    """pi's: the window the session recorded, else the generic rule (window - reserve_tokens)."""
    if not override_window and recorded_window:
        return Trigger(recorded_window, "session", recorded_window - kwargs["reserve_tokens"])
    return window_trigger(override_window=override_window, **kwargs)
