"""Plan many session files: read, plan (pure core), count prompt tokens exactly, estimate cost.

Files are planned in a process pool with a bounded window of work in flight, and rows stream out in
input order, so memory does not grow with the number of sessions.
"""

from __future__ import annotations

import dataclasses
import itertools
import logging
import os
from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

from batchcompact.agents import contracts, file_of, file_tools, get
from batchcompact.core.calls import SummaryCall
from batchcompact.core.context import build_session_context, rules_of
from batchcompact.core.handoff import STRATEGY as HANDOFF_STRATEGY
from batchcompact.core.jsontypes import JsonObject
from batchcompact.core.planner import CompactionPlan, CompactionSettings, Skip, prepare_compaction
from batchcompact.core.session import Session
from batchcompact.core.words import counted
from batchcompact.errors import (
    NotCompacted,
    SessionReadError,
    UsageError,
    internal_error_reason,
    reported_not_compacted,
)
from batchcompact.pipeline.statuses import PLAN_COMPACT, PLAN_ERROR, PLAN_SKIP, PLAN_SUMMARIZE

if TYPE_CHECKING:
    from batchcompact.core.branches import BranchPlan, BranchSettings, BranchSkip
    from batchcompact.core.triggers import Trigger
    from batchcompact.pipeline.executor import Executor

log = logging.getLogger(__name__)

BUILTIN = "builtin"

PLAN_COLUMNS = (
    "path",
    "format",
    "session_id",
    "status",
    "reason",
    "model",
    "context_window",
    "tokens_before",
    "tokens_after_est",
    "first_kept_entry_id",
    "first_kept_line",
    "turn_start_line",
    "split_turn",
    "messages_to_summarize",
    "turn_prefix_messages",
    "read_files",
    "modified_files",
    "calls",
    "prompt_tokens",
    "est_output_tokens",
    "summary_model",
    "est_cost_usd",
    "est_batch_cost_usd",
    "entries",
    "problems",
    "prune_results",
    "prune_tokens",
    "branches",
    "branch_calls",
    "branch_prompt_tokens",
    "branch_est_cost_usd",
    "window_source",
    "threshold",
)


@dataclass(frozen=True)
class PlanOptions:
    """What the shell adds to the core settings: the summary model and its prices."""

    summary_model: str | None = None  # None / "builtin" -> the built-in offline summarizer (free)
    pricing_file: str | None = None
    branch_reserve_tokens: int = 16384
    min_branch_tokens: int = 0
    # Settings still at their defaults, which pi's own settings.json may set for pi sessions
    # (`Agent.settings`, `Agent.settings_fields`); empty: the agent's settings are not read.
    agent_settings: tuple[str, ...] = ()

    def branch_settings(self, settings: CompactionSettings) -> BranchSettings:
        from batchcompact.core.branches import BRANCH_SUMMARY_MAX_TOKENS, BranchSettings

        return BranchSettings(
            reserve_tokens=self.branch_reserve_tokens,
            min_branch_tokens=self.min_branch_tokens,
            context_window=settings.context_window,
            instructions=settings.instructions,
            # pi's 2,048 for a branch summary, or the summary budget when it is smaller
            max_tokens=min(BRANCH_SUMMARY_MAX_TOKENS, settings.summary_budget),
        )


def read_session(path: str | Path, *, digest: bool = False) -> Session:
    """Read a session file of any registered format (`digest`: see `formats.detect.read_session`)."""
    from batchcompact.formats.detect import read_session as read_any

    return read_any(path, digest=digest)


def session_trigger(
    session: Session, settings: CompactionSettings, model: str | None, provider: str | None, pricing_file: str | None
) -> Trigger:
    """The window, its source and the agent's own threshold for a session (`Agent.trigger`, core/triggers.py)."""
    agent = get(session.agent)
    recorded = session.context_window
    table_window = max_output = None
    needs_table = agent.trigger_table_window and not settings.context_window and not recorded
    if model and (needs_table or agent.trigger_max_output):
        from batchcompact.pricing import PriceTable

        table = PriceTable.load(pricing_file)
        if needs_table:
            table_window = table.context_window(model, provider)
        if agent.trigger_max_output:
            max_output = table.max_output_tokens(model, provider)
    messages = (e.data.get("message") for e in session.entries if e.type == "message")
    return contracts.trigger(agent)(
        messages=(m for m in messages if isinstance(m, dict)),
        recorded_window=int(recorded) if recorded else None,
        table_window=table_window,
        max_output_tokens=max_output,
        override_window=settings.context_window,
        reserve_tokens=settings.reserve_tokens,
        agent_limits=session.agent_limits,
    )


