"""Claude Code usage: one row per API request.

Claude Code writes one assistant line per content block of a response; the lines share
`(message.id, requestId)` and repeat `usage`, early ones with partial `output_tokens`. Per key we keep
the line with the largest usage (output, then total); among equal ones the first (its time is when the
response began, the time ccusage reports too).

Two calls with both ids the same (a proxy or local server that reuses them; Anthropic's never do): the
copies of one response share its prompt side (`input_tokens`, `cache_read_input_tokens`, cache writes:
fixed when the request is sent; only the output grows as it streams), which every real fixture confirms
(139 calls of 254 lines, none with two). So within a file, a line with the ids of an earlier call but
another prompt side is another call: the n-th such prompt side gets the key `message.id:requestId#n`
(the first keeps `message.id:requestId`, so a copy of the file, a resume or a sub-agent file keys its
calls alike). Two calls that repeat both ids and the prompt side too cannot be told apart and count once,
as ccusage 20 counts them (it keys by the two ids alone).

Task sub-agents: while a sub-agent runs, the parent transcript gets `progress` lines whose
`data.type` is `agent_progress` and whose `data.message` is the sub-agent's assistant line, usage
included. Those requests are rows too (kind `sidechain`, time = the sub-agent message's own
`timestamp`). When the sub-agent's own `subagents/agent-*.jsonl` file exists, the same request is in
both places under the same `message.id:requestId` key, and the report keeps it once. Lines without the
string `"assistant"` are never parsed: a request is only ever read from an assistant line or a progress
line holding one (`usage_line`), and most bytes are tool results in user lines, which this search
rejects faster than one for `"usage"` (which also sits at the end of an assistant line, the other at its
start). `file-history-snapshot` lines are skipped by their start, and a line mentioning
`"type":"assistant"` (which every usage-bearing line, progress lines included, does) is always parsed,
so the skip cannot lose a request.

Kinds: a file named `agent-acompact-*` is the compaction sub-agent -> `compaction`; other lines with
`isSidechain: true` (inline Task sub-agents, `subagents/` and legacy `agent-*.jsonl` files) and
agent_progress copies -> `sidechain`; the rest -> `main`. `<synthetic>` messages (made locally, never
billed) and batchcompact's kept-tail copies (a top-level `batchcompact` marker) are not rows.
Project = the line's `cwd` (the real working directory); only lines without one fall back to the
folder under `projects/` (for `<session>/subagents/x.jsonl`, the session folder's parent), whose
slug cannot be turned back into a path.
Branch: the line's `gitBranch` (Claude Code writes it on every line; empty outside a git repository).
Recorded cost: the line's `costUSD` (older Claude Code versions wrote it), used by `--cost-mode auto`.
Cache writes: `cache_creation.ephemeral_5m_input_tokens + ephemeral_1h_input_tokens` where the line
has that breakdown (else `cache_creation_input_tokens`); the 1-hour part is kept apart for pricing.
"""

from __future__ import annotations

from pathlib import Path

from batchcompact.adapters.common.lines import (
    ExtractStats,
    as_float,
    as_int,
    as_name,
    iter_json_lines,
    parse_timestamp,
)
from batchcompact.adapters.common.usage_rows import UsageRows
from batchcompact.core.jsontypes import JsonValue

# Every line usage_line reads holds this string: its own type, or the type of the assistant line inside it.
WANT = (b'"assistant"',)
# Claude Code writes these with "type" first; one written otherwise is parsed, and usage_line drops it.
SKIP_STARTS = (b'{"type":"file-history-snapshot"',)
# batchcompact's kept-tail copies carry {"batchcompact": {"copyOf": uuid}} (adapters/claude/write.py) and a
# fresh message.id; the original line carries the request, so the copies are not rows.
COPY_MARKER = "batchcompact"
# Every line that can carry a request's usage contains this (agent_progress lines in their inner message).
KEEP_MARKER = b'"type":"assistant"'


def claude_project(path: Path) -> str:
    parent = path.parent
    if parent.name == "subagents":
        parent = parent.parent.parent
    return parent.name


def claude_file_kind(path: Path) -> str | None:
    """`compaction` for the compaction sub-agent's file; None when the kind comes from each line."""
    return "compaction" if path.name.startswith("agent-acompact") else None


def usage_line(obj: dict) -> tuple[dict, dict, bool] | None:
    """(line carrying the request, its `message`, from agent_progress?) or None when the line has no usage."""
    kind = obj.get("type")
    progress = False
    if kind == "progress":
        data = obj.get("data")
        if not isinstance(data, dict) or data.get("type") != "agent_progress":
            return None
        inner = data.get("message")
        if not isinstance(inner, dict) or inner.get("type") != "assistant":
            return None
        obj, progress = inner, True
    elif kind != "assistant":
        return None
    elif isinstance(obj.get(COPY_MARKER), dict):
        return None  # a kept-tail copy batchcompact wrote: its original carries the request
    message = obj.get("message")
    if not isinstance(message, dict) or not isinstance(message.get("usage"), dict):
        return None
    return obj, message, progress


