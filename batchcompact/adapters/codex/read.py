"""Codex rollouts (reference transcripts.md section 2) as a pi-shaped planning view.

A rollout is a flat list, so the planning view is a chain in file order; entry ids are `L<line>`
(`L<line>.r<i>` for the items inside a `compacted` line). Mapping:
- `response_item` message user/developer (developer marked `agentRole`) and inter-agent `agent_message`
  -> a `user` message.
- Consecutive assistant-side items of one model call (assistant `message`, `reasoning`, `function_call`,
  `custom_tool_call`, `local_shell_call`, `web_search_call`, `tool_search_call`, `image_generation_call`)
  -> ONE assistant `message` (text / thinking = reasoning summary / toolCall{id: call_id}); its usage is
  the `last_token_usage` of the next `event_msg/token_count` (repeated cumulative totals and `info: null`
  dropped; input = input - cached, cacheRead = cached, totalTokens = total_tokens); model from the
  latest `turn_context`.
- `*_output` items -> a `toolResult` (never a cut point, so never separated from its call).
- `session_meta`, `turn_context`, `ghost_snapshot`, encrypted `compaction` items, unknown types ->
  `codex_meta` entries (never cut points, ignored for context; response items among them are still
  copied into a new replacement history when they fall in the kept tail). `event_msg` lines are left out of the
  tree (they duplicate response items; token_count feeds usage, model_context_window the header).
- `compacted`: its `replacement_history` items become entries before a `compaction` entry whose
  `firstKeptEntryId` is the first of them (pi's shape: the context restarts as summary + those items).
  A user item starting with Codex's summary prefix is the summary (else `message`); without
  `replacement_history` the context restarts with the `message` alone (Codex would also re-add recent
  user messages; not modelled).
"""

from __future__ import annotations

import hashlib
import json
from pathlib import Path

from batchcompact.adapters.codex.extra import CodexSessionExtra
from batchcompact.adapters.codex.items import SUMMARY_PREFIX, is_context_text, item_text
from batchcompact.adapters.codex.write import build_compaction, verify
from batchcompact.adapters.common.lines import as_int
from batchcompact.core.context import build_session_context, convert_to_llm, parse_timestamp_ms
from batchcompact.core.entries import ERROR, WARNING, Entry, Problem
from batchcompact.core.fileops import details_from_summary
from batchcompact.core.jsontypes import JsonObject, JsonValue
from batchcompact.core.session import Session
from batchcompact.formats.jsonl import file_size, iter_json_lines

FORMAT = "codex"
META_TYPE = "codex_meta"
ASSISTANT_ITEMS = frozenset(
    {
        "reasoning",
        "function_call",
        "custom_tool_call",
        "local_shell_call",
        "web_search_call",
        "tool_search_call",
        "image_generation_call",
    }
)
OUTPUT_ITEMS = frozenset(
    {
        "function_call_output",
        "custom_tool_call_output",
        "tool_search_output",
        "local_shell_call_output",
        "mcp_tool_call_output",
    }
)
USAGE_FIELDS = (
    "input_tokens",
    "cached_input_tokens",
    "output_tokens",
    "reasoning_output_tokens",
    "total_tokens",
)


def _listed(value: JsonValue) -> list[JsonValue] | tuple[()]:
    """`value` when it is a list, else nothing to iterate (a damaged line's number or object where a list
    belongs: said by the checks, never a TypeError here)."""
    return value if isinstance(value, list) else ()


def _int(value: JsonValue) -> int:
    return as_int(value)  # 0 for what is not a finite number (inf, NaN)


def codex_usage(last: JsonObject) -> dict[str, int]:
    """Codex usage (input includes cached, output includes reasoning) -> pi usage."""
    cached = _int(last.get("cached_input_tokens"))
    out = {
        "input": max(_int(last.get("input_tokens")) - cached, 0),
        "output": _int(last.get("output_tokens")),
        "cacheRead": cached,
        "cacheWrite": _int(last.get("cache_write_input_tokens")),
    }
    out["totalTokens"] = _int(last.get("total_tokens")) or sum(out.values())
    return out


def _text(value: JsonValue) -> str:
    return value if isinstance(value, str) else json.dumps(value, ensure_ascii=False)


def content_blocks(content: JsonValue) -> list[JsonObject]:
    """input_text/output_text/input_image blocks (or a plain string/object) -> pi text/image blocks."""
    if content is None:
        return []
    if isinstance(content, str):
        return [{"type": "text", "text": content}]
    if isinstance(content, dict):
        if isinstance(content.get("text"), str) or content.get("type") in ("input_image", "image"):
            return content_blocks([content])
        if "content" in content:
            return content_blocks(content.get("content"))
        return [{"type": "text", "text": _text(content)}]
    out: list[JsonObject] = []
    for block in content if isinstance(content, list) else ():
        if not isinstance(block, dict):
            continue
        if isinstance(block.get("text"), str):
            out.append({"type": "text", "text": block["text"]})
        elif block.get("type") in ("input_image", "image"):
            out.append({"type": "image", "data": "", "mimeType": "", "url": block.get("image_url")})
    return out


