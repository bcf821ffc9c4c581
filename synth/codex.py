"""Synthetic Codex CLI 0.104 rollouts (`~/.codex/sessions/YYYY/MM/DD/rollout-<time>-<uuid>.jsonl`), streamed.

Shape (reference transcripts.md section 2): `{timestamp, type, payload}` lines; `session_meta` first;
`turn_context` per turn names the model; `response_item` messages, reasoning, function calls and
outputs; `event_msg` user/agent messages and cumulative `token_count` events (some repeated unchanged,
some rate-limit-only with `info: null`). `last_token_usage.input_tokens` equals the instructions overhead
plus the chars/4 estimate of the history so far.
"""

from __future__ import annotations

import datetime as dt
import json
import math
import random
import time
import uuid
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

from . import vocab
from .common import byte_length, dumps, iso_ms
from .text import fill, get_pool, random_token

CLI_VERSION = "0.104.0"
CONTEXT_WINDOW = 272_000


@dataclass
class CodexSpec:
    """What to generate."""

    seed: int = 1
    target_bytes: int | None = 200_000
    turns: int | None = None
    project: str | None = None
    model: str = "gpt-5-codex"
    context_window: int = CONTEXT_WINDOW
    start: dt.datetime | None = None
    pool_seed: int | None = None


@dataclass
class CodexResult:
    """Facts about a generated rollout."""

    path: Path | None = None
    bytes: int = 0
    lines: int = 0
    session_id: str = ""
    last_input_tokens: int = 0
    total_tokens: int = 0


def _usage(inp: int, cached: int, out: int, reasoning: int) -> dict:
    return {
        "input_tokens": inp,
        "cached_input_tokens": cached,
        "output_tokens": out,
        "reasoning_output_tokens": reasoning,
        "total_tokens": inp + out,
    }