def count_call_tokens(calls: list[SummaryCall], summary_model: str | None) -> list[SummaryCall]:
    """Fill each call's exact prompt token count (system + user prompt) for the summary model.

    Counts of every call's prompts are remembered across runs (`token_cache.py`): replanning the same bytes
    with the same settings builds the same prompts, so a rerun or a `run` after `plan` counts nothing.
    """
    from batchcompact.token_cache import count_prompt_tokens

    encoding_model = None if summary_model in (None, BUILTIN) else summary_model
    return [
        dataclasses.replace(call, prompt_tokens=count_prompt_tokens(call.system_prompt, call.user_prompt, encoding_model))
        for call in calls
    ]


def estimate_cost(
    calls: list[SummaryCall], est_output: int, summary_model: str | None, pricing_file: str | None
) -> tuple[float | None, float | None]:
    """(on-demand, batch-API) cost in USD; (0, 0) for the built-in summarizer; None when unpriced."""
    if summary_model in (None, BUILTIN):
        return 0.0, 0.0
    from batchcompact.pricing import PriceTable

    table = PriceTable.load(pricing_file)
    prompt = sum(c.prompt_tokens for c in calls)
    on_demand = table.cost(summary_model, input_tokens=prompt, output_tokens=est_output)
    batch = table.cost(summary_model, input_tokens=prompt, output_tokens=est_output, batch=True)
    return on_demand, batch


def plan_session(
    session: Session,
    settings: CompactionSettings,
    options: PlanOptions,
    prompt_tokens: list[int] | None = None,
) -> tuple[CompactionPlan | Skip | None, JsonObject]:
    """Plan one read session; returns the plan (None for an unreadable session) and its report row.

    `prompt_tokens`, when given, are the exact counts of the calls from an earlier planning of the same
    bytes (planning is deterministic), so the prompts are not tokenized a second time.
    """
    row = _base_row(session, options)
    if not session.compactable:
        row.update(status=PLAN_ERROR, reason=_first_error(session))
        return None, row
    settings, reason = _left_alone(session, settings, options)
    if reason is not None:
        row.update(status=PLAN_SKIP, reason=reason)
        return Skip(reason, None, settings.context_window, None), row
    handoff = settings.strategy == HANDOFF_STRATEGY
    # a handoff keeps no recent tail: the whole context goes into the document
    plan = _cut(session, dataclasses.replace(settings, keep_recent_tokens=1) if handoff else settings, options, row)
    if handoff and isinstance(plan, CompactionPlan):
        plan = _handoff(session, plan, settings)
    elif handoff and isinstance(plan, Skip):
        from batchcompact.core.handoff import ALREADY_A_HANDOFF, after_compaction, only_a_handoff

        path = session.path_entries()
        if only_a_handoff([m.message for m in build_session_context(path, rules_of(session)).messages]):
            plan = dataclasses.replace(plan, reason=ALREADY_A_HANDOFF)
        elif path and path[-1].type == "compaction":  # its summary and kept tail are what is handed off
            plan = after_compaction(path, settings, row.get("context_window"), row.get("threshold"), rules_of(session))
            if isinstance(plan, CompactionPlan):
                plan = _handoff(session, plan, settings)
    if isinstance(plan, Skip):
        row.update(status=PLAN_SKIP, reason=plan.reason, tokens_before=plan.tokens_before)
        return plan, row
    if prompt_tokens is not None and len(prompt_tokens) == len(plan.calls):
        calls = [dataclasses.replace(c, prompt_tokens=n) for c, n in zip(plan.calls, prompt_tokens, strict=True)]
    else:
        calls = count_call_tokens(plan.calls, options.summary_model)
    plan = dataclasses.replace(plan, calls=calls)
    row.update(_compact_fields(plan, options))
    return plan, row


