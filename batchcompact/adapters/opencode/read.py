"""One OpenCode (or Kilo) session inside its database as a pi-shaped planning view.

OpenCode keeps every session of a user in one SQLite database (`opencode.db`; Kilo: `kilo.db`): table
`session` (one row per session), `message(id, session_id, time_created, time_updated, data)` (`data`: the
message JSON without `id`/`sessionID`), `part(id, message_id, session_id, ..., data)` (the message's parts,
in id order), `event` (the sync log: `message.updated.1`, `message.part.updated.1`, ... per session, `seq`
counted in `event_sequence`) and `migration` (the schema migrations applied, by name).

OpenCode's loader (`MessageV2.filterCompacted` of opencode 1.18.33) walks the messages newest first and
stops at the user message holding a `compaction` part whose summary (an assistant message with
`summary: true`, `finish` set, no error, `parentID` = that user message) finished; when the part names a
`tail_start_id`, the walk goes on back to that message, and the context is reordered to: the compaction's
user message ("What did we do so far?"), the summary, the tail (`tail_start_id` up to the compaction),
then what follows the summary. `toModelMessages` then gives: user text parts (not `ignored`, not empty);
assistant text, reasoning, and one tool call + result per `tool` part (`completed`: its output, or
"[Old tool result content cleared]" once `state.time.compacted`; `error`: the error text; `pending`/
`running`: "[Tool execution was interrupted]"); an assistant message with an `error` is left out.

Mapping: every message is an entry (id = the message id), chained in (time_created, id) order; a tool
part adds a `toolResult` entry (id = the part id) after its assistant message. Each finished OpenCode
compaction (its user message and its summary) becomes one `compaction` entry (id = the summary's id,
`firstKeptEntryId` = `tail_start_id`, else the compaction itself), so the planning view's context is
OpenCode's. Usage: `tokens.input` is non-cached, `reasoning` is added to `output`.
"""

from __future__ import annotations

import json
import sqlite3
from contextlib import closing, nullcontext
from pathlib import Path
from urllib.parse import quote

from batchcompact.adapters.common.database import SEP
from batchcompact.adapters.common.lines import as_int, object_at
from batchcompact.adapters.opencode.extra import OpenCodeSessionExtra
from batchcompact.adapters.opencode.settings import model_limits
from batchcompact.core.entries import ERROR, WARNING, Entry, Problem
from batchcompact.core.jsontypes import JsonObject, JsonValue
from batchcompact.core.session import Session
from batchcompact.core.tree import SessionTree
from batchcompact.errors import SessionReadError

FORMAT = "opencode"
COMPACTION_PROMPT = "What did we do so far?"
SUBTASK_PROMPT = "The following tool was executed by the user"
CLEARED = "[Old tool result content cleared]"
INTERRUPTED = "[Tool execution was interrupted]"

# The tables and columns the reader and the writer use; a database without them is not one we know.
TABLES = {
    "session": ("id", "directory", "time_updated"),
    "message": ("id", "session_id", "time_created", "time_updated", "data"),
    "part": ("id", "message_id", "session_id", "time_created", "time_updated", "data"),
    "event": ("id", "aggregate_id", "seq", "type", "data"),
    "event_sequence": ("aggregate_id", "seq"),
}
# The newest schema migration of each OpenCode and Kilo release whose database was recorded and judged
# (tests/agents/opencode/test_judge_opencode.py); older databases are known through them, a newer one is refused.
KNOWN_MIGRATIONS = {
    "opencode": "20260622202450_simplify_session_input",  # opencode-ai 1.18.33
    "kilo": "20260907102000_kilocode_model_usage_index",  # @kilocode/cli 7.7.7
}
DISPLAY = {"opencode": "OpenCode", "kilo": "Kilo"}
DATABASES = ("opencode.db", "kilo.db")


class OpenCodeStoreError(SessionReadError):
    """The database cannot be read (or written) as OpenCode's: the message names the file and why."""


