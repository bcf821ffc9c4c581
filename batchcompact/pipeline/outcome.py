"""Turning a session's summaries into written entries: apply (pure builders), write, verify.

A `PreparedSession` (its plan, branch plans, fingerprint, report row) and the summaries bought for it
go in; `OutcomeWriter.write` builds the new lines with the core's pure builders and the format's own
`build_compaction`, and persists them through the atomic, verifying writer. `write_outcome` classifies
what happened (compacted, changed during the run, failed) the same way wherever it runs: in the run
loop's process, or in a worker that compacts the session where it was read (pipeline/session_task.py).
"""

from __future__ import annotations

import dataclasses
import logging
import os
from collections import Counter
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import TYPE_CHECKING, cast

from batchcompact.agents import contracts, get
from batchcompact.core.apply import compose_summary, usage_record
from batchcompact.core.context import written_context
from batchcompact.core.handoff import handoff_document, is_handoff
from batchcompact.core.jsontypes import JsonObject
from batchcompact.core.planner import CompactionPlan, CompactionSettings
from batchcompact.core.tokens import estimate_tokens
from batchcompact.errors import BatchCompactError, VerificationError, internal_error_reason
from batchcompact.formats.scan import oserror_text
from batchcompact.pipeline.planning import read_session
from batchcompact.pipeline.statuses import CHANGED, COMPACTED, FAILED, SKIPPED, RunStatus
from batchcompact.pipeline.writer import AlreadyWritten, ChangedDuringRun, write_new_session, write_session

if TYPE_CHECKING:
    from batchcompact.agents.contracts import HandoffWriter, Writer
    from batchcompact.core.branches import BranchPlan
    from batchcompact.core.calls import SummaryCall, SummaryResult
    from batchcompact.core.session import Session
    from batchcompact.formats.scan import ScanItem
    from batchcompact.pipeline.session_lock import DatabaseSessionLock, SessionLock
    from batchcompact.pipeline.state import Fingerprint
    from batchcompact.pipeline.summary_cache import CachingSummarizer

log = logging.getLogger(__name__)
HANDED_OFF = "handed off: a new session holds the handoff document"  # the row's reason (--strategy handoff)



def now_utc() -> datetime:
    return datetime.now(UTC)


def reproducible_now() -> datetime | None:
    """`SOURCE_DATE_EPOCH` (the reproducible-builds convention): the time written into new entries, so
    the same inputs give byte-identical outputs; None (the real time) when unset or not a number."""
    value = os.environ.get("SOURCE_DATE_EPOCH", "").strip()
    try:
        return datetime.fromtimestamp(int(value), UTC) if value else None
    except (ValueError, OverflowError, OSError):
        return None


@dataclass
class PreparedSession:
    """A session between planning and writing: what its summaries are for and where they go."""

    item: ScanItem
    fingerprint: Fingerprint  # of the bytes planned
    session: Session | None  # None in the run loop's copy (run_locks.py): the worker that writes it reads it
    plan: CompactionPlan | None  # None: only branch summaries to write
    row: JsonObject
    branches: list[BranchPlan] = field(default_factory=list)  # written before the compaction
    # the session's writer lock (pipeline/writer.py), held until it is written or given up
    lock: SessionLock | DatabaseSessionLock | None = None

    @property
    def calls(self) -> list[SummaryCall]:
        """Branch-summary calls first, then the compaction's (1, or 2 for a split turn)."""
        return [b.call for b in self.branches] + (list(self.plan.calls) if self.plan is not None else [])


def iso(moment: datetime) -> str:
    """ISO-8601 with milliseconds and Z, as JavaScript's Date.toISOString writes it."""
    return moment.strftime("%Y-%m-%dT%H:%M:%S.") + f"{moment.microsecond // 1000:03d}Z"


def agent_writer(agent: str) -> Writer:
    """The writer module of an agent (`build_compaction`, `verify`): its declaration's `writer`."""
    return contracts.writer(get(agent))


