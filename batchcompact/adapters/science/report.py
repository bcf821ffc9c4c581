"""Claude Science usage: the per-frame counters of its metadata database (`operon-cli.db`).

Table `frames`, one row per frame: a conversation (`parent_frame_id` NULL) or a sub-agent run inside one
(`root_frame_id` names the conversation). Its counters are the frame's totals so far (the app updates the
row while the frame runs): `input_tokens`, `output_tokens`, `cache_read_tokens`, `cache_write_tokens`,
`total_cost` (the app's own price of them), `updated_at` (epoch ms); newer databases add `aux_input_tokens`,
`aux_output_tokens`, `aux_cache_read_tokens`, `aux_cache_write_tokens`, `aux_cost` (the frame's auxiliary
calls, another model, beside the main counters). `projects(id, name)` names `project_id`.

Counting (README.md beside this file, "How the report reads it", has the evidence and where ccusage differs):
- one row per frame, keyed `science:<frame id>` (the same frame in a copy of the database counts once, the
  copy with more output winning: counters only grow); its session is the conversation
  (`root_frame_id`, else the frame's own id), its time `updated_at` (else `created_at`);
- `input_tokens` INCLUDES the cache reads and writes: input = input - cache read - cache write (a frame whose
  cache counters exceed its input is read as exclusive: input as written);
- `total_cost` is the recorded cost; the model's routing prefix (`cs-switch-direct:`) is dropped;
- the auxiliary counters are a second row (`science:<frame id>:aux`) with no model: `aux_cost` is its
  recorded cost, and `calculate` cannot price it;
- a frame whose input and output are both NULL (an uploads frame, a frame not run) has no usage; a counter
  of the wrong type is named in a warning (table and rowid) and counted as 0; a frame with no time is named
  and not counted.
"""

from __future__ import annotations

import functools
import json
import math
import sqlite3
from contextlib import closing
from pathlib import Path

from batchcompact.adapters.common.documents import columns, connect, table_rows
from batchcompact.adapters.common.lines import ExtractStats, parse_timestamp
from batchcompact.adapters.common.usage_rows import UsageRows

AGENT = "science"
REQUIRED = ("id", "input_tokens", "output_tokens")
MAIN = ("input_tokens", "output_tokens", "cache_read_tokens", "cache_write_tokens")
AUX = ("aux_input_tokens", "aux_output_tokens", "aux_cache_read_tokens", "aux_cache_write_tokens")
SQLITE_HEADER = b"SQLite format 3\x00"


def detect_file(path: Path, head: bytes) -> bool:
    """A SQLite database with a `frames` table holding the token columns (a Claude Science database of any
    file name)."""
    if not head.startswith(SQLITE_HEADER):
        return False
    try:
        with closing(connect(path)) as conn:
            return set(REQUIRED) <= set(columns(conn, "frames"))
    except sqlite3.Error:
        return False


def _warn(stats: ExtractStats, rowid: int, message: str) -> None:
    stats.warn(None, f"frames rowid {rowid}: {message}")


def _count(row: dict, name: str, stats: ExtractStats, rowid: int) -> int | None:
    """A counter: a non-negative integer, None when NULL; anything else is named and counted as 0."""
    value = row.get(name)
    if value is None:
        return None
    if type(value) is int and value >= 0:
        return value
    if isinstance(value, float) and value.is_integer() and value >= 0:
        return int(value)
    _warn(stats, rowid, f"`{name}` is {_shown(value)}, not a token count; counted as 0")
    return 0


def _cost(row: dict, name: str, stats: ExtractStats, rowid: int) -> float | None:
    """A recorded cost (a finite non-negative number), None when NULL or named as not a cost."""
    value = row.get(name)
    if value is None:
        return None
    if isinstance(value, (int, float)) and not isinstance(value, bool) and math.isfinite(value) and value >= 0:
        return float(value)
    _warn(stats, rowid, f"`{name}` is {_shown(value)}, not a cost; no recorded cost")
    return None


