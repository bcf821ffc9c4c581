"""Gemini CLI chats (`~/.gemini/tmp/<project>/chats/session-*.jsonl`, legacy `*.json`) as a pi-shaped
planning view.

The file (Gemini CLI 0.40+, read as `loadConversationRecord` in packages/core/src/services/
chatRecordingService.ts reads it): a header record `{sessionId, projectHash, startTime, lastUpdated,
kind}` (written again, with the same ids, on every resume), message records `{id, timestamp, type:
user|gemini|info|error|warning, content, toolCalls?, tokens?, model?}` (a record with an id seen before
replaces that message in place: Gemini re-writes a reply once its tool calls finish), `{"$set": {...}}`
metadata patches (a `$set.messages` list is a checkpoint: the conversation is rebuilt from it) and
`{"$rewindTo": id}` (drop that message and everything after it). A legacy chat is one JSON object
`{sessionId, projectHash, startTime, lastUpdated, messages}`.

The conversation is the final state those rules give; Gemini resumes it through
`convertSessionToClientHistory`. Mapping, in that order, chained:
- a user message whose text starts with `<session_context>`, `/`, `?` or `<hook_context>` (Gemini
  regenerates or ignores them on resume), `info`/`error`/`warning` records -> `gemini_meta` entries;
- a user message of text/inline data -> a `user` message;
- a user message of `functionResponse` parts -> one `toolResult` per response not answered before (Gemini
  records each result twice: in the reply's `toolCalls[].result` and as such a user message), else meta;
- a `gemini` message -> ONE assistant message: thoughts, text, `functionCall` parts and `toolCalls` as
  toolCall blocks (id = the call id); usage = its `tokens` (or the last `tokens` any record of that id
  carried: a resume's checkpoint drops them), input = input - cached, output = output + thoughts; then a
  `toolResult` for every `toolCalls[].result`.
- Gemini's own compression (chatCompressionService) leaves a checkpoint that starts (after the context)
  with the summary as a user message and the model's "Got it. Thanks for the additional context!": the
  summary becomes a `compaction` entry after the messages the checkpoint kept (`firstKeptEntryId` = the
  first of them, pi's shape); messages recorded after that checkpoint follow it.
Entry ids are the message ids (`<id>#r<n>` for a reply's n-th result); `Entry.line` is the line the final
version of the record was written on (a checkpoint's line for the messages it holds).
"""

from __future__ import annotations

import json
from pathlib import Path

from batchcompact.adapters.common.lines import as_int, as_name, object_at
from batchcompact.adapters.gemini.extra import GeminiSessionExtra
from batchcompact.core.context import parse_timestamp_ms
from batchcompact.core.entries import ERROR, WARNING, Entry, Problem
from batchcompact.core.jsontypes import JsonObject, JsonValue
from batchcompact.core.session import Session
from batchcompact.formats.jsonl import MAX_LINE_BYTES, file_size, iter_json_lines

FORMAT = "gemini"
META_TYPE = "gemini_meta"
ACK_TEXT = "Got it. Thanks for the additional context!"
IGNORED_PREFIXES = ("/", "?", "<session_context>", "<hook_context>")
PROVIDER = "gemini"


def _listed(value: JsonValue) -> list[JsonValue] | tuple[()]:
    """`value` when it is a list, else nothing to iterate (a damaged line's number or object where a list
    belongs: said by the checks, never a TypeError here)."""
    return value if isinstance(value, list) else ()


def _parts(content: JsonValue) -> list[JsonValue]:
    """Gemini's PartListUnion as a list of parts (a string is one text part)."""
    if content is None:
        return []
    if isinstance(content, str):
        return [{"text": content}]
    if isinstance(content, dict):
        return [content]
    return [p if isinstance(p, dict) else {"text": as_name(p)} for p in content] if isinstance(content, list) else []


def parts_text(content: JsonValue) -> str:
    return "".join(p.get("text") or "" for p in _parts(content) if isinstance(p.get("text"), str))


def is_ignored_user(record: JsonObject) -> bool:
    """What Gemini CLI drops from a user message on resume (`isIgnoredUserContent`): empty text-only
    content, slash/`?` commands and the regenerated context blocks."""
    parts = _parts(record.get("content"))
    if any(not isinstance(p.get("text"), str) for p in parts):
        return False
    text = parts_text(parts).strip()
    return not text or text.startswith(IGNORED_PREFIXES)


def _response_id(part: JsonObject) -> str:
    """The id of the call a `functionResponse` part answers: one reading for the result and its repeat."""
    return as_name(object_at(part, "functionResponse").get("id"))


def is_results_only(record: JsonObject) -> bool:
    parts = _parts(record.get("content"))
    return bool(parts) and all("functionResponse" in p for p in parts)


