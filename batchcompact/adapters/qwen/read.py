"""Qwen Code chats (`~/.qwen/projects/<project>/chats/<session id>.jsonl`) as a pi-shaped planning view.

A chat is a tree of records `{uuid, parentUuid, sessionId, timestamp, type, cwd, version, ...}`;
Qwen Code resumes the chain that ends at the file's last record (`reconstructHistory`) and rebuilds its
model history from it (`buildSessionHistoryFromConversation`): every record with a Gemini-shaped
`message` ({role, parts}) is appended, and a `system`/`chat_compression` record replaces the history
by its `systemPayload.compressedHistory` (Qwen Code's own compression: [summary, "Got it. Thanks for
the additional context!", restored recent files, a trailing call]).

Mapping (entry id = the record's uuid, parent = its parentUuid):
- `user` -> a `user` message; `assistant` -> one assistant message (text, thoughts as thinking,
  functionCall parts as toolCall blocks; usage = `usageMetadata`: input = prompt - cached, output =
  candidates + thoughts); `tool_result` -> a `toolResult` (`toolCallIds`: every functionResponse);
- other `system` records (ui_telemetry, attribution snapshots, ...) -> `qwen_meta` entries;
- `chat_compression` -> the items of its compressed history after the summary and the acknowledgement
  become entries (`<uuid>.h<n>`), then a `compaction` entry (summary = the first item's text,
  `firstKeptEntryId` = the first of those entries), pi's shape: the context is summary + those items +
  what follows.
"""

from __future__ import annotations

import copy
import json
from pathlib import Path

from batchcompact.adapters.common.lines import as_int, object_at
from batchcompact.adapters.qwen.extra import QwenSessionExtra
from batchcompact.core.context import parse_timestamp_ms
from batchcompact.core.entries import ERROR, WARNING, Entry, Problem
from batchcompact.core.jsontypes import JsonObject, JsonValue
from batchcompact.core.session import Session
from batchcompact.core.tree import SessionTree
from batchcompact.formats.jsonl import file_size, iter_json_lines

FORMAT = "qwen"
META_TYPE = "qwen_meta"
ACK_TEXT = "Got it. Thanks for the additional context!"
PROVIDER = "qwen"
ENVELOPE_KEYS = ("sessionId", "cwd", "version", "gitBranch")


def _listed(value: JsonValue) -> list[JsonValue] | tuple[()]:
    """`value` when it is a list, else nothing to iterate (a damaged line's number or object where a list
    belongs: said by the checks, never a TypeError here)."""
    return value if isinstance(value, list) else ()


def _num(value: JsonValue) -> int:
    return as_int(value)  # 0 for what is not a finite number (inf, NaN)


def qwen_usage(meta: JsonObject) -> dict[str, int]:
    """`usageMetadata` (prompt includes cached; thoughts beside candidates) -> pi usage."""
    cached = _num(meta.get("cachedContentTokenCount"))
    out = {
        "input": max(_num(meta.get("promptTokenCount")) - cached, 0),
        "output": _num(meta.get("candidatesTokenCount")) + _num(meta.get("thoughtsTokenCount")),
        "cacheRead": cached,
        "cacheWrite": 0,
    }
    out["totalTokens"] = _num(meta.get("totalTokenCount")) or sum(out.values())
    return out


def _response_text(response: JsonValue) -> str:
    if isinstance(response, dict):
        for key in ("output", "error", "content"):
            if isinstance(response.get(key), str):
                return response[key]
    return response if isinstance(response, str) else json.dumps(response, ensure_ascii=False)


