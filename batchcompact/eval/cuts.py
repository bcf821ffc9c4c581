"""The compactions eval scores: planned as `run` would plan them, placed inside a session (`--cut-at`), or
already in the file (`--existing`).

A `Cut` is one compaction seen from both sides: the messages it replaced (everything before the first
kept entry on the session's full path: the probes come from there), the messages the agent keeps after
the summary, the turns that followed it (its future, where the session goes on), the summary calls a
summarizer makes for that span, and, for a compaction already in the file, the summary the agent recorded.

The full path: the active path, extended across Claude Code's compaction boundaries (a boundary starts a
new root; its `logicalParentUuid` names the last line before it), so the history a Claude summary
replaced is on it, as pi's and Codex's are on theirs. Earlier compaction summaries are never part of a
replaced span (they are summaries, not history).

Pure: sessions in, values out; no I/O.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field

from batchcompact.agents import file_tools
from batchcompact.core.context import (
    build_session_context,
    compaction_message,
    convert_to_llm,
)
from batchcompact.core.cutpoint import CutPoint
from batchcompact.core.entries import Entry
from batchcompact.core.jsontypes import JsonObject
from batchcompact.core.planner import (
    CompactionPlan,
    CompactionSettings,
    Skip,
    prepare_compaction,
    summary_messages,
)
from batchcompact.core.session import Session
from batchcompact.core.tokens import estimate_context_tokens, estimate_tokens


@dataclass
class Cut:
    """One compaction to score."""

    path: str
    session_id: str | None
    agent: str  # the agent whose reader read the session (the rows' `format` column)
    number: int  # 1-based: the compaction's place among the session's compactions (planned: 1)
    line: int | None  # the compaction entry's line (existing) or the first kept entry's line (planned)
    replaced: list[JsonObject]  # LLM messages of the span the compaction replaced
    kept: list[JsonObject]  # LLM messages the agent keeps after the summary
    tokens_before: int
    plan: CompactionPlan | None  # the calls a summarizer makes for this span (None: nothing to call)
    recorded_summary: str | None = None  # the agent's own summary (existing compactions only)
    context_prefix: list[str] = field(default_factory=list)  # texts the agent puts before the summary
    cwd: str | None = None
    note: str | None = None  # why a summarizer cannot be run here, when it cannot
    future: list[JsonObject] | None = None  # the turns after the cut (None: the session ends there)
    cut_at: int | None = None  # `--cut-at`: the percent of the session's model turns before the cut
    skip: str | None = None  # why no compaction could be placed here (`--cut-at`): a row with the reason
    hindsight: bool = False  # turns follow the cut: its hindsight probes were read from them
    previous_summary: str | None = None  # the summary the span starts from (docs/eval.md, "Carry-over")
    history: tuple[str, ...] = ("", "", "", "")  # the replaced history's text: its start, its end, its
    # distinct words unchosen, its user messages and names (the baselines' material)


def full_path(session: Session) -> list[Entry]:
    """The active path, with the history before each Claude Code compaction boundary put back in front
    (`SessionTree.history`)."""
    assert session.tree is not None
    return session.tree.history()


def llm_messages(entries: list[Entry]) -> list[JsonObject]:
    """The LLM messages of a range of entries, compaction summaries left out (as the planner sees them)."""
    return convert_to_llm(summary_messages(entries))


def _signature(message: JsonObject) -> str:
    return json.dumps([message.get("role"), message.get("content")], sort_keys=True, default=str)


def without_copies(replaced: list[JsonObject], kept: list[JsonObject]) -> list[JsonObject]:
    """The replaced messages without the originals of kept copies: a Claude Code or Codex compaction that
    batchcompact wrote re-appends its kept tail after the summary, so the span before it ends with the very
    messages that were kept, not replaced (only that exact ending is dropped)."""
    n = len(kept)
    if not n or n > len(replaced):
        return replaced
    if [_signature(m) for m in replaced[-n:]] == [_signature(m) for m in kept]:
        return replaced[:-n]
    return replaced


def _index(path: list[Entry], entry_id: object, default: int) -> int:
    for index, entry in enumerate(path):
        if entry.id == entry_id:
            return index
    return default


def existing_cuts(session: Session, settings: CompactionSettings) -> list[Cut]:
    """Every compaction already on the session's full path, each with the calls that re-summarize its span."""
    path = full_path(session)
    cuts = []
    number = 0
    previous: str | None = None  # the summary of the compaction before this one on the path
    for k, entry in enumerate(path):
        if entry.type != "compaction":
            continue
        number += 1
        earlier, previous = previous, _summary_text(entry)
        first_kept = _index(path[:k], entry.data.get("firstKeptEntryId"), k)
        before = path[:k]
        context = build_session_context(before)
        recorded = entry.data.get("tokensBefore")
        tokens_before = (
            recorded
            if isinstance(recorded, int) and recorded > 0
            else estimate_context_tokens([m.message for m in context.messages]).tokens
        )
        summary = entry.data.get("summary")
        summary = summary if isinstance(summary, str) else ""
        prefix = entry.data.get("prefixUserMessages")
        kept = llm_messages(path[first_kept:k])
        cut = Cut(
            path=session.path,
            session_id=session.session_id,
            agent=session.agent,
            number=number,
            line=entry.line,
            replaced=without_copies(llm_messages(path[:first_kept]), kept),
            kept=kept,
            tokens_before=tokens_before,
            plan=None,
            recorded_summary=summary,
            context_prefix=[p for p in prefix if isinstance(p, str)] if isinstance(prefix, list) else [],
            cwd=session.cwd,
            previous_summary=earlier,
        )
        cut.future = future_after(path, k + 1)
        if not summary.strip():
            cut.note = "the recorded summary is empty or encrypted (a remote compaction): nothing to read"
        plan = (prepare_compaction(before, settings, cut=CutPoint(first_kept, -1, False), file_tools=file_tools(),
                                   cwd=session.cwd)
                if first_kept > 0 else None)
        if isinstance(plan, CompactionPlan):
            cut.plan = plan
        cuts.append(cut)
    return cuts


