"""pi usage: every assistant message on every branch, plus compaction / branch_summary `usage`.

Every line counts (abandoned branches were paid for too). pi's `usage.input` is non-cached input,
so it maps straight to the table; recorded cost is `usage.cost.total`. A message's dedupe key is what
every copy of the entry keeps (`usage_rows.PiEntryKeys`: its times and token counts, not its session, line or
entry id), so a copy of the file elsewhere (a synced folder, another machine's export), a `/fork` of it
(a new session holding the old entries) and a copy migrated from v1 (new entry ids) count once; a summary
entry's is `usage_rows.entry_key`. A token count that is not a number (`"input": "many"`) counts as 0 and is named once
per file, at the first line that has one.
"""

from __future__ import annotations

import json
from pathlib import Path

from batchcompact.adapters.common.lines import (
    ExtractStats,
    as_float,
    as_int,
    iter_json_lines,
    parse_timestamp,
)
from batchcompact.adapters.common.usage_rows import PiEntryKeys, UsageRows, entry_key

ENTRY_KINDS = {"compaction": "compaction", "branch_summary": "branch_summary"}
TOKEN_FIELDS = ("input", "output", "cacheRead", "cacheWrite")


class _WrongTypes:
    """The token counts of one file that are not numbers: the first (line, field, value) and how many."""

    def __init__(self) -> None:
        self.first: tuple[int, str, object] | None = None
        self.count = 0

    def counts(self, usage: dict, line: int) -> tuple[int, ...]:
        """`usage`'s token counts as ints; one that is not a number (nor absent or null) is noted and is 0."""
        out = []
        for name in TOKEN_FIELDS:
            value = usage.get(name)
            if type(value) is not int and value is not None and (
                    isinstance(value, bool) or not isinstance(value, (int, float))):
                self.count += 1
                if self.first is None:
                    self.first = (line, name, value)
            out.append(as_int(value))
        return tuple(out)

    def warn(self, stats: ExtractStats) -> None:
        if self.first is None:
            return
        line, name, value = self.first
        more = f" ({self.count} such counts in this file; the first is named)" if self.count > 1 else ""
        stats.warn(line, f"`usage.{name}` is {json.dumps(value)[:40]}, not a token count; counted as 0{more}")


def message_key(session_id: str | None, entry_id: object, line: int, counts: tuple[int, ...]) -> str | None:
    """The key of a pi message with no time (`PiEntryKeys`'s fallback): its session and entry id; in a v1
    file, whose entries have no id, its session, line and token counts (None without a session id)."""
    if not session_id:
        return None
    if isinstance(entry_id, str) and entry_id:
        return f"pi:{session_id}:{entry_id}"
    return f"pi:{session_id}:line {line}:" + ":".join(map(str, counts))


def _usage_or_header(raw: bytes) -> bool:
    return b'"usage"' in raw or raw.startswith(b'{"type":"session"')


def extract_pi(path: str | Path, rows: UsageRows, stats: ExtractStats) -> None:
    file = str(path)
    session_id = project = None
    last_provider = last_model = None
    wrong = _WrongTypes()
    keys = PiEntryKeys()
    rank = PiEntryKeys.ORIGINAL
    # the header is line 1, or line 2 after oh-my-pi's title slot
    for number, obj in iter_json_lines(path, stats, wanted_line=_usage_or_header, always_first=True):
        entry_type = obj.get("type")
        if number <= 2 and entry_type == "session" and session_id is None:
            session_id = obj.get("id") if isinstance(obj.get("id"), str) else None
            project = obj.get("cwd") if isinstance(obj.get("cwd"), str) else None
            last_provider = obj.get("provider")
            last_model = obj.get("modelId")
            rank = PiEntryKeys.rank(obj)
            continue
        if entry_type == "message":
            message = obj.get("message")
            if not isinstance(message, dict) or message.get("role") != "assistant":
                continue
            usage = message.get("usage")
            provider, model = message.get("provider"), message.get("model")
            last_provider, last_model = provider or last_provider, model or last_model
            kind = "main"
            when = obj.get("timestamp") or message.get("timestamp")
        elif not isinstance(entry_type, str):  # a list or an object (damaged): said, and its usage not read
            stats.warn(number, f"'type' is {json.dumps(entry_type)[:40]}, not a string; its usage is not counted")
            continue
        elif entry_type in ENTRY_KINDS or (entry_type == "custom_message" and obj.get("customType") == "handoff"):
            # a handoff's document (`run --strategy handoff`) records its call as a compaction does
            usage = obj.get("usage")
            provider = obj.get("provider") or last_provider
            model = obj.get("model") or obj.get("modelId") or last_model
            kind = ENTRY_KINDS.get(entry_type, "compaction")
            when = obj.get("timestamp")
        else:
            continue
        if not isinstance(usage, dict):
            if entry_type == "message":
                stats.warn(number, "assistant message without usage; not counted")
            continue
        cost = usage.get("cost")
        counts = wrong.counts(usage, number)
        if kind != "main" or message is None:  # (message is a dict wherever kind is "main")
            key = entry_key(session_id, obj.get("id"))
        else:
            key = keys(obj, message, counts, message_key(session_id, obj.get("id"), number, counts))
        rows.add(
            source="pi",
            file=file,
            line=number,
            session_id=session_id,
            project=project,
            timestamp=parse_timestamp(when),
            provider=provider if isinstance(provider, str) else None,
            model=model if isinstance(model, str) else None,
            kind=kind,
            input_tokens=counts[0],
            output_tokens=counts[1],
            cache_read_tokens=counts[2],
            cache_write_tokens=counts[3],
            recorded_cost_usd=as_float(cost.get("total")) if isinstance(cost, dict) else None,
            # A summary entry's usage is also in the run report of the batchcompact run that wrote it; a
            # message is its session's entry: a copy of the file (a synced folder, another machine's
            # export) counts once.
            dedupe_key=key,
            dedupe_rank=rank,
        )
    wrong.warn(stats)
