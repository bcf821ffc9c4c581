"""The auto-compaction point of OpenCode (and Kilo, its fork): the model's `limit.context` (the user's
opencode.json or models.dev; here the price table's window) and OpenCode's overflow point, its usable window:
limit.input - reserved when the model has an input limit (reserved = `compaction.reserved`, else min(20,000, max
output)), else limit.context - max output, where max output = min(limit.output, 32,000) or 32,000
(`ProviderTransform.maxOutputTokens`, `OUTPUT_TOKEN_MAX`); a window of 0 or `compaction.auto: false` never
compacts. It compares the last finished reply's tokens (total, else input + output + cache read + cache write).
Its kept tail: `compaction.preserve_recent_tokens`, else min(15,000, max(2,000, 25% of the usable window)). Read
in the opencode-ai 1.18.33 binary (`SessionCompaction.isOverflow`, `usable`, `preserveRecentTokens`);
@kilocode/cli 7.7.7 is the same.

Pure: no I/O (`core/triggers.py` holds the shared `Trigger` and rules)."""

from __future__ import annotations

from batchcompact.core.jsontypes import JsonObject
from batchcompact.core.triggers import Trigger, chosen_window

OPENCODE_OUTPUT_TOKEN_MAX = 32_000  # ProviderTransform.OUTPUT_TOKEN_MAX (OPENCODE_EXPERIMENTAL_OUTPUT_TOKEN_MAX)
OPENCODE_RESERVED_CAP = 20_000
OPENCODE_TAIL_MIN = 2_000
OPENCODE_TAIL_MAX = 15_000
OPENCODE_TAIL_FRACTION = 0.25


def opencode_max_output(output_limit: int | None, output_token_max: int = OPENCODE_OUTPUT_TOKEN_MAX) -> int:
    """OpenCode's `maxOutputTokens`: min(limit.output, the cap), or the cap when that is 0 or unknown."""
    return min(output_limit, output_token_max) if output_limit else output_token_max


def opencode_usable(context: int, *, input_limit: int | None = None, output_limit: int | None = None,
                    reserved: int | None = None, output_token_max: int = OPENCODE_OUTPUT_TOKEN_MAX) -> int:
    """OpenCode's usable window (its overflow point); 0 for a model without a context limit."""
    if not context:
        return 0
    most = opencode_max_output(output_limit, output_token_max)
    if input_limit:
        held = reserved if reserved is not None else min(OPENCODE_RESERVED_CAP, most)
        return max(0, input_limit - held)
    return max(0, context - most)


def opencode_tail_tokens(usable: int, preserve_recent_tokens: int | None = None) -> int:
    """OpenCode's kept-tail budget (`compaction.preserve_recent_tokens`, else 25% of the usable window
    within 2,000..15,000)."""
    if preserve_recent_tokens is not None:
        return preserve_recent_tokens
    return min(OPENCODE_TAIL_MAX, max(OPENCODE_TAIL_MIN, int(usable * OPENCODE_TAIL_FRACTION)))


def opencode_trigger(*, recorded_window: int | None = None, table_window: int | None = None,
                     max_output_tokens: int | None = None, override_window: int | None = None,
                     agent_limits: JsonObject | None = None, **_: object) -> Trigger:
    """OpenCode's (and Kilo's): the model's `limit.context` from the user's config (`recorded_window`; else
    the price table's window) and its usable window as the threshold (`agent_limits`: the config's
    `limit.input`, `limit.output` and `compaction.reserved`; the output limit else the table's)."""
    limits = agent_limits or {}
    window, source = chosen_window(override_window, recorded_window, "opencode config limit.context", table_window)
    if window is None:
        return Trigger(None, source, None)
    usable = opencode_usable(window, input_limit=limits.get("input"),
                             output_limit=limits.get("output") or max_output_tokens, reserved=limits.get("reserved"))
    return Trigger(window, source, max(usable, 1))
