"""Gemini CLI usage from its chat files.

Where: `~/.gemini/tmp/<project>/chats/session-*.json` (before 0.40: one JSON document `{sessionId,
projectHash, startTime, lastUpdated, messages[]}`, rewritten whole on every update) and
`session-*.jsonl` (0.40 on: a header line `{sessionId, projectHash, startTime, lastUpdated, kind}`, then
one line per message write and `{"$set": {...}}` patches; a message is written again, with the same
`id`, when it changes; a resumed session appends another header and a `$set.messages` checkpoint of
the whole history). `<project>` is the project's short name (older versions: a hash of its path).

One row per model message (`type: "gemini"`) with `tokens {input, output, cached, thoughts, tool,
total}` (the API's usageMetadata). The CLI's `input` INCLUDES `cached` and `total = input + output +
thoughts + tool`: input = input - cached (+ tool-use prompt tokens, which are beside it), cache read =
cached, output = output + thoughts (reasoning, beside the output). A file whose `total` instead equals
`input + output + cached + thoughts + tool` writes `cached` beside `input` (hand-made fixtures do) and is
taken as such; without a `total` the CLI's convention is assumed.

Counted once: every write of a message id is the same message (the last write wins, in file order;
messages inside `$set.messages` checkpoints count too when they carry tokens), keyed
`gemini:<session>:<id>` so a session copied into another file (an export, a legacy copy of a JSONL
chat) is counted once as well.
"""

from __future__ import annotations

from pathlib import Path

from batchcompact.adapters.common.documents import read_json
from batchcompact.adapters.common.lines import ExtractStats, as_int, iter_json_lines, parse_timestamp
from batchcompact.adapters.common.usage_rows import UsageRows
from batchcompact.core.jsontypes import JsonValue

NO_ID = "\0"  # a message without an id is known by its place in the file, and not keyed across files


def extract_gemini(path: str | Path, rows: UsageRows, stats: ExtractStats) -> None:
    path = Path(path)
    project = _project(path)
    messages: dict[str, tuple[int | None, dict, str | None]] = {}  # id -> (line, message, session)
    if path.name.endswith(".json"):
        doc = read_json(path, stats)
        if not isinstance(doc, dict) or not isinstance(doc.get("messages"), list):
            if doc is not None:
                stats.warn(None, "not a Gemini CLI chat (no `messages` list); file skipped")
            return
        session = doc.get("sessionId") if isinstance(doc.get("sessionId"), str) else path.stem
        for index, message in enumerate(doc["messages"]):
            _keep(messages, message, None, session, fallback=f"{NO_ID}{index}")
    else:
        session = None
        for number, obj in iter_json_lines(path, stats):
            patch = obj.get("$set")
            if isinstance(patch, dict):
                if isinstance(patch.get("sessionId"), str):
                    session = patch["sessionId"]
                for message in patch.get("messages") or ():
                    if isinstance(message, dict) and isinstance(message.get("tokens"), dict):
                        _keep(messages, message, number, session, fallback=f"{NO_ID}{number}")
                continue
            if "projectHash" in obj and "sessionId" in obj and "type" not in obj:
                session = obj["sessionId"] if isinstance(obj["sessionId"], str) else session
                continue
            _keep(messages, obj, number, session, fallback=f"{NO_ID}{number}")
        session = session or path.stem
    for message_id, (line, message, message_session) in messages.items():
        add_row(rows, stats, message, file=str(path), line=line, session=message_session or session,
                project=project, message_id=message_id)


def _keep(messages: dict, message: JsonValue, line: int | None, session: str | None, *, fallback: str) -> None:
    if not isinstance(message, dict) or message.get("type") != "gemini":
        return
    message_id = message.get("id") if isinstance(message.get("id"), str) and message.get("id") else fallback
    previous = messages.pop(message_id, None)
    if previous is not None and not isinstance(message.get("tokens"), dict):
        message = {**message, "tokens": previous[1].get("tokens")}  # a rewrite without tokens keeps them
    messages[message_id] = (line, message, session)  # re-inserted: the last write's place


def add_row(rows: UsageRows, stats: ExtractStats, message: dict, *, file: str, line: int | None,
            session: str | None, project: str | None, message_id: str) -> None:
    tokens = message.get("tokens")
    if not isinstance(tokens, dict):
        return
    prompt, output = as_int(tokens.get("input")), as_int(tokens.get("output"))
    cached, thoughts, tool = as_int(tokens.get("cached")), as_int(tokens.get("thoughts")), as_int(tokens.get("tool"))
    total = tokens.get("total")
    beside = isinstance(total, (int, float)) and total != prompt + output + thoughts + tool and \
        total == prompt + output + cached + thoughts + tool
    fresh = prompt if beside else max(prompt - cached, 0)
    model = message.get("model")
    rows.add(
        source="gemini",
        file=file,
        line=line,
        session_id=session,
        project=project,
        timestamp=parse_timestamp(message.get("timestamp")),
        provider="google",
        model=model if isinstance(model, str) and model else None,
        kind="main",
        input_tokens=fresh + tool,
        output_tokens=output + thoughts,
        reasoning_tokens=thoughts,
        cache_read_tokens=cached,
        dedupe_key=f"gemini:{session}:{message_id}" if session and not message_id.startswith(NO_ID) else None,
    )


def _project(path: Path) -> str | None:
    """The project folder's name under `tmp/` (a short name, or a hash in older versions)."""
    parent = path.parent
    return parent.parent.name if parent.name == "chats" and parent.parent.name else None
