"""File operations seen in tool calls, accumulated across compactions (reference 3.6).

Which tools touch files is the agents' knowledge: each declares its `file_tools` (`Agent.file_tools`, in its
folder), and the registry's union (`batchcompact.agents.file_tools()`, `FileTools` here) is passed in, so this
module names no agent. A tool's kind says what its call does:
- "read", "write", "edit": the first non-empty string among its argument names is the path;
- "patch": the first string among its argument names is an apply_patch envelope, and "shell": the command
  (the first of its argument names present) may run apply_patch. Every `*** Add File:`, `*** Update File:`,
  `*** Delete File:` and `*** Move to:` header of an envelope names a modified file.
Other tools (shell commands) are not guessed at: only calls whose paths are certain count.
"""

from __future__ import annotations

import posixpath
from collections.abc import Mapping
from dataclasses import dataclass, field

from batchcompact.core.jsontypes import JsonObject, JsonValue

# tool name -> (kind, argument names): see the module docstring
FileTools = Mapping[str, tuple[str, tuple[str, ...]]]
PATCH_HEADERS = ("*** Add File: ", "*** Update File: ", "*** Delete File: ", "*** Move to: ")
PATCH_BEGIN = "*** Begin Patch"


def js_sort(items: set[str]) -> list[str]:
    """JavaScript's default sort: by UTF-16 code units."""
    return sorted(items, key=lambda s: s.encode("utf-16-be", "surrogatepass"))


@dataclass
class FileOps:
    tools: FileTools
    read: set[str] = field(default_factory=set)
    written: set[str] = field(default_factory=set)
    edited: set[str] = field(default_factory=set)

    def add_message(self, message: JsonObject) -> None:
        """An assistant message's tool calls of the `tools` (see the module docstring)."""
        if message.get("role") != "assistant":
            return
        for block in message.get("content") or ():
            if not isinstance(block, dict) or block.get("type") != "toolCall":
                continue
            arguments = block.get("arguments")
            arguments = arguments if isinstance(arguments, dict) else {}
            name = block.get("name")
            entry = self.tools.get(name) if isinstance(name, str) else None
            if entry is None:
                continue
            kind, names = entry
            if kind in ("patch", "shell"):
                patch = patch_text(kind, names, arguments)
                if patch is not None:
                    self.edited.update(patch_paths(patch))
                continue
            path = next((value for value in map(arguments.get, names) if isinstance(value, str) and value), None)
            if path is not None:
                {"read": self.read, "write": self.written, "edit": self.edited}[kind].add(path)

    def add_details(self, details: JsonValue) -> None:
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


def patch_text(kind: str, names: tuple[str, ...], arguments: JsonObject) -> str | None:
    """The apply_patch envelope a "patch" or "shell" tool call carries, or None."""
    if kind == "patch":
        return next((value for value in map(arguments.get, names) if isinstance(value, str)), None)
    command = next((arguments[name] for name in names if name in arguments), None)
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


def details_from_summary(summary: JsonValue, cwd: str | None = None) -> dict[str, list[str]] | None:
    """`details` {readFiles, modifiedFiles} from the `<read-files>`/`<modified-files>` tags at the end of a
    summary we wrote (formats that have no field of their own for them keep them there); None without tags.
    A line per path (pi's layout), or `folder/: a.ts, b.ts` for the files of one folder (core/filetags.py);
    the tags' last line "… and N more files" names none. A relative path is resolved against `cwd` (the
    session's working folder, which the tags say paths relative to) when it is given."""
    if not isinstance(summary, str):
        return None
    out: dict[str, list[str]] = {}
    for tag, key in (("read-files", "readFiles"), ("modified-files", "modifiedFiles")):
        start = summary.rfind(f"<{tag}>\n")
        end = summary.find(f"\n</{tag}>", start) if start >= 0 else -1
        if start >= 0 and end > start:
            body = summary[start + len(tag) + 3 : end]
            out[key] = [_resolved(path, cwd) for line in body.split("\n") if line and not line.startswith("… and ")
                        for path in _tag_line_paths(line)]
    return out or None


def _resolved(path: str, cwd: str | None) -> str:
    """`path` joined to `cwd` (`..` parts folded) when it is relative and a folder is known."""
    if not cwd or path.startswith(("/", "~")) or path[1:3] in (":/", ":\\"):
        return path
    return posixpath.normpath(posixpath.join(cwd.replace("\\", "/"), path))


def _tag_line_paths(line: str) -> list[str]:
    """The paths of one line of a file tag: `folder/: a.ts, b.ts` -> `folder/a.ts`, `folder/b.ts`."""
    folder, mark, names = line.partition("/: ")
    if not mark:
        return [line]
    return [f"{folder}/{name}" for name in names.split(", ") if name]