def _digest(payload: JsonObject) -> str:
    return hashlib.sha1(json.dumps(payload, sort_keys=True).encode(), usedforsecurity=False).hexdigest()[:12]


def _tool_call(payload: JsonObject, line: int) -> JsonObject:
    kind = payload.get("type")
    # No call id (web_search_call): one derived from the item itself, so a re-appended copy keeps it.
    call_id = payload.get("call_id") or payload.get("id") or f"{kind}-{_digest(payload)}"
    if kind == "function_call":
        name, raw = payload.get("name") or "", payload.get("arguments")
    elif kind == "custom_tool_call":
        name, raw = payload.get("name") or "", {"input": payload.get("input")}
    elif kind == "local_shell_call":
        name, raw = "local_shell", payload.get("action")
    elif kind == "web_search_call":
        name, raw = "web_search", payload.get("action")
    elif kind == "tool_search_call":
        name, raw = "tool_search", payload.get("arguments")
    else:
        name, raw = kind or "", {"revised_prompt": payload.get("revised_prompt")}
    if isinstance(raw, str):
        try:
            raw = json.loads(raw)
        except ValueError:
            raw = {"input": raw}
    arguments = raw if isinstance(raw, dict) else {"input": raw}
    return {"type": "toolCall", "id": str(call_id), "name": str(name), "arguments": arguments}


def _assistant_blocks(payload: JsonObject, line: int) -> list[JsonObject]:
    kind = payload.get("type")
    if kind == "message":
        return content_blocks(payload.get("content"))
    if kind == "reasoning":
        parts = [s.get("text") or "" for s in _listed(payload.get("summary")) if isinstance(s, dict)]
        parts += [c.get("text") or "" for c in _listed(payload.get("content")) if isinstance(c, dict)]
        return [{"type": "thinking", "thinking": "\n".join(parts)}]
    return [_tool_call(payload, line)]


class _Builder:
    """Turns response items into chained pi-shaped entry dicts, grouping one model call's items."""

    def __init__(self) -> None:
        self.entries: list[tuple[JsonObject, int]] = []
        self.items: dict[str, list[JsonObject]] = {}  # message entry id -> its raw response items
        self.tool_names: dict[str, str] = {}
        self.group: JsonObject | None = None
        self.last_assistant: JsonObject | None = None
        self.model: str | None = None
        self.provider = "openai"
        # Real user prompts: a user message item an `event_msg/user_message` follows (or precedes).
        self.real_users: set[str] = set()
        self.pending_user: str | None = None
        self.expect_user = False
        self.seen_prompt = False
        # Developer/user message items recorded before the first real prompt: Codex's initial context.
        self.initial: list[tuple[str, JsonObject]] = []

    def _add(
        self, data: JsonObject, line: int, items: list[JsonObject] | None = None
    ) -> JsonObject:
        data["parentId"] = self.entries[-1][0]["id"] if self.entries else None
        self.entries.append((data, line))
        if items is not None:
            self.items[data["id"]] = items
        return data

    def close(self) -> None:
        self.group = None

    def meta(self, entry_id: str, line: int, timestamp: JsonValue, line_type: JsonValue,
             subtype: JsonValue = None) -> None:
        self.close()
        self._add(
            {
                "type": META_TYPE,
                "id": entry_id,
                "timestamp": timestamp,
                "lineType": line_type,
                "subtype": subtype,
            },
            line,
        )

    def item(self, entry_id: str, line: int, timestamp: JsonValue, payload: JsonObject) -> None:
        kind = payload.get("type")
        if not isinstance(kind, str):  # compared with sets of item types below; the caller reports it
            kind = None
        self.pending_user = None
        ms = parse_timestamp_ms(timestamp)
        base = {"type": "message", "id": entry_id, "timestamp": timestamp}
        if (kind == "message" and payload.get("role") == "assistant") or kind in ASSISTANT_ITEMS:
            blocks = _assistant_blocks(payload, line)
            for block in blocks:
                if block["type"] == "toolCall":
                    self.tool_names[block["id"]] = block["name"]
            if self.group is None:
                message: JsonObject = {
                    "role": "assistant",
                    "content": [],
                    "api": "openai-responses",
                    "provider": self.provider,
                    "model": self.model,
                    "stopReason": "stop",
                    "timestamp": ms,
                }
                self.group = self._add({**base, "message": message}, line, [])
                self.last_assistant = message
            message = self.group["message"]
            message["content"].extend(blocks)
            if any(b["type"] == "toolCall" for b in message["content"]):
                message["stopReason"] = "toolUse"
            self.items[self.group["id"]].append(payload)
        elif kind in OUTPUT_ITEMS:
            self.close()
            call_id = str(payload.get("call_id") or "")
            output = payload.get("output") if kind != "tool_search_output" else payload.get("tools")
            message = {
                "role": "toolResult",
                "toolCallId": call_id,
                "toolName": self.tool_names.get(call_id, ""),
                "content": content_blocks(output if not isinstance(output, (int, float)) else str(output)),
                "isError": False,
                "timestamp": ms,
            }
            self._add({**base, "message": message}, line, [payload])
        elif kind in ("message", "agent_message"):
            self.close()
            role = payload.get("role") or kind
            if not self.seen_prompt and kind == "message" and role in ("developer", "user", "system"):
                self.initial.append((entry_id, payload))
            if role == "user" and kind == "message":
                if self.expect_user:
                    self._prompt(entry_id)
                else:
                    self.pending_user = entry_id
            message = {"role": "user", "content": content_blocks(payload.get("content")), "timestamp": ms}
            if role != "user":
                message["agentRole"] = role
            self._add({**base, "message": message}, line, [payload])
        else:  # ghost_snapshot, encrypted compaction, future items: not context, but copied when kept
            self.meta(entry_id, line, timestamp, "response_item", kind)
            self.items[entry_id] = [payload]

    def user_event(self) -> None:
        """An `event_msg/user_message`: the user message item next to it is a real prompt."""
        if self.pending_user is not None:
            self._prompt(self.pending_user)
        else:
            self.expect_user = True

    def _prompt(self, entry_id: str) -> None:
        self.real_users.add(entry_id)
        self.pending_user = None
        self.expect_user = False
        if not self.seen_prompt:
            self.seen_prompt = True
            self.initial = [(i, p) for i, p in self.initial if i != entry_id]

    def usage(self, last: JsonObject) -> None:
        if self.last_assistant is not None:
            self.last_assistant["usage"] = codex_usage(last)