def connect(path: str | Path, *, write: bool = False, timeout: float = 5.0) -> sqlite3.Connection:
    """A connection to the database (read-only unless `write`); SQLite waits `timeout` s on a lock."""
    mode = "rw" if write else "ro"
    uri = "file:" + quote(str(Path(path).resolve())) + f"?mode={mode}"
    conn = sqlite3.connect(uri, uri=True, timeout=timeout, isolation_level=None)
    conn.execute(f"PRAGMA busy_timeout = {int(timeout * 1000)}")
    return conn


def check_schema(conn: sqlite3.Connection, path: str | Path, agent: str = FORMAT) -> str | None:
    """Raise `OpenCodeStoreError` unless the database has the tables and columns we use and its newest
    migration is one we know; returns that migration's name (None for a database without a `migration`
    table, the older releases', whose tables are checked all the same)."""
    display = DISPLAY.get(agent, agent)  # kilo.db is Kilo's, said as such (it was "not an OpenCode database")
    for table, needed in TABLES.items():
        have = {row[1] for row in conn.execute(f'PRAGMA table_info("{table}")')}
        if not have:
            tables = [row[0] for row in conn.execute(
                "SELECT name FROM sqlite_master WHERE type='table' AND name NOT LIKE 'sqlite_%' ORDER BY name")]
            held = f"it holds only {', '.join(f'`{t}`' for t in tables)}" if tables else "it holds no table"
            raise OpenCodeStoreError(f"{path}: no `{table}` table ({held}): not {_a(display)} session database "
                                     "this version knows")
        missing = [c for c in needed if c not in have]
        if missing:
            raise OpenCodeStoreError(f"{path}: table `{table}` has no column {', '.join(missing)}: "
                                     f"{_a(display)} schema this version does not know")
    if not conn.execute("SELECT 1 FROM sqlite_master WHERE type='table' AND name='migration'").fetchone():
        return None
    newest = conn.execute("SELECT id FROM migration ORDER BY id DESC LIMIT 1").fetchone()
    name = newest[0] if newest else None
    known = KNOWN_MIGRATIONS.get(agent, KNOWN_MIGRATIONS[FORMAT])
    if isinstance(name, str) and name > known:
        raise OpenCodeStoreError(f"{path}: unknown {DISPLAY.get(agent, agent)} schema version {name!r} (newest known: "
                                 f"{known!r}); not read or written")
    return name


# Every session of a database is the path `<db>#<session id>` (`SEP`, the floor's; store.py's addresses too).


def _a(name: str) -> str:
    return f"an {name}" if name[:1].lower() in "aeiou" else f"a {name}"


def format_of(db: str | Path) -> str:
    """`kilo` for Kilo's `kilo.db`, else `opencode`."""
    return "kilo" if Path(db).name.startswith("kilo") else "opencode"


def split_session_path(path: str | Path) -> tuple[Path, str] | None:
    """(database, session id) of `<opencode.db or kilo.db>#<id>`; None for any other path."""
    db, sep, session_id = str(path).rpartition(SEP)
    if not sep or not session_id or Path(db).name not in ("opencode.db", "kilo.db"):
        return None
    return Path(db), session_id


def session_ids(path: str | Path, agent: str | None = None) -> list[str]:
    """The ids of the database's sessions, oldest first (`agent` by the file's name unless given;
    OpenCodeStoreError for one we cannot read)."""
    try:
        with closing(connect(path)) as conn:
            check_schema(conn, path, agent or format_of(path))
            return [row[0] for row in conn.execute("SELECT id FROM session ORDER BY time_created, id")]
    except sqlite3.Error as exc:
        raise OpenCodeStoreError(f"{path}: not a readable SQLite database ({exc})") from None


