"""The auto-compaction point of Qwen Code: the window the chat recorded (`contextWindowSize` on each reply), else
the price table's, else Qwen Code's default 200,000; auto-compaction at min(85% of the window, window - 20,000
summary reserve - 13,000 buffer) (`computeThresholds` in Qwen Code 0.24's chatCompressionService).

Pure: no I/O (`core/triggers.py` holds the shared `Trigger` and rules)."""

from __future__ import annotations

from batchcompact.core.triggers import Trigger, chosen_window

QWEN_DEFAULT_WINDOW = 200_000
QWEN_AUTO_PERCENT = 85
QWEN_SUMMARY_RESERVE = 20_000
QWEN_AUTOCOMPACT_BUFFER = 13_000


def qwen_threshold(window: int) -> int:
    """Qwen Code's auto-compaction point: min(85% of the window, window - 20,000 - 13,000)."""
    proportional = window * QWEN_AUTO_PERCENT // 100
    ceiling = window - QWEN_SUMMARY_RESERVE - QWEN_AUTOCOMPACT_BUFFER
    return max(min(proportional, ceiling) if ceiling > 0 else proportional, 1)


def qwen_trigger(*, recorded_window: int | None = None, table_window: int | None = None,
                 override_window: int | None = None, **_: object) -> Trigger:
    """Qwen Code's: the recorded contextWindowSize (else the table's, else 200,000) and its threshold."""
    window, source = chosen_window(override_window, recorded_window, "qwen contextWindowSize", table_window)
    if window is None:
        window, source = QWEN_DEFAULT_WINDOW, "qwen code default"
    return Trigger(window, source, qwen_threshold(window))
