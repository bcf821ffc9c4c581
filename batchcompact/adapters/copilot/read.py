"""GitHub Copilot CLI session logs (`~/.copilot/session-state/<session id>/events.jsonl`) as a pi-shaped
planning view.

A log is a chain of events `{type, data, id, timestamp, parentId}` (parentId: the event before it).
Copilot CLI 1.0.102 rebuilds the model's history on `--resume` from these events (its native runtime;
the rules below were observed with the real CLI against a recording loopback provider, README.md beside this file):

- `user.message` -> a user message (`transformedContent`, what the model was sent; else `content`);
- `assistant.message` -> an assistant message (`content`, `reasoningText` as thinking, `toolRequests` as
  tool calls); its usage is the `session.usage_record` with the same `apiCallId` (input includes cache
  reads: input = inputTokens - cacheReadTokens);
- `tool.execution_complete` -> the result of its call (`result.content`, else `error.message`);
- a compaction is `session.compaction_start` ... `session.compaction_complete` (success): every message
  before the start is replaced by `summaryContent` (wrapped by Copilot in its own "Some of the
  conversation history has been summarized" message, which also lists the user's prompts); messages
  recorded between the start and the completion (a background compaction runs while the agent goes
  on) are kept, and so is everything after. As a pi `compaction` entry: summary = `summaryContent`,
  `firstKeptEntryId` = the first message after the start (the compaction's own id when none);
- a `session.snapshot_rewind` or `session.context_cleared` changes the history in ways not followed here:
  such a log is read but left alone (`not_writable`, with the line);
- events of a sub-agent (`agentId`), `system.message` (regenerated on every resume) and every other
  type (turn marks, usage, shutdown/resume, model telemetry, types this reader does not know) are no
  messages; the log keeps them and the writer appends after them.

The events' JSON Schema ships in the package (`schemas/session-events.schema.json`).
"""

from __future__ import annotations

import json
from pathlib import Path

from batchcompact.adapters.common.lines import as_int, object_at
from batchcompact.adapters.copilot.extra import CopilotSessionExtra
from batchcompact.core.context import parse_timestamp_ms
from batchcompact.core.entries import ERROR, WARNING, Entry, Problem
from batchcompact.core.fileops import details_from_summary
from batchcompact.core.jsontypes import JsonObject, JsonValue
from batchcompact.core.session import Session
from batchcompact.core.tree import SessionTree
from batchcompact.errors import reported_not_compacted
from batchcompact.formats.jsonl import file_size, iter_json_lines

FORMAT = "copilot"
PROVIDER = "copilot"
MESSAGE_EVENTS = frozenset({"user.message", "assistant.message", "tool.execution_complete"})
OTEL_TYPES = frozenset({"span", "metric", "log"})
# Events that change the history some other way (a rewind to a snapshot, a host clearing the context):
# not followed yet, so a log with one is left alone.
HISTORY_EDITS = frozenset({"session.snapshot_rewind", "session.context_cleared"})


def _num(value: JsonValue) -> int:
    return as_int(value)  # 0 for what is not a finite number (inf, NaN)


def copilot_usage(usage: JsonObject) -> dict[str, int]:
    """A `session.usage_record`'s usage (input includes cache reads) -> pi usage."""
    cache_read = _num(usage.get("cacheReadTokens"))
    out = {
        "input": max(_num(usage.get("inputTokens")) - cache_read, 0),
        "output": _num(usage.get("outputTokens")),
        "cacheRead": cache_read,
        "cacheWrite": _num(usage.get("cacheWriteTokens")),
    }
    out["totalTokens"] = sum(out.values())
    return out


def _result_text(data: JsonObject) -> tuple[str, bool]:
    result = object_at(data, "result")
    error = object_at(data, "error")
    if isinstance(result.get("content"), str):
        return result["content"], data.get("success") is False
    if isinstance(error.get("message"), str):
        return error["message"], True
    return "", data.get("success") is False


def event_message(kind: str, data: JsonObject, ms: int | None) -> JsonObject | None:
    """The pi message one conversation event stands for (None: not a message). The same for an original
    event and for our copy of it, so both read back alike."""
    if kind == "user.message":
        text = data.get("transformedContent") if isinstance(data.get("transformedContent"), str) else data.get("content")
        return {"role": "user", "content": [{"type": "text", "text": text if isinstance(text, str) else ""}],
                "timestamp": ms}
    if kind == "assistant.message":
        blocks: list[JsonObject] = []
        if isinstance(data.get("reasoningText"), str) and data["reasoningText"]:
            blocks.append({"type": "thinking", "thinking": data["reasoningText"]})
        if isinstance(data.get("content"), str) and data["content"]:
            blocks.append({"type": "text", "text": data["content"]})
        requests = data.get("toolRequests")
        for request in requests if isinstance(requests, list) else ():
            if not isinstance(request, dict):
                continue
            args = request.get("arguments")
            blocks.append({"type": "toolCall", "id": str(request.get("toolCallId") or ""),
                           "name": str(request.get("name") or ""), "arguments": args if isinstance(args, dict) else {}})
        has_calls = any(b["type"] == "toolCall" for b in blocks)
        return {"role": "assistant", "content": blocks, "api": "copilot", "provider": PROVIDER,
                "stopReason": "toolUse" if has_calls else "stop", "timestamp": ms}
    if kind == "tool.execution_complete":
        text, failed = _result_text(data)
        return {"role": "toolResult", "toolCallId": str(data.get("toolCallId") or ""),
                "toolName": str(data.get("toolName") or ""), "content": [{"type": "text", "text": text}],
                "isError": failed, "timestamp": ms}
    return None


