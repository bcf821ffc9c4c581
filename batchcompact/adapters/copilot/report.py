"""GitHub Copilot CLI usage: its OpenTelemetry file export and its own session-state event logs.

Where the files are: `~/.copilot/otel/*.jsonl` and the file named by `$COPILOT_OTEL_FILE_EXPORTER_PATH`
(written only when Copilot runs with `COPILOT_OTEL_ENABLED=true COPILOT_OTEL_EXPORTER_TYPE=file` or that
path set); `${COPILOT_HOME:-~/.copilot}/session-state/<session id>/events.jsonl` (older builds: flat
`session-state/<session id>.jsonl`), written always. One reader takes both: a line with `attributes` is an
OTel record, a line with `type` and `data` a session event.

One row per model call, keyed by its response id and numbers (`usage_rows.CallKeys`): the OTel
`gen_ai.response.id` and the session event's `apiCallId` are the same provider id (`chatcmpl-…`), so a
call present in both files counts once, and two calls a server gave one id stay two.

OTel (per file): the same call appears as a `chat` span, an inference-details log and inside its
`invoke_agent` span, which aggregates every call of the turn. Priority chat span > inference log >
agent-turn log > invoke_agent span; a record is dropped when a higher-priority one shares its trace id
or response id (summing the aggregate and its parts would count the turn twice).

Session events (Copilot CLI 1.0.9x+): `session.usage_record` carries each call's usage
(`inputTokens`, `outputTokens`, `cacheReadTokens`, `cacheWriteTokens`, `reasoningTokens`, `apiCallId`).
Copilot's own compaction call has no usage record: its usage is in `session.compaction_complete`'s
`compactionTokensUsed` (`inputTokens` including cache reads), counted as one `compaction` row unless a
`conversation-compaction` usage record carries it, or the compaction is batchcompact's (`ours`: its calls
are in the run report). Older logs have no per-call usage; their last `session.shutdown` carries session totals
(`modelMetrics.<model>.usage`, or `tokenDetails.<kind>.tokenCount`), a running total: that last
snapshot becomes one row per model at shutdown time. `assistant.message.outputTokens` alone (no input)
is not a row.

Counting: Copilot's input counts INCLUDE cache reads (OpenAI `prompt_tokens`, copied through), so
input = input − cache read. Reasoning is part of the output count (OpenAI `completion_tokens` and
Anthropic `output_tokens` both include it): it is recorded in `reasoning_tokens`, never added. The
per-call `cost` is a premium-request multiplier, not USD, so no recorded cost is taken.
"""

from __future__ import annotations

from datetime import UTC, datetime
from pathlib import Path

from batchcompact.adapters.common.lines import (
    ExtractStats,
    as_int,
    first_str,
    iter_json_lines,
    parse_timestamp,
)
from batchcompact.adapters.common.model_names import price_name
from batchcompact.adapters.common.usage_rows import CallKeys, UsageRows

AGENT = "copilot"
# Lines worth parsing: OTel records, and the three session events that matter (tool output lines are skipped).
WANT = (b'"attributes"', b'"session.start"', b'"session.usage_record"', b'"session.shutdown"',
        b'"session.compaction_complete"')

CHAT, INFERENCE_LOG, AGENT_TURN_LOG, AGENT_SPAN = range(4)  # priority: lower wins
MODEL_ATTRS = ("gen_ai.response.model", "gen_ai.request.model")
SESSION_ATTRS = ("gen_ai.conversation.id", "copilot_chat.session_id", "copilot_chat.chat_session_id", "session.id")
CACHE_WRITE_ATTRS = ("gen_ai.usage.cache_write.input_tokens", "gen_ai.usage.cache_creation.input_tokens")
REASONING_ATTRS = ("gen_ai.usage.reasoning.output_tokens", "gen_ai.usage.reasoning_tokens")


