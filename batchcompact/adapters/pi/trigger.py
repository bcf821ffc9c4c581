"""The auto-compaction point of pi: the model's window (price table, or --context-window) minus reserve_tokens
(pi's rule).

Pure: no I/O (`core/triggers.py` holds the shared `Trigger` and rules)."""

from __future__ import annotations

import math
from typing import Any

from batchcompact.core.jsontypes import JsonObject
from batchcompact.core.triggers import Trigger, window_trigger


def pi_trigger(*, recorded_window: int | None = None, override_window: int | None = None,
               # Any: the trigger protocol's other keywords, passed on to `window_trigger` as they came
               agent_limits: JsonObject | None = None, **kwargs: Any) -> Trigger:
    """pi's: the window the session recorded, else the generic rule (window - reserve_tokens). An oh-my-pi
    session (its reader and settings say so in `agent_limits`): oh-my-pi's reserve rule (`omp_threshold`).
    --threshold-tokens and --threshold-percent (oh-my-pi's thresholdTokens, thresholdPercent) come first
    either way (CompactionSettings.threshold)."""
    if not override_window and recorded_window:
        trigger = Trigger(recorded_window, "session", recorded_window - kwargs["reserve_tokens"])
    else:
        trigger = window_trigger(override_window=override_window, **kwargs)
    if agent_limits and agent_limits.get("rules") == "oh-my-pi" and trigger.window:
        threshold = omp_threshold(trigger.window, kwargs["reserve_tokens"], bool(agent_limits.get("reserve_set")))
        return Trigger(trigger.window, trigger.window_source, threshold)
    return trigger


def omp_threshold(window: int, reserve_tokens: int, reserve_set: bool) -> int:
    """oh-my-pi's threshold without thresholdTokens or thresholdPercent (pi-agent-core compaction.ts
    resolveThresholdTokens): the window less max(15% of it, the reserve); a reserve nobody set that leaves
    no room (>= the window less 15%), or any reserve >= the window, gives way to the 15%."""
    proportional = max(1, math.floor(window * 0.15))
    reserve = max(math.floor(window * 0.15), reserve_tokens)
    if (not reserve_set and reserve >= window - proportional) or reserve >= window:
        reserve = proportional
    return max(0, min(window - 1, window - reserve))
