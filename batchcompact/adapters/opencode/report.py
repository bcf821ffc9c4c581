"""OpenCode usage (and Kilo's, an OpenCode fork with the same message JSON).

Where: `opencode.db` and the channel databases `opencode-<channel>.db` (SQLite, table `message(id,
session_id, ..., data)`, `data` the message JSON; table `session(id, directory, ...)`), and the legacy
tree `storage/message/<sessionID>/<messageID>.json` (one message JSON per file, with `id` and
`sessionID`). Kilo: `kilo.db`, `kilo-<channel>.db`.

One row per assistant message with tokens: `tokens.input` is NON-cached input already (cache reads are
`tokens.cache.read`, writes `tokens.cache.write`); `tokens.reasoning` is BESIDE `tokens.output`, so it is
added to output (and kept in `reasoning_tokens`) — ccusage 20's OpenCode reader drops it. `cost` (USD,
computed by OpenCode) is the recorded cost. Time: `time.created` (ms; s accepted). Model:
`modelID` with `providerID` as the provider; a message without a model or a time is skipped (a user
message, or an unfinished one).

Kinds: a message with `summary: true` is a compaction; one in a session with a `parent_id` (a sub-agent
task's session) is a sidechain.

Counted once: OpenCode rewrites a message in place while it streams; the database row is its final
state and a legacy JSON copy may be stale. Every row is keyed by its message id (`opencode:<id>`), and
database rows rank above JSON copies, so the database row wins wherever both exist. Every channel
database is read (ccusage 20 reads only `opencode.db` when it exists).
"""

from __future__ import annotations

from pathlib import Path

from batchcompact.adapters.common.documents import (
    columns,
    connect,
    json_column,
    quote_name,
    read_json,
    table_rows,
)
from batchcompact.adapters.common.lines import ExtractStats, as_float, as_int, parse_timestamp
from batchcompact.adapters.common.usage_rows import UsageRows
from batchcompact.core.jsontypes import JsonValue

DATABASE_RANK = 1  # a database row beats a legacy JSON copy of the same message
SECONDS_BEFORE = 10_000_000_000  # a `time.created` below this is in seconds, not milliseconds


def extract_opencode(path: str | Path, rows: UsageRows, stats: ExtractStats) -> None:
    _extract(path, rows, stats, agent="opencode")


def extract_kilo(path: str | Path, rows: UsageRows, stats: ExtractStats) -> None:
    _extract(path, rows, stats, agent="kilo")


def _extract(path: str | Path, rows: UsageRows, stats: ExtractStats, *, agent: str) -> None:
    path = Path(path)
    if path.suffix == ".db":
        _extract_database(path, rows, stats, agent)
        return
    doc = read_json(path, stats)
    if doc is None:
        return
    if not isinstance(doc, dict):
        stats.warn(None, "not a JSON object; file skipped")
        return
    add_message(rows, stats, doc, agent=agent, file=str(path), line=None, message_id=doc.get("id"),
                session_id=doc.get("sessionID"), project=None, rank=0)


def _extract_database(path: Path, rows: UsageRows, stats: ExtractStats, agent: str) -> None:
    sessions = _sessions(path)
    for rowid, row in table_rows(path, "message", stats):
        data = json_column(row.get("data"), stats, f"message rowid {rowid}")
        if data is None:
            continue
        session_id = row.get("session_id") or data.get("sessionID")
        directory, child = sessions.get(session_id, (None, False))
        add_message(rows, stats, data, agent=agent, file=str(path), line=rowid,
                    message_id=data.get("id") or row.get("id"), session_id=session_id,
                    project=directory, rank=DATABASE_RANK, sidechain=child)


def _sessions(path: Path) -> dict[object, tuple[str | None, bool]]:
    """session id -> (its working directory, whether it is a sub-agent's session: it has a parent), from
    the `session` table where there is one."""
    from contextlib import closing

    with closing(connect(path)) as conn:
        names = columns(conn, "session")
        if "id" not in names or "directory" not in names:
            return {}
        parent = quote_name("parent_id") if "parent_id" in names else "NULL"
        query = f"SELECT id, directory, {parent} FROM {quote_name('session')}"
        return {sid: (folder if isinstance(folder, str) else None, bool(up)) for sid, folder, up in conn.execute(query)}


def add_message(rows: UsageRows, stats: ExtractStats, data: dict, *, agent: str, file: str, line: int | None,
                message_id: JsonValue, session_id: JsonValue, project: str | None, rank: int, sidechain: bool = False) -> None:
    """One OpenCode/Kilo message JSON -> a row (nothing for user messages and messages without usage)."""
    if data.get("role") not in (None, "assistant"):
        return
    tokens = data.get("tokens")
    model, provider = data.get("modelID"), data.get("providerID")
    if not isinstance(tokens, dict) or not isinstance(model, str) or not model:
        return
    created = (data.get("time") or {}).get("created") if isinstance(data.get("time"), dict) else None
    if isinstance(created, (int, float)) and not isinstance(created, bool) and created < SECONDS_BEFORE:
        created = created * 1000
    when = parse_timestamp(created)
    if when is None:
        stats.warn(line, f"{agent} message {message_id} without a time; not counted")
        return
    cache = tokens.get("cache")
    cache = cache if isinstance(cache, dict) else {}
    reasoning = as_int(tokens.get("reasoning"))
    cost = as_float(data.get("cost"))
    where = data.get("path")
    if project is None:
        project = where.get("cwd") if isinstance(where, dict) else where if isinstance(where, str) else None
    rows.add(
        source=agent,
        file=file,
        line=line,
        session_id=session_id if isinstance(session_id, str) else None,
        project=project if isinstance(project, str) else None,
        timestamp=when,
        provider=provider if isinstance(provider, str) else None,
        model=model,
        kind="compaction" if data.get("summary") is True else "sidechain" if sidechain else "main",
        input_tokens=as_int(tokens.get("input")),
        output_tokens=as_int(tokens.get("output")) + reasoning,
        reasoning_tokens=reasoning,
        cache_read_tokens=as_int(cache.get("read")),
        cache_write_tokens=as_int(cache.get("write")),
        recorded_cost_usd=cost if cost else None,
        dedupe_key=f"{agent}:{message_id}" if isinstance(message_id, str) and message_id else None,
        dedupe_rank=rank,
    )