def extract_claude(path: str | Path, rows: UsageRows, stats: ExtractStats) -> None:
    path = Path(path)
    file = str(path)
    folder = claude_project(path)
    file_kind = claude_file_kind(path)
    is_agent_file = path.name.startswith("agent-") or path.parent.name == "subagents"
    # key -> (rank, counts, sidechain?, line number, session, cwd, time, model, recorded cost) of the copy
    # kept so far, in first-seen order (a dict keeps a key's place when its value is replaced). Only these
    # few fields are kept, never the parsed line: objects freed at once are cheap, kept ones are not.
    best: dict[tuple[str, str], tuple] = {}
    calls: dict[tuple[str, str], list[tuple[int, int, int]]] = {}  # ids -> the prompt sides seen with them
    for number, outer in iter_json_lines(
        path, stats, want=WANT, skip_starts=SKIP_STARTS, keep_if=KEEP_MARKER
    ):
        found = usage_line(outer)
        if found is None:
            continue
        obj, message, progress = found
        model = message.get("model")
        if model == "<synthetic>":
            continue
        # ids as text; a list or an object is none (str() of one nested 1,000 levels recursed: exit 4)
        message_id = as_name(message.get("id"))
        request_id = as_name(obj.get("requestId"))
        counts = usage_counts(message["usage"])
        if not message_id and not request_id:
            key = ("", f"line:{number}")
        else:
            key = (message_id, request_id)
            prompts = calls.setdefault(key, [])
            prompt = (counts[0], counts[2], counts[3])
            if prompt not in prompts:
                prompts.append(prompt)
            nth = prompts.index(prompt) + 1
            if nth > 1:  # the same ids, another prompt: another call
                key = (key[0], f"{key[1]}#{nth}")
        rank = (counts[1], counts[0] + counts[1] + counts[2] + counts[3])  # output, then all tokens
        side = progress or bool(obj.get("isSidechain")) or is_agent_file
        previous = best.get(key)
        if previous is not None:
            stats.duplicates += 1
            # Ties (same usage): the first line keeps the request's time, as ccusage does, unless a
            # main-line copy meets an earlier sub-agent copy.
            if not (rank > previous[0] or (rank == previous[0] and previous[2] and not side)):
                continue
        best[key] = (rank, counts, side, number, outer.get("sessionId") or obj.get("sessionId"),
                     outer.get("cwd") or obj.get("cwd"), obj.get("timestamp") or outer.get("timestamp"),
                     model, obj.get("costUSD"), obj.get("gitBranch") or outer.get("gitBranch"))
    for key, (_, counts, side, number, session, cwd, when, model, cost, branch) in best.items():
        rows.add(
            source="claude",
            file=file,
            line=number,
            session_id=session or path.stem,
            project=cwd if isinstance(cwd, str) and cwd else folder,
            timestamp=parse_timestamp(when),
            provider="anthropic",
            model=model if isinstance(model, str) else None,
            kind=file_kind or ("sidechain" if side else "main"),
            dedupe_key=f"{key[0]}:{key[1]}" if key[0] else None,
            input_tokens=counts[0],
            output_tokens=counts[1],
            cache_read_tokens=counts[2],
            cache_write_tokens=counts[3],
            cache_write_1h_tokens=counts[4],
            recorded_cost_usd=as_float(cost),
            branch=branch if isinstance(branch, str) and branch else None,
        )


def usage_counts(usage: dict) -> tuple[int, int, int, int, int]:
    """(input, output, cache read, cache writes, the 1-hour part of the writes) of one request's usage.

    Cache writes: `cache_creation.ephemeral_5m_input_tokens + ephemeral_1h_input_tokens` where the line has
    that breakdown, else `cache_creation_input_tokens`. `as_int` only for what is not already an int: this
    runs for every usage line of every Claude file."""
    get = usage.get
    numbers: list[JsonValue] = [get("input_tokens"), get("output_tokens"), get("cache_read_input_tokens")]  # ints below
    for i, value in enumerate(numbers):
        if type(value) is not int:
            numbers[i] = as_int(value)
    breakdown = get("cache_creation")
    if type(breakdown) is dict:
        five, hour = breakdown.get("ephemeral_5m_input_tokens"), breakdown.get("ephemeral_1h_input_tokens")
        five = five if type(five) is int else as_int(five)
        hour = hour if type(hour) is int else as_int(hour)
        if five or hour:
            return numbers[0], numbers[1], numbers[2], five + hour, hour
    writes = get("cache_creation_input_tokens")
    return numbers[0], numbers[1], numbers[2], writes if type(writes) is int else as_int(writes), 0
