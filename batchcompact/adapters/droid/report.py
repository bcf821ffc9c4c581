"""Droid (Factory) usage: the per-session running totals in `<session>.settings.json`.

Where the files are: `${DROID_SESSIONS_DIR:-~/.factory/sessions}` (comma-separated), any depth;
beside each `<session>.settings.json` is the `<session>.jsonl` transcript, which carries no usage and is
read only for the model when the settings file names none (`"Model: Claude Opus 4.5 Thinking
[Anthropic]"`).

Usage: `tokenUsage.{inputTokens, outputTokens, cacheCreationTokens, cacheReadTokens, thinkingTokens,
totalTokens?}`, the session's running total. It is taken as the last value (never summed): one row per
session, at `providerLockTimestamp` (else the file's mtime), so a session spanning days is booked on
one. Archived copies of a session (same file name elsewhere) are the same counter at an earlier time:
rows are keyed `droid:<session>` and the largest snapshot is kept.

Counting: input, cache reads and cache writes are separate counters (input excludes the cache).
`thinkingTokens` is reported BESIDE `outputTokens`, so it is added to output (and recorded as
reasoning); ccusage 20 shows it apart from output and prices it as output, so totals and costs agree.
Model: `custom:` and `[...]` stripped, dots and spaces to dashes, lower-case (`Claude-Opus-4.5-Thinking`
-> `claude-opus-4-5-thinking`); provider from `providerLock`.
"""

from __future__ import annotations

import os
import re
from datetime import UTC, datetime
from pathlib import Path

from batchcompact.adapters.common.documents import read_object
from batchcompact.adapters.common.lines import (
    ExtractStats,
    as_int,
    first_str,
    parse_timestamp,
    rest_is_output,
)
from batchcompact.adapters.common.model_names import price_name
from batchcompact.adapters.common.usage_rows import UsageRows
from batchcompact.formats.jsonl import capped_lines

AGENT = "droid"
SUFFIX = ".settings.json"
PROVIDERS = {"claude": "anthropic", "anthropic": "anthropic", "openai": "openai", "google": "google",
             "gemini": "google", "vertex_ai": "google", "xai": "xai", "x_ai": "xai", "grok": "xai"}


def normalize_model(raw: str) -> str:
    """`custom:Claude-Opus-4.5-Thinking-[Anthropic]-0` -> `claude-opus-4-5-thinking-0`."""
    text = raw.removeprefix("custom:")
    text = re.sub(r"\[[^\]]*\]", "", text).strip().lower()
    text = re.sub(r"[.\s-]+", "-", text)
    return text.strip("-")


def sidecar_model(settings: Path) -> str | None:
    """The model named in the transcript beside `settings` (`Model: … [Provider]`), if any."""
    transcript = settings.with_name(settings.name[: -len(SUFFIX)] + ".jsonl")
    try:
        with open(transcript, "rb") as fh:
            for number, raw in enumerate(capped_lines(fh, limit=1 << 20)):  # no line read whole past 1 MB
                if number >= 500:
                    break
                line = raw.decode("utf-8", "replace")
                if "Model:" in line:
                    name = re.split(r'["\\\[]', line.split("Model:", 1)[1])[0].strip()
                    if name:
                        return normalize_model(name)
    except OSError:
        return None
    return None


def extract_droid(path: str | Path, rows: UsageRows, stats: ExtractStats) -> None:
    path = Path(path)
    if path.name.endswith(".jsonl"):  # the transcript: no usage in it (its settings file counts the session)
        return
    settings = read_object(path, stats)
    if settings is None:
        return
    usage = settings.get("tokenUsage")
    if not isinstance(usage, dict):
        return
    numbers = [as_int(usage.get(k)) for k in
               ("inputTokens", "outputTokens", "cacheCreationTokens", "cacheReadTokens", "thinkingTokens")]
    total = as_int(usage.get("totalTokens"))
    rest_is_output(numbers, total, else_into=4)  # index 4: thinking
    if not any(numbers):
        return
    input_tokens, output, cache_write, cache_read, thinking = numbers
    lock = (first_str(settings, "providerLock") or "").lower().replace("-", "_")
    model = first_str(settings, "model")
    model = normalize_model(model) if model else sidecar_model(path)
    when = parse_timestamp(first_str(settings, "providerLockTimestamp"))
    if when is None:
        when = datetime.fromtimestamp(os.stat(path).st_mtime, tz=UTC)
    session_id = path.name[: -len(SUFFIX)] if path.name.endswith(SUFFIX) else path.stem
    rows.add(
        source=AGENT,
        file=str(path),
        line=None,
        session_id=session_id,
        project=None,
        timestamp=when,
        provider=PROVIDERS.get(lock, lock or None),
        model=price_name(model),
        kind="main",
        dedupe_key=f"{AGENT}:{session_id}",
        input_tokens=input_tokens,
        output_tokens=output + thinking,
        cache_read_tokens=cache_read,
        cache_write_tokens=cache_write,
        reasoning_tokens=thinking,
    )