def future_after(path: list[Entry], start: int) -> list[JsonObject] | None:
    """The LLM messages after a cut, up to the session's next compaction (None: nothing after it)."""
    end = start
    while end < len(path) and path[end].type != "compaction":
        end += 1
    messages = llm_messages(path[start:end])
    return messages or None


def turn_starts(path: list[Entry]) -> list[int]:
    """The index on `path` of each model turn (an assistant message): where a cut can be placed."""
    return [i for i, e in enumerate(path) if i > 0 and e.type == "message"
            and (e.data.get("message") or {}).get("role") == "assistant"]


MIN_TURNS = 4  # a session with fewer model turns is too short to cut


def cut_index(path: list[Entry], percent: int) -> int | None:
    """Where `--cut-at PERCENT` cuts: before the model turn that many percent into the session."""
    starts = turn_starts(path)
    if len(starts) < MIN_TURNS:
        return None
    number = min(max(-(-len(starts) * percent // 100), 1), len(starts) - 1)  # never the first or past the last
    return starts[number]


def planned_cut(session: Session, plan: CompactionPlan | Skip | None) -> Cut | None:
    """The compaction `run` would make (`plan` from `pipeline.planning.plan_session`), or None."""
    if not isinstance(plan, CompactionPlan):
        return None
    path = full_path(session)
    first_kept = _index(path, plan.first_kept_entry_id, -1)
    if first_kept < 0:
        return None
    return Cut(
        path=session.path,
        session_id=session.session_id,
        agent=session.agent,
        number=1,
        line=plan.first_kept_line,
        replaced=llm_messages(path[:first_kept]),
        kept=llm_messages(path[first_kept:]),
        tokens_before=plan.tokens_before,
        plan=plan,
        cwd=session.cwd,
        previous_summary=plan.previous_summary or _previous_summary(path[:first_kept]),
    )


def _summary_text(entry: Entry) -> str | None:
    summary = entry.data.get("summary")
    return summary if isinstance(summary, str) and summary.strip() else None


def _previous_summary(path: list[Entry]) -> str | None:
    """The newest compaction summary on `path` (the one a span after it starts from)."""
    for entry in reversed(path):
        if entry.type == "compaction":
            return _summary_text(entry)
    return None


def context_messages(cut: Cut, summary: str | None) -> list[JsonObject]:
    """The compacted context as the agent rebuilds it: earlier prompts it re-adds, the summary, the kept tail
    (`summary` None: no summary message at all)."""
    prefix = [{"role": "user", "content": [{"type": "text", "text": t}]} for t in cut.context_prefix]
    if summary is None:
        return prefix + cut.kept
    summary_message = convert_to_llm([compaction_message(Entry({"type": "compaction", "summary": summary}, None))])
    return prefix + summary_message + cut.kept


def context_tokens(messages: list[JsonObject]) -> int:
    """chars/4, as the planner estimates a context."""
    return sum(estimate_tokens(m) for m in messages)
