"""File operations seen in tool calls, accumulated across compactions (reference 3.6)."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any


def js_sort(items: set[str]) -> list[str]:
    """JavaScript's default sort: by UTF-16 code units."""
    return sorted(items, key=lambda s: s.encode("utf-16-be", "surrogatepass"))


@dataclass
class FileOps:
    read: set[str] = field(default_factory=set)
    written: set[str] = field(default_factory=set)
    edited: set[str] = field(default_factory=set)

    def add_message(self, message: dict[str, Any]) -> None:
        """Only assistant tool calls named read/write/edit with a non-empty string `path` count."""
        if message.get("role") != "assistant":
            return
        for block in message.get("content") or ():
            if not isinstance(block, dict) or block.get("type") != "toolCall":
                continue
            arguments = block.get("arguments")
            path = arguments.get("path") if isinstance(arguments, dict) else None
            if not isinstance(path, str) or not path:
                continue
            name = block.get("name")
            if name == "read":
                self.read.add(path)
            elif name == "write":
                self.written.add(path)
            elif name == "edit":
                self.edited.add(path)

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