def content_message(content: JsonObject, ms: int | None) -> JsonObject | None:
    """One Gemini-shaped Content ({role, parts}) as a pi message (None for an empty one). The same for a
    record's `message` and an item of a compressed history, so both read back alike."""
    parts = [p for p in _listed(content.get("parts")) if isinstance(p, dict)]
    if not parts:
        return None
    if content.get("role") == "model":
        blocks: list[JsonObject] = []
        for part in parts:
            if isinstance(part.get("text"), str) and part["text"]:
                blocks.append({"type": "thinking", "thinking": part["text"]} if part.get("thought")
                              else {"type": "text", "text": part["text"]})
            elif isinstance(part.get("functionCall"), dict):
                call = part["functionCall"]
                args = call.get("args")
                blocks.append({"type": "toolCall", "id": str(call.get("id") or ""), "name": str(call.get("name") or ""),
                               "arguments": args if isinstance(args, dict) else {}})
        has_calls = any(b["type"] == "toolCall" for b in blocks)
        return {"role": "assistant", "content": blocks, "api": "qwen", "provider": PROVIDER,
                "stopReason": "toolUse" if has_calls else "stop", "timestamp": ms}
    responses = [p["functionResponse"] for p in parts if isinstance(p.get("functionResponse"), dict)]
    if responses and len(responses) == len(parts):
        ids = [str(r.get("id") or "") for r in responses]
        message = {"role": "toolResult", "toolCallId": ids[0], "toolName": str(responses[0].get("name") or ""),
                   "content": [{"type": "text", "text": "\n".join(_response_text(r.get("response")) for r in responses)}],
                   "isError": any(isinstance(r.get("response"), dict) and "error" in r["response"] for r in responses),
                   "timestamp": ms}
        if len(ids) > 1:
            message["toolCallIds"] = ids
        return message
    blocks = [{"type": "text", "text": p["text"]} for p in parts if isinstance(p.get("text"), str)]
    blocks += [{"type": "image", "data": "", "mimeType": p["inlineData"].get("mimeType") or ""}
               for p in parts if isinstance(p.get("inlineData"), dict)]
    return {"role": "user", "content": blocks or [{"type": "text", "text": ""}], "timestamp": ms}


def _text(content: JsonValue) -> str:
    parts = content.get("parts") if isinstance(content, dict) else None
    return "".join(p.get("text") or "" for p in _listed(parts) if isinstance(p, dict) and isinstance(p.get("text"), str))


def read(path: str | Path) -> Session:
    """Read a Qwen Code chat. Never raises on bad content: problems are collected on the Session."""
    name = str(path)
    problems: list[Problem] = []
    size = file_size(path)
    records: dict[str, tuple[int, JsonObject]] = {}
    order: list[str] = []
    last_line = 0
    try:
        for lineno, record in iter_json_lines(path, problems):
            last_line = lineno
            uuid = record.get("uuid")
            if not isinstance(uuid, str):
                problems.append(Problem(name, lineno, WARNING, "record without a uuid; ignored"))
                continue
            if uuid in records:
                problems.append(Problem(name, lineno, WARNING, f"uuid {uuid!r} repeats line {records[uuid][0]}; copy ignored"))
                continue
            records[uuid] = (lineno, record)
            order.append(uuid)
    except OSError as exc:
        problems.append(Problem(name, None, ERROR, f"cannot read file: {exc.strerror or exc}"))
    entries: list[Entry] = []
    contents: dict[str, JsonObject] = {}  # entry id -> the Content it holds (for the writer)
    context_window = model = None
    for uuid in order:
        lineno, record = records[uuid]
        parent = record.get("parentUuid")
        if isinstance(parent, str) and parent not in records:
            problems.append(Problem(name, lineno, WARNING, f"parentUuid {parent!r} is not in this file; a root"))
            parent = None
        parent = parent if isinstance(parent, str) else None
        timestamp = record.get("timestamp")
        ms = parse_timestamp_ms(timestamp)
        kind = record.get("type")
        message: JsonValue = record.get("message")  # a Content when it is built into a message
        if kind == "system" and record.get("subtype") == "chat_compression":
            parent = _add_compaction(entries, contents, uuid, parent, lineno, record)
            continue
        built = content_message(message, ms) if isinstance(message, dict) and kind != "system" else None
        if built is None:
            entries.append(Entry({"type": META_TYPE, "id": uuid, "parentId": parent, "timestamp": timestamp,
                                  "lineType": kind, "subtype": record.get("subtype")}, lineno))
            continue
        if built["role"] == "assistant":
            model = record.get("model") or model
            built["model"] = record.get("model") or model
            if isinstance(record.get("usageMetadata"), dict):
                built["usage"] = qwen_usage(record["usageMetadata"])
            if _num(record.get("contextWindowSize")) > 0:
                context_window = _num(record["contextWindowSize"])
        entries.append(Entry({"type": "message", "id": uuid, "parentId": parent, "timestamp": timestamp,
                              "message": built}, lineno))
        contents[uuid] = message
    tree = SessionTree(entries, name)
    leaf = next((u for u in reversed(order) if tree.get(u) is not None), None)
    tree.leaf = tree.get(leaf) if leaf is not None else None
    problems.extend(tree.problems)
    first = records[order[0]][1] if order else {}
    last = records[order[-1]][1] if order else {}
    header = {"id": first.get("sessionId") or Path(name).name.split(".")[0], "cwd": last.get("cwd") or first.get("cwd"),
              "version": last.get("version"), "model": model}
    if not order and not any(p.severity == ERROR for p in problems):
        problems.append(Problem(name, None, ERROR, "no Qwen Code chat records"))
    extra = QwenSessionExtra(contents=contents, leaf_uuid=leaf,
                             envelope={k: last[k] for k in ENVELOPE_KEYS if k in last})
    return Session(name, FORMAT, header, entries, problems=problems, tree=tree, context_window=context_window,
                   size=size, last_line=last_line, extra=extra)


