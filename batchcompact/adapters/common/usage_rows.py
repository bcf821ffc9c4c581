"""The usage table: one row per model request, whatever agent made it.

Invariants (the same for every source, so sums across sources mean the same thing):
- `input_tokens` is NON-cached input. Codex reports input including cached tokens; its extractor
  subtracts `cached_input_tokens`. Claude and pi already report non-cached input.
- `output_tokens` includes reasoning tokens; `reasoning_tokens` is the part of it that was reasoning
  (informational, never added again).
- `total_tokens` = input + output + cache_read + cache_write.
- `cache_write_1h_tokens` is the part of `cache_write_tokens` written to Anthropic's 1-hour cache
  (`cache_creation.ephemeral_1h_input_tokens`); it is priced at the 1-hour write rate, the rest at
  the 5-minute rate. 0 for every other source.
- `project` is the session's working directory where the file records one (Claude `cwd`, Codex and
  pi `cwd`), so folder slugs never stand in for a path.
- `recorded_cost_usd` is the cost the file itself records (pi `usage.cost.total`, batchcompact
  `cost_usd`), null where the file has none. Computed cost is not stored: it depends on the price map
  and is added at report time.
- `branch` is the git branch the agent recorded for the request (Claude Code `gitBranch` on the line,
  Codex `session_meta.git.branch`), null where the agent records none.
- `machine`, `machine_id` are the machine a row was recorded on, set only by a usage export read back
  (report/export.py); null for a row read from the agent's own files: the report fills in this machine.
- `agent` is the agent that wrote the row's file (`claude`, `codex`, `pi`, `gemini`, `opencode`, ...;
  see `batchcompact.report.readers`); `source` names the same agent (it always has: pi's descendants'
  rows say `pi` in both); the column is kept for exports and scripts (docs/cli.md, "One word: agent").
- `dedupe_key` is set where one request can appear in several files (Claude `message.id:requestId`,
  Codex event time + cumulative total, OpenCode/Kilo message id; a provider's response id with the
  call's numbers, `CallKeys`: Qwen Code, Copilot, kimi-cli); the report keeps one row per key
  across files: the highest `dedupe_rank` (a database row over a legacy JSON copy), then the largest usage.
- Every reader maps its agent's numbers onto these invariants: cached tokens reported INSIDE input
  (Codex, Gemini, Qwen, OpenAI `prompt_tokens`) are subtracted from input; reasoning reported BESIDE
  output (Gemini `thoughts`, OpenCode/Kilo `reasoning`) is added to output and kept in
  `reasoning_tokens`; reasoning reported INSIDE output (Codex) is only kept in `reasoning_tokens`.

Columns are added, never repurposed; bump `USAGE_SCHEMA_VERSION` on any change (the cache folder is
versioned by it, so old cache parts are ignored).
"""

from __future__ import annotations

import functools
import hashlib
import os
from datetime import datetime
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from batchcompact.core.jsontypes import JsonValue

USAGE_SCHEMA_VERSION = 4  # 3: + agent, dedupe_rank; 4: + branch, machine, machine_id

KINDS = ("main", "sidechain", "compaction", "branch_summary")

# (column, Arrow type, nullable); the Arrow schema is built from this when first needed, so code that
# only needs the columns or the version (the warm report path) never imports pyarrow.
# Every token kind a row counts, in this order in the usage rows and in the per-request export (export.py).
TOKEN_FIELDS: tuple[tuple[str, str, bool], ...] = (
    ("input_tokens", "int64", False),
    ("output_tokens", "int64", False),
    ("cache_read_tokens", "int64", False),
    ("cache_write_tokens", "int64", False),
    ("cache_write_1h_tokens", "int64", False),
    ("reasoning_tokens", "int64", False),
    ("total_tokens", "int64", False),
)
# The ranges a value read from a file is held to (report/extract_rows.py names and fixes what is outside them;
# report/export.py reads an export as columns only when nothing is):
# a request's recorded cost at or over this (USD) is no cost: beyond what whole picodollars in an Int64 hold
# (9.2e6 USD), where the sums are exact (money.py); no request has cost a million dollars.
MAX_RECORDED_USD = 1e6
# A token count over this in one request is no count (a file's 1e19 or 2**64): no model has a window of a
# billion tokens, and a billion tokens at the dearest price stays inside the money sums' Int64 (money.py).
MAX_REQUEST_TOKENS = 1_000_000_000
COUNT_FIELDS = ("input_tokens", "output_tokens", "cache_read_tokens", "cache_write_tokens", "cache_write_1h_tokens",
                "reasoning_tokens")  # the counts held to MAX_REQUEST_TOKENS
