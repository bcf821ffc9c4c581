"""Entry factories with deterministic ids, for tables and properties over small sessions."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from batchcompact.agents import file_tools
from batchcompact.core.entries import Entry
from batchcompact.core.session import Session


class Builder:
    """Builds a chain of pi v3 entries: each new entry's parent is the previous one unless given."""

    def __init__(self) -> None:
        self.entries: list[dict[str, Any]] = []
        self.counter = 0
        self.leaf: str | None = None

    def _next_id(self) -> str:
        self.counter += 1
        return f"{self.counter:08x}"

    def add(self, kind: str, parent: str | None | bool = True, **fields: Any) -> str:
        entry_id = self._next_id()
        parent_id = self.leaf if parent is True else parent
        ts = f"2026-01-01T00:{self.counter // 60:02d}:{self.counter % 60:02d}.000Z"
        entry = {"type": kind, "id": entry_id, "parentId": parent_id, "timestamp": ts, **fields}
        self.entries.append(entry)
        self.leaf = entry_id
        return entry_id

    def user(self, text: str, **kw: Any) -> str:
        return self.add("message", message={"role": "user", "content": text, "timestamp": 1}, **kw)

    def assistant(self, text: str = "", *, calls: list[tuple[str, dict]] = (), usage: int | None = None,
                  stop: str = "stop", **kw: Any) -> str:
        content: list[dict[str, Any]] = []
        if text:
            content.append({"type": "text", "text": text})
        for index, (name, args) in enumerate(calls):
            content.append({"type": "toolCall", "id": f"call{self.counter}_{index}", "name": name, "arguments": args})
        message: dict[str, Any] = {
            "role": "assistant", "content": content, "api": "anthropic-messages", "provider": "anthropic",
            "model": "claude-sonnet-4-5", "stopReason": "toolUse" if calls else stop, "timestamp": 2,
            "usage": {"input": usage or 0, "output": 0, "cacheRead": 0, "cacheWrite": 0, "totalTokens": usage or 0,
                      "cost": {"input": 0, "output": 0, "cacheRead": 0, "cacheWrite": 0, "total": 0}},
        }
        return self.add("message", message=message, **kw)

    def tool_result(self, text: str, name: str = "bash", **kw: Any) -> str:
        message = {"role": "toolResult", "toolCallId": "x", "toolName": name,
                   "content": [{"type": "text", "text": text}], "isError": False, "timestamp": 3}
        return self.add("message", message=message, **kw)

    def meta(self, level: str = "high", **kw: Any) -> str:
        return self.add("thinking_level_change", thinkingLevel=level, **kw)

    def header(self, session_id: str = "s-1") -> dict[str, Any]:
        return {"type": "session", "version": 3, "id": session_id, "timestamp": "2026-01-01T00:00:00.000Z",
                "cwd": "/work"}

    def objects(self) -> list[Entry]:
        return [Entry(dict(e), i + 2) for i, e in enumerate(self.entries)]

    def session(self) -> Session:
        return Session("mem.jsonl", "pi", self.header(), self.objects(), version=3)

    def write(self, path: Path) -> Path:
        lines = [self.header(), *self.entries]
        path.write_text("".join(json.dumps(x, separators=(",", ":")) + "\n" for x in lines))
        return path


def plan_forced(session, keep: int, context_window: int = 200_000):
    """The planner on a session's active path with --force and a given keep_recent_tokens."""
    from batchcompact.core.planner import CompactionSettings, prepare_compaction

    settings = CompactionSettings(force=True, keep_recent_tokens=keep)
    return prepare_compaction(session.path_entries(), settings, context_window=context_window, file_tools=file_tools())


def write_appended(src: Path, lines: list[dict], out: Path) -> Path:
    """What the writer produces for an append-only format: the original bytes, then the new lines."""
    from batchcompact.formats.jsonl import dumps_line

    data = src.read_bytes()
    if data and not data.endswith(b"\n"):
        data += b"\n"
    out.write_bytes(data + "".join(dumps_line(obj) for obj in lines).encode("utf-8"))
    return out


def context_messages(session) -> list[dict]:
    from batchcompact.core.context import build_session_context

    return [m.message for m in build_session_context(session.path_entries()).messages]