def load_messages(conn: sqlite3.Connection, session_id: str, problems: list[Problem], name: str
                  ) -> list[JsonObject]:
    """The session's messages, oldest first: `{"info": message JSON with id, "parts": [part JSON with id],
    "updated": time_updated}` (a row whose JSON is broken is a problem, never a crash)."""
    messages: list[JsonObject] = []
    by_id: dict[str, JsonObject] = {}
    rows = conn.execute("SELECT id, time_created, time_updated, data FROM message WHERE session_id = ? "
                        "ORDER BY time_created, id", (session_id,))
    for message_id, created, updated, data in rows:
        info = _json(data, problems, name, f"message {message_id}")
        if info is None:
            continue
        info = {**info, "id": message_id, "sessionID": session_id}
        info.setdefault("time", {}).setdefault("created", created)
        record = {"info": info, "parts": [], "updated": updated}
        messages.append(record)
        by_id[message_id] = record
    for part_id, message_id, data in conn.execute(
            "SELECT id, message_id, data FROM part WHERE session_id = ? ORDER BY message_id, id", (session_id,)):
        part = _json(data, problems, name, f"part {part_id}")
        if part is None:
            continue
        if message_id not in by_id:
            problems.append(Problem(name, None, WARNING, f"part {part_id} of a message not in the session; ignored"))
            continue
        by_id[message_id]["parts"].append({**part, "id": part_id, "messageID": message_id})
    return messages


def _json(raw: str | bytes | None, problems: list[Problem], name: str, what: str) -> JsonObject | None:
    try:
        value = json.loads(raw)  # type: ignore[arg-type]  # NULL: its TypeError is the problem said
    except (TypeError, ValueError) as exc:
        problems.append(Problem(name, None, ERROR, f"{what}: its data is not JSON ({exc})"))
        return None
    if not isinstance(value, dict):
        problems.append(Problem(name, None, ERROR, f"{what}: its data is not a JSON object"))
        return None
    return value


def _finished_summary(info: JsonObject) -> bool:
    return info.get("role") == "assistant" and bool(info.get("summary")) and bool(info.get("finish")) \
        and not info.get("error")


def compaction_part(message: JsonObject) -> JsonObject | None:
    return next((p for p in message["parts"] if p.get("type") == "compaction"), None)


def filter_compacted(messages: list[JsonObject]) -> list[JsonObject]:
    """OpenCode's `filterCompacted` (1.18.33): what it loads of an oldest-first message list, in the order
    it sends it to the model."""
    out: list[JsonObject] = []
    summarized: set[str] = set()
    tail: str | None = None
    for message in reversed(messages):
        out.append(message)
        info = message["info"]
        if tail is not None:
            if info["id"] == tail:
                break
            continue
        if info.get("role") == "user" and info["id"] in summarized:
            part = compaction_part(message)
            if part is None:
                continue
            if not part.get("tail_start_id"):
                break
            tail = part["tail_start_id"]
            if info["id"] == tail:
                break
            continue
        if _finished_summary(info) and isinstance(info.get("parentID"), str):  # a damaged row's list names none
            summarized.add(info.get("parentID"))
    out.reverse()
    at = next((i for i in range(len(out) - 1, -1, -1) if out[i]["info"].get("role") == "user"
               and any(p.get("type") == "compaction" and "tail_start_id" in p for p in out[i]["parts"])), -1)
    if at < 0:
        return out
    user = out[at]
    part = next(p for p in user["parts"] if p.get("type") == "compaction" and "tail_start_id" in p)
    summary = next((i for i in range(at + 1, len(out)) if out[i]["info"].get("role") == "assistant"
                    and out[i]["info"].get("summary") and out[i]["info"].get("parentID") == user["info"]["id"]), -1)
    start = next((i for i, m in enumerate(out) if m["info"]["id"] == part.get("tail_start_id")), -1) \
        if part.get("tail_start_id") else -1
    if 0 <= start < at < summary:
        return out[at:summary + 1] + out[start:at] + out[summary + 1:]
    return out


def usage(info: JsonObject) -> dict[str, int] | None:
    tokens = info.get("tokens")
    if not isinstance(tokens, dict):
        return None
    cache = object_at(tokens, "cache")
    out = {"input": _int(tokens.get("input")), "output": _int(tokens.get("output")) + _int(tokens.get("reasoning")),
           "cacheRead": _int(cache.get("read")), "cacheWrite": _int(cache.get("write"))}
    out["totalTokens"] = sum(out.values())
    return out


def _int(value: JsonValue) -> int:
    return as_int(value)  # 0 for what is not a finite number (inf, NaN)


