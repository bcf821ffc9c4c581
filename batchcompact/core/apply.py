"""Applying a plan and its summaries to a pi session: pure functions that return the new entries.

The writer persists what these return; nothing here touches a file.
"""

from __future__ import annotations

import hashlib
from collections.abc import Iterable

from batchcompact.core.calls import HISTORY, TURN_PREFIX
from batchcompact.core.jsontypes import JsonObject
from batchcompact.core.planner import CompactionPlan
from batchcompact.core.prompts import SPLIT_TURN_SEPARATOR, format_file_operations


def new_entry_id(seed: str, used: set[str]) -> str:
    """A fresh 8-hex id, unique among `used`, derived from `seed` so that a rerun writes the same id."""
    attempt = 0
    while True:
        candidate = hashlib.sha256(f"{seed}\x00{attempt}".encode("utf-8", "surrogatepass")).hexdigest()[:8]
        if candidate not in used:
            return candidate
        attempt += 1


def compose_summary(plan: CompactionPlan, texts: dict[str, str]) -> str:
    """The stored summary: history (+ split-turn prefix) + file-operation tags, as pi's compact() builds it.

    `texts` maps call kind (history / turn_prefix) to the model's text.
    """
    history = texts.get(HISTORY)
    if history is None:
        history = plan.history_fallback or ""
    summary = history
    if plan.split_turn and TURN_PREFIX in texts:
        summary = history + SPLIT_TURN_SEPARATOR + texts[TURN_PREFIX]
    if plan.file_tags is not None:
        return summary + plan.file_tags
    return summary + format_file_operations(plan.read_files, plan.modified_files)


def usage_record(
    input_tokens: int,
    completion_tokens: int,
    cache_read: int,
    cache_write: int,
    cost: float | None,
    cost_parts: dict[str, float] | None = None,
) -> JsonObject:
    """The summary calls' usage in pi's Usage shape (as later pi and Flue record it on compactions).

    `input_tokens` is the non-cached input, as pi counts it (cache reads and writes have their own fields).
    `cost_parts` (input, output, cacheRead, cacheWrite) come from the price table; when they are unknown
    but the total is, the parts are 0 and `total` carries the cost. An unpriced model (cost None) gets zero
    costs, as pi writes for models it cannot price; the run report keeps the cost null.
    """
    parts = (cost_parts or {}) if cost is not None else {}
    return {
        "input": input_tokens,
        "output": completion_tokens,
        "cacheRead": cache_read,
        "cacheWrite": cache_write,
        "totalTokens": input_tokens + completion_tokens + cache_read + cache_write,
        "cost": {
            "input": parts.get("input", 0.0),
            "output": parts.get("output", 0.0),
            "cacheRead": parts.get("cacheRead", 0.0),
            "cacheWrite": parts.get("cacheWrite", 0.0),
            "total": cost if cost is not None else 0.0,
        },
    }


def batchcompact_marker(plan: CompactionPlan, from_hook: bool, usage: JsonObject | None) -> JsonObject:
    """What a Gemini CLI or Qwen Code compaction of ours records about itself (tool, cut, file lists, usage)."""
    marker: JsonObject = {
        "tool": "batchcompact",
        "tokensBefore": plan.tokens_before,
        "firstKeptId": plan.first_kept_entry_id,
        "fromHook": from_hook,
        "readFiles": list(plan.read_files),
        "modifiedFiles": list(plan.modified_files),
    }
    if usage is not None:
        marker["usage"] = usage
    return marker


def build_compaction_entry(
    plan: CompactionPlan,
    summary: str,
    *,
    existing_ids: Iterable[str],
    session_id: str,
    timestamp: str,
    usage: JsonObject | None = None,
    from_hook: bool = False,
) -> JsonObject:
    """The v3 `compaction` entry, appended on the active path (parent = the active leaf).

    Field order follows pi's `appendCompaction`; `usage` comes last, as later pi versions add it.
    """
    used = set(existing_ids)
    entry_id = new_entry_id(f"{session_id}\x00{plan.leaf_id}\x00compaction", used)
    entry: JsonObject = {
        "type": "compaction",
        "id": entry_id,
        "parentId": plan.leaf_id,
        "timestamp": timestamp,
        "summary": summary,
        "firstKeptEntryId": plan.first_kept_entry_id,
        "tokensBefore": plan.tokens_before,
        "details": {"readFiles": list(plan.read_files), "modifiedFiles": list(plan.modified_files)},
        "fromHook": from_hook,
    }
    if usage is not None:
        entry["usage"] = usage
    return entry
