"""What the model sees: pi's `buildSessionContext` and `convertToLlm` (reference section 6).

Wrapper texts are byte-for-byte pi's, including the missing newline before `</summary>` in branch
summaries.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from datetime import datetime
from typing import Protocol

from batchcompact.core.entries import Entry
from batchcompact.core.jsontypes import JsonObject, JsonValue

COMPACTION_SUMMARY_PREFIX = (
    "The conversation history before this point was compacted into the following summary:\n\n<summary>\n"
)
COMPACTION_SUMMARY_SUFFIX = "\n</summary>"
BRANCH_SUMMARY_PREFIX = "The following is a summary of a branch that this conversation came back from:\n\n<summary>\n"
BRANCH_SUMMARY_SUFFIX = "</summary>"


@dataclass(frozen=True)
class ContextMessage:
    """An AgentMessage of the context and the entry it came from (None for a synthesized one)."""

    message: JsonObject
    entry: Entry | None

    @property
    def line(self) -> int | None:
        return self.entry.line if self.entry is not None else None


@dataclass(frozen=True)
class SessionContext:
    messages: list[ContextMessage]
    thinking_level: str
    model: dict[str, str] | None
    compaction: Entry | None
    stale_count: int = 0  # leading messages (summary + kept) whose usage predates the compaction

    def trigger_tokens(self) -> int:
        """Context size with stale usage ignored: what decides whether to compact (again)."""
        from batchcompact.core.tokens import estimate_context_tokens

        return estimate_context_tokens([m.message for m in self.messages], usage_from=self.stale_count).tokens


def parse_timestamp_ms(value: JsonValue) -> int | None:
    """ISO-8601 string to epoch milliseconds, as JavaScript's Date.parse (None when unparsable)."""
    if isinstance(value, (int, float)) and not isinstance(value, bool):
        return int(value) if math.isfinite(value) else None  # a file's 1e999 is no time
    if not isinstance(value, str):
        return None
    try:
        return int(datetime.fromisoformat(value.replace("Z", "+00:00")).timestamp() * 1000)
    except ValueError:
        return None


def entry_to_message(entry: Entry) -> JsonObject | None:
    """The AgentMessage an entry contributes to the context, or None (pi's mapping, section 6.3)."""
    kind = entry.type
    data = entry.data
    if kind == "message":
        return entry.message
    if kind == "custom_message":
        return {
            "role": "custom",
            "customType": data.get("customType"),
            "content": data.get("content"),
            "display": data.get("display"),
            "details": data.get("details"),
            "timestamp": parse_timestamp_ms(data.get("timestamp")),
        }
    if kind == "branch_summary" and data.get("summary"):
        return {
            "role": "branchSummary",
            "summary": data.get("summary"),
            "fromId": data.get("fromId"),
            "timestamp": parse_timestamp_ms(data.get("timestamp")),
        }
    return None


def compaction_message(entry: Entry) -> JsonObject:
    message = {
        "role": "compactionSummary",
        "summary": entry.data.get("summary", ""),
        "tokensBefore": entry.data.get("tokensBefore"),
        "timestamp": parse_timestamp_ms(entry.data.get("timestamp")),
    }
    if entry.data.get("encryptedSummaryChars"):  # Codex's remote compaction: no readable summary
        message["encryptedChars"] = entry.data["encryptedSummaryChars"]
    return message


def encrypted_summary_note(chars: int) -> str:
    """What stands for a summary the provider encrypted (Codex's remote compaction)."""
    return f"(summary encrypted by the provider, {chars:,} characters)"


def path_model(entry: Entry, model: JsonObject | None) -> JsonObject | None:
    """The model after `entry`: a model_change or an assistant message sets it (pi's rule)."""
    if entry.type == "model_change":
        return {"provider": entry.data.get("provider"), "modelId": entry.data.get("modelId")}
    if entry.type == "message":
        message = entry.message
        if message is not None and message.get("role") == "assistant":
            return {"provider": message.get("provider"), "modelId": message.get("model")}
    return model


_UNSET: JsonObject = {}  # a sentinel: no model change on this entry (compared by identity)


def last_model(path: list[Entry]) -> JsonObject | None:
    """`path_model` applied along the whole root-first path: the model its last model_change or assistant
    message sets, found from the end (no call per entry of the path before it)."""
    for entry in reversed(path):
        kind = entry.type
        if kind == "model_change" or kind == "message":
            model = path_model(entry, _UNSET)
            if model is not _UNSET:
                return model
    return None