def user_message(message: JsonObject) -> JsonObject | None:
    """A user message's model content (None when OpenCode sends nothing of it)."""
    blocks = []
    for part in message["parts"]:
        kind = part.get("type")
        if kind == "text" and not part.get("ignored") and part.get("text"):
            blocks.append({"type": "text", "text": part["text"]})
        elif kind == "compaction":
            blocks.append({"type": "text", "text": COMPACTION_PROMPT})
        elif kind == "subtask":
            blocks.append({"type": "text", "text": SUBTASK_PROMPT})
    if not blocks:
        return None
    return {"role": "user", "content": blocks, "timestamp": message["info"]["time"].get("created")}


def tool_output(part: JsonObject) -> tuple[str, bool]:
    """A tool part's result as OpenCode sends it: (text, is an error)."""
    state = object_at(part, "state")
    status = state.get("status")
    if status == "completed":
        if isinstance(state.get("time"), dict) and state["time"].get("compacted"):
            return CLEARED, False
        output = state.get("output")
        return output if isinstance(output, str) else json.dumps(output, ensure_ascii=False), False
    if status == "error":
        metadata = object_at(state, "metadata")
        if metadata.get("interrupted") is True and isinstance(metadata.get("output"), str):
            return metadata["output"], False
        return str(state.get("error") or ""), True
    return INTERRUPTED, True


def assistant_messages(message: JsonObject) -> list[tuple[str, JsonObject]]:
    """An assistant message's model content as (entry id, pi message): the reply, then one toolResult per
    tool part; nothing for a message OpenCode leaves out (an error that is not an abort with content)."""
    info = message["info"]
    error = info.get("error")
    if error and not (isinstance(error, dict) and error.get("name") == "MessageAbortedError"
                      and any(p.get("type") not in ("step-start", "reasoning") for p in message["parts"])):
        return []
    created = info["time"].get("created")
    blocks: list[JsonObject] = []
    results: list[tuple[str, JsonObject]] = []
    for part in message["parts"]:
        kind = part.get("type")
        if kind == "text":
            blocks.append({"type": "text", "text": part.get("text") or ""})
        elif kind == "reasoning":
            blocks.append({"type": "thinking", "thinking": part.get("text") or ""})
        elif kind == "tool":
            state = object_at(part, "state")
            call_id = str(part.get("callID") or part["id"])
            name = str(part.get("tool") or "")
            arguments = object_at(state, "input")
            blocks.append({"type": "toolCall", "id": call_id, "name": name, "arguments": arguments})
            text, is_error = tool_output(part)
            results.append((part["id"], {"role": "toolResult", "toolCallId": call_id, "toolName": name,
                                         "content": [{"type": "text", "text": text}], "isError": is_error,
                                         "timestamp": created}))
    if not blocks:
        return []
    reply = {"role": "assistant", "content": blocks, "api": "opencode", "provider": info.get("providerID") or "",
             "model": info.get("modelID") or "", "stopReason": "toolUse" if results else "stop",
             "timestamp": created}
    found = usage(info)
    if found is not None:
        reply["usage"] = found
    return [(info["id"], reply), *results]


def summary_text(message: JsonObject) -> str:
    return "".join(p.get("text") or "" for p in message["parts"] if p.get("type") == "text")


