"""Hand-made pi sessions in the shapes real public sessions take where pi still opens them (batchcompact/adapters/pi/
README.md, "What we accept of pi's files"): sub-agent records merged in without an id or a parentId, oh-my-pi's
`model_change` (`model: "provider/id"`), a line a redaction left invalid (the next entry then names no parent),
and a file without its header line. Deterministic: the same bytes on every call."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

SESSION_ID = "5e551011-0000-4000-8000-000000000001"
CWD = "/home/user/projects/shapes"
FILLER = ("The parser keeps every line it reads and the writer appends only. " * 40).strip()
TURNS = 6


def _dump(obj: dict[str, Any]) -> str:
    return json.dumps(obj, separators=(",", ":"), ensure_ascii=False)


def _time(n: int) -> str:
    return f"2026-07-14T01:{30 + n // 60:02d}:{n % 60:02d}.000Z"


class _Builder:
    def __init__(self, prefix: str) -> None:
        self.prefix = prefix
        self.count = 0
        self.lines: list[str] = []
        self.leaf: str | None = None

    def next_id(self) -> str:
        self.count += 1
        return f"{self.prefix}{self.count:06x}"

    def add(self, kind: str, parent: str | None = "leaf", **fields: Any) -> str:
        entry_id = self.next_id()
        parent_id = self.leaf if parent == "leaf" else parent
        self.lines.append(_dump({"type": kind, "id": entry_id, "parentId": parent_id, "timestamp": _time(self.count),
                                 **fields}))
        self.leaf = entry_id
        return entry_id

    def turn(self, n: int, parent: str | None = "leaf") -> None:
        ms = 1784000000000 + self.count * 1000
        usage = {"input": 1200 + 900 * n, "output": 80, "cacheRead": 0, "cacheWrite": 0, "totalTokens": 1280 + 900 * n,
                 "cost": {"input": 0.0, "output": 0.0, "cacheRead": 0.0, "cacheWrite": 0.0, "total": 0.0}}
        common = {"api": "anthropic-messages", "provider": "anthropic", "model": "claude-sonnet-4-5", "usage": usage}
        call = f"toolu_{self.prefix}{n:02d}"
        self.add("message", parent, message={"role": "user", "content": [
            {"type": "text", "text": f"Step {n}: read src/module_{n}.py and tell me what it does."}], "timestamp": ms})
        self.add("message", message={"role": "assistant", "content": [
            {"type": "text", "text": f"Reading src/module_{n}.py."},
            {"type": "toolCall", "id": call, "name": "read", "arguments": {"path": f"src/module_{n}.py"}}],
            **common, "stopReason": "toolUse", "timestamp": ms + 1})
        self.add("message", message={"role": "toolResult", "toolCallId": call, "toolName": "read", "content": [
            {"type": "text", "text": f"# module {n}\n{FILLER}"}], "isError": False, "timestamp": ms + 2})
        self.add("message", message={"role": "assistant", "content": [
            {"type": "text", "text": f"Module {n} parses lines and keeps them in order."}],
            **common, "stopReason": "stop", "timestamp": ms + 3})


def _header() -> str:
    return _dump({"type": "session", "version": 3, "id": SESSION_ID, "timestamp": _time(0), "cwd": CWD})


def _start(builder: _Builder, *, omp_model: bool = False) -> None:
    if omp_model:  # oh-my-pi's ModelChangeEntry (session-entries.ts): one "provider/id" string and a role
        builder.add("model_change", None, model="openrouter/~anthropic/claude-sonnet-latest")
        builder.add("thinking_level_change", thinkingLevel="high")
        builder.add("model_change", model="anthropic/claude-sonnet-4-5", role="default")
    else:
        builder.add("model_change", None, provider="anthropic", modelId="claude-sonnet-4-5")
        builder.add("thinking_level_change", thinkingLevel="medium")


def subagent_merged() -> str:
    """A session into which a tool merged a sub-agent's session: a `custom` record with no id and no
    parentId, then the sub-agent's own entries as a second root; the main chain goes on after them."""
    main, sub = _Builder("a0"), _Builder("b0")
    _start(main)
    for n in range(3):
        main.turn(n)
    main.lines.append(_dump({"type": "custom", "customType": "subagent: reviewer - Review the plan",
                             "data": {"kind": "merged-subagent-session", "childSessionId": "child-1",
                                      "sourceFile": "child.jsonl", "title": "Review the plan"},
                             "timestamp": _time(40)}))
    _start(sub)
    sub.turn(9)
    main.lines.extend(sub.lines)
    for n in range(3, TURNS):
        main.turn(n)
    return "\n".join([_header(), *main.lines]) + "\n"


def omp_model_change() -> str:
    """A session oh-my-pi wrote: its `model_change` entries hold `model` ("provider/id"), not pi's
    `provider` + `modelId`."""
    main = _Builder("c0")
    _start(main, omp_model=True)
    for n in range(TURNS):
        main.turn(n)
    return "\n".join([_header(), *main.lines]) + "\n"


BROKEN = '{"type":"message","id":"d0ffffff","parentId":"PARENT","timestamp":"2026-07-14T01:40:00.000Z",' \
         '"message":{"role":"user","content":[{"type":"text","text":"mail me at ***@***.***\\ later"}],' \
         '"timestamp":1784000000000}}'


def broken_line() -> str:
    """A line a redaction left invalid (`Invalid \\escape`); the entry after it names it as its parent."""
    main = _Builder("d0")
    _start(main, omp_model=True)  # as the public sessions with such a line (oh-my-pi's)
    for n in range(2):
        main.turn(n)
    main.lines.append(BROKEN.replace("PARENT", main.leaf or ""))
    main.leaf = "d0ffffff"
    for n in range(2, TURNS + 2):
        main.turn(n)
    return "\n".join([_header(), *main.lines]) + "\n"


def no_header() -> str:
    """A pi session without its header line: a tail cut from one (its first entry's parent is not in it)."""
    main = _Builder("e0")
    main.leaf = "e0ffffff"
    for n in range(TURNS):
        main.turn(n)
    return "\n".join(main.lines) + "\n"


SHAPES = {"subagent-merged.jsonl": subagent_merged, "omp-model-change.jsonl": omp_model_change,
          "broken-line.jsonl": broken_line, "no-header.jsonl": no_header}


def write_shapes(folder: Path, names: tuple[str, ...] = tuple(SHAPES)) -> dict[str, Path]:
    folder.mkdir(parents=True, exist_ok=True)
    written = {}
    for name in names:
        path = folder / name
        path.write_text(SHAPES[name](), encoding="utf-8")
        written[name] = path
    return written