def _encrypted_chars(history: JsonValue) -> int:
    """The characters of the encrypted `compaction` items of a remote compaction's replacement history."""
    if not isinstance(history, list):
        return 0
    return sum(len(item["encrypted_content"]) for item in history
               if isinstance(item, dict) and str(item.get("type", "")).endswith("compaction")
               and isinstance(item.get("encrypted_content"), str))


def _summary_item_text(payload: JsonObject) -> str | None:
    if payload.get("type") != "message" or payload.get("role") != "user":
        return None
    text = "".join(b["text"] for b in content_blocks(payload.get("content")) if b["type"] == "text")
    if text.startswith(SUMMARY_PREFIX):
        return text[len(SUMMARY_PREFIX) :].removeprefix("\n")
    return None


def read(path: str | Path) -> Session:
    """Read a Codex rollout. Never raises on bad content: problems are collected on the Session."""
    name = str(path)
    problems: list[Problem] = []
    header: JsonObject | None = None
    builder = _Builder()
    previous_total: tuple[int, ...] | None = None
    context_window = None
    tokens_seen = last_line = 0
    size = file_size(path)
    try:
        for lineno, obj in iter_json_lines(path, problems):
            last_line = lineno
            kind = obj.get("type")
            payload = obj.get("payload")
            timestamp = obj.get("timestamp")
            entry_id = f"L{lineno}"
            if not isinstance(payload, dict):
                problems.append(
                    Problem(name, lineno, WARNING, f"{kind!r} line without a payload object; ignored")
                )
                continue
            if kind == "event_msg":
                if payload.get("type") == "user_message":
                    builder.user_event()
                if payload.get("type") == "token_count" and isinstance(payload.get("info"), dict):
                    info = payload["info"]
                    total = info.get("total_token_usage")
                    key = tuple(_int(total.get(f)) for f in USAGE_FIELDS) if isinstance(total, dict) else None
                    if _int(info.get("model_context_window")) > 0:
                        context_window = _int(info["model_context_window"])
                    last = info.get("last_token_usage")
                    if (key is None or key != previous_total) and isinstance(last, dict):
                        builder.usage(last)
                        tokens_seen = _int(last.get("total_tokens")) or tokens_seen
                    previous_total = key if key is not None else previous_total
                continue
            if kind == "session_meta":
                if header is None:
                    header = dict(payload)
                    header.pop("base_instructions", None)
                    header.pop("instructions", None)
                    builder.provider = payload.get("model_provider") or builder.provider
                builder.meta(entry_id, lineno, timestamp, kind)
            elif kind == "turn_context":
                builder.model = payload.get("model") or builder.model
                builder.meta(entry_id, lineno, timestamp, kind)
            elif kind == "response_item":
                if not isinstance(payload.get("type"), str):  # a list or an object: damaged
                    problems.append(Problem(name, lineno, ERROR, "response_item payload 'type' must be a string"))
                    continue
                builder.item(entry_id, lineno, timestamp, payload)
            elif kind == "compacted":
                _add_compacted(builder, entry_id, lineno, timestamp, payload, tokens_seen, (header or {}).get("cwd"))
            else:
                builder.meta(entry_id, lineno, timestamp, kind)
    except OSError as exc:
        problems.append(Problem(name, None, ERROR, f"cannot read file: {exc.strerror or exc}"))
    if header is None and builder.entries:
        problems.append(
            Problem(name, None, WARNING, "no session_meta line; session id taken from the file name")
        )
    header = header or {}
    header.setdefault("id", Path(name).name.split(".")[0])
    header["model"] = builder.model
    header["context_window"] = context_window
    entries = [Entry(data, line) for data, line in builder.entries]
    source = header.get("source")
    if not builder.seen_prompt:
        # No user_message events (older rollouts): the leading developer/context items are the initial
        # context, the first other user message is the first prompt.
        initial = []
        for entry_id, payload in builder.initial:
            if payload.get("role") == "user" and not is_context_text(item_text(payload)):
                break
            initial.append((entry_id, payload))
        builder.initial = initial
    initial_ids = {i for i, _ in builder.initial}
    extra = CodexSessionExtra(initial_context=[p for _, p in builder.initial], initial_ids=initial_ids,
                              real_users=builder.real_users, entry_items=builder.items)
    # A thread a Codex agent spawned (`session_meta.source.subagent`): its parent owns the work.
    subagent = isinstance(source, dict) and "subagent" in source
    return Session(name, FORMAT, header, entries, problems=problems, context_window=context_window,
                   subagent=subagent, size=size, last_line=last_line, extra=extra)