def _base_row(session: Session, options: PlanOptions) -> JsonObject:
    """The session's plan row before anything is decided."""
    row: JsonObject = dict.fromkeys(PLAN_COLUMNS)
    row.update(
        path=session.path,
        format=session.agent,
        session_id=session.session_id,
        entries=len(session.entries),
        problems=len(session.problems),
        read_files=[],
        modified_files=[],
        calls=0,
        prompt_tokens=0,
        est_output_tokens=0,
        split_turn=False,
        messages_to_summarize=0,
        turn_prefix_messages=0,
        summary_model=options.summary_model or BUILTIN,
    )
    return row


def _first_error(session: Session) -> str:
    """The reason of an invalid session: the first error's line and problem (the row names the file)."""
    errors = session.errors
    more = f" (and {counted(len(errors) - 1, 'more problem')})" if len(errors) > 1 else ""
    first = errors[0]
    where = f"line {first.line}: " if first.line is not None else ""
    return f"{where}{first.message}{more}"


def _left_alone(session: Session, settings: CompactionSettings,
                options: PlanOptions) -> tuple[CompactionSettings, str | None]:
    """The settings for this session (its agent's own settings applied) and why it is not planned at all
    (a report-only agent, compaction disabled in the agent's settings, a sub-agent transcript), or None."""
    agent = get(session.agent)
    refused = session.not_writable  # a reader's reason why this file cannot be rewritten
    if agent.writer is None or refused:
        return settings, refused or reported_not_compacted(f"a {agent.display_name} transcript")
    if agent.settings and options.agent_settings:
        settings, disabled = contracts.settings(agent)(session, settings, options.agent_settings)
        if disabled:
            return settings, disabled
    if session.subagent and not settings.force:
        return settings, "sub-agent transcript"
    return settings, None


def _cut(session: Session, settings: CompactionSettings, options: PlanOptions,
         row: JsonObject) -> CompactionPlan | Skip:
    """Where the session is cut (or why not), from the agent's trigger; the row gets the window, the
    threshold and the branch plans."""
    from batchcompact.core.planner import session_model

    path = session.path_entries()
    provider, model = session_model(path)
    trigger = session_trigger(session, settings, model, provider, options.pricing_file)
    window = trigger.window
    agent_threshold = trigger.threshold if get(session.agent).own_threshold else None
    plan = prepare_compaction(path, settings, window, agent_threshold, file_tools=file_tools(),
                              rules=rules_of(session), cwd=session.cwd)
    row.update(
        model=model,
        context_window=window,
        window_source=trigger.window_source,
        threshold=settings.threshold(window, agent_threshold) if window else None,
    )
    row.update(describe_branch_plans(session, settings, options, window))
    return plan


def _handoff(session: Session, plan: CompactionPlan, settings: CompactionSettings) -> CompactionPlan | Skip:
    """The handoff of a session run would compact (core/handoff.py), for the formats whose writer can start
    a new session from it (`build_handoff`: pi's format and its descendants)."""
    from batchcompact.core.handoff import handoff_plan

    if contracts.handoff_writer(get(session.agent)) is None:
        return Skip(f"--strategy handoff: {get(session.agent).display_name} sessions cannot be handed off "
                    "(only pi's format and its descendants)", plan.tokens_before, plan.context_window, plan.model)
    return handoff_plan(plan, session.path_entries(), settings, rules_of(session), file_tools=file_tools())