FIELDS: tuple[tuple[str, str, bool], ...] = (
    ("source", "string", False),
    ("agent", "string", False),
    ("file", "string", False),
    ("line", "int64", True),
    ("session_id", "string", True),
    ("project", "string", True),
    ("timestamp", "timestamp", True),
    ("provider", "string", True),
    ("model", "string", True),
    ("kind", "string", False),
    ("dedupe_key", "string", True),
    ("dedupe_rank", "int64", False),
    *TOKEN_FIELDS,
    ("recorded_cost_usd", "float64", True),
    ("branch", "string", True),
    ("machine", "string", True),
    ("machine_id", "string", True),
)
COLUMNS = tuple(name for name, _, _ in FIELDS)
_AGENT, _SESSION, _LINE, _TIME, _KEY = (COLUMNS.index(n) for n in ("agent", "session_id", "line", "timestamp", "dedupe_key"))
_NAMES = (COLUMNS.index("provider"), COLUMNS.index("model"))
_RECORDED = COLUMNS.index("recorded_cost_usd")
_NUMBERS = tuple(COLUMNS.index(n) for n in ("input_tokens", "output_tokens", "cache_read_tokens", "cache_write_tokens",
                                             "cache_write_1h_tokens", "reasoning_tokens"))


@functools.cache
def usage_schema() -> Any:  # Any: a pyarrow.Schema (pyarrow is untyped)
    """The usage table's Arrow schema (pyarrow imported here)."""
    import pyarrow as pa

    types = {"string": pa.string(), "int64": pa.int64(), "float64": pa.float64(),
             "timestamp": pa.timestamp("us", tz="UTC")}
    return pa.schema(
        [pa.field(name, types[kind], nullable=nullable) for name, kind, nullable in FIELDS],
        metadata={"batchcompact.usage_schema_version": str(USAGE_SCHEMA_VERSION)},
    )


def __getattr__(name: str) -> Any:  # Any: the module's lazy attributes (USAGE_SCHEMA: a pyarrow.Schema)
    if name == "USAGE_SCHEMA":  # the schema object, for callers that name it
        return usage_schema()
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


class UsageRows:
    """One file's rows, each a tuple in `COLUMNS` order; `columns` (column lists) and `to_table()` (the
    Arrow table with `USAGE_SCHEMA`) are built from them when asked."""

    def __init__(self) -> None:
        self.rows: list[tuple] = []

    def __len__(self) -> int:
        return len(self.rows)

    @property
    def columns(self) -> dict[str, list]:
        if not self.rows:
            return {name: [] for name in COLUMNS}
        return {name: list(values) for name, values in zip(COLUMNS, zip(*self.rows, strict=True), strict=True)}

    def add(
        self,
        *,
        source: str,
        agent: str | None = None,
        file: str,
        line: int | None,
        session_id: str | None,
        project: str | None,
        timestamp: datetime | None,
        provider: str | None,
        model: str | None,
        kind: str,
        input_tokens: int,
        output_tokens: int,
        cache_read_tokens: int = 0,
        cache_write_tokens: int = 0,
        cache_write_1h_tokens: int = 0,
        reasoning_tokens: int = 0,
        recorded_cost_usd: float | None = None,
        dedupe_key: str | None = None,
        dedupe_rank: int = 0,
        branch: str | None = None,
        machine: str | None = None,
        machine_id: str | None = None,
    ) -> None:
        self.rows.append((
            source, agent or source, file, line, session_id, project, timestamp, provider, model, kind,
            dedupe_key, dedupe_rank, input_tokens, output_tokens, cache_read_tokens, cache_write_tokens,
            cache_write_1h_tokens, reasoning_tokens,
            input_tokens + output_tokens + cache_read_tokens + cache_write_tokens, recorded_cost_usd, branch,
            machine, machine_id,
        ))

    def add_request(self, agent: str, path: str | os.PathLike[str], session_id: str, identity: str, *,
                    # Any: `add`'s other keywords, each of its own type
                    line: int | None = None, **fields: Any) -> None:
        """One model request of a session, known in it by `identity` (its id there, else its place): a `main`
        row of `agent` keyed `<agent>:<session>:<identity>`, the same key in every copy of the session.
        `fields`: the rest of `add`'s (project, timestamp, provider, model, the counts, ...)."""
        self.add(source=agent, file=str(path), line=line, session_id=session_id, kind="main",
                 dedupe_key=f"{agent}:{session_id}:{identity}", **fields)

    def to_table(self) -> Any:  # Any: a pyarrow.Table (pyarrow is untyped)
        import pyarrow as pa

        columns = self.columns
        try:
            return pa.Table.from_pydict(columns, schema=usage_schema())
        except (pa.ArrowTypeError, pa.ArrowInvalid):
            # a name read from a damaged line (a number, a list, an object where a session id or a model
            # belongs) names nothing: null, as an absent one; only then is every string column gone over
            for name, kind, _ in FIELDS:
                if kind == "string":
                    columns[name] = [v if v is None or type(v) is str else None for v in columns[name]]
            return pa.Table.from_pydict(columns, schema=usage_schema())


def empty_table() -> Any:  # Any: a pyarrow.Table (pyarrow is untyped)
    return usage_schema().empty_table()


