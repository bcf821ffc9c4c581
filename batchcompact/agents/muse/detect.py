"""A Muse Code line (the rule `detect_line` names), importing nothing of the package."""

from __future__ import annotations


def sniff_muse(obj: dict, first: bool) -> bool:
    """A Muse Code envelope: `payload_type` "runtime.…", a `stream` and `recorded_at`."""
    kind = obj.get("payload_type")
    return (isinstance(kind, str) and kind.startswith("runtime.") and isinstance(obj.get("stream"), dict)
            and "recorded_at" in obj)
