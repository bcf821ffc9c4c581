"""The auto-compaction point of GitHub Copilot CLI: the prompt limit its log recorded (`session.usage_record`
`maxPromptTokens`, the model's `max_prompt_tokens`, which COPILOT_PROVIDER_MAX_PROMPT_TOKENS and the context
tier set), else the price table's window; background compaction at 80% of it (`backgroundCompactionThreshold`
0.80 of `InfiniteSessionConfig` in @github/copilot 1.0.102's SDK types; the CLI sets no other value).

Pure: no I/O (`core/triggers.py` holds the shared `Trigger` and rules)."""

from __future__ import annotations

from batchcompact.core.triggers import Trigger, chosen_window

COPILOT_BACKGROUND_FRACTION = 0.80


def copilot_trigger(*, recorded_window: int | None = None, table_window: int | None = None,
                    override_window: int | None = None, **_: object) -> Trigger:
    """Copilot CLI's: the recorded maxPromptTokens (else the table's window) and 80% of it."""
    window, source = chosen_window(override_window, recorded_window, "copilot maxPromptTokens", table_window)
    if window is None:
        return Trigger(None, source, None)
    return Trigger(window, source, max(int(window * COPILOT_BACKGROUND_FRACTION), 1))
