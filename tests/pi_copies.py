"""pi sessions copied as pi and we copy them: a fork (`createBranchedSession`, `forkFrom`), a v1 file migrated by
pi (random ids) and by us (ids derived from the session), for the tests that count each request once
(tests/test_report_counted.py, the ccusage parity in tests/test_ccusage_parity.py)."""

from __future__ import annotations

import json
import secrets
import uuid
from pathlib import Path

from batchcompact.core.migrate import migrate


def read_lines(path: Path) -> list[dict]:
    return [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines() if line.strip()]


def write_lines(path: Path, objects: list[dict]) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text("".join(json.dumps(o, separators=(",", ":")) + "\n" for o in objects), encoding="utf-8")
    return path


def pi_migrated(source: Path, target: Path) -> Path:
    """The v1 file as pi's `migrateToCurrentVersion` rewrites it: each entry a random 8-hex id
    (`generateId`: randomUUID().slice(0, 8)), parentId the previous entry, the header at version 3."""
    header, *entries = read_lines(source)
    previous = None
    for entry in entries:
        entry["id"], entry["parentId"] = secrets.token_hex(4), previous
        previous = entry["id"]
        if entry.get("type") == "compaction" and isinstance(entry.get("firstKeptEntryIndex"), int):
            entry["firstKeptEntryId"] = entries[entry.pop("firstKeptEntryIndex") - 1]["id"]
    return write_lines(target, [{**header, "version": 3}, *entries])


def our_migrated(source: Path, target: Path) -> Path:
    """The v1 file as batchcompact migrates it (`core.migrate`: ids derived from the session and position)."""
    header, *entries = read_lines(source)
    migrate(header, entries)
    return write_lines(target, [header, *entries])


def pi_fork(source: Path, folder: Path, leaf_index: int | None = None, cwd: str | None = None) -> Path:
    """A fork as pi writes it: `createBranchedSession(leaf)` (the path from the root to the leaf, entries
    copied verbatim) or, without a leaf, `forkFrom` (every entry, into `cwd`); a new session id and a header
    naming the parent file."""
    header, *entries = read_lines(source)
    by_id = {e["id"]: e for e in entries}
    if leaf_index is None:
        copied = entries
    else:
        copied, at = [], entries[leaf_index]
        while at is not None:
            copied.append(at)
            at = by_id.get(at.get("parentId"))
        copied.reverse()
    session = str(uuid.uuid4())
    fork_header = {"type": "session", "version": 3, "id": session, "timestamp": "2026-03-01T10:00:00.000Z",
                   "cwd": cwd or header.get("cwd"), "parentSession": str(source)}
    return write_lines(folder / f"2026-03-01T10-00-00-000Z_{session}.jsonl", [fork_header, *copied])
