"""Hermes Agent usage: the per-session running totals in `state.db`.

Where the file is: `${HERMES_HOME:-~/.hermes}/state.db` (comma-separated homes allowed). The
transcripts in `sessions/session_<date>_<hex>.json` carry no usage and are not read.

Usage: table `sessions`, one cumulative row per session: `input_tokens, output_tokens,
cache_read_tokens, cache_write_tokens, reasoning_tokens, started_at (unix s), model, billing_provider,
estimated_cost_usd, actual_cost_usd`. One report row per session at `started_at`, keyed
`hermes:<session id>` (the same session in two homes counts once).

Counting: input excludes the cache counters; `reasoning_tokens` is BESIDE output, so it is added to
output (and recorded as reasoning) — ccusage 20 shows it apart and prices it as output, so totals and
cost agree. Recorded cost: `actual_cost_usd`, else `estimated_cost_usd` (used in `auto` mode); a
provider-reported cost already covers cache and reasoning, so nothing is added to it.
"""

from __future__ import annotations

from pathlib import Path

from batchcompact.adapters.common.documents import table_rows
from batchcompact.adapters.common.lines import ExtractStats, as_float, as_int, parse_timestamp
from batchcompact.adapters.common.usage_rows import UsageRows

AGENT = "hermes"
PROVIDERS = {"claude": "anthropic", "openai_codex": "openai", "google_ai": "google", "gemini": "google",
             "vertex": "google", "vertex_ai": "google"}


def extract_hermes(path: str | Path, rows: UsageRows, stats: ExtractStats) -> None:
    path = Path(path)
    for rowid, row in table_rows(path, "sessions", stats):
        numbers = [max(as_int(row.get(c)), 0) for c in
                   ("input_tokens", "output_tokens", "cache_read_tokens", "cache_write_tokens", "reasoning_tokens")]
        cost = as_float(row.get("actual_cost_usd"))
        if cost is None:
            cost = as_float(row.get("estimated_cost_usd"))
        cost = max(cost, 0.0) if cost is not None else None
        if not any(numbers) and not cost:
            continue
        input_tokens, output, cache_read, cache_write, reasoning = numbers
        started = as_float(row.get("started_at"))
        provider = row.get("billing_provider")
        provider = provider.strip().lower().replace("-", "_") if isinstance(provider, str) else ""  # a blob: none
        model = row.get("model")
        session_id = str(row.get("id") or rowid)
        rows.add(
            source=AGENT,
            file=str(path),
            line=rowid,
            session_id=session_id,
            project=None,
            timestamp=parse_timestamp(started if started > 1e12 else started * 1000) if started else None,
            provider=PROVIDERS.get(provider, provider or None),
            model=model.strip() or None if isinstance(model, str) else None,
            kind="main",
            dedupe_key=f"{AGENT}:{session_id}",
            input_tokens=input_tokens,
            output_tokens=output + reasoning,
            cache_read_tokens=cache_read,
            cache_write_tokens=cache_write,
            reasoning_tokens=reasoning,
            recorded_cost_usd=cost,
        )