def gemini_usage(tokens: JsonObject) -> dict[str, int]:
    """Gemini's `tokens` (input includes cached; thoughts beside output) -> pi usage."""

    def num(key: str) -> int:
        value = tokens.get(key)
        return as_int(value)  # 0 for what is not a finite number (inf, NaN)

    cached = num("cached")
    out = {
        "input": max(num("input") - cached, 0) + num("tool"),
        "output": num("output") + num("thoughts"),
        "cacheRead": cached,
        "cacheWrite": 0,
    }
    out["totalTokens"] = num("total") or sum(out.values())
    return out


def response_text(response: JsonValue) -> str:
    """The text of a functionResponse's `response` (Gemini tools answer `{output}` or `{error}`)."""
    if isinstance(response, dict):
        for key in ("output", "error", "content"):
            if isinstance(response.get(key), str):
                return response[key]
    return response if isinstance(response, str) else json.dumps(response, ensure_ascii=False)


def _blocks(parts: list[JsonObject]) -> list[JsonObject]:
    out = []
    for part in parts:
        if isinstance(part.get("text"), str):
            out.append({"type": "thinking" if part.get("thought") else "text",
                        ("thinking" if part.get("thought") else "text"): part["text"]})
        elif isinstance(part.get("inlineData"), dict):
            out.append({"type": "image", "data": "", "mimeType": part["inlineData"].get("mimeType") or ""})
    return out


class ChatState:
    """Gemini CLI's loader: the messages in order, each with the line its final version came from."""

    def __init__(self, name: str, problems: list[Problem]) -> None:
        self.name = name
        self.problems = problems
        self.header: JsonObject = {}
        self.messages: dict[str, tuple[JsonObject, int]] = {}
        self.first_line: dict[str, int] = {}  # message id -> the line it first appeared on
        self.tokens: dict[str, JsonObject] = {}  # message id -> the last tokens any record gave it
        self.last_line = 0  # the file's last record

    def _message(self, record: JsonObject, line: int) -> None:
        mid = record["id"]
        self.first_line.setdefault(mid, line)
        self.messages[mid] = (record, line)  # in place when the id exists (a JavaScript Map keeps its order)
        if isinstance(record.get("tokens"), dict):
            self.tokens[mid] = record["tokens"]

    def add(self, record: JsonObject, line: int) -> None:
        if isinstance(record.get("$rewindTo"), str):
            ids = list(self.messages)
            target = record["$rewindTo"]
            for mid in ids[ids.index(target):] if target in ids else ids:
                del self.messages[mid]
        elif isinstance(record.get("id"), str):
            if record.get("type") not in ("user", "gemini", "info", "error", "warning"):
                self.problems.append(Problem(self.name, line, WARNING, f"message of unknown type {record.get('type')!r}"))
            self._message(record, line)
        elif isinstance(record.get("$set"), dict):
            patch = record["$set"]
            if isinstance(patch.get("messages"), list):
                self.messages.clear()
                for message in patch["messages"]:
                    if isinstance(message, dict) and isinstance(message.get("id"), str):
                        self._message(message, line)
            self.header.update({k: v for k, v in patch.items() if k != "messages"})
        elif isinstance(record.get("sessionId"), str) and isinstance(record.get("projectHash"), str):
            self.header.update({k: v for k, v in record.items() if k != "messages"})
            for message in _listed(record.get("messages")):  # a legacy record on one line
                if isinstance(message, dict) and isinstance(message.get("id"), str):
                    self._message(message, line)
        else:
            self.problems.append(Problem(self.name, line, WARNING, "not a Gemini CLI chat record; ignored"))


