"""ZCode (Z.ai's coding agent) usage: the per-call `model_usage` table of its SQLite database.

Where the file is: `${ZCODE_HOME:-~/.zcode}/cli/db/db.sqlite` (WAL mode; read read-only while ZCode
writes it). Learned from public descriptions of real databases (third-party tools that read it) and
checked against ccusage 20.0.24's reader on generated databases.

Usage: one `model_usage` row per model call: `id` (stable), `session_id`, `provider_id`, `model_id`,
`status`, `started_at` (epoch ms), `input_tokens`, `output_tokens`, `reasoning_tokens`,
`cache_read_input_tokens`, `cache_creation_input_tokens`, `computed_total_tokens` (= input + output +
reasoning). The `session` table gives the session's working `directory` (the project).

Counting: `input_tokens` INCLUDES both cache counters, so input = input − cache read − cache write;
reasoning is BESIDE output (the computed total adds it), so it is added to output and recorded as
reasoning. Only rows whose call `completed` are counted, as ccusage does (a cancelled or failed call's
row is not known to be billed). Rows are keyed `zcode:<id>`. There is no cost column: cost is computed,
Z.ai's `builtin:zai-*` / `builtin:bigmodel-*` providers priced as `zai/<model>`.
"""

from __future__ import annotations

from pathlib import Path

from batchcompact.adapters.common.documents import columns, connect, table_rows
from batchcompact.adapters.common.lines import ExtractStats, as_int, parse_timestamp
from batchcompact.adapters.common.usage_rows import UsageRows

AGENT = "zcode"


def provider_of(provider_id: object) -> str | None:
    """`builtin:zai-coding-plan` -> `zai`; a custom channel (a UUID) names no price map provider."""
    if not isinstance(provider_id, str):
        return None
    name = provider_id.removeprefix("builtin:")
    if name.startswith(("zai", "bigmodel", "glm")):
        return "zai"
    return None


def session_folders(path: Path, stats: ExtractStats) -> dict[str, str]:
    """session id -> its working directory, from the `session` table when there is one."""
    from contextlib import closing

    with closing(connect(path)) as conn:
        if not columns(conn, "session"):
            return {}
    out = {}
    for _, row in table_rows(path, "session", stats):
        folder = row.get("directory") or row.get("cwd")
        if row.get("id") is not None and isinstance(folder, str) and folder:
            out[str(row["id"])] = folder
    return out


def extract_zcode(path: str | Path, rows: UsageRows, stats: ExtractStats) -> None:
    path = Path(path)
    folders = session_folders(path, stats)
    for rowid, row in table_rows(path, "model_usage", stats):
        status = row.get("status")
        if status is not None and status != "completed":
            continue
        total_input = as_int(row.get("input_tokens"))
        cache_read = as_int(row.get("cache_read_input_tokens"))
        cache_write = as_int(row.get("cache_creation_input_tokens"))
        output, reasoning = as_int(row.get("output_tokens")), as_int(row.get("reasoning_tokens"))
        if not (total_input or output or reasoning):
            continue
        session_id = str(row.get("session_id") or "")
        identity = row.get("id") if row.get("id") is not None else rowid
        model = row.get("model_id")
        rows.add(
            source=AGENT,
            file=str(path),
            line=rowid,
            session_id=session_id or None,
            project=folders.get(session_id),
            timestamp=parse_timestamp(row.get("started_at")),
            provider=provider_of(row.get("provider_id")),
            model=model if isinstance(model, str) and model else None,
            kind="main",
            dedupe_key=f"{AGENT}:{identity}",
            input_tokens=max(total_input - cache_read - cache_write, 0),
            output_tokens=output + reasoning,
            cache_read_tokens=cache_read,
            cache_write_tokens=cache_write,
            reasoning_tokens=reasoning,
        )