@dataclass(frozen=True)
class ContextRules:
    """How strictly a format's agent rebuilds the context beyond pi's `buildSessionContext` (the default:
    none of it). An agent that writes pi's format and replays less (oh-my-pi, adapters/pi/omp.py) says so here,
    and its reader puts its rules on the session (`Session.context_rules`).

    - `replay_only_clean_turns`: failed requests with nothing in them and retried turns (`retryRecovery`)
      left out as read; tool calls with no result in the context stripped from every assistant turn (its
      signed reasoning unsigned, a turn left empty dropped); then aborted and failed turns dropped with
      their tool results, unless a `keep_after_custom_type` message follows;
    - `hidden_custom_types`: custom messages that never reach the model;
    - `reset_boundary`: the entry type after whose latest occurrence (past the compaction) the context starts.
    """

    replay_only_clean_turns: bool = False
    hidden_custom_types: frozenset[str] = frozenset()
    keep_after_custom_type: str | None = None
    reset_boundary: str | None = None


PI_RULES = ContextRules()


class ContextSource(Protocol):
    """What the context is rebuilt from: a `core.session.Session` (named by its parts here, because the session
    module imports this one for its fields' types)."""

    context_rules: ContextRules | None
    rebuilt_context: SessionContext | None

    def path_entries(self) -> list[Entry]: ...


def rules_of(session: ContextSource | None) -> ContextRules:
    """The context rules a session is rebuilt with: the ones its reader put on it, else pi's."""
    rules = session.context_rules if session is not None else None
    return rules if rules is not None else PI_RULES


def session_context(session: ContextSource) -> SessionContext:
    """`build_session_context` of a session's active path, with its rules."""
    return build_session_context(session.path_entries(), rules_of(session))


def _empty_error_turn(message: JsonObject) -> bool:
    """A failed request that produced nothing worth replaying (oh-my-pi's isEmptyErrorTurn)."""
    if message.get("stopReason") != "error":
        return False
    for block in message.get("content") or ():
        if not isinstance(block, dict):
            return True
        kind = block.get("type")
        if kind == "text":
            if str(block.get("text") or "").strip():
                return False
        elif kind == "thinking":
            if str(block.get("thinking") or "").strip() or str(block.get("thinkingSignature") or "").strip():
                return False
        elif kind == "redactedThinking":
            if str(block.get("data") or "").strip():
                return False
        elif kind != "fallback":  # a tool call, or a block kind it does not know: content
            return False
    return True


def _left_out(entry: Entry, rules: ContextRules) -> bool:
    """An entry `rules` leave out of the context as it is read."""
    if entry.type == "message":
        message = entry.message or {}
        return rules.replay_only_clean_turns and message.get("role") == "assistant" and bool(
            message.get("retryRecovery") or _empty_error_turn(message))
    return entry.type == "custom_message" and entry.data.get("customType") in rules.hidden_custom_types


def _clean_turns(out: list[ContextMessage], rules: ContextRules) -> list[ContextMessage]:
    """The last two passes of `replay_only_clean_turns` over the context: tool calls without a result in
    it stripped from every assistant turn (its signed reasoning unsigned; a turn left empty dropped), then
    aborted and failed assistant turns dropped with their tool results (unless `keep_after_custom_type`
    follows)."""
    if not rules.replay_only_clean_turns:
        return out
    paired = {m.message.get("toolCallId") for m in out if m.message.get("role") == "toolResult"}
    for index in range(len(out) - 1, -1, -1):
        message = out[index].message
        if message.get("role") != "assistant":
            continue
        content = [b for b in message.get("content") or () if isinstance(b, dict)]
        if not any(b.get("type") == "toolCall" and b.get("id") not in paired for b in content):
            continue
        kept = [{k: v for k, v in b.items() if k != "thinkingSignature"}
                if b.get("type") == "thinking" and b.get("thinkingSignature") else b
                for b in content if not (b.get("type") == "toolCall" and b.get("id") not in paired)
                and b.get("type") != "redactedThinking"]
        if not kept:
            del out[index]
        else:
            out[index] = ContextMessage({**message, "content": kept}, out[index].entry)
    for index in range(len(out) - 1, -1, -1):
        message = out[index].message
        if message.get("role") != "assistant" or message.get("stopReason") not in ("aborted", "error"):
            continue
        following = out[index + 1].message if index + 1 < len(out) else {}
        if following.get("role") == "custom" and following.get("customType") == rules.keep_after_custom_type \
                and rules.keep_after_custom_type is not None:
            continue
        calls = {b.get("id") for b in message.get("content") or () if isinstance(b, dict) and b.get("type") == "toolCall"}
        del out[index]
        if calls:
            out[index:] = [m for m in out[index:] if not (m.message.get("role") == "toolResult"
                                                            and m.message.get("toolCallId") in calls)]
    return out