def _add_compaction(entries: list[Entry], contents: dict[str, JsonObject], uuid: str, parent: str | None,
                    line: int, record: JsonObject) -> str:
    """The kept items of a compressed history as entries, then the compaction entry; returns its id."""
    payload = object_at(record, "systemPayload")
    history = [c for c in _listed(payload.get("compressedHistory")) if isinstance(c, dict)]
    marker = object_at(payload, "batchcompact")
    summary = _text(history[0]) if history and history[0].get("role") == "user" else ""
    if marker:
        summary = summary.removeprefix("<state_snapshot>\n").removesuffix("\n</state_snapshot>")
    rest = history[1:] if summary else history
    if rest and rest[0].get("role") == "model" and _text(rest[0]).strip().startswith(ACK_TEXT):
        ack = rest[0]
        calls = [p for p in _listed(ack.get("parts")) if isinstance(p, dict) and "functionCall" in p]
        rest = ([{"role": "model", "parts": calls}] if calls else []) + rest[1:]
    ms = parse_timestamp_ms(record.get("timestamp"))
    first_kept = None
    for index, content in enumerate(rest):
        message = content_message(content, ms)
        if message is None:
            continue
        entry_id = f"{uuid}.h{index}"
        entries.append(Entry({"type": "message", "id": entry_id, "parentId": parent,
                              "timestamp": record.get("timestamp"), "message": message}, line))
        contents[entry_id] = content
        first_kept = first_kept or entry_id
        parent = entry_id
    info = object_at(payload, "info")
    data = {"type": "compaction", "id": uuid, "parentId": parent, "timestamp": record.get("timestamp"),
            "summary": summary, "firstKeptEntryId": first_kept or uuid,
            "tokensBefore": marker.get("tokensBefore") or _num(info.get("originalTokenCount")), "fromHook": False}
    if marker:
        data["details"] = {"readFiles": marker.get("readFiles") or [], "modifiedFiles": marker.get("modifiedFiles") or []}
    entries.append(Entry(data, line))
    return uuid


def kept_contents(session: Session, first_kept_entry_id: str) -> list[JsonObject]:
    """The Contents of the active path from the first kept entry on, in order (metadata left out)."""
    path = session.path_entries()
    index = next((i for i, e in enumerate(path) if e.id == first_kept_entry_id), -1)
    if index < 0:
        raise ValueError(f"first kept entry {first_kept_entry_id!r} is not on the active path")
    contents = QwenSessionExtra.of(session).contents
    return [copy.deepcopy(contents[e.id]) for e in path[index:] if e.id in contents]
