"""Small helpers shared by the generators: fast compact JSON and JavaScript-style ISO timestamps."""

from __future__ import annotations

import json
import time

# One encoder for every line: json.dumps() with arguments builds a new encoder per call. (Caching the
# encoded form of long pool strings was tried and measured slower: the Python walk costs more than
# the C encoder saves.)
_ENCODER = json.JSONEncoder(ensure_ascii=False, separators=(",", ":"))
dumps = _ENCODER.encode

_last_second = -1
_last_prefix = ""


def iso_ms(ms: int) -> str:
    """Epoch milliseconds as JavaScript's toISOString() writes them: 2026-10-02T09:14:00.123Z."""
    global _last_second, _last_prefix
    second = ms // 1000
    if second != _last_second:
        _last_second, _last_prefix = second, time.strftime("%Y-%m-%dT%H:%M:%S", time.gmtime(second))
    return f"{_last_prefix}.{ms % 1000:03d}Z"


def byte_length(text: str) -> int:
    """UTF-8 length without encoding ASCII text."""
    return len(text) if text.isascii() else len(text.encode())