class OutcomeWriter:
    def __init__(self, settings: CompactionSettings, *, in_place: bool, backup: bool,
                 pricing_file: str | None, caching: CachingSummarizer | None = None,
                 now: datetime | None = None) -> None:
        self.settings = settings
        self.in_place = in_place
        self.backup = backup
        self.pricing_file = pricing_file
        self.caching = caching
        self.now = now  # a fixed time for new entries (SOURCE_DATE_EPOCH); None: the real time

    def _now(self) -> datetime:
        return self.now or now_utc()

    def write(self, pending: PreparedSession, results: list, target: Path) -> str:
        """Branch summaries (chained on the active path), then the compaction, in one verified write."""
        plan = pending.plan
        session = pending.session
        assert session is not None  # read by the worker that writes it
        module = agent_writer(session.agent)
        # the entries record what their summaries cost, even those bought by an earlier, interrupted run
        caching = self.caching
        paid = [caching.as_paid(r) if caching and r is not None else r for r in results]
        if is_handoff(plan):
            return self._write_handoff(pending, cast("HandoffWriter", module), paid, target)  # planned only for one
        count = len(pending.branches)
        lines = self._branch_lines(pending, paid[:count])
        if plan is not None:
            if lines:  # the compaction goes after the summaries, which stay in its kept tail
                extra = sum(estimate_tokens({"role": "branchSummary", "summary": e["summary"]}) for e in lines)
                plan = dataclasses.replace(plan, leaf_id=lines[-1]["id"], tokens_before=plan.tokens_before + extra)
            lines = lines + self._compaction_lines(module, session, plan, paid[count:])
        replacements = self._pruned_entries(session, plan)
        agent = get(session.agent)
        if agent.owns_store(session.path):  # a session inside a database: one verified transaction
            output = contracts.store(agent).write_session(
                session, lines, target, lambda written: self._verify_written(module, session, written, plan, lines),
                in_place=self.in_place, backup=self.backup,
                expect=(pending.fingerprint.size, pending.fingerprint.sha256))
            pending.row["branch_summaries"] = count
            unpriced = any(r is not None and r.cost_usd is None for r in paid)
            pending.row["written_entries"] = written_usage(lines, unpriced=unpriced)
            return output

        def verify(tmp: Path) -> list[str]:
            written = None
            if agent.read_appended and not replacements:  # appended: parse only the new lines
                # write_session checked that tmp's first bytes are exactly the fingerprinted ones
                written = contracts.appended_reader(agent)(session, tmp, pending.fingerprint.size,
                                                    pending.fingerprint.sha256, prefix_checked=True)
            if written is None:
                written = read_session(tmp)
            if plan is None:
                return _verify_branch_only(session, written, len(lines))
            problems = module.verify(session, written, plan)
            if plan is not None:
                problems.extend(self._check_size(written, plan))
            return problems

        result = write_session(session, lines, target, pending.fingerprint, verify,
                               in_place=self.in_place, backup=self.backup,
                               replacements=replacements)
        pending.row["branch_summaries"] = count
        unpriced = any(r is not None and r.cost_usd is None for r in paid)
        pending.row["written_entries"] = written_usage(lines, unpriced=unpriced)
        return result.output_path

    def _write_handoff(self, pending: PreparedSession, module: HandoffWriter, paid: list, target: Path) -> str:
        """A new session beside `target` holding the handoff document (core/handoff.py); the original is
        only read. Its branch summaries, if any were bought, are not written: the new session has no branches."""
        session, plan = pending.session, pending.plan
        assert session is not None and plan is not None  # read by the worker that writes it; a handoff is a plan
        document = handoff_document(plan, paid[-1].text)
        parent = str(Path(session.path).resolve())
        name, lines = module.build_handoff(session, plan, document, usage=self._usage(paid[-1:]),
                                           now_iso=iso(self._now()), parent=parent)
        output = write_new_session(target.parent / name, lines, session.path,
                                   lambda tmp: module.verify_handoff(read_session(tmp), parent, document))
        unpriced = paid[-1].cost_usd is None
        pending.row["written_entries"] = written_usage(lines, unpriced=unpriced)
        pending.row["branch_summaries"] = 0
        return str(output)

    def _verify_written(self, module: Writer, session: Session, written: Session, plan: CompactionPlan | None,
                        lines: list[JsonObject]) -> list[str]:
        if plan is None:
            return _verify_branch_only(session, written, len(lines))
        return module.verify(session, written, plan) + self._check_size(written, plan)

    def _branch_lines(self, pending: PreparedSession, results: list[SummaryResult]) -> list[JsonObject]:
        if not pending.branches:
            return []
        from batchcompact.core.branches import BranchSummaryResult, build_branch_summary_chain

        session = pending.session
        assert session is not None  # read by the worker that writes it
        assert session.tree is not None and session.tree.leaf is not None  # branches: the session has a leaf
        chained = [
            BranchSummaryResult(plan, result.text, usage=self._usage([result]), from_hook=result.from_hook)
            for plan, result in zip(pending.branches, results, strict=True)
        ]
        return build_branch_summary_chain(
            chained,
            leaf_id=session.tree.leaf.id,
            existing_ids=[e.id for e in session.entries if isinstance(e.id, str)],
            session_id=session.session_id or "",
            timestamp=iso(self._now()),
        )

    def _compaction_lines(self, module: Writer, session: Session, plan: CompactionPlan, results: list) -> list[dict]:
        texts = {call.kind: result.text for call, result in zip(plan.calls, results, strict=True)}
        summary = compose_summary(plan, texts)
        from_hook = any(getattr(r, "from_hook", False) for r in results if r is not None)
        return module.build_compaction(session, plan, summary, usage=self._usage([r for r in results if r]),
                                       now_iso=iso(self._now()), from_hook=from_hook)

    def _pruned_entries(self, session: Session, plan: CompactionPlan | None) -> dict[int, JsonObject]:
        """Line number -> replacement entry for the planned tool-output pruning (agents with `prune`: pi)."""
        if plan is None or not plan.prune or not get(session.agent).prune:
            return {}
        from batchcompact.core.pruning import apply_pruning

        by_id = {e.id: e for e in session.entries}
        now_ms = int(self._now().timestamp() * 1000)
        return {a.line: apply_pruning(by_id[a.entry_id].data, a, now_ms) for a in plan.prune if a.line}

    def _usage(self, results: list) -> JsonObject | None:
        """The calls' usage for the written entry; None (no `usage` key) when no model was called.

        pi's `input` is the non-cached input (a result's `prompt_tokens` is the whole prompt). Each cost
        part is priced at the rate the call was bought at (the batch rate for a summary bought through a
        batch API), and `total` is the sum of the parts, so they always add up. Where a call's parts
        cannot be priced (a model only litellm prices, overflow chunks at another tier), the parts are
        0 and `total` carries the cost.
        """
        if all(r.model == "builtin" for r in results):
            return None
        tokens = (
            sum(_non_cached(r) for r in results),
            sum(r.completion_tokens for r in results),
            sum(r.cache_read_tokens for r in results),
            sum(r.cache_write_tokens for r in results),
        )
        cost = None if any(r.cost_usd is None for r in results) else sum(r.cost_usd for r in results)
        parts = self._cost_parts(results) if cost is not None else None
        if parts is not None:
            cost = parts["input"] + parts["output"] + parts["cacheRead"] + parts["cacheWrite"]
        return usage_record(*tokens, cost, parts)

    def _cost_parts(self, results: list) -> dict[str, float] | None:
        """The parts of every call's cost, each at its own rate (batch or not); None when one call's parts
        are not those of its recorded cost (unpriced here, or priced by litellm or per overflow chunk)."""
        from batchcompact.pricing import PriceTable

        table = PriceTable.load(self.pricing_file)
        total = dict.fromkeys(("input", "output", "cacheRead", "cacheWrite"), 0.0)
        for r in results:
            info = table.lookup(r.model) if r.model and r.model != "builtin" else None
            parts = info.cost_parts(input_tokens=_non_cached(r), output_tokens=r.completion_tokens,
                                    cache_read_tokens=r.cache_read_tokens, cache_write_tokens=r.cache_write_tokens,
                                    batch=r.batch) if info is not None else None
            if parts is None or r.cost_usd is None:
                return None
            if abs(sum(parts.values()) - r.cost_usd) > 1e-9 * max(abs(r.cost_usd), 1e-6):
                return None
            for name, value in parts.items():
                total[name] += value
        return total

    def _check_size(self, written: Session, plan: CompactionPlan) -> list[str]:
        """The rebuilt context (estimated, stale usage ignored) must be under the trigger threshold."""
        window = self.settings.context_window or plan.context_window
        if window is None:
            return []
        context = written_context(written)  # the one the format's verify built
        tokens = sum(estimate_tokens(m.message) for m in context.messages)
        threshold = plan.threshold if plan.threshold is not None else self.settings.threshold(window)
        if tokens > threshold:
            return [f"the rebuilt context (~{tokens} tokens) is still above the threshold ({threshold})"]
        return []


