"""Where each agent compacts on its own: the window it works in and its auto-compaction threshold.

A session is compacted (without --force) when its context tokens exceed the threshold. The default
follows the agent that wrote the session, so a default run compacts where the agent itself would:

- pi: the model's window (price table, or --context-window) minus reserve_tokens (pi's rule).
- Claude Code: a 200,000-token window unless the 1M context was on (a model id with the `[1m]` tag, or
  any recorded reply whose context exceeded 200,000 tokens); auto-compaction at
  window - min(model max output, 20,000) - 13,000, measured as the last reply's usage
  (input + cache creation + cache read + output) plus an estimate of what came after it.
  Constants read in the Claude Code 2.1.328 binary (npm @anthropic-ai/claude-code-linux-x64): the output
  reserve cap `20000`, the auto-compact buffer `13000` (threshold = effective window - 13000), the token
  count `input_tokens + cache_creation_input_tokens + cache_read_input_tokens + output_tokens` and the 1M
  check "last assistant usage > 200000". docs/formats.md lists the sources.
- Codex: the window the rollout recorded (`token_count.info.model_context_window`, which is Codex's
  usable window: 95% of the model's window) and Codex's auto-compact limit, 90% of the model's window
  (`ModelInfo::auto_compact_token_limit` in openai/codex `codex-rs/protocol/src/openai_models.rs`).
  Without a recorded window the price table's window is used with the same 90% rule.

- Gemini CLI: the model's window as Gemini CLI's `tokenLimit` gives it (1,048,576; 256,000 for Gemma 4)
  and its compression threshold, half of it (`DEFAULT_COMPRESSION_TOKEN_THRESHOLD` 0.5 in
  packages/core/src/context/chatCompressionService.ts). Gemini compares its last prompt's token count;
  batchcompact its usual measure (the last reply's usage plus an estimate of what came after it).
- Qwen Code: the window the chat recorded (`contextWindowSize` on each reply), else the price table's,
  else Qwen Code's default 200,000; auto-compaction at min(85% of the window, window - 20,000 summary
  reserve - 13,000 buffer) (`computeThresholds` in Qwen Code 0.24's chatCompressionService).
- GitHub Copilot CLI: the prompt limit its log recorded (`session.usage_record` `maxPromptTokens`, the
  model's `max_prompt_tokens`, which COPILOT_PROVIDER_MAX_PROMPT_TOKENS and the context tier set), else
  the price table's window; background compaction at 80% of it (`backgroundCompactionThreshold` 0.80 of
  `InfiniteSessionConfig` in @github/copilot 1.0.102's SDK types; the CLI sets no other value).

- OpenCode (and Kilo, its fork): the model's `limit.context` (the user's opencode.json or models.dev; here
  the price table's window) and OpenCode's overflow point, its usable window: limit.input - reserved
  when the model has an input limit (reserved = `compaction.reserved`, else min(20,000, max output)),
  else limit.context - max output, where max output = min(limit.output, 32,000) or 32,000
  (`ProviderTransform.maxOutputTokens`, `OUTPUT_TOKEN_MAX`); a window of 0 or `compaction.auto: false`
  never compacts. It compares the last finished reply's tokens (total, else input + output + cache
  read + cache write). Its kept tail: `compaction.preserve_recent_tokens`, else min(15,000, max(2,000,
  25% of the usable window)). Read in the opencode-ai 1.18.33 binary (`SessionCompaction.isOverflow`,
  `usable`, `preserveRecentTokens`); @kilocode/cli 7.7.7 is the same.

--threshold-tokens / --threshold-percent override every agent's rule; --context-window replaces the window.
Pure: no I/O.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any

CLAUDE_WINDOW = 200_000
CLAUDE_1M_WINDOW = 1_000_000
CLAUDE_OUTPUT_RESERVE_CAP = 20_000
CLAUDE_AUTOCOMPACT_BUFFER = 13_000
CODEX_USABLE_PERCENT = 95  # ModelInfo.effective_context_window_percent default
CODEX_AUTO_COMPACT_PERCENT = 90
GEMINI_TOKEN_LIMIT = 1_048_576  # Gemini CLI tokenLimit(): every model but Gemma 4
GEMMA_4_TOKEN_LIMIT = 256_000
GEMINI_COMPRESSION_FRACTION = 0.5
QWEN_DEFAULT_WINDOW = 200_000
QWEN_AUTO_PERCENT = 85
QWEN_SUMMARY_RESERVE = 20_000
QWEN_AUTOCOMPACT_BUFFER = 13_000
COPILOT_BACKGROUND_FRACTION = 0.80
OPENCODE_OUTPUT_TOKEN_MAX = 32_000  # ProviderTransform.OUTPUT_TOKEN_MAX (OPENCODE_EXPERIMENTAL_OUTPUT_TOKEN_MAX)
OPENCODE_RESERVED_CAP = 20_000
OPENCODE_TAIL_MIN = 2_000
OPENCODE_TAIL_MAX = 15_000
OPENCODE_TAIL_FRACTION = 0.25


@dataclass(frozen=True)
class Trigger:
    """The window a session is judged against, where it came from, and the threshold (None: unknown)."""

    window: int | None
    window_source: str
    threshold: int | None


def claude_window(messages: Iterable[dict[str, Any]]) -> tuple[int, str]:
    """(window, source) of a Claude Code session from its assistant messages (pi-shaped)."""
    for message in messages:
        if message.get("role") != "assistant":
            continue
        model = message.get("model")
        if isinstance(model, str) and model.lower().endswith("[1m]"):
            return CLAUDE_1M_WINDOW, "claude code 1M ([1m] model)"
        usage = message.get("usage")
        if isinstance(usage, dict) and (usage.get("totalTokens") or 0) > CLAUDE_WINDOW:
            return CLAUDE_1M_WINDOW, "claude code 1M (usage above 200k)"
    return CLAUDE_WINDOW, "claude code 200k"


def claude_threshold(window: int, max_output_tokens: int | None = None) -> int:
    """Claude Code's auto-compact point for a window."""
    reserve = min(max_output_tokens or CLAUDE_OUTPUT_RESERVE_CAP, CLAUDE_OUTPUT_RESERVE_CAP)
    return max(window - reserve - CLAUDE_AUTOCOMPACT_BUFFER, 1)


