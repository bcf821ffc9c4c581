"""A Codex rollout line: `{timestamp, type, payload}` with a rollout item type."""

from __future__ import annotations

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


def detect_line(obj: dict, first: bool) -> bool:
    return obj.get("type") in CODEX_TYPES and "payload" in obj and "timestamp" in obj


def detect_prefix(raw: bytes, kind: str | None, first: bool) -> bool:
    return kind in CODEX_TYPES and b'"payload"' in raw[:4096]