def handed_off_already(session: Session, plan: CompactionPlan | None, target: Path) -> str | None:
    """Why `plan`, a handoff, is not bought again: the new session it would write is there already (named by
    the same session and leaf, whatever its timestamp), or None."""
    if not is_handoff(plan):
        return None
    module = cast("HandoffWriter", agent_writer(session.agent))  # a handoff is planned only for one (planning.py)
    suffix = module.handoff_file_suffix(session, plan)
    try:
        found = sorted(name for name in os.listdir(target.parent) if name.endswith(suffix))
    except OSError:
        return None
    return f"already handed off ({target.parent / found[0]})" if found else None


def _non_cached(result: SummaryResult) -> int:
    """A summary call's input that was neither read from nor written to a prompt cache."""
    return max(result.prompt_tokens - result.cache_read_tokens - result.cache_write_tokens, 0)


def write_outcome(writer: OutcomeWriter, pending: PreparedSession, results: list,
                  target: Path) -> tuple[RunStatus, str, str | None]:
    """Write `pending` with its summaries: (status, reason, output path), one session's fault never raised."""
    try:
        output = writer.write(pending, results, target)
        return COMPACTED, HANDED_OFF if is_handoff(pending.plan) else "", output
    except AlreadyWritten as exc:  # a handoff's new session is there already (a rerun)
        return SKIPPED, f"already handed off ({exc.path})", None
    except ChangedDuringRun as exc:
        return CHANGED, str(exc), None
    except VerificationError as exc:
        return FAILED, f"verification failed: {exc}", None
    except OSError as exc:
        return FAILED, f"write failed: {oserror_text(exc)}", None
    except BatchCompactError as exc:  # the store's own word: a database busy past its retries, unreadable
        return FAILED, f"write failed: {exc}", None
    except Exception as exc:  # one session's bug must not stop the archive (nor lose the report)
        log.debug("writing %s failed", pending.item.path, exc_info=True)  # the row says it in one line; -vv shows where
        return FAILED, internal_error_reason(exc), None


