"""The auto-compaction point of Codex: the window the rollout recorded (`token_count.info.model_context_window`,
which is Codex's usable window: 95% of the model's window) and Codex's auto-compact limit, 90% of the model's
window (`ModelInfo::auto_compact_token_limit` in openai/codex `codex-rs/protocol/src/openai_models.rs`). Without
a recorded window the price table's window is used with the same 90% rule.

Pure: no I/O (`core/triggers.py` holds the shared `Trigger` and rules)."""

from __future__ import annotations

from batchcompact.core.triggers import Trigger

CODEX_USABLE_PERCENT = 95  # ModelInfo.effective_context_window_percent default
CODEX_AUTO_COMPACT_PERCENT = 90


def codex_model_window(usable_window: int) -> int:
    """The model's full window from the usable window Codex records (95% of it)."""
    return usable_window * 100 // CODEX_USABLE_PERCENT


def codex_threshold(model_window: int) -> int:
    """Codex's default auto-compact limit: 90% of the model's window."""
    return model_window * CODEX_AUTO_COMPACT_PERCENT // 100


def codex_trigger(*, recorded_window: int | None = None, table_window: int | None = None,
                  override_window: int | None = None, **_: object) -> Trigger:
    """Codex's: the window the rollout recorded (else the table's) and 90% of the model's window."""
    if override_window:
        # The user names the model's window; Codex's limit is 90% of it.
        return Trigger(override_window, "--context-window", codex_threshold(override_window))
    if recorded_window:
        return Trigger(recorded_window, "codex token_count", codex_threshold(codex_model_window(recorded_window)))
    if table_window:
        return Trigger(table_window, "price table", codex_threshold(table_window))
    return Trigger(None, "unknown", None)
