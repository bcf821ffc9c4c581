"""File operations seen in tool calls, accumulated across compactions (reference 3.6).

pi's tools (`read`/`write`/`edit` with `path`), Claude Code's (`Read`/`Write` with `file_path`; `Edit`,
`MultiEdit` with `file_path` and `NotebookEdit` with `notebook_path` are edits), Gemini CLI's and Qwen
Code's (`read_file`/`write_file` with `file_path`; Gemini's `replace` and Qwen's `edit` are edits), Copilot
CLI's (`view`/`create`/`edit` with `path`), OpenCode's (`read`/`write`/`edit` with `filePath`) and Codex's
`apply_patch`
(a custom or function call, or a shell/exec command that runs `apply_patch`): every `*** Add File:`,
`*** Update File:`, `*** Delete File:` and `*** Move to:` header names a modified file. Other tools
(shell commands) are not guessed at: only calls whose paths are certain count.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

CLAUDE_READ = frozenset({"Read"})
CLAUDE_WRITE = frozenset({"Write"})
CLAUDE_EDIT = frozenset({"Edit", "MultiEdit", "NotebookEdit"})
PATCH_HEADERS = ("*** Add File: ", "*** Update File: ", "*** Delete File: ", "*** Move to: ")
PATCH_BEGIN = "*** Begin Patch"
# Gemini CLI (read_file/write_file/replace) and Qwen Code (read_file/write_file/edit), with `file_path`
# (`absolute_path` in older Gemini CLI releases).
GEMINI_READ = frozenset({"read_file"})
GEMINI_WRITE = frozenset({"write_file"})
GEMINI_EDIT = frozenset({"replace"})
# GitHub Copilot CLI: `view` and `create` with `path` (its `edit` with `path` is pi's shape).
COPILOT_FILE_TOOLS = {"view": "read", "create": "write"}
SHELL_TOOLS = frozenset({"shell", "local_shell", "exec_command", "shell_command", "container.exec"})


def js_sort(items: set[str]) -> list[str]:
    """JavaScript's default sort: by UTF-16 code units."""
    return sorted(items, key=lambda s: s.encode("utf-16-be", "surrogatepass"))


@dataclass
class FileOps:
    read: set[str] = field(default_factory=set)
    written: set[str] = field(default_factory=set)
    edited: set[str] = field(default_factory=set)

    def add_message(self, message: dict[str, Any]) -> None:
        """Assistant tool calls: pi's read/write/edit with a non-empty string `path`, Claude Code's file
        tools and Codex's apply_patch (see the module docstring)."""
        if message.get("role") != "assistant":
            return
        for block in message.get("content") or ():
            if not isinstance(block, dict) or block.get("type") != "toolCall":
                continue
            arguments = block.get("arguments")
            arguments = arguments if isinstance(arguments, dict) else {}
            name = block.get("name")
            if name in GEMINI_READ or name in GEMINI_WRITE or name in GEMINI_EDIT or (
                name == "edit" and "file_path" in arguments
            ):
                path = arguments.get("file_path") or arguments.get("absolute_path")
                if isinstance(path, str) and path:
                    target = self.read if name in GEMINI_READ else self.written if name in GEMINI_WRITE else self.edited
                    target.add(path)
                continue
            if name in ("read", "write", "edit") or name in COPILOT_FILE_TOOLS:
                path = arguments.get("path") or arguments.get("filePath")  # OpenCode's: filePath
                if isinstance(path, str) and path:
                    kind = COPILOT_FILE_TOOLS.get(name, name)
                    {"read": self.read, "write": self.written, "edit": self.edited}[kind].add(path)
                continue
            if name in CLAUDE_READ or name in CLAUDE_WRITE or name in CLAUDE_EDIT:
                path = arguments.get("notebook_path" if name == "NotebookEdit" else "file_path")
                if isinstance(path, str) and path:
                    target = self.read if name in CLAUDE_READ else self.written if name in CLAUDE_WRITE else self.edited
                    target.add(path)
                continue
            patch = patch_text(name, arguments)
            if patch is not None:
                self.edited.update(patch_paths(patch))

    def add_details(self, details: Any) -> None:
        """Carry over an earlier compaction's or branch summary's `details` lists."""
        if not isinstance(details, dict):
            return
        read = details.get("readFiles")
        modified = details.get("modifiedFiles")
        if isinstance(read, list):
            self.read.update(p for p in read if isinstance(p, str))
        if isinstance(modified, list):
            self.edited.update(p for p in modified if isinstance(p, str))

    def lists(self) -> tuple[list[str], list[str]]:
        """(read-only files, modified files), each sorted as JavaScript sorts."""
        modified = self.edited | self.written
        return js_sort(self.read - modified), js_sort(modified)


def patch_text(name: Any, arguments: dict[str, Any]) -> str | None:
    """The apply_patch envelope a Codex tool call carries, or None."""
    if name == "apply_patch":
        for key in ("input", "patch"):
            value = arguments.get(key)
            if isinstance(value, str):
                return value
        return None
    if name not in SHELL_TOOLS:
        return None
    command = arguments.get("command", arguments.get("cmd"))
    if isinstance(command, list) and command and command[0] in ("apply_patch", "applypatch"):
        return command[-1] if isinstance(command[-1], str) else None
    if isinstance(command, list) and command and isinstance(command[-1], str):
        command = command[-1]  # ["bash", "-lc", "apply_patch <<'EOF' ..."]
    if isinstance(command, str) and "apply_patch" in command and PATCH_BEGIN in command:
        return command
    return None


def patch_paths(patch: str) -> list[str]:
    """Every path an apply_patch envelope adds, updates, deletes or moves to, in order."""
    out: list[str] = []
    for line in patch.splitlines():
        if line.startswith("*** "):
            for header in PATCH_HEADERS:
                if line.startswith(header):
                    path = line[len(header) :].strip()
                    if path and path not in out:
                        out.append(path)
                    break
    return out


def details_from_summary(summary: Any) -> dict[str, list[str]] | None:
    """`details` {readFiles, modifiedFiles} from the `<read-files>`/`<modified-files>` tags at the end of a
    summary we wrote (formats that have no field of their own for them keep them there); None without tags."""
    if not isinstance(summary, str):
        return None
    out: dict[str, list[str]] = {}
    for tag, key in (("read-files", "readFiles"), ("modified-files", "modifiedFiles")):
        start = summary.rfind(f"<{tag}>\n")
        end = summary.find(f"\n</{tag}>", start) if start >= 0 else -1
        if start >= 0 and end > start:
            body = summary[start + len(tag) + 3 : end]
            out[key] = [line for line in body.split("\n") if line]
    return out or None