class CodexRolloutWriter:
    """Produces the lines of one rollout; `.result` is complete after `iter_lines()` is exhausted."""

    def __init__(self, spec: CodexSpec) -> None:
        self.spec = spec
        self.rng = rng = random.Random(f"codex-{spec.seed}")
        self.project = vocab.project_named(spec.project) if spec.project else rng.choice(vocab.PROJECTS)
        self.pool = get_pool(spec.pool_seed if spec.pool_seed is not None else spec.seed)
        start = spec.start or dt.datetime(2026, 9, 1, tzinfo=dt.UTC) + dt.timedelta(
            seconds=rng.randint(0, 80 * 86400)
        )
        self.ms = self.start_ms = int(start.timestamp() * 1000) + rng.randint(0, 999)
        self.session_id = str(uuid.UUID(int=rng.getrandbits(128), version=4))
        self.overhead = rng.randint(9_000, 12_000)
        self.context = 0
        self.pending_output = 0  # characters the model produced since the last token_count
        self.cached = 0
        self.totals = _usage(0, 0, 0, 0)
        self.last: dict | None = None
        self.bytes = 0
        self.lines = 0
        self.turn_index = 0
        self.result = CodexResult(session_id=self.session_id)

    def _line(self, kind: str, payload: dict) -> str:
        self.ms += self.rng.randint(1, 400)
        text = dumps({"timestamp": iso_ms(self.ms), "type": kind, "payload": payload})
        self.lines += 1
        self.bytes += byte_length(text) + 1
        return text + "\n"

    def _item(self, payload: dict, tokens_text: str = "", produced: bool = False) -> str:
        self.context += math.ceil(len(tokens_text) / 4)
        if produced:
            self.pending_output += len(tokens_text)
        return self._line("response_item", payload)

    def _token_count(self) -> Iterator[str]:
        """A model call's usage: cumulative totals plus this call's; sometimes repeated unchanged."""
        rng = self.rng
        out, self.pending_output = math.ceil(self.pending_output / 4), 0
        reasoning = rng.randint(20, 400)
        prompt = self.overhead + self.context - out
        cached = (min(self.cached, prompt) // 256) * 256
        self.cached = prompt
        self.last = _usage(prompt, cached, out + reasoning, reasoning)
        for key, value in self.last.items():
            self.totals[key] += value
        info = {
            "total_token_usage": dict(self.totals),
            "last_token_usage": dict(self.last),
            "model_context_window": self.spec.context_window,
        }
        limits = {
            "limit_id": "codex",
            "limit_name": None,
            "primary": {
                "used_percent": round(min(99.0, self.turn_index * 0.7), 1),
                "window_minutes": 300,
                "resets_at": self.ms // 1000 + 9000,
            },
            "secondary": {
                "used_percent": round(min(99.0, self.turn_index * 0.1), 1),
                "window_minutes": 10080,
                "resets_at": self.ms // 1000 + 400_000,
            },
            "credits": {"has_credits": False, "unlimited": False, "balance": None},
            "plan_type": None,
        }
        event = {"type": "token_count", "info": info, "rate_limits": limits}
        for _ in range(2 if rng.random() < 0.45 else 1):
            yield self._line("event_msg", event)
        self.result.last_input_tokens = prompt
        self.result.total_tokens = self.totals["total_tokens"]

    def _reasoning(self) -> Iterator[str]:
        text = self.rng.choice(self.pool.prose)[:400]
        yield self._line("event_msg", {"type": "agent_reasoning", "text": f"**{text[:60]}**"})
        yield self._item(
            {
                "type": "reasoning",
                "summary": [{"type": "summary_text", "text": text}],
                "content": None,
                "encrypted_content": "gAAAAB" + self.rng.choice(self.pool.signatures),
            },
            text,
            True,
        )

    def _call(self) -> Iterator[str]:
        rng, project, pool = self.rng, self.project, self.pool
        call_id = "call_" + random_token(rng, 24)
        if rng.random() < 0.25:
            path = rng.choice(project.source_files)
            snippet = rng.choice(pool.snippets[project.language])[:300]
            patch = (
                f"*** Begin Patch\n*** Update File: {path}\n@@\n-{snippet.splitlines()[0]}\n"
                f"+{snippet.splitlines()[0]}  # updated\n*** End Patch"
            )
            yield self._item(
                {
                    "type": "custom_tool_call",
                    "status": "completed",
                    "call_id": call_id,
                    "name": "apply_patch",
                    "input": patch,
                },
                patch,
                True,
            )
            output = json.dumps(
                {
                    "output": f"Success. Updated the following files:\nM {path}\n",
                    "metadata": {"exit_code": 0, "duration_seconds": 0.0},
                }
            )
            yield self._item(
                {"type": "custom_tool_call_output", "call_id": call_id, "output": output}, output
            )
            return
        kind = rng.choice(("read", "test", "grep"))
        if kind == "read":
            path = rng.choice(project.files)
            command, text, code = f"sed -n '1,400p' {path}", pool.source_for(path, project.language), 0
        elif kind == "test":
            (text, failed), command = rng.choice(pool.test_logs[project.language]), project.test_command
            code = 1 if failed else 0
        else:
            command, text, code = f'rg -n "{rng.choice(vocab.FUNCS)}" src', pool.grep_for(rng, project), 0
        arguments = json.dumps({"cmd": command, "workdir": project.cwd, "yield_time_ms": 10000})
        yield self._item(
            {"type": "function_call", "name": "exec_command", "arguments": arguments, "call_id": call_id},
            arguments,
            True,
        )
        output = (
            f"Chunk ID: {rng.getrandbits(24):06x}\nWall time: {rng.randint(0, 9)}.{rng.randint(0, 9999):04d} "
            f"seconds\nProcess exited with code {code}\nOriginal token count: {math.ceil(len(text) / 4)}\n"
            f"Output:\n{text}"
        )
        self.ms += rng.randint(100, 20_000)
        yield self._item({"type": "function_call_output", "call_id": call_id, "output": output}, output)

    def _compacted(self) -> Iterator[str]:
        """A remote compaction as 0.104 records it: opaque replacement history, then an event."""
        rng = self.rng
        recent = fill(rng, rng.choice(vocab.REQUESTS), self.project)
        history = [
            {"type": "message", "role": "user", "content": [{"type": "input_text", "text": recent}]},
            {
                "type": "compaction",
                "encrypted_content": "gAAAAB" + "".join(rng.sample(self.pool.signatures, 4)),
            },
        ]
        yield self._line("compacted", {"message": "", "replacement_history": history})
        yield self._line("event_msg", {"type": "context_compacted"})
        self.context = math.ceil(len(recent) / 4) + 6000
        self.cached = 0

    def _turn(self) -> Iterator[str]:
        rng, project = self.rng, self.project
        turn_id = str(uuid.UUID(int=rng.getrandbits(128), version=4))
        self.ms += rng.randint(15_000, 300_000)
        yield self._line(
            "event_msg",
            {
                "type": "task_started",
                "turn_id": turn_id,
                "model_context_window": self.spec.context_window,
                "collaboration_mode_kind": "default",
            },
        )
        kind = vocab.CORRECTIONS if self.turn_index and rng.random() < 0.3 else vocab.REQUESTS
        prompt = fill(rng, rng.choice(kind), project)
        yield self._item(
            {"type": "message", "role": "user", "content": [{"type": "input_text", "text": prompt}]}, prompt
        )
        yield self._line(
            "event_msg",
            {
                "type": "user_message",
                "message": prompt,
                "images": [],
                "local_images": [],
                "text_elements": [],
            },
        )
        yield self._line(
            "turn_context",
            {
                "turn_id": turn_id,
                "cwd": project.cwd,
                "approval_policy": "on-request",
                "sandbox_policy": {
                    "type": "workspace-write",
                    "writable_roots": [project.cwd],
                    "network_access": False,
                    "exclude_tmpdir_env_var": False,
                    "exclude_slash_tmp": False,
                },
                "model": self.spec.model,
                "personality": "pragmatic",
                "effort": "medium",
                "summary": "auto",
                "truncation_policy": {"mode": "tokens", "limit": 10000},
            },
        )
        if rng.random() < 0.3:
            yield self._line("event_msg", {"type": "token_count", "info": None, "rate_limits": None})
        for _ in range(rng.choice((1, 2, 3, 4, 6, 8))):
            yield from self._reasoning()
            if rng.random() < 0.4:
                note = fill(rng, rng.choice(vocab.ASSISTANT_TEXT), project)
                yield self._line("event_msg", {"type": "agent_message", "message": note})
                yield self._item(
                    {
                        "type": "message",
                        "role": "assistant",
                        "content": [{"type": "output_text", "text": note}],
                        "phase": "commentary",
                    },
                    note,
                    True,
                )
            yield from self._call()
            yield from self._token_count()
        final = fill(rng, rng.choice(vocab.FINAL_TEXT), project)
        yield from self._reasoning()
        yield self._line("event_msg", {"type": "agent_message", "message": final})
        yield self._item(
            {
                "type": "message",
                "role": "assistant",
                "content": [{"type": "output_text", "text": final}],
                "phase": "final_answer",
            },
            final,
            True,
        )
        yield from self._token_count()
        yield self._line(
            "event_msg", {"type": "task_complete", "turn_id": turn_id, "last_agent_message": final}
        )

    def iter_lines(self) -> Iterator[str]:
        """All lines of the rollout in order."""
        rng, project, spec = self.rng, self.project, self.spec
        yield self._line(
            "session_meta",
            {
                "id": self.session_id,
                "timestamp": iso_ms(self.start_ms),
                "cwd": project.cwd,
                "originator": "codex_cli_rs",
                "cli_version": CLI_VERSION,
                "source": "cli",
                "model_provider": "openai",
                "base_instructions": {
                    "text": "You are Codex, a coding agent running in a terminal. Be concise and precise."
                },
                "git": {
                    "commit_hash": f"{rng.getrandbits(160):040x}",
                    "branch": project.branch,
                    "repository_url": f"git@github.com:example/{project.name}.git",
                },
            },
        )
        developer = "<permissions instructions>\nFilesystem sandboxing: workspace-write. Network access: restricted.\n</permissions instructions>"
        yield self._item(
            {"type": "message", "role": "developer", "content": [{"type": "input_text", "text": developer}]},
            developer,
        )
        env = f"<environment_context>\n  <cwd>{project.cwd}</cwd>\n  <shell>bash</shell>\n</environment_context>"
        yield self._item(
            {"type": "message", "role": "user", "content": [{"type": "input_text", "text": env}]}, env
        )
        while True:
            by_bytes = self.bytes / spec.target_bytes if spec.target_bytes else 0.0
            if max(by_bytes, self.turn_index / spec.turns if spec.turns else 0.0) >= 1.0:
                break
            if self.overhead + self.context > 0.9 * CONTEXT_WINDOW:
                yield from self._compacted()
            yield from self._turn()
            self.turn_index += 1
        self.result.lines, self.result.bytes = self.lines, self.bytes

    def relative_path(self) -> Path:
        """`YYYY/MM/DD/rollout-<YYYY-MM-DDThh-mm-ss>-<uuid>.jsonl`, from the session start (UTC)."""
        moment = time.gmtime(self.start_ms // 1000)
        return Path(time.strftime("%Y/%m/%d", moment)) / (
            f"rollout-{time.strftime('%Y-%m-%dT%H-%M-%S', moment)}-{self.session_id}.jsonl"
        )


def write_codex_session(sessions_root: str | Path, spec: CodexSpec) -> CodexResult:
    """Write one rollout under `sessions_root` (the `sessions/` folder), streaming."""
    writer = CodexRolloutWriter(spec)
    path = Path(sessions_root) / writer.relative_path()
    path.parent.mkdir(parents=True, exist_ok=True)
    with open(path, "w", encoding="utf-8", newline="") as handle:
        handle.writelines(writer.iter_lines())
    writer.result.path = path
    return writer.result