def codex_model_window(usable_window: int) -> int:
    """The model's full window from the usable window Codex records (95% of it)."""
    return usable_window * 100 // CODEX_USABLE_PERCENT


def codex_threshold(model_window: int) -> int:
    """Codex's default auto-compact limit: 90% of the model's window."""
    return model_window * CODEX_AUTO_COMPACT_PERCENT // 100


def claude_trigger(*, messages: Iterable[dict[str, Any]] = (), override_window: int | None = None,
                   max_output_tokens: int | None = None, **_: Any) -> Trigger:
    """Claude Code's: its 200k/1M window (or --context-window) and its auto-compact point."""
    if override_window:
        window, source = override_window, "--context-window"
    else:
        window, source = claude_window(messages)
    return Trigger(window, source, claude_threshold(window, max_output_tokens))


def codex_trigger(*, recorded_window: int | None = None, table_window: int | None = None,
                  override_window: int | None = None, **_: Any) -> Trigger:
    """Codex's: the window the rollout recorded (else the table's) and 90% of the model's window."""
    if override_window:
        # The user names the model's window; Codex's limit is 90% of it.
        return Trigger(override_window, "--context-window", codex_threshold(override_window))
    if recorded_window:
        return Trigger(recorded_window, "codex token_count", codex_threshold(codex_model_window(recorded_window)))
    if table_window:
        return Trigger(table_window, "price table", codex_threshold(table_window))
    return Trigger(None, "unknown", None)


def window_trigger(*, table_window: int | None = None, override_window: int | None = None,
                   reserve_tokens: int, **_: Any) -> Trigger:
    """The generic rule: --context-window or the price table's window, minus reserve_tokens."""
    window = override_window or table_window
    source = "--context-window" if override_window else ("price table" if table_window else "unknown")
    return Trigger(window, source, window - reserve_tokens if window else None)


