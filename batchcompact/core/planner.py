"""Planning a compaction: pi's `prepareCompaction` (reference 3.4) with the FIX boundary, as a pure value.

Given a root-first path and settings, `prepare_compaction` returns a `CompactionPlan` or a `Skip` with a
reason. No I/O, no model call, no clock. Fixes over pi (docs/compaction.md): a summary of nothing is never
planned; no false split turn after a metadata entry; the previous summary survives a split turn with no
history; custom instructions reach both calls of a split turn.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field

from batchcompact.core.calls import HISTORY, TURN_PREFIX, SummaryCall
from batchcompact.core.context import (
    PI_RULES,
    ContextRules,
    build_session_context,
    compaction_message,
    convert_to_llm,
    entry_to_message,
    last_model,
)
from batchcompact.core.cutpoint import CutPoint, find_cut_point
from batchcompact.core.defaults import (
    DEFAULT_KEEP_RECENT_TOKENS,
    DEFAULT_RESERVE_TOKENS,
    DEFAULT_SUMMARY_BUDGET,
)
from batchcompact.core.entries import Entry
from batchcompact.core.fileops import FileOps, FileTools
from batchcompact.core.filetags import file_tags
from batchcompact.core.jsontypes import JsonObject
from batchcompact.core.prompts import (
    NO_PRIOR_HISTORY,
    SPLIT_TURN_SEPARATOR,
    SUMMARIZATION_SYSTEM_PROMPT,
    build_summary_prompt,
    build_turn_prefix_prompt,
)
from batchcompact.core.pruning import PruneAction, plan_pruning
from batchcompact.core.serialize import serialize_conversation
from batchcompact.core.tokens import estimate_context_tokens, estimate_tokens

# An upper bound some callers cap their output estimate by (eval's cost check). The planner's own estimates
# take each call's max_tokens: the summary budget it was given (`summary_budgets`).
# A session with no entry yet (pi's header alone: a session just started). `validate` says it in the same
# words, as a warning: valid, nothing to compact.
EMPTY_SESSION = "empty session (no entries yet)"

EST_OUTPUT_TOKENS = {HISTORY: 2000, TURN_PREFIX: 1000, "branch": 1000}
# What a split turn's prefix summary gets of the budget; the history summary the rest.
TURN_PREFIX_SHARE = 1 / 3
# Never less than a summary in the compact layout needs (a heading only where there is something to say:
# docs/summaries.md, "The budget"), whatever the file tags take; the tags take at most `TAGS_SHARE` of the
# budget, so at the smallest budget (200) the history, a split turn's prefix and the separator still fit.
MIN_HISTORY_TOKENS = 50
MIN_PREFIX_TOKENS = 25
TAGS_SHARE = 0.5
# At most this many summary tokens per token of a split turn's prefix (its serialized text): a summary
# compresses; the built-in wrote 180 tokens of a 603-token share for a ~710-token prefix (eval's tuning set,
# synth:long-refactor-codex cut at 60%).
PREFIX_PER_TOKEN = 0.5


def summary_budgets(budget: int, tags_tokens: int, split: bool, has_history: bool,
                    prefix_tokens: int | None = None, fallback_tokens: int = 0) -> tuple[int, int]:
    """(history max_tokens, turn-prefix max_tokens) that keep the stored summary within `budget` tokens: the
    file tags (`tags_tokens`, at most `TAGS_SHARE` of the budget: core/filetags.py) and the split-turn
    separator come off first, never below a quarter of the budget for the text nor below what the compact
    layout needs (`MIN_HISTORY_TOKENS`, `MIN_PREFIX_TOKENS`), which the tags' share leaves at every budget
    from the smallest (200) up. A split turn's prefix gets a third of
    the rest, but no more than `PREFIX_PER_TOKEN` of its own text (`prefix_tokens`): a short prefix cannot
    use a third of 2,000 tokens, and what it cannot use goes to the history. A split turn with no history
    to summarize: the first value is what the text standing in for it may take (the previous summary, or
    "No prior history.": `fallback_tokens`, at most half the room), the prefix the rest."""
    room = max(budget - tags_tokens, budget // 4, 1)
    if not split:
        return max(room, MIN_HISTORY_TOKENS), max(room, MIN_PREFIX_TOKENS)
    room = max(room - estimate_text_tokens(SPLIT_TURN_SEPARATOR), 2)
    if not has_history:  # the text standing in for the history (`fallback_tokens`) at most half, the prefix the rest
        fallback = min(fallback_tokens, room // 2)
        return fallback, max(room - fallback, MIN_PREFIX_TOKENS)
    share = int(room * TURN_PREFIX_SHARE)
    if prefix_tokens is not None:
        share = min(share, int(prefix_tokens * PREFIX_PER_TOKEN))
    prefix = max(share, MIN_PREFIX_TOKENS)
    return max(room - prefix, MIN_HISTORY_TOKENS), prefix


def whole_lines(text: str, tokens: int) -> str:
    """`text` within `tokens` (chars/4): its first whole lines that fit, then "…"."""
    if estimate_text_tokens(text) <= tokens:
        return text
    kept, size = [], 2
    for line in text.splitlines():
        if size + len(line) + 1 > tokens * 4:
            break
        kept.append(line)
        size += len(line) + 1
    return "\n".join(kept).rstrip() + "\n…" if kept else "…"


def estimate_text_tokens(text: str) -> int:
    """chars/4 rounded up: how the summaries' lengths are estimated and measured (`eval`)."""
    return -(-len(text) // 4)


@dataclass(frozen=True)
class CompactionSettings:
    reserve_tokens: int = DEFAULT_RESERVE_TOKENS
    keep_recent_tokens: int = DEFAULT_KEEP_RECENT_TOKENS
    context_window: int | None = None  # overrides the model's window
    threshold_percent: float | None = None
    threshold_tokens: int | None = None
    force: bool = False
    instructions: str | None = None
    prune_tool_outputs: bool = False
    fix_false_split: bool = True
    summary_budget: int = DEFAULT_SUMMARY_BUDGET  # tokens of the whole stored summary (docs/summaries.md)
    strategy: str = "compact"  # or "handoff": a new session from a handoff document (core/handoff.py)

    def threshold(self, window: int, agent_default: int | None = None) -> int:
        """Compact when tokens > threshold: --threshold-tokens, else --threshold-percent, else the agent's
        own rule (`agent_default`, core/triggers.py), else window - reserve (pi's rule)."""
        if self.threshold_tokens is not None and self.threshold_tokens > 0:
            return min(max(int(self.threshold_tokens), 1), max(window - 1, 1))
        if self.threshold_percent is not None and self.threshold_percent > 0:
            pct = min(max(self.threshold_percent, 1), 99)
            return math.floor(window * (pct / 100))  # oh-my-pi's order of operations (its thresholdPercent)
        if agent_default is not None:
            return agent_default
        return window - self.reserve_tokens


@dataclass(frozen=True)
class Skip:
    """Nothing to do for this session, and why."""

    reason: str
    tokens_before: int | None = None
    context_window: int | None = None
    model: str | None = None


@dataclass(frozen=True)
class CompactionPlan:
    first_kept_entry_id: str
    first_kept_index: int  # index into the path
    first_kept_line: int | None
    turn_start_line: int | None
    split_turn: bool
    tokens_before: int
    tokens_after_est: int
    messages_to_summarize: int
    turn_prefix_messages: int
    read_files: list[str]
    modified_files: list[str]
    calls: list[SummaryCall]
    previous_summary: str | None
    history_fallback: str | None  # text used as the history part when it needs no call
    context_window: int | None
    model: str | None
    leaf_id: str | None
    provider: str | None = None  # the session's, with `model`
    boundary_start: int = 0  # path index where the summarized span starts (after the previous compaction)
    pi_split_turn: bool = False  # pi's cut is a split turn (`split_turn`: and the turn's prefix has text)
    strategy: str = "compact"  # or "handoff" (core/handoff.py), as `CompactionSettings.strategy`
    prune: list[PruneAction] = field(default_factory=list)  # tool outputs to replace in the kept region
    threshold: int | None = None  # the trigger threshold for this window (None: window unknown)
    # the `<read-files>`/`<modified-files>` tags the stored summary ends with (core/filetags.py); None: the
    # whole lists as pi writes them (`prompts.format_file_operations`)
    file_tags: str | None = None


def session_model(path: list[Entry]) -> tuple[str | None, str | None]:
    """(provider, model id) of the last model_change or assistant message on the path."""
    model = last_model(path)
    return (model or {}).get("provider"), (model or {}).get("modelId")


def summary_messages(entries: list[Entry]) -> list[JsonObject]:
    """The messages of a range as compaction sees them; FIX skips earlier compaction entries."""
    out = []
    for entry in entries:
        if entry.type == "compaction":
            continue
        message = entry_to_message(entry)
        if message is not None:
            out.append(message)
    return out


def prepare_compaction(
    path: list[Entry],
    settings: CompactionSettings,
    context_window: int | None = None,
    agent_threshold: int | None = None,
    cut: CutPoint | None = None,
    *,
    file_tools: FileTools,
    rules: ContextRules = PI_RULES,
    cwd: str | None = None,
) -> CompactionPlan | Skip:
    """Plan the compaction of the active path `path` (root first). `agent_threshold` is the agent's own
    auto-compaction point for `context_window` (core/triggers.py); None: pi's window - reserve.

    `cut`, when given, is where an earlier compaction cut this path (`batchcompact eval --existing`
    re-summarizes the same span): it replaces pi's cut-point search and the trigger check. `file_tools`: the
    tools whose calls name files (`batchcompact.agents.file_tools()`), for the plan's file lists. `rules`:
    the context the trigger measures is the one the session's agent rebuilds (core/context.py). `cwd`: the
    session's working folder, which the summary's file tags write paths relative to (core/filetags.py)."""
    provider, model_id = session_model(path)
    window = settings.context_window or context_window
    if not path:
        return Skip(EMPTY_SESSION, 0, window, model_id)
    if path[-1].type == "compaction":
        return Skip("already compacted", None, window, model_id)

    tokens_before, trigger_tokens = _context_tokens(path, rules)
    threshold = settings.threshold(window, agent_threshold) if window else None
    if not settings.force and cut is None:
        if window is None:
            return Skip(
                (f"unknown context window for model {model_id!r}" if model_id else
                 "unknown context window: the session names no model") + "; pass --context-window N",
                tokens_before,
                None,
                model_id,
            )
        if threshold is not None and trigger_tokens <= threshold:
            return Skip(f"below threshold ({trigger_tokens:,} <= {threshold:,} tokens)", tokens_before, window, model_id)

    boundary_start, previous = _since_last_compaction(path)
    if cut is None:
        cut = find_cut_point(
            path, boundary_start, len(path), settings.keep_recent_tokens, fix_false_split=settings.fix_false_split
        )
    first_kept = path[cut.first_kept_index] if cut.first_kept_index < len(path) else None
    if first_kept is None or first_kept.id is None:
        return Skip("nothing to compact (no entry to keep)", tokens_before, window, model_id)

    history_end = cut.turn_start_index if cut.is_split_turn else cut.first_kept_index
    history = summary_messages(path[boundary_start:history_end])
    prefix = summary_messages(path[cut.turn_start_index : cut.first_kept_index]) if cut.is_split_turn else []
    history_llm = convert_to_llm(history)
    prefix_llm = convert_to_llm(prefix)
    history_text = serialize_conversation(history_llm)
    prefix_text = serialize_conversation(prefix_llm)
    split = cut.is_split_turn and bool(prefix_text)
    if not history_text and not split:
        since = "since the last compaction " if previous is not None else ""
        return Skip(
            f"nothing to summarize: everything {since}fits in --keep-recent-tokens ({settings.keep_recent_tokens:,})",
            tokens_before,
            window,
            model_id,
        )

    previous_summary = previous.data.get("summary") if previous is not None else None
    read_files, modified_files = _file_lists(previous, history + (prefix if cut.is_split_turn else []), file_tools)
    tags_text = file_tags(read_files, modified_files, cwd, max_tokens=int(settings.summary_budget * TAGS_SHARE))
    tags = estimate_text_tokens(tags_text)
    calls, history_fallback = _summary_calls(settings, previous_summary, history_text, history_llm,
                                             prefix_text if split else "", prefix_llm, tags,
                                             listed=tuple(dict.fromkeys(read_files + modified_files)), cwd=cwd)
    prune = plan_pruning(path, cut.first_kept_index) if settings.prune_tool_outputs else []
    kept_tokens = _kept_tokens(path[cut.first_kept_index :], prune)
    if threshold is not None and kept_tokens > threshold and settings.strategy == "compact":
        # the rebuilt context would fail verification ("still above the threshold") after a paid call
        return Skip(
            f"no cut brings it under the threshold (what it must keep, from line {first_kept.line}, is "
            f"~{kept_tokens:,} tokens alone; threshold {threshold:,}): nothing is summarized",
            tokens_before,
            window,
            model_id,
        )
    turn_start = path[cut.turn_start_index] if split else None
    return CompactionPlan(
        first_kept_entry_id=first_kept.id,
        first_kept_index=cut.first_kept_index,
        first_kept_line=first_kept.line,
        turn_start_line=turn_start.line if turn_start is not None else None,
        split_turn=split,
        tokens_before=tokens_before,
        tokens_after_est=_tokens_after(path[cut.first_kept_index :], calls, prune, tags),
        messages_to_summarize=len(history),
        turn_prefix_messages=len(prefix) if split else 0,
        read_files=read_files,
        modified_files=modified_files,
        calls=calls,
        previous_summary=previous_summary,
        history_fallback=history_fallback,
        context_window=window,
        model=model_id,
        leaf_id=path[-1].id,
        provider=provider,
        boundary_start=boundary_start,
        pi_split_turn=cut.is_split_turn,
        prune=prune,
        threshold=threshold,
        file_tags=tags_text,
    )


def _context_tokens(path: list[Entry], rules: ContextRules = PI_RULES) -> tuple[int, int]:
    """(estimated context tokens of the path, the tokens the trigger compares: usage-based where known), of
    the context the session's agent rebuilds (`rules`: oh-my-pi's for its sessions)."""
    context = build_session_context(path, rules)
    return estimate_context_tokens([m.message for m in context.messages]).tokens, context.trigger_tokens()


def _since_last_compaction(path: list[Entry]) -> tuple[int, Entry | None]:
    """(index where the span to summarize starts, the last compaction on the path or None): after the last
    compaction, or at the first entry it kept (its kept tail is summarized again, as pi does)."""
    prev_index = -1
    for index in range(len(path) - 1, -1, -1):
        if path[index].type == "compaction":
            prev_index = index
            break
    boundary_start = prev_index + 1
    previous = path[prev_index] if prev_index >= 0 else None
    if previous is not None:
        kept_id = previous.data.get("firstKeptEntryId")
        for index in range(prev_index):
            if path[index].id == kept_id:
                boundary_start = index
                break
    return boundary_start, previous


def _file_lists(previous: Entry | None, messages: list[JsonObject],
                file_tools: FileTools) -> tuple[list[str], list[str]]:
    """(read, modified) files: those the previous compaction recorded (unless a hook wrote it), then the
    summarized messages' tool calls."""
    file_ops = FileOps(file_tools)
    if previous is not None and not previous.data.get("fromHook"):
        file_ops.add_details(previous.data.get("details"))
    for message in messages:
        file_ops.add_message(message)
    return file_ops.lists()


def _summary_calls(settings: CompactionSettings, previous_summary: str | None, history_text: str,
                   history_llm: list[JsonObject], prefix_text: str,
                   prefix_llm: list[JsonObject], tags_tokens: int = 0,
                   listed: tuple[str, ...] = (), cwd: str | None = None) -> tuple[list[SummaryCall], str | None]:
    """The model calls: the history (when there is any) and the split turn's prefix (when `prefix_text`);
    with no history, the text that stands in for its summary. Each call's max_tokens is its share of the
    summary budget (`summary_budgets`), never more than pi's 0.8 / 0.5 x reserve_tokens. `listed`: the files
    the summary's tags will list (meta["listed_files"]: the built-in need not list them again); meta["summary_budget"]:
    the whole summary's budget, which the built-in's layout scales with (docs/summaries.md, "The budget")."""
    calls: list[SummaryCall] = []
    history_fallback = None
    fallback = previous_summary or NO_PRIOR_HISTORY  # with no history, it stands in for the history's summary
    history_budget, prefix_budget = summary_budgets(settings.summary_budget, tags_tokens, bool(prefix_text),
                                                    bool(history_text), estimate_text_tokens(prefix_text),
                                                    estimate_text_tokens(fallback))
    if history_text:
        calls.append(
            SummaryCall(
                kind=HISTORY,
                system_prompt=SUMMARIZATION_SYSTEM_PROMPT,
                user_prompt=build_summary_prompt(history_text, previous_summary, settings.instructions,
                                                 budget=min(history_budget, math.floor(0.8 * settings.reserve_tokens))),
                max_tokens=max(min(history_budget, math.floor(0.8 * settings.reserve_tokens)), 1),
                messages=tuple(history_llm),
                previous_summary=previous_summary,
                instructions=settings.instructions,
                meta={"listed_files": listed, "summary_budget": settings.summary_budget, "cwd": cwd},
            )
        )
    else:
        # pi sends "No prior history." and drops the previous summary here; we keep it, within its share of
        # the budget (its first lines that fit)
        history_fallback = whole_lines(fallback, history_budget) if prefix_text else fallback
    if prefix_text:
        calls.append(
            SummaryCall(
                kind=TURN_PREFIX,
                system_prompt=SUMMARIZATION_SYSTEM_PROMPT,
                user_prompt=build_turn_prefix_prompt(prefix_text, settings.instructions,
                                                     budget=min(prefix_budget, math.floor(0.5 * settings.reserve_tokens))),
                max_tokens=max(min(prefix_budget, math.floor(0.5 * settings.reserve_tokens)), 1),
                messages=tuple(prefix_llm),
                instructions=settings.instructions,
                meta={"listed_files": listed, "summary_budget": settings.summary_budget, "cwd": cwd},
            )
        )
    return calls, history_fallback


def _kept_tokens(kept: list[Entry], prune: list) -> int:
    """Estimated tokens of the kept entries, less what pruning removes: the context's floor, whatever the
    summary."""
    kept_tokens = 0
    for entry in kept:
        message = compaction_message(entry) if entry.type == "compaction" else entry_to_message(entry)
        if message is not None and entry.type != "compaction":
            kept_tokens += estimate_tokens(message)
    return kept_tokens - sum(a.tokens for a in prune)


def _tokens_after(kept: list[Entry], calls: list[SummaryCall], prune: list, tags_tokens: int = 0) -> int:
    """Estimated context after the compaction: the kept entries (less what pruning removes) and the
    summaries at their expected length."""
    summary_est = sum(c.max_tokens for c in calls) + tags_tokens  # the budget: the built-in fills it
    return _kept_tokens(kept, prune) + summary_est