def _add_compacted(
    builder: _Builder, entry_id: str, line: int, timestamp: JsonValue, payload: JsonObject, tokens_seen: int,
    cwd: str | None = None,
) -> None:
    builder.close()
    summary = payload.get("message") if isinstance(payload.get("message"), str) else ""
    history = payload.get("replacement_history")
    first_kept = None
    prefix_users: list[str] = []
    if isinstance(history, list):
        at = next(
            (i for i, item in enumerate(history) if isinstance(item, dict) and _summary_item_text(item) is not None),
            -1,
        )
        for index, item in enumerate(history):
            if not isinstance(item, dict):
                continue
            if index < at:
                # Before the summary: the initial context and earlier user messages, as Codex's local
                # compaction writes them. Context, but not a kept tail: metadata here.
                builder.meta(f"{entry_id}.r{index}", line, timestamp, "replacement_prefix", item.get("type"))
                builder.items[f"{entry_id}.r{index}"] = [item]
                if item.get("type") == "message" and item.get("role") == "user":
                    text = item_text(item)
                    if not is_context_text(text):
                        prefix_users.append(text)
                continue
            summary_text = _summary_item_text(item)
            if summary_text is not None:
                summary = summary or summary_text
                builder.close()
                continue
            before = len(builder.entries)
            builder.item(f"{entry_id}.r{index}", line, timestamp, item)
            if first_kept is None and len(builder.entries) > before:
                first_kept = builder.entries[before][0]["id"]
        builder.close()
    builder.last_assistant = None  # usage reported after a compaction is not these items'
    data = {
        "type": "compaction",
        "id": entry_id,
        "timestamp": timestamp,
        "summary": summary,
        "firstKeptEntryId": first_kept or entry_id,
        "tokensBefore": tokens_seen,
        "fromHook": False,
    }
    if prefix_users:
        data["prefixUserMessages"] = prefix_users
    encrypted = _encrypted_chars(history) if not summary else 0
    if encrypted:  # a remote compaction: the provider's summary is an opaque item (README.md beside this file)
        data["encryptedSummaryChars"] = encrypted
    # Codex's compacted item has no field for our file lists: the tags, relative to the session's folder
    details = details_from_summary(summary, cwd if isinstance(cwd, str) else None)
    if details is not None:
        data["details"] = details
    builder._add(data, line)


def context_messages(session: Session) -> list[JsonObject]:
    """The LLM messages Codex would resume with, in pi's shape (for `show --context`)."""
    context = build_session_context(session.path_entries())
    return convert_to_llm([m.message for m in context.messages])


__all__ = ["read", "build_compaction", "verify", "context_messages", "FORMAT", "SUMMARY_PREFIX"]