class _Builder:
    """Chains pi-shaped entry dicts and remembers each entry's raw record."""

    def __init__(self) -> None:
        self.entries: list[tuple[JsonObject, int]] = []
        self.records: dict[str, JsonObject] = {}  # entry id -> the raw message record it came from
        self.answered: set[str] = set()
        self.tool_names: dict[str, str] = {}

    def add(self, data: JsonObject, line: int, record: JsonObject | None) -> None:
        data["parentId"] = self.entries[-1][0]["id"] if self.entries else None
        self.entries.append((data, line))
        if record is not None:
            self.records[data["id"]] = record

    def meta(self, mid: str, line: int, record: JsonObject, kind: str) -> None:
        self.add({"type": META_TYPE, "id": mid, "timestamp": record.get("timestamp"), "lineType": kind,
                  "subtype": record.get("type")}, line, record)

    def _result(self, entry_id: str, part: JsonObject, ms: int | None, status: JsonValue, line: int,
                record: JsonObject | None) -> None:
        response = object_at(part, "functionResponse")
        call_id = _response_id(part)
        self.answered.add(call_id)
        message = {"role": "toolResult", "toolCallId": call_id,
                   "toolName": self.tool_names.get(call_id, as_name(response.get("name"))),
                   "content": [{"type": "text", "text": response_text(response.get("response"))}],
                   "isError": status == "error" or (isinstance(response.get("response"), dict)
                                                     and "error" in response["response"]),
                   "timestamp": ms}
        self.add({"type": "message", "id": entry_id, "timestamp": None, "message": message}, line, record)

    def message(self, record: JsonObject, line: int, usage: JsonObject | None, model: str | None) -> None:
        mid = record["id"]
        kind = record.get("type")
        ms = parse_timestamp_ms(record.get("timestamp"))
        parts = _parts(record.get("content"))
        base = {"type": "message", "id": mid, "timestamp": record.get("timestamp")}
        if kind == "user":
            if is_ignored_user(record):
                self.meta(mid, line, record, "context")
            elif is_results_only(record):
                fresh = [p for p in parts if _response_id(p) not in self.answered]
                if not fresh:
                    self.meta(mid, line, record, "repeated_results")
                for n, part in enumerate(fresh):
                    self._result(mid if n == 0 else f"{mid}#r{n}", part, ms, None, line, record if n == 0 else None)
            else:
                content = _blocks(parts) or [{"type": "text", "text": ""}]
                self.add({**base, "message": {"role": "user", "content": content, "timestamp": ms}}, line, record)
        elif kind == "gemini":
            content = [{"type": "thinking", "thinking": f"**{t.get('subject')}** {t.get('description') or ''}"
                        if t.get("subject") else str(t.get("description") or "")}
                       for t in _listed(record.get("thoughts")) if isinstance(t, dict)]
            content += _blocks(parts)
            calls = [p["functionCall"] for p in parts if isinstance(p.get("functionCall"), dict)]
            calls += [c for c in _listed(record.get("toolCalls")) if isinstance(c, dict)]
            seen: set[str] = set()
            for call in calls:
                call_id = as_name(call.get("id"))
                if call_id in seen:
                    continue
                seen.add(call_id)
                name = str(call.get("name") or "")
                self.tool_names[call_id] = name
                args = call.get("args")
                content.append({"type": "toolCall", "id": call_id, "name": name,
                                "arguments": args if isinstance(args, dict) else {}})
            message = {"role": "assistant", "content": content, "api": "gemini", "provider": PROVIDER,
                       "model": record.get("model") or model,
                       "stopReason": "toolUse" if seen else "stop", "timestamp": ms}
            if usage is not None:
                message["usage"] = gemini_usage(usage)
            self.add({**base, "message": message}, line, record)
            n = 0
            for call in _listed(record.get("toolCalls")):
                if not isinstance(call, dict):
                    continue
                for part in _parts(call.get("result")):
                    if isinstance(part.get("functionResponse"), dict):
                        n += 1
                        self._result(f"{mid}#r{n}", part, ms, call.get("status"), line, None)
        else:
            self.meta(mid, line, record, "notice")


def _compaction_at(records: list[tuple[JsonObject, int]]) -> int | None:
    """Index of the summary of Gemini's own compression: a user text message followed by the model's
    acknowledgement, with only context before it; None when the conversation has none."""
    for index, (record, _) in enumerate(records):
        if record.get("type") == "user" and is_ignored_user(record):
            continue
        if record.get("type") == "user" and isinstance(record.get("batchcompact"), dict):
            return index  # ours: the acknowledgement is left out when the kept tail starts with a reply
        after = records[index + 1][0] if index + 1 < len(records) else {}
        if (record.get("type") == "user" and not is_results_only(record) and after.get("type") == "gemini"
                and parts_text(after.get("content")).strip() == ACK_TEXT):
            return index
        return None
    return None


def read_state(path: str | Path, problems: list[Problem]) -> tuple[ChatState, bool]:
    """Replay a chat file (JSONL or legacy JSON); returns the state and whether it was legacy JSON."""
    name = str(path)
    state = ChatState(name, problems)
    with open(path, "rb") as handle:
        head = handle.read(4096)
    stripped = head.lstrip()
    legacy = stripped.startswith(b"{") and b"\n" in stripped and not _first_line_is_object(path)
    if legacy:
        try:
            with open(path, encoding="utf-8") as handle:
                record = json.load(handle)
        except json.JSONDecodeError as exc:
            problems.append(Problem(name, exc.lineno, ERROR, f"invalid JSON: {exc.msg} (column {exc.colno})"))
            return state, True
        except UnicodeDecodeError as exc:
            problems.append(Problem(name, None, ERROR, f"not UTF-8: {exc.reason}"))
            return state, True
        except RecursionError:
            problems.append(Problem(name, None, ERROR, "invalid JSON: nested too deeply to parse"))
            return state, True
        if not isinstance(record, dict) or not isinstance(record.get("messages"), list):
            problems.append(Problem(name, 1, ERROR, "a legacy Gemini CLI chat is an object with a messages list"))
            return state, True
        state.add(record, 1)
        state.last_line = 1
        return state, True
    for lineno, record in iter_json_lines(path, problems):
        state.add(record, lineno)
        state.last_line = lineno
    return state, False


