"""A Claude Code line: a Claude line type with one of the ids every such line carries."""

from __future__ import annotations

CLAUDE_TYPES = frozenset(
    {
        "user",
        "assistant",
        "system",
        "summary",
        "file-history-snapshot",
        "progress",
        "queue-operation",
        "last-prompt",
        "attachment",
        "ai-title",
        "custom-title",
        "pr-link",
        "worktree-state",
        "mode",
        "permission-mode",
        "agent-name",
        "saved_hook_context",
        "relocated",
        "frame-link",
        "bridge-session",
    }
)
CLAUDE_ID_FIELDS = ("sessionId", "uuid", "leafUuid", "messageId")
_ID_BYTES = tuple(f'"{f}"'.encode() for f in CLAUDE_ID_FIELDS)


def detect_line(obj: dict, first: bool) -> bool:
    return obj.get("type") in CLAUDE_TYPES and any(f in obj for f in CLAUDE_ID_FIELDS)


def detect_prefix(raw: bytes, kind: str | None, first: bool) -> bool:
    return kind in CLAUDE_TYPES and any(f in raw for f in _ID_BYTES)