def build_session_context(path: list[Entry], rules: ContextRules = PI_RULES) -> SessionContext:
    """The context of a root-first path: latest compaction summary, kept entries, later entries (pi's
    rules, and what `rules` leave out beyond them)."""
    thinking_level = "off"
    model = last_model(path)
    compaction_index = -1
    reset_index = -1
    for index, entry in enumerate(path):
        kind = entry.type
        if kind == "compaction":
            compaction_index = index
        elif kind == "thinking_level_change":
            thinking_level = entry.data.get("thinkingLevel", thinking_level)
        elif kind == rules.reset_boundary:
            reset_index = index
    strict = rules != PI_RULES

    out: list[ContextMessage] = []

    def add(entry: Entry) -> None:
        if strict and _left_out(entry, rules):
            return
        message = entry_to_message(entry)
        if message is not None:
            out.append(ContextMessage(message, entry))

    if reset_index > compaction_index:
        for entry in path[reset_index + 1 :]:
            add(entry)
        return SessionContext(_clean_turns(out, rules), thinking_level, model, None)

    if compaction_index < 0:
        for entry in path:
            add(entry)
        return SessionContext(_clean_turns(out, rules) if strict else out, thinking_level, model, None)

    compaction = path[compaction_index]
    out.append(ContextMessage(compaction_message(compaction), None))
    retained = compaction.data.get("retainedTail")
    if isinstance(retained, list):
        out.extend(ContextMessage(m, None) for m in retained if isinstance(m, dict))
    else:
        first_kept = compaction.data.get("firstKeptEntryId")
        keeping = False
        for entry in path[:compaction_index]:
            if entry.id == first_kept:
                keeping = True
            if keeping:
                add(entry)
    stale = len(out)
    for entry in path[compaction_index + 1 :]:
        add(entry)
    if strict:
        out = _clean_turns(out, rules)
        stale = sum(1 for m in out if m.entry is None or m.entry.line is None
                    or (compaction.line is not None and m.entry.line < compaction.line))
    return SessionContext(out, thinking_level, model, compaction, stale)


def written_context(written: ContextSource) -> SessionContext:
    """`build_session_context` of a written file's active path (a `Session` read back to be verified), built
    once: the format's verify and the size check both need it. A file read back is only checked, never
    changed, so the context stays its context."""
    context = written.rebuilt_context
    if context is None:
        context = written.rebuilt_context = session_context(written)
    return context


def bash_execution_to_text(message: JsonObject) -> str:
    text = f"Ran `{message.get('command', '')}`\n"
    output = message.get("output")
    text += f"```\n{output}\n```" if output else "(no output)"
    exit_code = message.get("exitCode")
    if message.get("cancelled"):
        text += "\n\n(command cancelled)"
    elif exit_code is not None and exit_code != 0:
        text += f"\n\nCommand exited with code {exit_code}"
    if message.get("truncated") and message.get("fullOutputPath"):
        text += f"\n\n[Output truncated. Full output: {message['fullOutputPath']}]"
    return text


def _user_text(text: str, timestamp: JsonValue) -> JsonObject:
    return {"role": "user", "content": [{"type": "text", "text": text}], "timestamp": timestamp}


def convert_message(message: JsonObject) -> JsonObject | None:
    """One AgentMessage to an LLM message (pi's convertToLlm), or None when it is dropped."""
    role = message.get("role")
    if role in ("user", "assistant", "toolResult"):
        return message
    timestamp = message.get("timestamp")
    if role == "bashExecution":
        if message.get("excludeFromContext"):
            return None
        return _user_text(bash_execution_to_text(message), timestamp)
    if role == "custom":
        content = message.get("content")
        if isinstance(content, str):
            content = [{"type": "text", "text": content}]
        return {"role": "user", "content": content if isinstance(content, list) else [], "timestamp": timestamp}
    if role == "compactionSummary":
        summary = message.get("summary", "")
        if not summary and message.get("encryptedChars"):
            summary = encrypted_summary_note(message["encryptedChars"])
        return _user_text(COMPACTION_SUMMARY_PREFIX + summary + COMPACTION_SUMMARY_SUFFIX, timestamp)
    if role == "branchSummary":
        return _user_text(BRANCH_SUMMARY_PREFIX + message.get("summary", "") + BRANCH_SUMMARY_SUFFIX, timestamp)
    return None


def convert_to_llm(messages: list[JsonObject]) -> list[JsonObject]:
    out = []
    for message in messages:
        converted = convert_message(message)
        if converted is not None:
            out.append(converted)
    return out