def extract_copilot(path: str | Path, rows: UsageRows, stats: ExtractStats) -> None:
    path = Path(path)
    file = str(path)
    otel: list[dict] = []
    calls: list[dict] = []
    shutdown: tuple[int, dict, str | None] | None = None
    compactions: list[dict] = []
    session_id = project = None
    for number, obj in iter_json_lines(path, stats, want=WANT):
        attributes = obj.get("attributes")
        if isinstance(attributes, dict):
            record = otel_record(number, obj, attributes)
            if record is not None:
                otel.append(record)
            continue
        kind, data = obj.get("type"), obj.get("data")
        if not isinstance(kind, str) or not isinstance(data, dict):
            continue
        if kind == "session.start":
            session_id = session_id or first_str(data, "sessionId")
            context = data.get("context")
            project = project or (first_str(context, "cwd") if isinstance(context, dict) else None)
        elif kind == "session.usage_record" and isinstance(data.get("usage"), dict):
            calls.append({"line": number, "event": obj, "usage": data["usage"]})
        elif kind == "session.compaction_complete" and isinstance(data.get("compactionTokensUsed"), dict):
            compactions.append({"line": number, "event": obj, "data": data, "recorded": False})
        elif kind == "session.shutdown":
            shutdown = (number, data, obj.get("timestamp"))
    session_id = session_id or session_from_path(path)
    add_otel_rows(file, otel, rows)
    call_keys = CallKeys(AGENT)
    for call in calls:
        add_call_row(file, session_id, project, call, rows, call_keys)
    if not calls and shutdown is not None:
        add_shutdown_rows(file, session_id, project, *shutdown, rows, stats)
    elif compactions:  # (the shutdown totals include the compaction calls)
        _mark_recorded(compactions, calls)
        for compaction in compactions:
            if not compaction["recorded"] and not ours(compaction["data"]):
                add_compaction_row(file, session_id, project, compaction, rows)


def session_from_path(path: Path) -> str:
    """`session-state/<id>/events.jsonl` -> `<id>`; a flat `<id>.jsonl` -> `<id>`."""
    return path.parent.name if path.name == "events.jsonl" else path.name.split(".jsonl")[0]


# --- OpenTelemetry records ---------------------------------------------------------------------


def otel_record(number: int, obj: dict, attributes: dict) -> dict | None:
    """The usage-bearing OTel record on this line, classified; None for metrics and other spans."""
    span = is_span(obj)
    operation = attributes.get("gen_ai.operation.name")
    name = obj.get("name")
    name = name if isinstance(name, str) else ""
    body = obj.get("body") if isinstance(obj.get("body"), str) else obj.get("_body")
    body = body if isinstance(body, str) else ""
    event = attributes.get("event.name")
    if span and (operation == "chat" or name.startswith("chat ")):
        priority = CHAT
    elif span and (operation == "invoke_agent" or name.startswith("invoke_agent")):
        priority = AGENT_SPAN
    elif not span and (event == "gen_ai.client.inference.operation.details" or body.startswith("GenAI inference:")):
        priority = INFERENCE_LOG
    elif not span and (event == "copilot_chat.agent.turn" or body.startswith("copilot_chat.agent.turn")):
        priority = AGENT_TURN_LOG
    else:
        return None
    context = obj.get("spanContext")
    context = context if isinstance(context, dict) else {}
    return {
        "line": number,
        "priority": priority,
        "trace": first_str(obj, "traceId") or first_str(context, "traceId"),
        "span": first_str(obj, "spanId") or first_str(context, "spanId"),
        "response": first_str(attributes, "gen_ai.response.id"),
        "model": first_str(attributes, *MODEL_ATTRS),
        "session": first_str(attributes, *SESSION_ATTRS),
        "when": otel_time(obj),
        "attributes": attributes,
    }


def is_span(obj: dict) -> bool:
    if isinstance(obj.get("type"), str):
        return obj["type"] == "span"
    return isinstance(obj.get("name"), str) and any(k in obj for k in ("spanId", "traceId", "endTime", "kind"))


def otel_time(obj: dict) -> datetime | None:
    """A span's end time or a log's time: OTel `[seconds, nanoseconds]` pairs, or a plain timestamp."""
    for key in ("endTime", "hrTime", "startTime"):
        value = obj.get(key)
        if isinstance(value, list) and len(value) == 2 and all(isinstance(v, (int, float)) for v in value):
            try:
                return datetime.fromtimestamp(value[0] + value[1] / 1e9, tz=UTC)
            except (OverflowError, OSError, ValueError):
                return None
    return parse_timestamp(obj.get("timestamp"))


def number(attributes: dict, *keys: str) -> int:
    for key in keys:
        value = attributes.get(key)
        if isinstance(value, str) and value.strip().isdigit():
            return int(value)
        if as_int(value):
            return as_int(value)
    return 0


