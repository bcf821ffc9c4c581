"""Synthetic Claude Code 2.1.x transcripts (`~/.claude/projects/<slug>/<uuid>.jsonl`), streamed.

Shape (reference transcripts.md section 1): uuid/parentUuid chains; one assistant line per content block,
the lines of one response sharing `message.id`/`requestId` and repeating `usage` (early lines carry a
partial `output_tokens`); tool results as user lines; `progress` and `file-history-snapshot` noise.
`input_tokens + cache_read + cache_creation` of a response equals the system overhead plus the chars/4
estimate of the conversation so far.
"""

from __future__ import annotations

import datetime as dt
import math
import random
import uuid
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

from . import vocab
from .common import byte_length, dumps, iso_ms
from .text import fill, get_pool, random_token

VERSION = "2.1.42"


@dataclass
class ClaudeSpec:
    """What to generate; a Task sub-agent transcript is written next to the session when `subagent`."""

    seed: int = 1
    target_bytes: int | None = 200_000
    turns: int | None = None
    project: str | None = None
    model: str = "claude-sonnet-4-5-20250929"
    subagent: bool = False
    start: dt.datetime | None = None
    pool_seed: int | None = None
    auto_compact: bool = True  # False: as with Claude Code's autoCompactEnabled off, the context keeps growing


@dataclass
class ClaudeResult:
    """Facts about a generated transcript."""

    path: Path | None = None
    bytes: int = 0
    lines: int = 0
    session_id: str = ""
    last_context_tokens: int = 0
    subagent_path: Path | None = None


def slug_for(cwd: str) -> str:
    """Claude Code's project folder name: every non-alphanumeric character becomes '-'."""
    return "".join(c if c.isalnum() else "-" for c in cwd)


