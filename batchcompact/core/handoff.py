"""The handoff strategy (`run --strategy handoff`): instead of a compaction entry appended to the session, one
summary call over the session's whole context writes a handoff document (oh-my-pi's headings: goal, state,
files, next steps), and a new session holds only that document (written by the format's `build_handoff`).

Pure: plans and texts only. The original file is never touched; the pipeline writes the new one beside it.
"""

from __future__ import annotations

import dataclasses
import math
import uuid
from collections.abc import Mapping
from typing import TypeGuard

from batchcompact.core.calls import HANDOFF, SummaryCall
from batchcompact.core.context import ContextRules, build_session_context, convert_to_llm
from batchcompact.core.entries import Entry
from batchcompact.core.jsontypes import JsonObject
from batchcompact.core.planner import CompactionPlan, CompactionSettings, Skip, _file_lists
from batchcompact.core.prompts import (
    SUMMARIZATION_SYSTEM_PROMPT,
    build_handoff_prompt,
    format_file_operations,
)
from batchcompact.core.serialize import serialize_conversation

STRATEGY = "handoff"
# oh-my-pi's wrapper around the document in the new session (AgentSession.handoff, before 18.x committed
# handoffs as compaction entries): the custom_message's content
HANDOFF_OPEN = "<handoff-context>\n"
HANDOFF_CLOSE = (
    "\n</handoff-context>\n\n"
    "The above is a handoff document from a previous session. Use this context to continue the work seamlessly."
)
_NAMESPACE = uuid.UUID("6f1d2c8e-2b5a-4c3e-9a61-5d0f0b7c4e21")  # ours: handoff session ids


ALREADY_A_HANDOFF = "a handoff session with nothing after its handoff document"


def only_a_handoff(messages: list[JsonObject]) -> bool:
    """The context is a handoff document and nothing else (a session this strategy wrote, not yet resumed)."""
    return bool(messages) and all(m.get("role") == "custom" and m.get("customType") == HANDOFF for m in messages)


def mid_turn(messages: list[JsonObject]) -> str | None:
    """Why the context's last turn is not over (its tool calls wait for results), or None."""
    if not messages:
        return None
    last = messages[-1]
    role = last.get("role")
    if role == "toolResult":
        return "its last message is a tool result the agent has not answered yet"
    if role == "assistant" and any(isinstance(b, dict) and b.get("type") == "toolCall" for b in last.get("content") or ()):
        return "its last assistant turn has tool calls without results"
    return None


def handoff_session_id(session_id: str, leaf_id: str | None) -> str:
    """The new session's id: the same for the same session and leaf (a rerun finds what it wrote)."""
    return str(uuid.uuid5(_NAMESPACE, f"{session_id}\x00{leaf_id or ''}"))


def handoff_plan(plan: CompactionPlan, path: list[Entry], settings: CompactionSettings,
                 rules: ContextRules, *,
                 file_tools: Mapping[str, tuple[str, tuple[str, ...]]]) -> CompactionPlan | Skip:
    """`plan` turned into a handoff: one call over the whole context the agent would rebuild (an earlier
    compaction's summary as the previous summary, its kept tail and everything after it), within the
    summary budget; or why the session cannot be handed off now."""
    context = build_session_context(path, rules)
    messages = [m.message for m in context.messages]
    waiting = mid_turn(messages)
    if waiting is not None:
        return Skip(f"mid-turn: {waiting}; hand off once the turn has ended", plan.tokens_before,
                    plan.context_window, plan.model)
    previous = context.compaction.data.get("summary") if context.compaction is not None else None
    body = [m for m in messages if m.get("role") != "compactionSummary"]
    if only_a_handoff(body):
        return Skip(ALREADY_A_HANDOFF, plan.tokens_before, plan.context_window, plan.model)
    llm = convert_to_llm(body)
    text = serialize_conversation(llm)
    if not text:
        return Skip("nothing to hand off: the context holds no conversation", plan.tokens_before,
                    plan.context_window, plan.model)
    # the document is the whole handover: within the summary budget (--summary-budget), and never above what
    # a compaction's history summary may take (pi: 0.8 x reserve_tokens)
    max_tokens = max(min(settings.summary_budget, math.floor(0.8 * settings.reserve_tokens)), 1)
    call = SummaryCall(
        kind=HANDOFF,
        system_prompt=SUMMARIZATION_SYSTEM_PROMPT,
        user_prompt=build_handoff_prompt(text, previous, settings.instructions, budget=max_tokens),
        max_tokens=max_tokens,
        messages=tuple(llm),
        previous_summary=previous,
        instructions=settings.instructions,
    )
    read_files, modified_files = _file_lists(context.compaction, body, file_tools)
    return dataclasses.replace(plan, calls=[call], split_turn=False, turn_start_line=None, turn_prefix_messages=0,
                               messages_to_summarize=len(body), history_fallback=None, prune=[], strategy=STRATEGY,
                               read_files=read_files, modified_files=modified_files, tokens_after_est=max(
                                   call.max_tokens, 1))


def after_compaction(path: list[Entry], settings: CompactionSettings, window: int | None,
                     threshold: int | None, rules: ContextRules) -> CompactionPlan | Skip:
    """The base of a handoff for a session whose last entry is a compaction (a compaction plan has none: it
    would be "already compacted"): its summary and kept tail are the context handed off, under the same
    trigger decision."""
    from batchcompact.core.planner import _context_tokens, session_model

    provider, model = session_model(path)
    _, tokens_before = _context_tokens(path, rules)  # the usage before the compaction is stale
    trigger_tokens = tokens_before
    if not settings.force:
        if window is None:
            return Skip(f"unknown context window for model {model!r}; pass --context-window N", tokens_before,
                        None, model)
        if threshold is not None and trigger_tokens <= threshold:
            return Skip(f"below threshold ({trigger_tokens:,} <= {threshold:,} tokens)", tokens_before, window, model)
    last = path[-1]
    return CompactionPlan(first_kept_entry_id=last.id, first_kept_index=len(path) - 1, first_kept_line=last.line,
                          turn_start_line=None, split_turn=False, tokens_before=tokens_before, tokens_after_est=0,
                          messages_to_summarize=0, turn_prefix_messages=0, read_files=[], modified_files=[], calls=[],
                          previous_summary=last.data.get("summary"), history_fallback=None, context_window=window,
                          model=model, leaf_id=last.id, provider=provider, threshold=threshold)


def is_handoff(plan: object) -> TypeGuard[CompactionPlan]:
    return isinstance(plan, CompactionPlan) and plan.strategy == STRATEGY


def handoff_document(plan: CompactionPlan, text: str) -> str:
    """The document: the summary's text and the session's file lists (as a compaction summary ends)."""
    if plan.file_tags is not None:
        return text.strip() + plan.file_tags
    return text.strip() + format_file_operations(plan.read_files, plan.modified_files)


def handoff_content(document: str) -> str:
    """The new session's custom_message content: the document in oh-my-pi's wrapper."""
    return HANDOFF_OPEN + document + HANDOFF_CLOSE