def read_session(path: str | Path, session_id: str, *, agent: str = FORMAT,
                 conn: sqlite3.Connection | None = None) -> Session:
    """One session of an OpenCode database (through `conn` when given: a writer's own transaction). Never
    raises on bad content (problems go on the Session); an unreadable database or an unknown schema is one
    error problem."""
    name = f"{path}#{session_id}"
    problems: list[Problem] = []
    header: JsonObject = {"id": session_id}
    messages: list[JsonObject] = []
    try:
        with closing(connect(path)) if conn is None else nullcontext(conn) as db:
            check_schema(db, path, agent)
            row = db.execute("SELECT directory, time_updated FROM session WHERE id = ?", (session_id,)).fetchone()
            if row is None:
                raise OpenCodeStoreError(f"{path}: no session {session_id!r}")
            header.update(cwd=row[0], time_updated=row[1])
            messages = load_messages(db, session_id, problems, name)
    except OpenCodeStoreError as exc:
        problems.append(Problem(name, None, ERROR, str(exc)))
    except sqlite3.Error as exc:
        problems.append(Problem(name, None, ERROR, f"{path}: not a readable SQLite database ({exc})"))
    entries = build_entries(messages, name, problems)
    tree = SessionTree(entries, name)
    problems.extend(tree.problems)
    model = next(({"providerID": m["info"].get("providerID"), "modelID": m["info"].get("modelID")}
                  for m in reversed(messages) if m["info"].get("role") == "assistant" and m["info"].get("modelID")),
                 None)
    header["model"] = model["modelID"] if model else None
    if not messages and not any(p.severity == ERROR for p in problems):
        problems.append(Problem(name, None, ERROR, "the session has no messages"))
    extra = OpenCodeSessionExtra(database=str(path), session_id=session_id, messages=messages,
                                 last_message=messages[-1]["info"]["id"] if messages else None, model=model)
    return Session(name, agent, header, entries, problems=problems, tree=tree, extra=extra)


def build_entries(messages: list[JsonObject], name: str, problems: list[Problem]) -> list[Entry]:
    """The chained entries of an oldest-first message list (see the module docstring)."""
    entries: list[Entry] = []
    parent: str | None = None
    by_id = {m["info"]["id"]: m for m in messages}
    compaction_users = {m["info"].get("parentID") for m in messages if _finished_summary(m["info"])}

    def add(data: JsonObject) -> None:
        nonlocal parent
        data["parentId"] = parent
        entries.append(Entry(data, None))
        parent = data["id"]

    for message in messages:
        info = message["info"]
        ts = info["time"].get("created")
        if info.get("role") == "user" and info["id"] in compaction_users and compaction_part(message):
            continue  # its summary below stands for both
        if _finished_summary(info) and info.get("parentID") in by_id and compaction_part(by_id[info["parentID"]]):
            part = compaction_part(by_id[info["parentID"]]) or {}
            first_kept = part.get("tail_start_id") or info["id"]
            if first_kept != info["id"] and first_kept not in by_id:
                problems.append(Problem(name, None, WARNING, f"compaction {info['id']}: tail_start_id "
                                        f"{first_kept!r} is not a message of the session"))
                first_kept = info["id"]
            marker = object_at(info, "batchcompact")
            data = {"type": "compaction", "id": info["id"], "timestamp": ts, "summary": summary_text(message),
                    "firstKeptEntryId": first_kept, "tokensBefore": _int(marker.get("tokensBefore")),
                    "fromHook": False}
            if marker:
                data["details"] = {"readFiles": marker.get("readFiles") or [],
                                   "modifiedFiles": marker.get("modifiedFiles") or []}
            add(data)
            continue
        if info.get("role") == "user":
            built = user_message(message)
            if built is None:
                add({"type": "opencode_meta", "id": info["id"], "timestamp": ts})
            else:
                add({"type": "message", "id": info["id"], "timestamp": ts, "message": built})
            continue
        built_all = assistant_messages(message)
        if not built_all:
            add({"type": "opencode_meta", "id": info["id"], "timestamp": ts})
        for entry_id, built in built_all:
            add({"type": "message", "id": entry_id, "timestamp": ts, "message": built})
    return entries


def read(path: str | Path) -> Session:
    """An OpenCode or Kilo session in its database (`<db>#<id>`)."""
    if Path(path).name in DATABASES:  # the database itself: its problem, or which sessions to name
        from batchcompact.core.words import counted

        count = len(session_ids(path))
        display = DISPLAY[format_of(path)]
        raise SessionReadError(f"an {display} database of {counted(count, 'session')}; name one as {path}#<session id>")
    where = split_session_path(path)
    if where is None:
        raise SessionReadError(f"{path}: not an OpenCode session (<opencode.db>#<session id>)")
    db, session_id = where
    session = read_session(db, session_id, agent=format_of(db))
    limits = model_limits(session)
    if limits.get("context"):
        session.context_window = limits["context"]
    session.agent_limits = limits
    return session