class _Reader:
    """One pass over the events (see the module docstring); `read` drives it."""

    def __init__(self, name: str) -> None:
        self.name = name
        self.problems: list[Problem] = []
        self.entries: list[Entry] = []
        self.events: dict[str, JsonObject] = {}  # entry id -> the event it came from (the writer copies it)
        self.usage: dict[str, JsonObject] = {}  # apiCallId -> usage not yet matched to its message
        self.tool_names: dict[str, str] = {}  # toolCallId -> tool name
        self.open_compactions: dict[str, str | None] = {}  # attempt id -> first message entry after its start
        self.last_start: str | None = None  # the attempt id of the latest start not yet completed
        self.parent: str | None = None
        self.ids: set[str] = set()
        self.header: JsonObject = {}
        self.context_window: int | None = None
        self.model: str | None = None
        self.last_event_id: str | None = None
        self.open_turn: int | None = None  # line of an assistant.turn_start not yet ended
        self.pending_calls: dict[str, int] = {}  # toolCallId -> line of its request, while it has no result
        self.unfollowed: tuple[int, str] | None = None  # (line, event type) of a history edit not followed

    def add(self, lineno: int, event: JsonObject) -> None:
        kind, data, event_id = event.get("type"), event.get("data"), event.get("id")
        if not isinstance(kind, str) or not isinstance(data, dict) or not isinstance(event_id, str):
            self.problems.append(Problem(self.name, lineno, WARNING, "not a Copilot event (type, data, id); ignored"))
            return
        if event_id in self.ids:
            self.problems.append(Problem(self.name, lineno, WARNING, f"event id {event_id!r} repeats; copy ignored"))
            return
        self.ids.add(event_id)
        self.last_event_id = event_id
        if event.get("agentId"):  # a sub-agent's events: not the main conversation
            return
        if kind == "session.start":
            context = object_at(data, "context")
            self.header = {"id": data.get("sessionId"), "cwd": context.get("cwd"), "version": data.get("copilotVersion")}
            self.model = data.get("selectedModel") or self.model
        elif kind == "session.usage_record" and isinstance(data.get("usage"), dict):
            usage = data["usage"]
            if _num(usage.get("maxPromptTokens")) > 0:
                self.context_window = _num(usage["maxPromptTokens"])
            if isinstance(usage.get("apiCallId"), str):
                self.usage[usage["apiCallId"]] = usage
        elif kind == "assistant.turn_start":
            self.open_turn = lineno
        elif kind in ("assistant.turn_end", "session.shutdown", "session.resume", "abort"):
            self.open_turn = None
            if kind != "assistant.turn_end":
                self.pending_calls.clear()  # the agent stopped: Copilot drops or answers these itself
        elif kind == "session.compaction_start":
            attempt = str(data.get("compactionAttemptId") or f"#{lineno}")
            self.open_compactions[attempt] = None
            self.last_start = attempt
        elif kind == "session.compaction_complete":
            self._compaction(lineno, event, data)
        elif kind in HISTORY_EDITS and self.unfollowed is None:
            self.unfollowed = (lineno, kind)
        elif kind in MESSAGE_EVENTS:
            self._message(lineno, event, kind, data)

    def _message(self, lineno: int, event: JsonObject, kind: str, data: JsonObject) -> None:
        timestamp = event.get("timestamp")
        message = event_message(kind, data, parse_timestamp_ms(timestamp))
        if message is None:
            return
        if kind == "assistant.message":
            call_id = data.get("apiCallId")
            usage = self.usage.pop(call_id, None) if isinstance(call_id, str) else None
            model = data.get("model") or (usage or {}).get("model") or self.model
            self.model = model
            message["model"] = model
            if usage is not None:
                message["usage"] = copilot_usage(usage)
            for block in message["content"]:
                if block["type"] == "toolCall":
                    self.tool_names[block["id"]] = block["name"]
                    self.pending_calls[block["id"]] = lineno
        elif kind == "tool.execution_complete":
            self.pending_calls.pop(message["toolCallId"], None)
            if not message["toolName"]:
                message["toolName"] = self.tool_names.get(message["toolCallId"], "")
        event_id = event["id"]
        self.entries.append(Entry({"type": "message", "id": event_id, "parentId": self.parent, "timestamp": timestamp,
                                   "message": message}, lineno))
        self.events[event_id] = event
        self.parent = event_id
        for attempt, first in self.open_compactions.items():
            if first is None:
                self.open_compactions[attempt] = event_id

    def _compaction(self, lineno: int, event: JsonObject, data: JsonObject) -> None:
        attempt = data.get("compactionAttemptId")
        attempt = attempt if attempt in self.open_compactions else self.last_start
        first_kept = self.open_compactions.pop(attempt, None) if attempt is not None else None
        if attempt == self.last_start:
            self.last_start = None
        if data.get("success") is not True:
            return
        if attempt is None:
            self.problems.append(Problem(self.name, lineno, WARNING, "compaction without its start: "
                                         "everything before it is summarized"))
        summary = data.get("summaryContent") if isinstance(data.get("summaryContent"), str) else ""
        entry = {"type": "compaction", "id": event["id"], "parentId": self.parent, "timestamp": event.get("timestamp"),
                 "summary": summary, "firstKeptEntryId": first_kept or event["id"],
                 "tokensBefore": _num(data.get("preCompactionTokens")), "fromHook": False}
        # our summary's file tags (Copilot's data has no room for more), relative to the session's folder
        details = details_from_summary(summary, (self.header or {}).get("cwd"))
        if details:
            entry["details"] = details
        self.entries.append(Entry(entry, lineno))
        self.parent = event["id"]


