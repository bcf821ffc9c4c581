"""Goose usage: the per-session running totals in Goose's `sessions.db`.

Where the file is: `$GOOSE_PATH_ROOT/data/sessions/sessions.db` when set, else the first of
`~/.local/share/goose/sessions/sessions.db`, `~/Library/Application Support/goose/sessions/sessions.db`,
`~/.local/share/Block/goose/sessions/sessions.db`. (Goose before 1.x wrote `sessions/*.jsonl`, not read.)

Usage: table `sessions`, one row per session: `accumulated_{input,output,total}_tokens` (the session's
running totals; the non-accumulated `input_tokens/output_tokens/total_tokens` are the last call's, and
are used only when the accumulated ones are missing — never both), `model_config_json.model_name`,
`provider_name`, `created_at`. One report row per session at `created_at` (a session spanning days is
booked on its first), keyed `goose:<database>:<session id>`.

Counting: Goose has no cache split, so all prompt tokens are input. A total larger than input + output
is the provider's extra (reasoning) count: added to output and recorded as reasoning, as ccusage 20
prices it.
"""

from __future__ import annotations

import json
from datetime import datetime
from pathlib import Path

from batchcompact.report.documents import query_sqlite, table_columns
from batchcompact.report.lines import ExtractStats, as_int, parse_timestamp
from batchcompact.report.schema import UsageRows

AGENT = "goose"
COUNTERS = ("input_tokens", "output_tokens", "total_tokens")


def goose_time(value) -> datetime | None:
    """`created_at`: epoch seconds or ms, ISO text, or SQLite's `YYYY-MM-DD HH:MM:SS` (UTC)."""
    if isinstance(value, (int, float)) and not isinstance(value, bool):
        return parse_timestamp(value if value > 1e12 else value * 1000)
    if isinstance(value, str) and value.strip():
        text = value.strip()
        if text.isdigit():
            return goose_time(int(text))
        if len(text) == 10:
            text += "T00:00:00"
        return parse_timestamp(text.replace(" ", "T", 1))
    return None


def extract_goose(path: str | Path, rows: UsageRows, stats: ExtractStats) -> None:
    path = Path(path)
    columns = table_columns(path, "sessions", stats)
    if not columns:
        stats.warn(None, "no `sessions` table; not a Goose sessions database")
        return
    wanted = ["id", "model_config_json", "provider_name", "created_at", *COUNTERS,
              *(f"accumulated_{c}" for c in COUNTERS)]
    select = ", ".join(c if c in columns else f"NULL AS {c}" for c in wanted)
    for row in query_sqlite(path, f"SELECT {select} FROM sessions", stats):
        stats.parsed += 1
        input_tokens, output, total = (as_int(row[f"accumulated_{c}"]) or as_int(row[c]) for c in COUNTERS)
        if not (input_tokens or output or total):
            continue
        extra = max(total - input_tokens - output, 0)
        try:
            config = json.loads(row["model_config_json"] or "{}")
        except ValueError:
            config = {}
        model = config.get("model_name") if isinstance(config, dict) else None
        session_id = str(row["id"])
        rows.add(
            source=AGENT,
            file=str(path),
            line=None,
            session_id=session_id,
            project=None,
            timestamp=goose_time(row["created_at"]),
            provider=row["provider_name"] or None,
            model=model if isinstance(model, str) and model else None,
            kind="main",
            dedupe_key=f"{AGENT}:{path.resolve()}:{session_id}",
            input_tokens=input_tokens,
            output_tokens=output + extra,
            reasoning_tokens=extra,
        )