def add_otel_rows(file: str, records: list[dict], rows: UsageRows) -> None:
    """Rows for the records no higher-priority record of the same trace or response covers."""
    best_trace: dict[str, int] = {}
    best_response: dict[str, int] = {}
    trace_model: dict[str, str] = {}
    trace_session: dict[str, str] = {}
    trace_time: dict[str, datetime] = {}
    call_keys = CallKeys(AGENT)
    for r in records:
        if r["when"] is not None:
            for ident in (r["trace"], r["response"]):
                if ident:
                    trace_time.setdefault(ident, r["when"])
    for r in records:
        if r["trace"]:
            best_trace[r["trace"]] = min(best_trace.get(r["trace"], AGENT_SPAN), r["priority"])
            if r["model"]:
                trace_model.setdefault(r["trace"], r["model"])
            if r["session"]:
                trace_session.setdefault(r["trace"], r["session"])
        if r["response"]:
            best_response[r["response"]] = min(best_response.get(r["response"], AGENT_SPAN), r["priority"])
    for r in records:
        if r["trace"] and best_trace[r["trace"]] < r["priority"]:
            continue
        if r["response"] and best_response[r["response"]] < r["priority"]:
            continue
        a = r["attributes"]
        total_input = number(a, "gen_ai.usage.input_tokens")
        cache_read = min(number(a, "gen_ai.usage.cache_read.input_tokens"), total_input)
        output = number(a, "gen_ai.usage.output_tokens")
        cache_write = number(a, *CACHE_WRITE_ATTRS)
        if not (total_input or output or cache_write):
            continue
        if r["response"]:
            key = call_keys(r["response"], total_input - cache_read, output, cache_read, cache_write)
        elif r["trace"] and r["span"]:
            key = f"{AGENT}-otel:{r['trace']}:{r['span']}"
        else:
            key = None
        model = r["model"] or trace_model.get(r["trace"] or "")
        rows.add(
            source=AGENT,
            file=file,
            line=r["line"],
            session_id=r["session"] or trace_session.get(r["trace"] or "") or r["trace"],
            project=None,
            # a span without an end time: when another record of the same call or trace was written
            timestamp=r["when"] or trace_time.get(r["response"] or "") or trace_time.get(r["trace"] or ""),
            provider=None,
            model=price_name(model),
            kind="main",
            dedupe_key=key,
            input_tokens=total_input - cache_read,
            output_tokens=output,
            cache_read_tokens=cache_read,
            cache_write_tokens=cache_write,
            reasoning_tokens=number(a, *REASONING_ATTRS),
        )


# --- session-state events ----------------------------------------------------------------------


def call_kind(event: dict, usage: dict) -> str:
    interaction = usage.get("interactionType")
    if interaction == "conversation-compaction":
        return "compaction"
    if event.get("agentId") or usage.get("parentToolCallId") or interaction == "conversation-subagent":
        return "sidechain"
    return "main"


def add_call_row(file: str, session_id: str, project: str | None, call: dict, rows: UsageRows,
                 call_keys: CallKeys) -> None:
    usage, event = call["usage"], call["event"]
    accounting = usage.get("accounting")
    accounting = accounting if isinstance(accounting, dict) else {}
    identity = first_str(usage, "apiCallId") or first_str(accounting, "usageId")
    total_input = as_int(usage.get("inputTokens"))
    cache_read = min(as_int(usage.get("cacheReadTokens")), total_input)
    output, cache_write = as_int(usage.get("outputTokens")), as_int(usage.get("cacheWriteTokens"))
    rows.add(
        source=AGENT,
        file=file,
        line=call["line"],
        session_id=first_str(accounting, "sourceSessionId") or session_id,
        project=project,
        timestamp=parse_timestamp(event.get("timestamp")),
        provider=None,
        model=price_name(first_str(usage, "model")),
        kind=call_kind(event, usage),
        dedupe_key=(call_keys(identity, total_input - cache_read, output, cache_read, cache_write)
                    or f"{AGENT}-event:{event.get('id')}"),
        input_tokens=total_input - cache_read,
        output_tokens=output,
        cache_read_tokens=cache_read,
        cache_write_tokens=cache_write,
        reasoning_tokens=as_int(usage.get("reasoningTokens")),
    )


