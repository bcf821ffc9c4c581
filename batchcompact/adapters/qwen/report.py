"""Qwen Code usage from its chat records.

Where: `$QWEN_DATA_DIR` or `~/.qwen`, `projects/<project>/chats/<session id>.jsonl` (`<project>` is the
working directory with `/` as `-`). Records `{uuid, parentUuid, sessionId, timestamp, type, cwd, ...}`,
`type` one of user, assistant, tool_result, system.

Every model call Qwen Code makes is a `system` record with `subtype: "ui_telemetry"` whose
`systemPayload.uiEvent` is a `qwen-code.api_response` event (`response_id`, `model`, `input_token_count`,
`output_token_count`, `cached_content_token_count`, `thoughts_token_count`, `total_token_count`; a
sub-agent's call adds `subagent_name`). The main agent's calls are also an `assistant` record carrying
the same numbers as `usageMetadata` (`promptTokenCount`, `candidatesTokenCount`, `thoughtsTokenCount`,
`cachedContentTokenCount`, `totalTokenCount`); a sub-agent's calls (the memory extractor, Task agents)
are ONLY in the telemetry. So: one row per `api_response` event, keyed by its `response_id`, numbers and
event time (`usage_rows.CallKeys`: a server that gives every response one id merges nothing); an
assistant record counts only when no telemetry event stands for it (files of versions that wrote none),
i.e. when the last unclaimed main-agent event before it does not carry the same numbers.

Numbers: the prompt count INCLUDES the cached tokens (input = prompt - cached); whether the thoughts
are inside the output count follows from the total: `total = prompt + output` (an OpenAI-compatible
provider, whose completion tokens include reasoning: Qwen Code's default) means inside, `total = prompt
+ output + thoughts` (Gemini-style) beside, and without a total inside is assumed. ccusage 20 reads
only the assistant records and adds both the cached and the thought tokens again.
"""

from __future__ import annotations

from pathlib import Path

from batchcompact.adapters.common.lines import ExtractStats, as_int, iter_json_lines, parse_timestamp
from batchcompact.adapters.common.usage_rows import CallKeys, UsageRows
from batchcompact.core.jsontypes import JsonValue

WANT = (b"usageMetadata", b"api_response")


def extract_qwen(path: str | Path, rows: UsageRows, stats: ExtractStats) -> None:
    path = Path(path)
    file = str(path)
    call_keys = CallKeys("qwen")
    pending: list[tuple] = []  # numbers of main-agent telemetry events not yet matched by an assistant record
    for number, obj in iter_json_lines(path, stats, want=WANT):
        session = obj.get("sessionId")
        session = session if isinstance(session, str) else path.stem
        project = obj.get("cwd") if isinstance(obj.get("cwd"), str) else None
        if obj.get("type") == "system" and obj.get("subtype") == "ui_telemetry":
            payload = obj.get("systemPayload")
            event = payload.get("uiEvent") if isinstance(payload, dict) else None
            if not isinstance(event, dict) or event.get("event.name") != "qwen-code.api_response":
                continue
            numbers = (as_int(event.get("input_token_count")), as_int(event.get("output_token_count")),
                       as_int(event.get("cached_content_token_count")), as_int(event.get("thoughts_token_count")))
            sub = event.get("subagent_name")
            if not sub:
                pending.append(numbers)
            response = event.get("response_id")
            _add(rows, file=file, line=number, session=session, project=project,
                 when=event.get("event.timestamp") or obj.get("timestamp"), model=event.get("model"),
                 numbers=numbers, total=event.get("total_token_count"), sidechain=bool(sub),
                 key=call_keys(response, *numbers, event.get("event.timestamp")))
        elif obj.get("type") == "assistant" and isinstance(obj.get("usageMetadata"), dict):
            usage = obj["usageMetadata"]
            numbers = (as_int(usage.get("promptTokenCount")), as_int(usage.get("candidatesTokenCount")),
                       as_int(usage.get("cachedContentTokenCount")), as_int(usage.get("thoughtsTokenCount")))
            if pending and pending[-1] == numbers:  # its telemetry event is already a row
                pending.clear()
                stats.duplicates += 1
                continue
            pending.clear()
            _add(rows, file=file, line=number, session=session, project=project, when=obj.get("timestamp"),
                 model=obj.get("model"), numbers=numbers, total=usage.get("totalTokenCount"), sidechain=False,
                 key=f"qwen:{session}:{obj['uuid']}" if isinstance(obj.get("uuid"), str) else None)


def _add(rows: UsageRows, *, file: str, line: int, session: str, project: str | None, when: JsonValue,
         model: JsonValue, numbers: tuple[int, int, int, int], total: JsonValue, sidechain: bool,
         key: str | None) -> None:
    prompt, output, cached, thoughts = numbers
    beside = isinstance(total, (int, float)) and total != prompt + output and total == prompt + output + thoughts
    rows.add(
        source="qwen",
        file=file,
        line=line,
        session_id=session,
        project=project,
        timestamp=parse_timestamp(when),
        provider="qwen",
        model=model if isinstance(model, str) and model else None,
        kind="sidechain" if sidechain else "main",
        input_tokens=max(prompt - cached, 0),
        output_tokens=output + thoughts if beside else output,
        reasoning_tokens=thoughts,
        cache_read_tokens=cached,
        dedupe_key=key,
    )
