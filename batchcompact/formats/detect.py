"""Which agent wrote a session file, from its first lines, and the reader for it.

Rules (first non-empty lines within the first `PROBE_BYTES`; invalid or torn lines are skipped):
- pi: the first object has `type: "session"`;
- Codex: an object `{timestamp, type, payload}` whose `type` is a rollout item type;
- Claude Code: an object whose `type` is a Claude line type and that has `sessionId`, `uuid`,
  `leafUuid` or `messageId`;
- else None. A first line longer than the probe (a huge file-history-snapshot or session_meta) is
  judged by its leading bytes instead.
(`batchcompact/report/detect.py` reuses `detect_line` and adds run reports and `.jsonl.zst`.)
"""

from __future__ import annotations

import json
import re
from pathlib import Path

from batchcompact.core.session import Session
from batchcompact.errors import SessionReadError
from batchcompact.formats.compressed import is_decompress_error, open_session

PROBE_BYTES = 64 * 1024
PROBE_LINES = 20
FORMATS = ("pi", "claude", "codex", "gemini", "qwen")
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
_TYPE_RE = re.compile(rb'"type"\s*:\s*"([^"]{1,64})"')


def detect_line(obj: dict, *, first: bool = False) -> str | None:
    """The format one parsed line belongs to, or None when it says nothing."""
    kind = obj.get("type")
    if first and kind == "session":
        return "pi"
    if kind in CODEX_TYPES and "payload" in obj and "timestamp" in obj:
        return "codex"
    from batchcompact.agents.gemini import detect as gemini
    from batchcompact.agents.qwen import detect as qwen

    if qwen.detect_line(obj, first):  # before Claude Code: the same envelope, Gemini-shaped messages
        return "qwen"
    if gemini.detect_line(obj, first):
        return "gemini"
    if kind in CLAUDE_TYPES and any(f in obj for f in CLAUDE_ID_FIELDS):
        return "claude"
    return None


def _detect_prefix(raw: bytes, *, first: bool) -> str | None:
    """Judge a line cut by the probe from its leading bytes (top-level keys come first in all three)."""
    head = raw[:4096]
    match = _TYPE_RE.search(head)
    kind = match.group(1).decode("utf-8", "replace") if match else None
    if first and kind == "session":
        return "pi"
    if kind in CODEX_TYPES and b'"payload"' in head:
        return "codex"
    from batchcompact.agents.gemini import detect as gemini
    from batchcompact.agents.qwen import detect as qwen

    if qwen.detect_prefix(raw, kind, first):
        return "qwen"
    if gemini.detect_prefix(raw, kind, first):
        return "gemini"
    if kind in CLAUDE_TYPES and any(f'"{f}"'.encode() in raw for f in CLAUDE_ID_FIELDS):
        return "claude"
    return None


def detect_format(path: str | Path) -> str | None:
    """ "pi", "claude", "codex", or None (not a transcript this program reads). Reads at most 64 KB."""
    try:
        with open_session(path) as handle:
            data = handle.read(PROBE_BYTES)
    except OSError:
        return None
    except Exception as exc:
        if is_decompress_error(exc):
            raise SessionReadError(f"zstd data damaged: {exc}") from None
        raise
    from batchcompact.agents.gemini import detect as gemini

    first_line = data.split(b"\n", 1)[0].strip()
    if first_line in (b"{", b"") and gemini.detect_file(Path(path), data):
        return "gemini"  # a legacy Gemini CLI chat: one pretty-printed JSON document
    lines = data.split(b"\n")
    complete = len(data) < PROBE_BYTES  # else the last piece may be cut
    first = True
    for index, raw in enumerate(lines[:PROBE_LINES]):
        if not raw.strip():
            continue
        cut = index == len(lines) - 1 and not complete
        kind = None
        if not cut:
            try:
                obj = json.loads(raw)
            except ValueError:
                obj = None
            if isinstance(obj, dict):
                kind = detect_line(obj, first=first)
        else:
            kind = _detect_prefix(raw, first=first)
        if kind is not None:
            return kind
        first = False
    return None


def read_session(path: str | Path, fmt: str | None = None) -> Session:
    """Read a session of any supported format (detected when `fmt` is None)."""
    fmt = fmt or detect_format(path)
    if fmt == "pi":
        from batchcompact.formats.pi import read_pi_session

        return read_pi_session(path)
    if fmt == "claude":
        from batchcompact.formats import claude

        return claude.read(path)
    if fmt == "codex":
        from batchcompact.formats import codex

        return codex.read(path)
    if fmt in ("gemini", "qwen"):
        import importlib

        return importlib.import_module(f"batchcompact.formats.{fmt}").read(path)
    raise SessionReadError(
        f"{path}: not a pi, Claude Code, Codex, Gemini CLI or Qwen Code transcript (pass the format explicitly if it is)"
    )