def _mark_recorded(compactions: list[dict], calls: list[dict]) -> None:
    """A compaction whose call also has a `session.usage_record` (`interactionType:
    conversation-compaction`) written before its `compaction_complete` and after the previous one is
    counted from that record, not twice."""
    previous = 0
    for compaction in compactions:
        if any(previous < call["line"] < compaction["line"]
               and call["usage"].get("interactionType") == "conversation-compaction" for call in calls):
            compaction["recorded"] = True
        previous = compaction["line"]


def ours(data: dict) -> bool:
    """A compaction batchcompact wrote (adapters/copilot/write.py): its attempt id is a name-based UUID
    (version 5, derived from the session and the cut; Copilot's own are random, version 4), and its
    `compactionTokensUsed` names no model. Its summary calls are counted from the run report."""
    attempt = data.get("compactionAttemptId")
    used = data.get("compactionTokensUsed")
    return (isinstance(attempt, str) and len(attempt) == 36 and attempt[14:15] == "5"
            and isinstance(used, dict) and "model" not in used)


def add_compaction_row(file: str, session_id: str, project: str | None, compaction: dict, rows: UsageRows) -> None:
    """Copilot's own compaction call, recorded only in `session.compaction_complete.compactionTokensUsed`
    (`inputTokens` includes the cache reads; `requestCount` calls, one row): a `compaction` row keyed by
    the session and the attempt id (else the event id), so a copy of the log counts it once."""
    event, data = compaction["event"], compaction["data"]
    used = data["compactionTokensUsed"]
    total_input = as_int(used.get("inputTokens"))
    cache_read = min(as_int(used.get("cacheReadTokens")), total_input)
    identity = first_str(data, "compactionAttemptId") or first_str(event, "id") or f"line {compaction['line']}"
    rows.add(
        source=AGENT,
        file=file,
        line=compaction["line"],
        session_id=session_id,
        project=project,
        timestamp=parse_timestamp(event.get("timestamp")),
        provider=None,
        model=price_name(first_str(used, "model") or first_str(data, "behaviorModelId")),
        kind="compaction",
        dedupe_key=f"{AGENT}-compaction:{session_id}:{identity}",
        input_tokens=total_input - cache_read,
        output_tokens=as_int(used.get("outputTokens")),
        cache_read_tokens=cache_read,
        cache_write_tokens=as_int(used.get("cacheWriteTokens")),
    )


def add_shutdown_rows(
    file: str,
    session_id: str,
    project: str | None,
    line: int,
    data: dict,
    when: str | None,
    rows: UsageRows,
    stats: ExtractStats,
) -> None:
    """Session totals of a log without per-call usage: one row per model from its last shutdown."""
    totals: list[tuple[str | None, int, int, int, int, int]] = []
    metrics = data.get("modelMetrics")
    for model, metric in (metrics.items() if isinstance(metrics, dict) else ()):
        usage = metric.get("usage") if isinstance(metric, dict) else None
        if isinstance(usage, dict):
            totals.append((model, as_int(usage.get("inputTokens")), as_int(usage.get("outputTokens")),
                           as_int(usage.get("cacheReadTokens")), as_int(usage.get("cacheWriteTokens")),
                           as_int(usage.get("reasoningTokens"))))
    details = data.get("tokenDetails")
    if not totals and isinstance(details, dict):

        def count(kind: str) -> int:
            entry = details.get(kind)
            return as_int(entry.get("tokenCount")) if isinstance(entry, dict) else 0

        totals.append((first_str(data, "currentModel"), count("input"), count("output"), count("cache_read"),
                       count("cache_write"), 0))
    totals = [t for t in totals if t[1] or t[2] or t[4]]
    if totals:
        stats.warn(line, "no per-call usage in this log; the session's shutdown totals are counted at shutdown time")
    for model, total_input, output, cache_read, cache_write, reasoning in totals:
        cache_read = min(cache_read, total_input)
        rows.add(
            source=AGENT,
            file=file,
            line=line,
            session_id=session_id,
            project=project,
            timestamp=parse_timestamp(when),
            provider=None,
            model=price_name(model),
            kind="main",
            dedupe_key=f"{AGENT}-session:{session_id}:{model}",
            input_tokens=total_input - cache_read,
            output_tokens=output,
            cache_read_tokens=cache_read,
            cache_write_tokens=cache_write,
            reasoning_tokens=reasoning,
        )
