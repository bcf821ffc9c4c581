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

from datetime import datetime
from pathlib import Path

from batchcompact.adapters.common.documents import json_column, table_rows
from batchcompact.adapters.common.lines import ExtractStats, as_int, parse_timestamp
from batchcompact.adapters.common.usage_rows import UsageRows
from batchcompact.core.jsontypes import JsonValue

AGENT = "goose"
COUNTERS = ("input_tokens", "output_tokens", "total_tokens")


def goose_time(value: JsonValue) -> datetime | None:
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
    for rowid, row in table_rows(path, "sessions", stats):
        input_tokens, output, total = (as_int(row.get(f"accumulated_{c}")) or as_int(row.get(c)) for c in COUNTERS)
        if not (input_tokens or output or total):
            continue
        config = json_column(row.get("model_config_json"), stats, f"sessions rowid {rowid}") or {}
        model = config.get("model_name")
        session_id = str(row.get("id") or rowid)
        extra = max(total - input_tokens - output, 0)
        rows.add(
            source=AGENT,
            file=str(path),
            line=rowid,
            session_id=session_id,
            project=row.get("working_dir") if isinstance(row.get("working_dir"), str) else None,
            timestamp=goose_time(row.get("created_at")),
            provider=row.get("provider_name") or None,
            model=model if isinstance(model, str) and model else None,
            kind="main",
            dedupe_key=f"{AGENT}:{path.resolve()}:{session_id}",
            input_tokens=input_tokens,
            output_tokens=output + extra,
            reasoning_tokens=extra,
        )
