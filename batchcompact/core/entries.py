"""The session model's smallest parts: one entry (one JSONL line) and one problem."""

from __future__ import annotations

from dataclasses import dataclass

from batchcompact.core.jsontypes import JsonObject, JsonValue

ERROR = "error"
WARNING = "warning"

# pi v3 entry types (reference section 1.4). Anything else is kept and ignored for context.
KNOWN_ENTRY_TYPES = frozenset(
    {
        "message",
        "thinking_level_change",
        "model_change",
        "compaction",
        "branch_summary",
        "custom",
        "custom_message",
        "label",
        "session_info",
    }
)
MESSAGE_ROLES = frozenset(
    {"user", "assistant", "toolResult", "bashExecution", "custom", "branchSummary", "compactionSummary"}
)


class Entry:
    """One non-header line of a session.

    `data` is the whole JSON object as read (after migration), unknown fields included, so a file can be
    written back unchanged. `line` is the 1-based line number in the input file, or None for an entry
    this program made.
    """

    __slots__ = ("type", "id", "parent_id", "line", "data")

    def __init__(self, data: JsonObject, line: int | None) -> None:
        self.data = data
        self.line = line
        # a type, id or parentId that is a list or an object (damaged input) names nothing: they key sets,
        # counters and the tree's index; the readers report the value from `data`
        kind, entry_id, parent_id = data.get("type"), data.get("id"), data.get("parentId")
        # each is the JSON value as read (a string in a well-formed file), never a list or an object
        self.type: JsonValue = None if isinstance(kind, (list, dict)) else kind
        self.id: JsonValue = None if isinstance(entry_id, (list, dict)) else entry_id
        self.parent_id: JsonValue = None if isinstance(parent_id, (list, dict)) else parent_id

    @property
    def message(self) -> JsonObject | None:
        """The AgentMessage of a `message` entry, else None."""
        if self.type == "message":
            message = self.data.get("message")
            return message if isinstance(message, dict) else None
        return None

    @property
    def role(self) -> str | None:
        message = self.message
        return message.get("role") if message is not None else None

    def __repr__(self) -> str:
        extra = f" role={self.role}" if self.type == "message" else ""
        return f"Entry({self.type} id={self.id} parent={self.parent_id} line={self.line}{extra})"


@dataclass(frozen=True)
class Problem:
    """Something wrong with an input file. Errors make the session not compactable; warnings do not."""

    path: str
    line: int | None
    severity: str
    message: str

    def __str__(self) -> str:
        where = f"{self.path}:{self.line}" if self.line is not None else self.path
        return f"{where}: {self.severity}: {self.message}"

    def as_dict(self) -> JsonObject:
        return {"path": self.path, "line": self.line, "severity": self.severity, "message": self.message}