def _compact_fields(plan: CompactionPlan, options: PlanOptions) -> JsonObject:
    """The row of a session to compact: the cut, the calls, their tokens and estimated cost."""
    calls = plan.calls
    est_output = sum(c.max_tokens for c in calls)  # each call's share of the summary budget
    cost, batch_cost = estimate_cost(calls, est_output, options.summary_model, options.pricing_file)
    return dict(
        status=PLAN_COMPACT,
        reason="handoff" if plan.strategy == HANDOFF_STRATEGY else "split turn" if plan.split_turn else "",
        tokens_before=plan.tokens_before,
        tokens_after_est=plan.tokens_after_est,
        first_kept_entry_id=plan.first_kept_entry_id,
        first_kept_line=plan.first_kept_line,
        turn_start_line=plan.turn_start_line,
        split_turn=plan.split_turn,
        messages_to_summarize=plan.messages_to_summarize,
        turn_prefix_messages=plan.turn_prefix_messages,
        read_files=plan.read_files,
        modified_files=plan.modified_files,
        calls=len(calls),
        prompt_tokens=sum(c.prompt_tokens for c in calls),
        est_output_tokens=est_output,
        est_cost_usd=cost,
        est_batch_cost_usd=batch_cost,
        prune_results=len(plan.prune),
        prune_tokens=sum(a.tokens for a in plan.prune),
    )


def plan_branches(session: Session, settings: CompactionSettings, options: PlanOptions,
                  window: int | None) -> list[BranchPlan | BranchSkip]:
    """Branch-summary plans (or skips) for every abandoned branch, with exact prompt token counts."""
    from batchcompact.core.branches import BranchPlan, plan_all_branches

    assert session.tree is not None  # Session.__post_init__ builds it
    results = plan_all_branches(session.tree, options.branch_settings(settings), window, file_tools=file_tools())
    out: list[BranchPlan | BranchSkip] = []
    for result in results:
        if isinstance(result, BranchPlan):
            result = dataclasses.replace(result, call=count_call_tokens([result.call], options.summary_model)[0])
        out.append(result)
    return out


def describe_branch_plans(
    session: Session, settings: CompactionSettings, options: PlanOptions, window: int | None
) -> JsonObject:
    from batchcompact.core.branches import BranchPlan

    branches = []
    calls = prompt = 0
    cost: float | None = 0.0
    # Branch summaries are a pi concept: a Claude/Codex "branch" is the history before a compaction.
    results = plan_branches(session, settings, options, window) if get(session.agent).branch_summaries else []
    for result in results:
        branch = result.branch
        item: JsonObject = {
            "leaf_id": branch.leaf.id,
            "leaf_line": branch.leaf.line,
            "ancestor_id": branch.ancestor.id if branch.ancestor is not None else None,
            "ancestor_line": branch.ancestor.line if branch.ancestor is not None else None,
            "entries": len(branch.entries),
            "tokens": branch.tokens,
            "status": PLAN_SUMMARIZE if isinstance(result, BranchPlan) else PLAN_SKIP,
            "reason": None if isinstance(result, BranchPlan) else result.reason,
            "prompt_tokens": 0,
            "est_cost_usd": 0.0,
        }
        if isinstance(result, BranchPlan):
            est_output = result.call.max_tokens  # the branch summary's budget
            one, _ = estimate_cost([result.call], est_output, options.summary_model, options.pricing_file)
            item.update(prompt_tokens=result.call.prompt_tokens, est_cost_usd=one)
            calls += 1
            prompt += result.call.prompt_tokens
            cost = None if cost is None or one is None else cost + one
        branches.append(item)
    return {"branches": branches, "branch_calls": calls, "branch_prompt_tokens": prompt, "branch_est_cost_usd": cost}


def plan_file(path: str, settings: CompactionSettings, options: PlanOptions) -> JsonObject:
    """Read and plan one file; every failure becomes an `error` row, never an exception."""
    try:
        if not os.path.exists(file_of(path)):  # listed by the driver, not visible here (another node) or removed since
            raise FileNotFoundError(path)
        session = read_session(path)
        return plan_session(session, settings, options)[1]
    except FileNotFoundError:
        from batchcompact.formats.scan import missing_file_reason

        row: JsonObject = dict.fromkeys(PLAN_COLUMNS)
        row.update(path=str(path), status=PLAN_ERROR, reason=missing_file_reason(path), read_files=[], modified_files=[])
        return row
    except UsageError:  # the command's settings (a broken price map), not this file: stops the command
        raise
    except NotCompacted as exc:  # an agent batchcompact only reports: left alone, as a refused file is
        row = dict.fromkeys(PLAN_COLUMNS)
        row.update(path=str(path), status=PLAN_SKIP, reason=str(exc), read_files=[], modified_files=[])
        return row
    except (OSError, SessionReadError) as exc:  # cannot be read as a session (empty, gzip, permissions, a
        # link loop, a missing optional package): in the words validate and show use
        from batchcompact.formats.scan import unreadable_reason

        row = dict.fromkeys(PLAN_COLUMNS)
        row.update(path=str(path), status=PLAN_ERROR, reason=unreadable_reason(str(path), exc), read_files=[],
                   modified_files=[])
        return row
    except Exception as exc:  # a bug on one file must not stop the others
        log.debug("planning %s failed", path, exc_info=True)  # the row says it in one line; -vv shows where
        row = dict.fromkeys(PLAN_COLUMNS)
        row.update(path=str(path), status=PLAN_ERROR, reason=internal_error_reason(exc), read_files=[], modified_files=[])
        return row


