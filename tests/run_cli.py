"""`batchcompact run` as the run tests call it: the flags they pass (`FAST`, `model_args` for the loopback
server of tests/llm_server.py), what a call gives (`Result`) and small pi sessions to compact (`write_session`)."""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from factories import Builder

MODEL = "openai/gpt-4o-mini"  # priced in litellm's bundled map
API_KEY = "sk-test-do-not-log-123456"
FAST = ("--min-age", "0", "--jobs", "1")


@dataclass
class Result:
    code: int
    out: str
    err: str

    def json(self) -> dict[str, Any]:
        return json.loads(self.out)


def model_args(server) -> tuple[str, ...]:
    return ("--model", MODEL, "--api-base", server.api_base, "--api-key", API_KEY, "--max-attempts", "1")


def write_session(path: Path, name: str, turns: int = 6, chars: int = 2400) -> Path:
    """A small v3 pi session whose every message names `name` (so a prompt tells which session it is from)."""
    builder = Builder()
    builder.meta("medium")
    for turn in range(turns):
        filler = " ".join(f"{name}-word{turn}-{i}" for i in range(chars // 16))
        builder.user(f"[{name}] request {turn}: {filler}")
        builder.assistant(f"[{name}] answer {turn}: {filler}", usage=1000 * (turn + 1))
    header = {"type": "session", "version": 3, "id": f"session-{name}", "timestamp": "2026-01-01T00:00:00.000Z",
              "cwd": "/work"}
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text("".join(json.dumps(x, separators=(",", ":")) + "\n" for x in [header, *builder.entries]))
    return path