class ClaudeTranscriptWriter:
    """Produces the lines of one transcript; `.result` is complete after `iter_lines()` is exhausted."""

    def __init__(self, spec: ClaudeSpec, sidechain: bool = False, session_id: str | None = None) -> None:
        self.spec = spec
        self.rng = rng = random.Random(f"claude-{spec.seed}-{sidechain}")
        self.project = vocab.project_named(spec.project) if spec.project else rng.choice(vocab.PROJECTS)
        self.pool = get_pool(spec.pool_seed if spec.pool_seed is not None else spec.seed)
        start = spec.start or dt.datetime(2026, 9, 1, tzinfo=dt.UTC) + dt.timedelta(
            seconds=rng.randint(0, 80 * 86400)
        )
        self.ms = self.first_ms = int(start.timestamp() * 1000) + rng.randint(0, 999)
        self.session_id = session_id or self._uuid()
        self.sidechain = sidechain
        self.agent_id = f"{rng.getrandbits(28):07x}" if sidechain else None
        self.overhead = rng.randint(14_000, 18_000)
        self.context = 0
        self.cached = 0
        self.parent: str | None = None
        self.bytes = 0
        self.lines = 0
        self.turn_index = 0
        self.result = ClaudeResult(session_id=self.session_id)

    def _uuid(self) -> str:
        return str(uuid.UUID(int=self.rng.getrandbits(128), version=4))

    def _tick(self, low: int, high: int) -> int:
        self.ms += self.rng.randint(low, high)
        return self.ms

    def _line(self, obj: dict) -> str:
        text = dumps(obj)
        self.lines += 1
        self.bytes += byte_length(text) + 1
        return text + "\n"

    def _envelope(self, kind: str) -> dict:
        env = {
            "parentUuid": self.parent,
            "isSidechain": self.sidechain,
            "userType": "external",
            "cwd": self.project.cwd,
            "sessionId": self.session_id,
            "version": VERSION,
            "gitBranch": self.project.branch,
        }
        if self.agent_id:
            env["agentId"] = self.agent_id
        env["type"] = kind
        return env

    def _chained(self, obj: dict) -> str:
        obj["uuid"] = uid = self._uuid()
        obj["timestamp"] = iso_ms(self._tick(1, 50))
        self.parent = uid
        return self._line(obj)

    # -- lines -----------------------------------------------------------------------------
    def _progress(self, event: str, tool_use_id: str) -> str:
        obj = self._envelope("progress")
        obj["data"] = {
            "type": "hook_progress",
            "hookEvent": event,
            "hookName": f"{event}:{'startup' if event == 'SessionStart' else 'Bash'}",
            "command": "~/.claude/hooks/notify.sh",
        }
        obj["parentToolUseID"] = tool_use_id
        obj["toolUseID"] = tool_use_id
        return self._chained(obj)

    def _snapshot(self) -> str:
        message_id = self._uuid()
        backups = (
            {
                p: {
                    "backupFileName": f"{random_token(self.rng, 16).lower()}@v{self.turn_index + 1}",
                    "version": self.turn_index + 1,
                    "backupTime": iso_ms(self.ms),
                }
                for p in self.rng.sample(self.project.files, 2)
            }
            if self.turn_index
            else {}
        )
        return self._line(
            {
                "type": "file-history-snapshot",
                "messageId": message_id,
                "snapshot": {
                    "messageId": message_id,
                    "trackedFileBackups": backups,
                    "timestamp": iso_ms(self.ms),
                },
                "isSnapshotUpdate": False,
            }
        )

    def _user_prompt(self, text: str) -> str:
        obj = self._envelope("user")
        obj["message"] = {"role": "user", "content": text}
        if not self.sidechain:
            obj["thinkingMetadata"] = {"maxThinkingTokens": 31999}
            obj["permissionMode"] = "default"
        line = self._chained(obj)
        self.context += math.ceil(len(text) / 4)
        return line

    def _response(self, blocks: list[dict]) -> Iterator[str]:
        """One API response, one line per content block; the last line carries the full output count."""
        rng = self.rng
        self._tick(1500, 20_000)
        output = sum(math.ceil(len(dumps(b)) / 4) for b in blocks)
        prompt = self.overhead + self.context
        fresh = rng.randint(1, 6)
        cache_read = min(self.cached, prompt - fresh)
        cache_write = prompt - fresh - cache_read
        self.cached = prompt + output
        self.result.last_context_tokens = prompt + output
        message_id, request_id = "msg_01" + random_token(rng, 22), "req_011C" + random_token(rng, 20)
        for index, block in enumerate(blocks):
            last = index == len(blocks) - 1
            obj = self._envelope("assistant")
            del obj["type"]
            usage = {
                "input_tokens": fresh,
                "cache_creation_input_tokens": cache_write,
                "cache_read_input_tokens": cache_read,
                "cache_creation": {"ephemeral_5m_input_tokens": 0, "ephemeral_1h_input_tokens": cache_write},
                "output_tokens": output if last else rng.randint(1, max(1, output // 4)),
                "service_tier": "standard",
            }
            obj["message"] = {
                "model": self.spec.model,
                "id": message_id,
                "type": "message",
                "role": "assistant",
                "content": [block],
                "stop_reason": None,
                "stop_sequence": None,
                "usage": usage,
            }
            obj["requestId"] = request_id
            obj["type"] = "assistant"
            yield self._chained(obj)
        self.context += output

    def _tool(self, tool_id: str) -> tuple[dict, str, dict, bool]:
        """A tool_use block, its result text, the rich `toolUseResult` and whether it failed."""
        rng, project, pool = self.rng, self.project, self.pool
        kind = rng.choices(("Read", "Bash", "Edit", "Grep", "Write"), weights=(4, 3, 2, 1, 1))[0]
        path = f"{project.cwd}/{rng.choice(project.source_files)}"
        if kind == "Read":
            text = pool.source_for(path, project.language)
            numbered = "\n".join(f"{i:>6}\u2192{line}" for i, line in enumerate(text.split("\n")[:600], 1))
            return (
                {"file_path": path},
                numbered,
                {"type": "text", "file": {"filePath": path, "numLines": numbered.count("\n") + 1}},
                False,
            )
        if kind == "Bash":
            text, failed = rng.choice(pool.test_logs[project.language])
            return (
                {"command": project.test_command, "description": "Run the test suite"},
                text,
                {"stdout": text, "stderr": "", "interrupted": False, "isImage": False},
                failed,
            )
        if kind == "Edit":
            old = pool.snippet_for(rng, project, 200)
            comment = "//" if project.language == "typescript" else "#"
            new = old.replace("return", f"return  {comment} guarded", 1)
            return (
                {"file_path": path, "old_string": old, "new_string": new},
                f"The file {path} has been updated. Here's the result of running `cat -n` on a snippet:\n{new}",
                {"filePath": path, "oldString": old, "newString": new, "replaceAll": False},
                False,
            )
        if kind == "Grep":
            text = pool.grep_for(rng, project)
            pattern = rng.choice(vocab.FUNCS + vocab.TS_FUNCS)
            return (
                {"pattern": pattern, "path": project.cwd, "output_mode": "content"},
                text,
                {"mode": "content", "numFiles": text.count("\n") + 1},
                False,
            )
        content = rng.choice(pool.snippets[project.language])
        return (
            {"file_path": path, "content": content},
            f"File created successfully at: {path}",
            {"type": "create", "filePath": path, "content": content},
            False,
        )

    def _compact(self) -> Iterator[str]:
        """An auto compaction: a boundary line that starts a new root, then the summary as a user line."""
        obj = self._envelope("system")
        obj["parentUuid"] = None
        obj.update(
            {
                "logicalParentUuid": self.parent,
                "subtype": "compact_boundary",
                "content": "Conversation compacted",
                "isMeta": False,
                "level": "info",
                "compactMetadata": {"trigger": "auto", "preTokens": self.overhead + self.context},
            }
        )
        yield self._chained(obj)
        summary = (
            "This session is being continued from a previous conversation that ran out of context. "
            "The summary below covers the earlier portion of the conversation.\n\n"
            + "\n".join(self.rng.sample(self.pool.prose, 6))
        )
        obj = self._envelope("user")
        obj["message"] = {"role": "user", "content": summary}
        obj.update({"isVisibleInTranscriptOnly": True, "isCompactSummary": True})
        yield self._chained(obj)
        self.context = math.ceil(len(summary) / 4)
        self.cached = 0

    def _step(self, tool_name_task: bool = False) -> Iterator[str]:
        rng = self.rng
        blocks: list[dict] = []
        if rng.random() < 0.6:
            blocks.append(
                {
                    "type": "thinking",
                    "thinking": rng.choice(self.pool.prose),
                    "signature": rng.choice(self.pool.signatures),
                }
            )
        if rng.random() < 0.5:
            blocks.append({"type": "text", "text": fill(rng, rng.choice(vocab.ASSISTANT_TEXT), self.project)})
        calls = []
        for _ in range(rng.choice((1, 1, 2))):
            tool_id = "toolu_01" + random_token(rng, 22)
            if tool_name_task:
                task = {
                    "description": "Explore the storage layer",
                    "subagent_type": "Explore",
                    "prompt": fill(rng, rng.choice(vocab.REQUESTS), self.project),
                }
                summary = fill(rng, rng.choice(vocab.FINAL_TEXT), self.project)
                calls.append((tool_id, "Task", task, summary, {"status": "completed", "content": []}, False))
                tool_name_task = False
                continue
            arguments, text, rich, failed = self._tool(tool_id)
            calls.append((tool_id, self._name_for("", arguments), arguments, text, rich, failed))
        for tool_id, name, arguments, *_ in calls:
            blocks.append({"type": "tool_use", "id": tool_id, "name": name, "input": arguments})
        yield from self._response(blocks)
        assistant_uuid = self.parent
        for tool_id, _name, _arguments, text, rich, failed in calls:
            if rng.random() < 0.3:
                yield self._progress("PostToolUse", tool_id)
            obj = self._envelope("user")
            obj["message"] = {
                "role": "user",
                "content": [
                    {"tool_use_id": tool_id, "type": "tool_result", "content": text, "is_error": failed}
                ],
            }
            obj["toolUseResult"] = rich
            obj["sourceToolAssistantUUID"] = assistant_uuid
            self._tick(50, 15_000)
            yield self._chained(obj)
            self.context += math.ceil(len(text) / 4)

    @staticmethod
    def _name_for(name: str, arguments: dict) -> str:
        if "command" in arguments:
            return "Bash"
        if "pattern" in arguments:
            return "Grep"
        if "old_string" in arguments:
            return "Edit"
        if "content" in arguments:
            return "Write"
        return "Read"

    def _progress_fraction(self) -> float:
        spec = self.spec
        by_bytes = self.bytes / spec.target_bytes if spec.target_bytes else 0.0
        return max(by_bytes, self.turn_index / spec.turns if spec.turns else 0.0)

    def iter_lines(self) -> Iterator[str]:
        """All lines of the transcript in order."""
        rng = self.rng
        if not self.sidechain:
            yield self._snapshot()
            yield self._progress("SessionStart", self._uuid())
        task_turn = 1 if self.spec.subagent else -1
        while self._progress_fraction() < 1.0:
            if self.spec.auto_compact and self.overhead + self.context > 167_000:
                yield from self._compact()
            self._tick(15_000, 240_000)
            if not self.sidechain:
                yield self._snapshot()
            kind = vocab.CORRECTIONS if self.turn_index and rng.random() < 0.35 else vocab.REQUESTS
            yield self._user_prompt(fill(rng, rng.choice(kind), self.project))
            for step in range(rng.choice((1, 2, 3, 4, 6, 8))):
                yield from self._step(tool_name_task=self.turn_index == task_turn and step == 0)
            yield from self._response(
                [{"type": "text", "text": fill(rng, rng.choice(vocab.FINAL_TEXT), self.project)}]
            )
            if rng.random() < 0.5:
                obj = self._envelope("system")
                obj.update(
                    {"subtype": "turn_duration", "durationMs": rng.randint(4000, 400_000), "isMeta": False}
                )
                yield self._chained(obj)
            self.turn_index += 1
        self.result.lines, self.result.bytes = self.lines, self.bytes


def write_claude_session(projects_root: str | Path, spec: ClaudeSpec) -> ClaudeResult:
    """Write `<projects_root>/<slug>/<uuid>.jsonl` (+ `<uuid>/subagents/agent-<id>.jsonl` when asked)."""
    writer = ClaudeTranscriptWriter(spec)
    root = Path(projects_root) / slug_for(writer.project.cwd)
    root.mkdir(parents=True, exist_ok=True)
    path = root / f"{writer.session_id}.jsonl"
    with open(path, "w", encoding="utf-8", newline="") as handle:
        handle.writelines(writer.iter_lines())
    result = writer.result
    result.path = path
    if spec.subagent:
        sub_spec = ClaudeSpec(
            seed=spec.seed,
            target_bytes=None,
            turns=1,
            project=writer.project.name,
            model="claude-haiku-4-5-20251001",
            start=dt.datetime.fromtimestamp(writer.first_ms / 1000 + 90, dt.UTC),
            pool_seed=spec.pool_seed,
        )
        sub = ClaudeTranscriptWriter(sub_spec, sidechain=True, session_id=writer.session_id)
        sub_path = root / writer.session_id / "subagents" / f"agent-{sub.agent_id}.jsonl"
        sub_path.parent.mkdir(parents=True, exist_ok=True)
        with open(sub_path, "w", encoding="utf-8", newline="") as handle:
            handle.writelines(sub.iter_lines())
        result.subagent_path = sub_path
    return result