def plan_paths(paths: Iterable[str], settings: CompactionSettings, options: PlanOptions, jobs: int = 1,
               executor: Executor | None = None) -> Iterator[JsonObject]:
    """`batchcompact plan`: the plan row of every session file under `paths` (files, folders, globs; none
    found is a UsageError), in the walk's order (`iter_plan_rows`)."""
    from batchcompact.formats.scan import iter_session_files
    from batchcompact.pricing import PriceTable

    prices = PriceTable.load(options.pricing_file)  # a missing or broken price map: one usage error, not a row per file
    log.debug("settings: %s", settings)
    log.debug("summary model %s, prices from %s, %s", options.summary_model or BUILTIN, prices.source,
              f"up to {counted(jobs, 'process')}" if executor is None else type(executor).__name__)
    files = (str(item.path) for item in iter_session_files(paths, require_any=True))
    return _logged(iter_plan_rows(files, settings, options, jobs=jobs, executor=executor))


def _logged(rows: Iterator[JsonObject]) -> Iterator[JsonObject]:
    """The rows, each decision logged as it arrives (-v): why a session is compacted and where it is cut,
    or why it is skipped; -vv adds the row's figures."""
    for row in rows:
        path, status = row["path"], row["status"]
        if status == PLAN_COMPACT:
            log.info("%s: compact: %s tokens > threshold %s (window %s from %s); cut at line %s%s, %s messages "
                     "summarized in %s", path, f"{row['tokens_before'] or 0:,}", f"{row['threshold'] or 0:,}",
                     f"{row['context_window'] or 0:,}", row["window_source"],
                     row["first_kept_line"], " (a split turn)" if row["split_turn"] else "",
                     f"{row['messages_to_summarize'] or 0:,}", counted(row["calls"] or 0, "call"))
        else:
            log.info("%s: %s: %s", path, status, row["reason"])
        log.debug("%s: %s", path, {key: value for key, value in row.items()
                                   if value not in (None, [], 0) and key not in ("path", "status", "reason")})
        yield row


def iter_plan_rows(
    paths: Iterable[str], settings: CompactionSettings, options: PlanOptions, jobs: int = 1,
    executor: Executor | None = None
) -> Iterator[JsonObject]:
    """Plan rows in input order, planned by `executor` (default: `jobs` local processes), bounded in flight.

    Without an executor a single file is planned in this process: starting workers would cost more
    than it saves.
    """
    from batchcompact.pipeline.executor import LocalExecutor

    paths = iter(paths)
    head = list(itertools.islice(paths, 2))
    paths = itertools.chain(head, paths)
    if len(head) < 2:
        jobs = 1
    if jobs > 1:
        warm_up_before_forking(options.summary_model)
    return (executor or LocalExecutor(jobs)).map(plan_file, paths, settings, options)


def warm_up_before_forking(summary_model: str | None) -> None:
    """Before a pool forks its workers: load the encoding here, once, for them to share, when no token
    count cache can answer (every count is made then). With a cache, a worker loads it at its first
    miss, and a rerun or a `run` after `plan` loads none (~0.2-0.4 s of each command)."""
    from batchcompact.token_cache import answers_counts

    if not answers_counts():
        from batchcompact.tokenizer import warm_up

        warm_up(None if summary_model in (None, BUILTIN) else summary_model)