def pi_trigger(*, recorded_window: int | None = None, override_window: int | None = None, **kwargs: Any) -> Trigger:
    """pi's: the window the session recorded, else the generic rule (window - reserve_tokens)."""
    if not override_window and recorded_window:
        return Trigger(recorded_window, "session", recorded_window - kwargs["reserve_tokens"])
    return window_trigger(override_window=override_window, **kwargs)


def gemini_window(model: str | None) -> int:
    """Gemini CLI's `tokenLimit(model)`."""
    return GEMMA_4_TOKEN_LIMIT if isinstance(model, str) and model.startswith("gemma-4-") else GEMINI_TOKEN_LIMIT


def gemini_trigger(*, messages: Iterable[dict[str, Any]] = (), override_window: int | None = None,
                   **_: Any) -> Trigger:
    """Gemini CLI's: tokenLimit of the session's model and half of it."""
    if override_window:
        return Trigger(override_window, "--context-window", int(override_window * GEMINI_COMPRESSION_FRACTION))
    model = None
    for message in messages:
        if message.get("role") == "assistant" and message.get("model"):
            model = message["model"]
    window = gemini_window(model)
    return Trigger(window, "gemini cli tokenLimit", int(window * GEMINI_COMPRESSION_FRACTION))


def qwen_threshold(window: int) -> int:
    """Qwen Code's auto-compaction point: min(85% of the window, window - 20,000 - 13,000)."""
    proportional = window * QWEN_AUTO_PERCENT // 100
    ceiling = window - QWEN_SUMMARY_RESERVE - QWEN_AUTOCOMPACT_BUFFER
    return max(min(proportional, ceiling) if ceiling > 0 else proportional, 1)


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


def qwen_trigger(*, recorded_window: int | None = None, table_window: int | None = None,
                 override_window: int | None = None, **_: Any) -> Trigger:
    """Qwen Code's: the recorded contextWindowSize (else the table's, else 200,000) and its threshold."""
    window, source = chosen_window(override_window, recorded_window, "qwen contextWindowSize", table_window)
    if window is None:
        window, source = QWEN_DEFAULT_WINDOW, "qwen code default"
    return Trigger(window, source, qwen_threshold(window))


def copilot_trigger(*, recorded_window: int | None = None, table_window: int | None = None,
                    override_window: int | None = None, **_: Any) -> Trigger:
    """Copilot CLI's: the recorded maxPromptTokens (else the table's window) and 80% of it."""
    window, source = chosen_window(override_window, recorded_window, "copilot maxPromptTokens", table_window)
    if window is None:
        return Trigger(None, source, None)
    return Trigger(window, source, max(int(window * COPILOT_BACKGROUND_FRACTION), 1))


def openclaw_threshold(window: int, reserve_tokens: int) -> int:
    """OpenClaw's: window - its compaction reserve, the reserve capped at a quarter of the window."""
    return max(window - min(reserve_tokens, window // 4), 1)


def openclaw_trigger(*, recorded_window: int | None = None, table_window: int | None = None,
                     override_window: int | None = None, reserve_tokens: int, **_: Any) -> Trigger:
    """OpenClaw's: the model's window from the user's openclaw.json (else the table's), minus the reserve
    (at most a quarter of the window)."""
    window, source = chosen_window(override_window, recorded_window, "openclaw.json contextWindow", table_window)
    if window is None:
        return Trigger(None, source, None)
    return Trigger(window, source, openclaw_threshold(window, reserve_tokens))


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
                     agent_limits: dict[str, Any] | None = None, **_: Any) -> Trigger:
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


TRIGGERS = {"claude": claude_trigger, "codex": codex_trigger, "pi": pi_trigger, "gemini": gemini_trigger,
            "qwen": qwen_trigger, "copilot": copilot_trigger, "openclaw": openclaw_trigger,
            "opencode": opencode_trigger, "kilo": opencode_trigger}


def agent_trigger(session_format: str, **inputs: Any) -> Trigger:
    """The trigger of one of the formats above by name (an unknown one: the generic rule). The pipeline
    looks the function up in the agent registry (`Agent.trigger`); this is the same for the three here."""
    return TRIGGERS.get(session_format, window_trigger)(**inputs)
