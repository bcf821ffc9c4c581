"""Which agent wrote a file: pi, Claude Code, Codex, or batchcompact's own run report.

Self-contained on purpose (the general `formats/scan.py` does the same for compaction; to be unified).
Rules, from the first lines of the file (at most `PROBE_LINES`, torn or invalid lines ignored):
- `compactions*.parquet` -> `batchcompact`;
- first object has `type: "session"` -> `pi`;
- an object shaped `{timestamp, type, payload}` with a Codex item type -> `codex`;
- an object with a Claude line type and `sessionId`/`uuid`/`leafUuid`/`messageId` -> `claude`;
- otherwise None (not a transcript).
"""

from __future__ import annotations

import json
from pathlib import Path

PROBE_LINES = 30
CODEX_TYPES = frozenset(
    {
        "session_meta",
        "response_item",
        "compacted",
        "turn_context",
        "event_msg",
        "world_state",
        "inter_agent_communication",
        "inter_agent_communication_metadata",
    }
)
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
TRANSCRIPT_SUFFIXES = (".jsonl", ".jsonl.zst")


def is_run_report(path: Path) -> bool:
    return path.name.startswith("compactions") and path.name.endswith(".parquet")


def is_candidate(path: Path) -> bool:
    """A file worth probing: JSONL (maybe zstd) or a batchcompact run report."""
    return path.name.endswith(TRANSCRIPT_SUFFIXES) or is_run_report(path)


def detect_format(path: str | Path) -> str | None:
    path = Path(path)
    if is_run_report(path):
        return "batchcompact"
    from batchcompact.report.lines import open_binary

    with open_binary(path) as fh:
        for number, raw in enumerate(fh, start=1):
            if number > PROBE_LINES:
                break
            if len(raw) > 4 << 20:  # a multi-MB first line is not a header we need to read whole
                continue
            try:
                obj = json.loads(raw)
            except ValueError:
                continue
            if not isinstance(obj, dict):
                continue
            kind = detect_line(obj, first=number == 1)
            if kind:
                return kind
    return None


def detect_line(obj: dict, *, first: bool = False) -> str | None:
    line_type = obj.get("type")
    if first and line_type == "session":
        return "pi"
    if line_type in CODEX_TYPES and "payload" in obj and "timestamp" in obj:
        return "codex"
    if line_type in CLAUDE_TYPES and any(f in obj for f in CLAUDE_ID_FIELDS):
        return "claude"
    return None