def usage_fields(results: list, attempts: int, branch_count: int, *, default_model: str,
                 reusable: bool) -> JsonObject:
    """The report row's usage columns for a session's summaries (None: a call that was not made).

    `reusable`: the summarizer's results may come from the summary cache (a result with no calls was
    reused, not free)."""
    made = [r for r in results if r is not None]
    branch = [r for r in results[:branch_count] if r is not None]
    kinds: Counter = Counter()  # summarize.redact.merge_counts, without importing the redaction patterns
    for r in made:
        kinds.update(r.redactions)
    return dict(
        calls=sum(r.calls for r in made),
        attempts=attempts,
        prompt_tokens=sum(r.prompt_tokens for r in made),
        completion_tokens=sum(r.completion_tokens for r in made),
        cache_read_tokens=sum(r.cache_read_tokens for r in made),
        cache_write_tokens=sum(r.cache_write_tokens for r in made),
        cost_usd=None if any(r.cost_usd is None for r in made) else sum(r.cost_usd for r in made),
        latency_s=max((r.latency_s for r in made), default=0.0),
        model=made[0].model if made else default_model,
        redactions=sum(r.redaction_count for r in made),
        redaction_kinds=[{"kind": kind, "count": count}
                         for kind, count in sorted(kinds.items())],
        unpriced=any(r.cost_usd is None for r in made),
        overflow_recovery=any(r.overflow_calls for r in made),
        reused_summaries=sum(1 for r in made if r.calls == 0 and reusable),
        batch=any(r.batch for r in made),
        # the part of the totals above spent on branch summaries (report kind branch_summary)
        branch_calls=sum(r.calls for r in branch),
        branch_prompt_tokens=sum(r.prompt_tokens for r in branch),
        branch_completion_tokens=sum(r.completion_tokens for r in branch),
        branch_cost_usd=None if any(r.cost_usd is None for r in branch) else sum(r.cost_usd for r in branch),
    )


def _verify_branch_only(original: Session, written: Session, added: int) -> list[str]:
    """A written file that only gained branch summaries: nothing else changed, the leaf is the last one."""
    problems = [str(p) for p in written.errors]
    count = len(original.entries)
    if len(written.entries) != count + added:
        problems.append(f"expected {added} new entries, found {len(written.entries) - count}")
        return problems
    if any(a.data != b.data for a, b in zip(original.entries, written.entries, strict=False)):
        problems.append("an original entry changed")
    path = written.path_entries()
    if not path or path[-1].type != "branch_summary":
        problems.append("the active leaf is not the new branch summary")
    return problems


def written_usage(lines: list[JsonObject], *, unpriced: bool = False) -> list[JsonObject]:
    """The usage of each compaction / branch-summary entry written (for the run report).

    `unpriced`: the summaries came from a model without a price; the entries carry pi's zero costs, the
    report a null cost (unknown, not free)."""
    out = []
    for line in lines:
        usage = line.get("usage")
        kind = "compaction" if line.get("customType") == "handoff" else line.get("type")  # a handoff: its call
        if kind not in ("compaction", "branch_summary") or not isinstance(usage, dict):
            continue
        cost = usage.get("cost")
        out.append(
            {
                "entry_id": line.get("id"),
                "kind": kind,
                "input": usage.get("input", 0),
                "output": usage.get("output", 0),
                "cache_read": usage.get("cacheRead", 0),
                "cache_write": usage.get("cacheWrite", 0),
                "cost_usd": cost.get("total") if isinstance(cost, dict) and not unpriced else None,
            }
        )
    return out
