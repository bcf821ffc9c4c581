"""pi session migrations v1 -> v2 -> v3, in memory (reference section 1.6).

v1 entries have no ids. pi assigns random ones; we derive them from the session id and the entry's
position so that two reads of the same file give the same ids (and so the same plans and resumes).
"""

from __future__ import annotations

import hashlib

from batchcompact.core.jsontypes import JsonObject

CURRENT_VERSION = 3


def header_version(header: JsonObject) -> int:
    version = header.get("version")
    return version if isinstance(version, int) and not isinstance(version, bool) else 1


def deterministic_id(seed: str, index: int, used: set[str]) -> str:
    """An 8-hex id derived from (seed, index), unique within `used` (which it updates)."""
    attempt = 0
    while True:
        digest = hashlib.sha256(f"{seed}\x00{index}\x00{attempt}".encode("utf-8", "surrogatepass")).hexdigest()[:8]
        if digest not in used:
            used.add(digest)
            return digest
        attempt += 1


def migrate_v1_to_v2(header: JsonObject, entries: list[JsonObject]) -> None:
    """Give every entry an id and chain parentIds in file order; convert firstKeptEntryIndex.

    `firstKeptEntryIndex` indexes the parsed line array with the header at index 0, so entry i of
    `entries` is index i + 1. Keys are added at the end of each object, as pi's in-place JS migration does.
    """
    seed = str(header.get("id", ""))
    used: set[str] = set()
    ids: list[str] = []
    prev: str | None = None
    for index, entry in enumerate(entries):
        entry_id = deterministic_id(seed, index, used)
        entry["id"] = entry_id
        entry["parentId"] = prev
        ids.append(entry_id)
        prev = entry_id
    for entry in entries:
        if entry.get("type") == "compaction" and "firstKeptEntryIndex" in entry:
            index = entry.pop("firstKeptEntryIndex")
            if isinstance(index, int) and 1 <= index <= len(entries):
                entry["firstKeptEntryId"] = ids[index - 1]
    header["version"] = 2


def migrate_v2_to_v3(header: JsonObject, entries: list[JsonObject]) -> None:
    """Rename message role hookMessage to custom; nothing else changes."""
    for entry in entries:
        if entry.get("type") == "message":
            message = entry.get("message")
            if isinstance(message, dict) and message.get("role") == "hookMessage":
                message["role"] = "custom"
    header["version"] = 3


def migrate(header: JsonObject, entries: list[JsonObject]) -> int:
    """Migrate in place to v3; return the version the data had. Versions above 3 are left unchanged."""
    version = header_version(header)
    if version < 2:
        migrate_v1_to_v2(header, entries)
    if version < 3:
        migrate_v2_to_v3(header, entries)
    return version