def read(path: str | Path) -> Session:
    """Read a Copilot CLI events.jsonl. Never raises on bad content: problems are collected on the Session."""
    name = str(path)
    reader = _Reader(name)
    size = file_size(path)
    last_line = 0
    otel = False
    try:
        for lineno, event in iter_json_lines(path, reader.problems):
            last_line = lineno
            kind = event.get("type")
            if "data" not in event and ("attributes" in event or (isinstance(kind, str) and kind in OTEL_TYPES)):
                otel = True  # an OpenTelemetry record: the file export, not a session log
                continue
            reader.add(lineno, event)
    except OSError as exc:
        reader.problems.append(Problem(name, None, ERROR, f"cannot read file: {exc.strerror or exc}"))
    tree = SessionTree(reader.entries, name)
    reader.problems.extend(tree.problems)
    refused: str | None = None  # why the file cannot be rewritten
    if otel and not reader.ids:
        refused = reported_not_compacted("a Copilot CLI OpenTelemetry export")
    elif not reader.ids and not any(p.severity == ERROR for p in reader.problems):
        reader.problems.append(Problem(name, None, ERROR, "no Copilot CLI session events"))
    unfinished = _unfinished(reader)
    if reader.unfollowed is not None:
        line, kind = reader.unfollowed
        refused = f"line {line}: {kind} edits the history in a way batchcompact does not follow; not compacted"
    elif unfinished is not None:
        line, what = unfinished
        reader.problems.append(Problem(name, line, WARNING, f"the events end mid-turn ({what})"))
        refused = (f"line {line}: the events end mid-turn ({what}): Copilot CLI may still be "
                   "running it; not compacted")
    header = {**reader.header, "model": reader.model}
    # without a session.start: the folder (`session-state/<id>/events.jsonl`) or the flat `<id>.jsonl` of older builds
    header["id"] = header.get("id") or (Path(name).parent.name if Path(name).name == "events.jsonl"
                                        else Path(name).name.split(".jsonl")[0])
    extra = CopilotSessionExtra(events=reader.events, last_event_id=reader.last_event_id)
    return Session(name, FORMAT, header, reader.entries, problems=reader.problems, tree=tree,
                   context_window=reader.context_window, not_writable=refused, size=size, last_line=last_line,
                   extra=extra)


def _unfinished(reader: _Reader) -> tuple[int, str] | None:
    """(line, what) when the log stops inside a turn: a turn started and not ended, or tool calls of
    the last turn without their results."""
    if reader.pending_calls:
        call, line = next(iter(reader.pending_calls.items()))
        return line, f"tool call {call} has no result"
    if reader.open_turn is not None:
        return reader.open_turn, "a turn started and did not end"
    return None


def kept_events(session: Session, first_kept_entry_id: str) -> list[JsonObject]:
    """The events behind the active path's messages from the first kept entry on, in order."""
    path = session.path_entries()
    index = next((i for i, e in enumerate(path) if e.id == first_kept_entry_id), -1)
    if index < 0:
        raise ValueError(f"first kept entry {first_kept_entry_id!r} is not on the active path")
    events = CopilotSessionExtra.of(session).events
    return [json.loads(json.dumps(events[e.id])) for e in path[index:] if e.id in events]
