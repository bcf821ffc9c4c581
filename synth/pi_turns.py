"""Content of pi conversation turns: user prompts, assistant blocks, tool calls and their results.

The builder returns plain message dicts (no usage, no timestamps); `pi.PiSessionWriter` places them in
the entry tree and fills usage from the context size.
"""

from __future__ import annotations

import json
import math
import random
from dataclasses import dataclass

from . import vocab
from .text import TextPool, fill, random_token


@dataclass(frozen=True)
class Model:
    """A model as pi records it, with per-token USD prices (from litellm's bundled map)."""

    provider: str
    model_id: str
    api: str
    price_in: float
    price_out: float
    price_cache_read: float
    price_cache_write: float


MODELS = {
    "claude-sonnet-4-5": Model(
        "anthropic", "claude-sonnet-4-5", "anthropic-messages", 3e-6, 15e-6, 3e-7, 3.75e-6
    ),
    "claude-opus-4-5": Model(
        "anthropic", "claude-opus-4-5", "anthropic-messages", 5e-6, 25e-6, 5e-7, 6.25e-6
    ),
    "claude-haiku-4-5": Model(
        "anthropic", "claude-haiku-4-5", "anthropic-messages", 1e-6, 5e-6, 1e-7, 1.25e-6
    ),
    "gpt-4.1": Model("openai", "gpt-4.1", "openai-responses", 2e-6, 8e-6, 5e-7, 0.0),
    "gpt-4o": Model("openai", "gpt-4o", "openai-responses", 2.5e-6, 10e-6, 1.25e-6, 0.0),
    "gpt-5": Model("openai", "gpt-5", "openai-responses", 1.25e-6, 10e-6, 1.25e-7, 0.0),
}


def _compact(value: object) -> str:
    return json.dumps(value, separators=(",", ":"), ensure_ascii=False)


def estimate_tokens(message: dict) -> int:
    """pi's chars/4 estimate of one message (reference section 3.1); text here is BMP-only."""
    role = message.get("role")
    chars = 0
    if role in ("user", "toolResult", "custom"):
        content = message.get("content")
        if isinstance(content, str):
            chars = len(content)
        else:
            for block in content or ():
                if block.get("type") == "text":
                    chars += len(block.get("text", ""))
                elif block.get("type") == "image" and role != "user":
                    chars += 4800
    elif role == "assistant":
        for block in message.get("content") or ():
            kind = block.get("type")
            if kind == "text":
                chars += len(block["text"])
            elif kind == "thinking":
                chars += len(block["thinking"])
            elif kind == "toolCall":
                chars += len(block["name"]) + len(_compact(block["arguments"]))
    elif role == "bashExecution":
        chars = len(message.get("command", "")) + len(message.get("output", ""))
    elif role in ("branchSummary", "compactionSummary"):
        chars = len(message.get("summary", ""))
    return math.ceil(chars / 4)


def _truncate(text: str, limit: int) -> str:
    if len(text) <= limit:
        return text
    cut = text.rfind("\n", 0, limit)
    shown = text[: cut if cut > 0 else limit]
    return f"{shown}\n\n[Showing lines 1-{shown.count(chr(10)) + 1}. Use offset to read more.]"


