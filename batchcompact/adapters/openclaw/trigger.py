"""The auto-compaction point of OpenClaw: the model's window from the user's openclaw.json (else the price
table's), minus its compaction reserve, the reserve capped at a quarter of the window.

Pure: no I/O (`core/triggers.py` holds the shared `Trigger` and rules)."""

from __future__ import annotations

from batchcompact.core.triggers import Trigger, chosen_window


def openclaw_threshold(window: int, reserve_tokens: int) -> int:
    """OpenClaw's: window - its compaction reserve, the reserve capped at a quarter of the window."""
    return max(window - min(reserve_tokens, window // 4), 1)


def openclaw_trigger(*, recorded_window: int | None = None, table_window: int | None = None,
                     override_window: int | None = None, reserve_tokens: int, **_: object) -> Trigger:
    """OpenClaw's: the model's window from the user's openclaw.json (else the table's), minus the reserve
    (at most a quarter of the window)."""
    window, source = chosen_window(override_window, recorded_window, "openclaw.json contextWindow", table_window)
    if window is None:
        return Trigger(None, source, None)
    return Trigger(window, source, openclaw_threshold(window, reserve_tokens))
