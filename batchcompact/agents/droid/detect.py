"""A Droid transcript (`<session>.jsonl` in `~/.factory/sessions`), importing nothing of the package: it carries
no usage (its `<session>.settings.json` does), so `report` passes over it and `plan`/`run`/`validate` leave it
alone as a file of an agent batchcompact reports but does not compact."""

from __future__ import annotations

import json
from pathlib import Path

SETTINGS = ".settings.json"


def detect_file(path: Path, head: bytes) -> bool:
    """`X.jsonl` beside its `X.settings.json`, or a transcript whose first line is Droid's `session_start`
    header (`{"type": "session_start", "sessionTitle": ..., ...}`)."""
    name = path.name
    if not name.endswith(".jsonl"):
        return False
    if path.with_name(name[: -len(".jsonl")] + SETTINGS).is_file():
        return True
    line = head.split(b"\n", 1)[0]
    if b"session_start" not in line:
        return False
    try:
        first = json.loads(line)
    except (ValueError, RecursionError):  # json recurses: a line nested 5,000 deep is no header (tests/test_fuzz.py)
        return False
    return isinstance(first, dict) and first.get("type") == "session_start" and "sessionTitle" in first