class TurnBuilder:
    """Builds the blocks of one coding conversation; all choices come from `rng`."""

    def __init__(self, rng: random.Random, pool: TextPool, project: vocab.Project, provider: str) -> None:
        self.rng = rng
        self.pool = pool
        self.project = project
        self.provider = provider
        self.read_files: list[str] = []
        self.modified_files: list[str] = []

    # -- ids and small helpers -------------------------------------------------------------
    def tool_call_id(self) -> str:
        if self.provider == "anthropic":
            return "toolu_01" + random_token(self.rng, 22)
        return "call_" + random_token(self.rng, 24)

    def _track(self, bucket: list[str], path: str) -> None:
        if path not in bucket:
            bucket.append(path)

    # -- user side -------------------------------------------------------------------------
    def user_text(self, kind: str = "request") -> str:
        """A user prompt: "request" starts a task, "correction" steers, "retry" rephrases after a branch."""
        rng, project = self.rng, self.project
        if kind == "correction":
            return fill(rng, rng.choice(vocab.CORRECTIONS), project)
        text = fill(rng, rng.choice(vocab.REQUESTS), project)
        if kind == "retry":
            text = "Let's try a different approach. " + text
        if rng.random() < 0.25:
            text += "\n\n" + self.pool.traceback_for(rng, project)[:1500]
        return text

    def user_message(self, kind: str = "request") -> dict:
        return {"role": "user", "content": [{"type": "text", "text": self.user_text(kind)}]}

    def bash_execution(self) -> dict:
        """A `!command` the user ran themselves (bashExecution message)."""
        rng, project = self.rng, self.project
        command = rng.choice(("git status", "git diff", "rg -n TODO src", "git log --oneline -n 5"))
        if command == "git status":
            changed = "\n".join(f"\tmodified:   {p}" for p in rng.sample(project.files, 3))
            output = f"On branch {project.branch}\nChanges not staged for commit:\n{changed}"
        elif command == "git diff":
            output = self.pool.diff_for(rng, rng.choice(project.files))
        elif command.startswith("rg"):
            output = self.pool.grep_for(rng, project)[:3000]
        else:
            output = "\n".join(
                f"{rng.getrandbits(28):07x} {fill(rng, '{feature}: handle {cond}', project)}"
                for _ in range(5)
            )
        return {
            "role": "bashExecution",
            "command": command,
            "output": output,
            "exitCode": 0,
            "cancelled": False,
            "truncated": False,
        }

    # -- assistant side --------------------------------------------------------------------
    def thinking_block(self) -> dict:
        block = {"type": "thinking", "thinking": self.rng.choice(self.pool.prose)}
        if self.provider == "anthropic":
            block["thinkingSignature"] = self.rng.choice(self.pool.signatures)
        return block

    def text_block(self, final: bool = False) -> dict:
        templates = vocab.FINAL_TEXT if final else vocab.ASSISTANT_TEXT
        return {"type": "text", "text": fill(self.rng, self.rng.choice(templates), self.project)}

    def tool_step(self, big: bool = False) -> tuple[list[dict], list[dict]]:
        """One model response that calls tools, and the tool results that answer it."""
        rng = self.rng
        content: list[dict] = []
        if rng.random() < 0.6:
            content.append(self.thinking_block())
        if rng.random() < 0.5:
            content.append(self.text_block())
        results = []
        weights = (6, 3, 1, 1) if big else (4, 3, 2, 1)
        for _ in range(rng.choice((1, 1, 1, 2, 3))):
            tool = rng.choices(("read", "bash", "edit", "write"), weights=weights)[0]
            call_id = self.tool_call_id()
            arguments, result = getattr(self, f"_{tool}")(big)
            content.append({"type": "toolCall", "id": call_id, "name": tool, "arguments": arguments})
            results.append({"role": "toolResult", "toolCallId": call_id, "toolName": tool, **result})
        return content, results

    def final_content(self) -> list[dict]:
        content = [self.thinking_block()] if self.rng.random() < 0.5 else []
        return content + [self.text_block(final=True)]

    # -- tools -----------------------------------------------------------------------------
    def _read(self, big: bool) -> tuple[dict, dict]:
        rng, project = self.rng, self.project
        path = rng.choice(project.source_files if big or rng.random() < 0.8 else project.files)
        arguments: dict = {"path": f"{project.cwd}/{path}" if rng.random() < 0.5 else path}
        if rng.random() < 0.04:
            message = f"ENOENT: no such file or directory, access '{project.cwd}/{path}'"
            return arguments, {"content": [{"type": "text", "text": message}], "isError": True}
        self._track(self.read_files, path)
        text = self.pool.source_for(path, project.language)
        if big:
            text = text + "\n" + rng.choice(self.pool.sources[project.language])
        elif rng.random() < 0.3:
            arguments["offset"] = rng.randint(1, 200)
            arguments["limit"] = 200
        return arguments, {"content": [{"type": "text", "text": _truncate(text, 50_000)}], "isError": False}

    def _bash(self, big: bool) -> tuple[dict, dict]:
        rng, project, pool = self.rng, self.project, self.pool
        kind = rng.choices(("test", "lint", "grep", "diff", "crash"), weights=(5 + 5 * big, 2, 3, 2, 1))[0]
        error = False
        if kind == "test":
            command = project.test_command + rng.choice(("", " -k pagination", " 2>&1 | tail -n 80", ""))
            output, error = rng.choice(pool.test_logs[project.language])
        elif kind == "lint":
            command = project.lint_command
            error = rng.random() < 0.3
            output = (
                f"{rng.choice(project.files)}:{rng.randint(1, 300)}:5: F401 `os` imported but unused\n"
                "Found 1 error."
                if error
                else "All checks passed!"
            )
        elif kind == "grep":
            command = f'rg -n "{rng.choice(vocab.FUNCS + vocab.TS_FUNCS)}" src tests'
            output = pool.grep_for(rng, project)
        elif kind == "diff":
            path = rng.choice(project.files)
            command = f"git diff {path}"
            output = pool.diff_for(rng, path)
        else:
            command = (
                "node dist/cli.js sync --dry-run"
                if project.language == "typescript"
                else f"python -m {project.name}.cli sync --dry-run"
            )
            output, error = pool.traceback_for(rng, project), True
        if error:
            output += "\n\nCommand exited with code 1"
        return {"command": command}, {"content": [{"type": "text", "text": output}], "isError": error}

    def _edit(self, big: bool) -> tuple[dict, dict]:
        rng, project = self.rng, self.project
        path = rng.choice(project.source_files)
        old = self.pool.snippet_for(rng, project)
        comment = "//" if project.language == "typescript" else "#"
        new = (
            old.replace("return", f"return  {comment} checked", 1)
            + "\n"
            + self.pool.snippet_for(rng, project, 200)
        )
        arguments = {"path": path, "oldText": old, "newText": new}
        if rng.random() < 0.08:
            message = (
                f"Could not find the exact text in {path}. The old text must match exactly "
                "including all whitespace and newlines."
            )
            return arguments, {"content": [{"type": "text", "text": message}], "isError": True}
        self._track(self.modified_files, path)
        return arguments, {
            "content": [{"type": "text", "text": f"Successfully replaced text in {path}."}],
            "details": {"diff": self.pool.diff_for(rng, path)},
            "isError": False,
        }

    def _write(self, big: bool) -> tuple[dict, dict]:
        path = self.rng.choice(self.project.source_files)
        content = self.rng.choice(self.pool.snippets[self.project.language])
        self._track(self.modified_files, path)
        text = f"Successfully wrote {len(content)} bytes to {path}"
        return {"path": path, "content": content}, {
            "content": [{"type": "text", "text": text}],
            "isError": False,
        }

    # -- summaries -------------------------------------------------------------------------
    def file_lists(self) -> tuple[list[str], list[str]]:
        """(read-only files, modified files), as pi's compaction details list them."""
        modified = list(self.modified_files)
        return [p for p in self.read_files if p not in modified], modified

    def summary_text(self, kind: str = "compaction") -> str:
        """A structured checkpoint with pi's headings and file-operation tags."""
        rng, project = self.rng, self.project
        read, modified = self.file_lists()
        parts = [
            "## Goal",
            fill(rng, rng.choice(vocab.REQUESTS), project),
            "",
            "## Constraints & Preferences",
            f"- Run `{project.test_command}` before finishing",
            f"- {fill(rng, rng.choice(vocab.CORRECTIONS), project)}",
            "",
            "## Progress",
            "### Done",
        ]
        parts += [
            f"- [x] {fill(rng, rng.choice(vocab.ASSISTANT_TEXT), project)}" for _ in range(rng.randint(2, 6))
        ]
        parts += [
            "",
            "### In Progress",
            f"- [ ] {fill(rng, '{feature} when {cond}', project)}",
            "",
            "### Blocked",
            "- (none)",
            "",
            "## Key Decisions",
            f"- **Use {rng.choice(vocab.LIBS)}**: simpler than the hand-written version",
            "",
            "## Next Steps",
            f"1. Finish {rng.choice(vocab.FEATURES)}",
            f"2. Run `{project.lint_command}`",
        ]
        if kind == "compaction":
            parts += ["", "## Critical Context", f"- Branch `{project.branch}` in `{project.cwd}`"]
        text = "\n".join(parts)
        sections = []
        if read:
            sections.append("<read-files>\n" + "\n".join(read[-40:]) + "\n</read-files>")
        if modified:
            sections.append("<modified-files>\n" + "\n".join(modified[-40:]) + "\n</modified-files>")
        return text + ("\n\n" + "\n\n".join(sections) if sections else "")
