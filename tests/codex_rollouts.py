"""Codex rollouts written for the copy tests: a parent, its fork, a re-emitted token count (used by
tests/agents/codex/test_report_codex_copies.py and the ccusage parity home)."""

from __future__ import annotations

import json
from pathlib import Path


def usage(inp, cached, out, reasoning=0):
    return {"input_tokens": inp, "cached_input_tokens": cached, "output_tokens": out,
            "reasoning_output_tokens": reasoning, "total_tokens": inp + out}


def token_count(when, last, total):
    return {"timestamp": when, "type": "event_msg",
            "payload": {"type": "token_count", "info": {"last_token_usage": last, "total_token_usage": total},
                        "rate_limits": None}}


def write(path: Path, lines: list[dict]) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    # compact, as Codex writes it (readers may look for `"type":"token_count"` before parsing)
    path.write_text("".join(json.dumps(line, separators=(",", ":")) + "\n" for line in lines))
    return path


def parent_lines(day="2026-05-12", times=("08:00:00.000", "08:01:00.000", "08:02:00.000"), thread="parent-1"):
    when = [f"{day}T{t}Z" for t in times]
    meta = {"timestamp": when[0], "type": "session_meta",
            "payload": {"id": thread, "cwd": "/work/app", "model_provider": "openai"}}
    context = {"timestamp": when[0], "type": "turn_context", "payload": {"model": "gpt-5.2", "turn_id": "t1"}}
    return [
        meta,
        context,
        token_count(when[1], usage(1000, 100, 200), usage(1000, 100, 200)),
        token_count(when[2], usage(500, 50, 100), usage(1500, 150, 300)),
    ]


def write_fork(sessions: Path, day="2026-05-12", with_parent=True, parent="parent-1", fork="fork-2") -> None:
    """A parent rollout (1,800 tokens) and a fork of it whose copy of the parent's history carries the fork's
    time, then the fork's own two calls (115 tokens), the way Codex writes a fork."""
    folder = sessions / day.replace("-", "/")
    if with_parent:
        write(folder / f"rollout-{day}T08-00-00-{parent}.jsonl", parent_lines(day, thread=parent))
    fork_time = f"{day}T09:30:00.412Z"
    copied = parent_lines(day, times=("09:30:00.412", "09:30:00.412", "09:30:00.415"), thread=parent)
    own = [
        {"timestamp": f"{day}T09:30:05.000Z", "type": "turn_context", "payload": {"model": "gpt-5.2", "turn_id": "t9"}},
        # the fork's running total goes on from the parent's
        token_count(f"{day}T09:30:09.000Z", usage(40, 0, 10, 4), usage(1540, 150, 310)),
        token_count(f"{day}T09:31:00.000Z", usage(60, 20, 5), usage(1600, 170, 315)),
    ]
    fork_meta = {"timestamp": fork_time, "type": "session_meta",
                 "payload": {"id": fork, "forked_from_id": parent, "cwd": "/work/app"}}
    write(folder / f"rollout-{day}T09-30-00-{fork}.jsonl", [fork_meta, *copied, *own])


def write_reemitted(path: Path, day="2026-05-12", thread="reemit-1") -> None:
    """A rollout (1,800 tokens) whose first event is emitted again 30 s later and its last 3 min later
    (a UI or rate-limit refresh: the same figures, a fresh time)."""
    lines = parent_lines(day, thread=thread)
    lines.insert(3, {**lines[2], "timestamp": f"{day}T08:01:30.000Z"})
    lines.append({**lines[-1], "timestamp": f"{day}T08:05:00.000Z"})
    write(path, lines)