def row_identity(row: tuple) -> str:
    """The identity of a row whose reader gives it no `dedupe_key` (a Claude line without ids, a Gemini
    message without one, ...): a hash of its agent, session, line, time, provider, model, numbers and
    recorded cost (`row|<agent>|<hash>`: no `:`, since a Claude key's part before the first `:` is its
    message id, `collapse_sidechain_replays`). A copy of the same file (a synced folder, another machine's
    export of it) has the same; two rows that differ in anything the report counts do not."""
    when = row[_TIME]
    text = "\x1f".join((
        "" if row[_SESSION] is None else row[_SESSION], str(row[_LINE]), "" if when is None else when.isoformat(),
        *("" if row[i] is None else row[i] for i in _NAMES), *(str(row[i]) for i in _NUMBERS),
        repr(row[_RECORDED])))
    digest = hashlib.blake2b(text.encode("utf-8", "surrogatepass"), digest_size=16).hexdigest()
    return f"row|{row[_AGENT]}|{digest}"


def entry_key(session_id: str | None, entry_id: str | None) -> str | None:
    """The dedupe key of a summary entry's usage, shared by the session file and the run report."""
    return f"summary-entry:{session_id}:{entry_id}" if session_id and entry_id else None



class CallKeys:
    """The dedupe keys of one log's rows named by a provider's response id (`chatcmpl-…`): the id with
    the call's numbers, and for the n-th row of the log with the same id and numbers, `#n`. The id alone
    merged different calls wherever a server reuses it (a local or test server answers every request with
    `chatcmpl-mock`, often with the same numbers too); copies of one call (a fork's copied lines, the same
    call in two logs) carry the same id and numbers in the same order, and count once."""

    def __init__(self, agent: str) -> None:
        self.agent = agent
        self.seen: dict[str, int] = {}

    def __call__(self, call_id: object, *numbers: object) -> str | None:
        """The key of the next row of this log named `call_id` (None without an id)."""
        if not isinstance(call_id, str) or not call_id:
            return None
        key = ":".join((self.agent, call_id, *map(_scalar, numbers)))
        count = self.seen[key] = self.seen.get(key, 0) + 1
        return key if count == 1 else f"{key}#{count}"


def _scalar(value: JsonValue) -> str:
    """A key part: a string or number as `str` gives it; a list or an object (a file's bad value, maybe nested
    a thousand levels: its `str` recursed past Python's limit) as its type's name."""
    return str(value) if value is None or isinstance(value, str | int | float) else f"<{type(value).__name__}>"


class PiEntryKeys:
    """The dedupe keys of a pi-format session's assistant messages (pi, its descendants, OpenClaw's
    transcripts): what a copy of the entry keeps wherever it is. pi's `/fork` (`createBranchedSession`)
    and `forkFrom` write a new session file (a new session id) holding the old entries verbatim, ids and
    times included; pi's v1 -> v3 migration rewrites a file with new random entry ids (`generateId`), and
    ours gives deterministic ones. So neither the session id, nor the line, nor the entry id is shared by
    every copy; the entry's time (`timestamp`, milliseconds) and its message's (`message.timestamp`, epoch
    milliseconds), its model (`provider/model`) and the four token counts are. The key is `pi-entry:<entry
    time>:<message time>:<provider>/<model>:<input>:<output>:<cache read>:<cache write>` (two sessions'
    requests at the same millisecond with the same counts are still told apart by their models). Within one session, a line repeating a key with the same entry id
    (or none) is the same record written twice (counted once, as ccusage counts a repeated OpenClaw line);
    another entry id with the same key is another request: the n-th such id gets `#n`. A message with
    neither time falls back to `fallback` (its session and entry id or line: counted once per session)."""

    PREFIX = "pi-entry"  # (the format, not an agent: OpenClaw and pi's descendants write it too)
    # The copy the dedupe keeps (`dedupe_rank`, highest wins): the session that made the request over a
    # fork holding a copy of it (a header naming its `parentSession`), so a request stays its own
    # session's and project's (`forkFrom` gives the fork another cwd).
    ORIGINAL, FORK = 1, 0

    @classmethod
    def rank(cls, header: dict) -> int:
        """A session header's rows' `dedupe_rank`: FORK where pi wrote the file as a copy of another
        (`/fork`, `forkFrom`: the header names the parent file), else ORIGINAL."""
        parent = header.get("parentSession")
        return cls.FORK if isinstance(parent, str) and parent else cls.ORIGINAL

    def __init__(self) -> None:
        self.ids: dict[str, list] = {}  # key -> the entry ids seen with it, in order

    def __call__(self, entry: dict, message: dict, counts: tuple[int, ...], fallback: str | None) -> str | None:
        entry_time, message_time = entry.get("timestamp"), message.get("timestamp")
        if entry_time is None and message_time is None:
            return fallback
        model = f"{_scalar(message.get('provider') or '')}/{_scalar(message.get('model') or '')}"
        key = ":".join((self.PREFIX, _scalar(entry_time), "" if message_time is None else _scalar(message_time),
                        model, *map(str, counts)))
        entry_id = entry.get("id") if isinstance(entry.get("id"), str) else None
        ids = self.ids.setdefault(key, [])
        if entry_id not in ids:
            ids.append(entry_id)
        n = ids.index(entry_id) + 1
        return key if n == 1 else f"{key}#{n}"