def _shown(value: object) -> str:
    if isinstance(value, bytes):
        return f"a {len(value)}-byte blob"
    return json.dumps(value)[:40]


def _millis(value: object) -> int | None:
    if isinstance(value, (int, float)) and not isinstance(value, bool) and math.isfinite(value) and value > 0:
        return int(value)
    return None


def _projects(path: Path) -> dict[str, str]:
    """`projects`' id -> name (empty without the table or its columns)."""
    with closing(connect(path)) as conn:
        if not {"id", "name"} <= set(columns(conn, "projects")):
            return {}
        return {pid: name for pid, name in conn.execute("SELECT id, name FROM projects")
                if isinstance(pid, str) and isinstance(name, str) and name.strip()}


def _split(total_input: int, cache_read: int, cache_write: int) -> int:
    """The uncached input: `input_tokens` includes the cache reads and writes, unless they exceed it."""
    return total_input - cache_read - cache_write if cache_read + cache_write <= total_input else total_input


def extract_science(path: str | Path, rows: UsageRows, stats: ExtractStats) -> None:
    path = Path(path)
    try:
        with closing(connect(path)) as conn:
            names = set(columns(conn, "frames"))
        if not set(REQUIRED) <= names:
            stats.refuse("no `frames` table with `id`, `input_tokens` and `output_tokens`: not a Claude Science "
                         "database")
            return
        projects = _projects(path)
        for rowid, row in table_rows(path, "frames", stats):
            _add_frame(path, rowid, row, projects, rows, stats)
    except sqlite3.DatabaseError as exc:
        stats.refuse(f"not a readable Claude Science database ({exc})")


def _add_frame(path: Path, rowid: int, row: dict, projects: dict[str, str], rows: UsageRows,
               stats: ExtractStats) -> None:
    frame_id = row.get("id")
    if row.get("input_tokens") is None and row.get("output_tokens") is None:
        return  # no usage recorded (an uploads frame, a frame never run)
    stats.parsed += 1
    if not isinstance(frame_id, str) or not frame_id:
        _warn(stats, rowid, "a frame without an `id`; not counted")
        return
    when = _millis(row.get("updated_at")) or _millis(row.get("created_at"))
    if when is None:
        _warn(stats, rowid, f"frame {frame_id} has no time (`updated_at`, `created_at`); not counted")
        return
    root = row.get("root_frame_id")
    session = root if isinstance(root, str) and root else frame_id
    project_id = row.get("project_id")
    project = projects.get(project_id, project_id) if isinstance(project_id, str) and project_id else None
    model = row.get("model")
    model = model.partition(":")[2] or model if isinstance(model, str) and model.strip() else None
    main = [_count(row, name, stats, rowid) or 0 for name in MAIN]
    add = functools.partial(rows.add, source=AGENT, file=str(path), line=rowid, session_id=session, project=project,
                            timestamp=parse_timestamp(when), provider=None, kind="main")
    total_input, output, cache_read, cache_write = main
    add(model=model.strip() if model else None, dedupe_key=f"{AGENT}:{frame_id}",
             input_tokens=_split(total_input, cache_read, cache_write), output_tokens=output,
             cache_read_tokens=cache_read, cache_write_tokens=cache_write,
             recorded_cost_usd=_cost(row, "total_cost", stats, rowid))
    aux = [_count(row, name, stats, rowid) for name in AUX]
    aux_cost = _cost(row, "aux_cost", stats, rowid)
    if any(aux) or aux_cost:
        total_input, output, cache_read, cache_write = (n or 0 for n in aux)
        add(model=None, dedupe_key=f"{AGENT}:{frame_id}:aux",
                 input_tokens=_split(total_input, cache_read, cache_write), output_tokens=output,
                 cache_read_tokens=cache_read, cache_write_tokens=cache_write, recorded_cost_usd=aux_cost)