def _first_line_is_object(path: str | Path) -> bool:
    with open(path, "rb") as handle:
        first = handle.readline(MAX_LINE_BYTES)  # a longer line is no object this reader can read
    try:
        return isinstance(json.loads(first), dict)
    except (ValueError, RecursionError):  # nested deeper than json recurses: no object of ours
        return False


def read(path: str | Path) -> Session:
    """Read a Gemini CLI chat. Never raises on bad content: problems are collected on the Session."""
    name = str(path)
    problems: list[Problem] = []
    size = file_size(path)
    try:
        state, legacy = read_state(path, problems)
    except OSError as exc:
        problems.append(Problem(name, None, ERROR, f"cannot read file: {exc.strerror or exc}"))
        state, legacy = ChatState(name, problems), False
    records = list(state.messages.values())
    model = next((r.get("model") for r, _ in reversed(records) if r.get("type") == "gemini" and r.get("model")), None)
    builder = _Builder()
    at = _compaction_at(records)
    if at is None:
        for record, line in records:
            builder.message(record, line, state.tokens.get(record["id"]), model)
    else:
        _build_compacted(builder, state, records, at, model)
    header = dict(state.header)
    header["id"] = header.get("sessionId") or Path(name).name.split(".")[0]
    header["model"] = model
    if not state.header and not any(p.severity == ERROR for p in problems):
        problems.append(Problem(name, 1, ERROR, "no Gemini CLI session header (sessionId, projectHash)"))
    entries = [Entry(data, line) for data, line in builder.entries]
    # a legacy chat could only be rewritten whole, losing the usage its summarized replies recorded
    refused = ("legacy Gemini CLI chat (one JSON document): a current Gemini CLI migrates it to JSONL when it "
               "resumes it; compact that") if legacy else None
    extra = GeminiSessionExtra(records=builder.records, state_ids=[r["id"] for r, _ in records])
    return Session(name, FORMAT, header, entries, problems=problems, not_writable=refused,
                   subagent=header.get("kind") == "subagent", size=size, last_line=state.last_line, extra=extra)


def _compaction_entry(record: JsonObject, line: int) -> JsonObject:
    """The `compaction` entry of a compression's summary message (its marker when it is ours)."""
    text = parts_text(record.get("content"))
    data = {"type": "compaction", "id": record["id"], "timestamp": record.get("timestamp"), "summary": text,
            "firstKeptEntryId": record["id"], "tokensBefore": 0, "fromHook": False}
    marker = record.get("batchcompact")
    if isinstance(marker, dict):  # ours: the snapshot tags we wrapped the summary in, our numbers and lists
        data["summary"] = text.removeprefix("<state_snapshot>\n").removesuffix("\n</state_snapshot>")
        data["tokensBefore"] = marker.get("tokensBefore") or 0
        data["details"] = {"readFiles": marker.get("readFiles") or [], "modifiedFiles": marker.get("modifiedFiles") or []}
    return data


def _build_compacted(builder: _Builder, state: ChatState, records: list[tuple[JsonObject, int]], at: int,
                     model: str | None) -> None:
    """Entries of a conversation that starts (after its context) with a compression's summary at `at`:
    the context, the acknowledgement (metadata), the messages the compression kept (those that existed
    when its checkpoint was written), the compaction entry, then the messages recorded after it."""
    summary, summary_line = records[at]
    checkpoint = state.first_line.get(summary["id"], summary_line)
    compaction = _compaction_entry(summary, summary_line)
    placed = False
    for index, (record, line) in enumerate(records):
        if index == at:
            continue
        if index == at + 1 and record.get("type") == "gemini" and parts_text(record.get("content")).strip() == ACK_TEXT:
            builder.meta(record["id"], line, record, "compaction_ack")
            continue
        if index > at and not placed and state.first_line.get(record["id"], line) > checkpoint:
            builder.add(compaction, summary_line, None)
            placed = True
        before = len(builder.entries)
        builder.message(record, line, state.tokens.get(record["id"]), model)
        first = builder.entries[before][0] if len(builder.entries) > before else None
        if index > at and not placed and first is not None and first["type"] != META_TYPE and \
                compaction["firstKeptEntryId"] == summary["id"]:
            compaction["firstKeptEntryId"] = first["id"]
    if not placed:
        builder.add(compaction, summary_line, None)
