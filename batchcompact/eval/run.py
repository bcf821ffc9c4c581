"""`batchcompact eval`: score what compactions keep, one row per (session, compaction, summarizer).

For each compaction (planned as `run` plans it, or with `existing=True` the ones already in the files) the
probes come from the span it replaced (`probes.py`); each summarizer summarizes that span through the same
machinery as `run` (the worker pool with its retries, redaction of remote prompts and `max_cost_usd`, the
summary cache in the run state, so a rerun pays nothing and gives the same numbers); the compacted context
(summary + kept messages) is scored (`scoring.py`) and, with a judge, graded by a model (`judge.py`).
Nothing is ever written to a session file.
"""

from __future__ import annotations

import dataclasses
import logging
import re
from collections.abc import Iterable
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING

from batchcompact.core.apply import compose_summary
from batchcompact.core.calls import Summarizer, SummaryResult
from batchcompact.core.jsontypes import JsonObject
from batchcompact.core.planner import CompactionSettings
from batchcompact.errors import DEBUG_HINT, RunAborted, internal_error_reason, outcome_exit_code
from batchcompact.eval.baselines import (
    BASELINE,
    FIRST,
    LAST,
    LIST,
    TAIL,
    WORDS,
    baseline_summary,
    history_text,
    message_list,
    tokens_of,
    unchosen_words,
)
from batchcompact.eval.carryover import measure_carryover
from batchcompact.eval.cuts import (
    Cut,
    context_messages,
    context_tokens,
    cut_index,
    existing_cuts,
    full_path,
    future_after,
    planned_cut,
)
from batchcompact.eval.hindsight import KINDS as HINDSIGHT_KINDS
from batchcompact.eval.hindsight import future_messages, hindsight_probes
from batchcompact.eval.pooling import lift
from batchcompact.eval.probes import Probe, lexical_probes
from batchcompact.eval.scoring import KINDS, NAME_KINDS, ContextIndex, score_context
from batchcompact.pipeline.model_calls import buy

if TYPE_CHECKING:
    from batchcompact.core.session import Session
    from batchcompact.eval.judge import Clock, Judge, JudgedContext, PoolSettingsArg, Sleep
    from batchcompact.pipeline.planning import PlanOptions
    from batchcompact.pipeline.state import RunState

log = logging.getLogger(__name__)

RECORDED = "recorded"  # the summarizer label of a compaction already in the file
HISTORY_CHARS = 400_000  # of the replaced history's text, the first and last this many are kept for baselines

ROW_COLUMNS = (
    "path", "session_id", "format", "compaction", "cut_at", "line", "summarizer", "baseline_for", "status",
    "reason",
    *(f"{kind}_{what}" for kind in KINDS for what in ("probes", "recall")),
    "names_recall", "hindsight_recall", "overall", "summary_overall", "lift_tail", "lift_first", "lift_last",
    "lift_words", "lift_list", "beats_first", "summary_tokens", "tokens_before", "tokens_after", "cost_usd", "missed",
    "carryover", "carryover_items",
)

@dataclass(frozen=True)
class EvalSummarizer:
    """One `--summarizer`: its label in the rows, the summarizer, and the model it is cached and priced by."""

    label: str
    summarizer: Summarizer
    model_key: str  # as `run`'s summary_model: the litellm name, "builtin" or "custom:SPEC"
    priced_model: str | None = None  # the litellm model to estimate its cost by (None: free or self-priced)


@dataclass(frozen=True)
class EvalOptions:
    existing: bool = False
    state_path: Path | None = None
    pricing_file: str | None = None
    max_cost_usd: float | None = None
    plan_options: PlanOptions | None = None  # for planned cuts
    jobs: int = 1  # processes that read the files and find their cuts
    cut_at: tuple[int, ...] = ()  # `--cut-at`: cuts placed this many percent into each session's model turns


@dataclass
class EvalResult:
    rows: list[JsonObject]
    problems: list[str] = field(default_factory=list)  # files that could not be read: path:line: what
    skipped: dict[str, int] = field(default_factory=dict)  # sessions with nothing to score, by reason
    spent_usd: float = 0.0  # paid in this run (summaries and judge calls reused from the cache cost 0)

    @property
    def exit_code(self) -> int:
        bugs = sum(p.endswith(f"({DEBUG_HINT})") for p in self.problems)  # a bug, not an unreadable file
        return outcome_exit_code(len(self.problems) + sum(r["status"] == "failed" for r in self.rows), bugs)


def cuts_of_file(path: str, settings: CompactionSettings, options: EvalOptions) -> JsonObject:
    """One file's cuts with their probes (the replaced messages dropped once probed), or why it has none.

    Module-level and never raising, so it runs in a worker process: {"cuts", "probes", "problem", "skip"}.
    """
    from batchcompact.errors import NotCompacted, SessionReadError
    from batchcompact.pipeline.planning import PlanOptions, plan_session, read_session

    out: JsonObject = {"cuts": [], "probes": [], "problem": None, "skip": None}
    try:
        session = read_session(path)
        if not session.compactable:
            first = session.errors[0]
            where = f":{first.line}" if first.line is not None else ""
            out["problem"] = f"{path}{where}: {first.message}"
            return out
        if options.existing:
            cuts = existing_cuts(session, settings)
            if not cuts:
                out["skip"] = "no compaction in the file"
        elif options.cut_at:
            cuts = cuts_inside(session, settings, options)
        else:
            plan, row = plan_session(session, settings, options.plan_options or PlanOptions())
            cut = planned_cut(session, plan)
            cuts = [cut] if cut is not None else []
            if cut is None:
                out["skip"] = _reason_kind(row.get("reason") or "nothing to compact")
    except NotCompacted as exc:  # an agent batchcompact only reports: nothing to score, as plan skips it
        out["skip"] = str(exc)
        return out
    except (OSError, SessionReadError) as exc:  # in the words plan, validate and show use (the file once)
        from batchcompact.formats.scan import unreadable_reason

        out["problem"] = f"{path}: {unreadable_reason(str(path), exc)}"
        return out
    except Exception as exc:  # a bug on one file must not stop the others
        log.debug("eval of %s failed", path, exc_info=True)
        out["problem"] = f"{path}: {internal_error_reason(exc)}"
        return out
    for cut in cuts:
        out["probes"].append(probes_of(cut))
        history = history_text(cut.replaced)
        cut.history = (history[:HISTORY_CHARS], history[-HISTORY_CHARS:], unchosen_words(history, HISTORY_CHARS),
                       message_list(cut.replaced, HISTORY_CHARS))
        cut.hindsight = bool(cut.future)
        cut.replaced, cut.future = [], None  # probed: not shipped back from a worker
    out["cuts"] = cuts
    return out


def probes_of(cut: Cut) -> list[Probe]:
    """A cut's probes: hindsight first (when turns follow the cut), then the user's rules and requests."""
    kept = context_messages(cut, None)
    future = future_messages(cut.future) if cut.future else None
    probes = hindsight_probes(cut.replaced, kept, future, cut.cwd) if future else []
    return probes + lexical_probes(cut.replaced, cut.kept, future, ContextIndex(kept, cut.cwd).keeps)


def cuts_inside(session: Session, settings: CompactionSettings, options: EvalOptions) -> list[Cut]:
    """`--cut-at`: for each percent, the session as archived just before that model turn, compacted as `run`
    would compact it (forced), with the turns that really followed as its future."""
    import dataclasses as dc
    import tempfile

    from batchcompact.formats.detect import read_session as read_any
    from batchcompact.pipeline.planning import PlanOptions, plan_session

    path = full_path(session)
    forced = dc.replace(settings, force=True)
    cuts = []
    with tempfile.TemporaryDirectory(prefix="batchcompact-eval-") as folder:
        for percent in options.cut_at:
            index = cut_index(path, percent)
            line = path[index].line if index is not None else None
            if index is None or line is None:
                cuts.append(_skipped_cut(session, percent, None, "too short to cut" if index is None
                                         else "not a line-per-entry transcript: no cut can be placed"))
                continue
            copy = _truncated_copy(session.path, line, folder, percent)
            before = read_any(copy, session.agent) if copy else None
            if before is None or not before.compactable:
                cuts.append(_skipped_cut(session, percent, line, "the truncated copy cannot be read"))
                continue
            before.path = session.path
            plan, row = plan_session(before, forced, options.plan_options or PlanOptions())
            cut = planned_cut(before, plan)
            if cut is None:
                cuts.append(_skipped_cut(session, percent, line, row.get("reason") or "nothing to compact"))
                continue
            cut.cut_at = percent
            cut.future = future_after(path, index)
            if not cut.future:
                cut.note = "no turns after the cut"
            cuts.append(cut)
    return cuts


def _truncated_copy(source: str, line: int, folder: str, percent: int) -> str | None:
    """The first `line - 1` lines of `source` (decompressed) in a file of `folder`; None if it has fewer."""
    from batchcompact.formats.compressed import open_session

    name = Path(source).name.removesuffix(".zst")
    target = Path(folder) / str(percent) / name
    target.parent.mkdir(parents=True, exist_ok=True)
    written = 0
    with open_session(source) as reader, open(target, "wb") as out:
        for raw in reader:
            if written == line - 1:
                break
            out.write(raw)
            written += 1
    return str(target) if written == line - 1 else None


def _skipped_cut(session: Session, percent: int, line: int | None, reason: str) -> Cut:
    return Cut(path=session.path, session_id=session.session_id, agent=session.agent, number=1, line=line,
               replaced=[], kept=[], tokens_before=0, plan=None, cut_at=percent, skip=reason)


def find_cuts(paths: Iterable[str], settings: CompactionSettings, options: EvalOptions,
              result: EvalResult) -> tuple[list[Cut], list[list[Probe]]]:
    """Every cut to score under `paths` and its probes, in file order (files read by `options.jobs`
    processes); unreadable files and skips go into `result`."""
    from batchcompact.formats.scan import iter_session_files
    from batchcompact.pipeline.executor import LocalExecutor

    files = [str(item.path) for item in iter_session_files(paths, require_any=True)]
    cuts: list[Cut] = []
    probes: list[list[Probe]] = []
    jobs = options.jobs if len(files) > 1 else 1
    for found in LocalExecutor(jobs).map(cuts_of_file, files, settings, options):
        if found["problem"]:
            result.problems.append(found["problem"])
        if found["skip"]:
            _count(result.skipped, found["skip"])
        cuts.extend(found["cuts"])
        probes.extend(found["probes"])
    return cuts, probes


def _count(counts: dict[str, int], key: str) -> None:
    counts[key] = counts.get(key, 0) + 1


def _reason_kind(reason: str) -> str:
    return reason.split(" (", 1)[0]


def _base_row(cut: Cut, label: str, baseline_for: str | None = None) -> JsonObject:
    row: JsonObject = dict.fromkeys(ROW_COLUMNS)
    row.update(path=cut.path, session_id=cut.session_id, format=cut.agent, compaction=cut.number,
               cut_at=cut.cut_at, line=cut.line, summarizer=label, baseline_for=baseline_for, status="ok",
               reason="", tokens_before=cut.tokens_before, missed=[])
    if cut.skip:
        row.update(status="skipped", reason=cut.skip)
    return row


def score_row(row: JsonObject, cut: Cut, probes: list[Probe], summary: str | None,
              own_text: str | None = None) -> list[JsonObject]:
    """Fill a row's recalls from the compacted context; returns the context (for the judge).

    `summary_overall` scores the summarizer's own words alone (`own_text`, default the summary without
    file tags): what the summary adds to what the kept messages and the file lists hold anyway."""
    messages = context_messages(cut, summary)
    score = score_context(probes, messages, cut.cwd)
    for kind in KINDS:
        row[f"{kind}_probes"] = score.probes[kind]
        row[f"{kind}_recall"] = score.recall[kind]
    row["names_recall"] = score.pooled(NAME_KINDS)
    row["hindsight_recall"] = score.pooled(HINDSIGHT_KINDS)
    row["overall"] = score.overall
    if summary is not None:
        alone = score_context(probes, [{"role": "user", "content": own_text if own_text is not None
                                        else without_file_tags(summary)}], cut.cwd).overall
        row["summary_overall"] = alone
    carried = measure_carryover(cut.previous_summary, summary)
    if carried is not None and carried.items:
        row["carryover"], row["carryover_items"] = carried.share, carried.items
    row["summary_tokens"] = tokens_of(summary or "")
    row["tokens_after"] = context_tokens(messages)
    row["missed"] = score.missed + [f"carryover {m}" for m in (carried.missed if carried else ())]
    reasons = [] if probes else ["no probe in the replaced span"]
    if not cut.hindsight:
        reasons.append(cut.note or ("no turns after the cut: no hindsight probes (--cut-at places cuts inside "
                                    "sessions)"))
    row["reason"] = "; ".join(reasons)
    return messages


def baseline_rows(row: JsonObject, cut: Cut, probes: list[Probe],
                  contexts: list[JudgedContext]) -> list[JsonObject]:
    """The `first`, `last`, `words` and `list` baselines at the length of `row`'s summary, and `row`'s lift
    over them."""
    out = []
    tokens = row["summary_tokens"] or 0
    material = dict(zip((FIRST, LAST, WORDS, LIST), cut.history, strict=True))
    for kind in (FIRST, LAST, WORDS, LIST):
        base = _base_row(cut, BASELINE + kind, baseline_for=row["summarizer"])
        text = baseline_summary(kind, material[kind], tokens)
        context = score_row(base, cut, probes, text, own_text=text)
        base["summary_tokens"] = tokens_of(text)
        if kind == FIRST:
            contexts.append((base, context, probes, cut))
        out.append(base)
        row[f"lift_{kind}"] = lift(row, base)
    row["beats_first"] = None if row["lift_first"] is None else row["lift_first"] > 0
    return out


_FILE_TAGS = re.compile(r"\n*<(read-files|modified-files)>\n.*?\n</\1>", re.DOTALL)


def without_file_tags(summary: str) -> str:
    """A summary without the `<read-files>`/`<modified-files>` lists batchcompact and pi append to it."""
    return _FILE_TAGS.sub("", summary)


def estimate_spend(cuts: list[Cut], summarizers: list[EvalSummarizer], pricing_file: str | None) -> float | None:
    """The summaries' estimated cost (None when a priced summarizer's model has no known price)."""
    from batchcompact.core.planner import EST_OUTPUT_TOKENS
    from batchcompact.pipeline.planning import count_call_tokens, estimate_cost

    total = 0.0
    for entry in summarizers:
        if entry.priced_model is None:
            continue
        for cut in cuts:
            if cut.plan is None:
                continue
            calls = count_call_tokens(cut.plan.calls, entry.priced_model)
            output = sum(min(c.max_tokens, EST_OUTPUT_TOKENS.get(c.kind, 2000)) for c in calls)
            cost, _ = estimate_cost(calls, output, entry.priced_model, pricing_file)
            if cost is None:
                return None
            total += cost
    return total


def evaluate(paths: Iterable[str], settings: CompactionSettings, options: EvalOptions,
             summarizers: list[EvalSummarizer], pool_settings: PoolSettingsArg, judge: Judge | None = None, *,
             clock: Clock | None = None, sleep: Sleep | None = None) -> EvalResult:
    """Score every cut under `paths` with each summarizer (and the recorded summaries with `existing`), each
    beside the baselines at its own length."""
    result = EvalResult(rows=[])
    cuts, probes = find_cuts(paths, settings, options, result)
    _check_budget(cuts, summarizers, options)
    contexts: list[JudgedContext] = []
    rows_by_cut: list[list[JsonObject]] = [[] for _ in cuts]
    for index, cut in enumerate(cuts):
        row = _base_row(cut, BASELINE + TAIL)
        if not cut.skip:
            score_row(row, cut, probes[index], None)
        rows_by_cut[index].append(row)
    if options.existing:
        for index, cut in enumerate(cuts):
            row = _base_row(cut, RECORDED)
            rows_by_cut[index].append(row)
            if cut.note and not cut.recorded_summary:
                row.update(status="unreadable", reason=cut.note)
                continue
            contexts.append((row, score_row(row, cut, probes[index], cut.recorded_summary or ""), probes[index], cut))
            rows_by_cut[index] += baseline_rows(row, cut, probes[index], contexts)
    state = _open_state(options, summarizers, judge)
    try:
        budget = options.max_cost_usd
        for entry in summarizers:
            settings_now = dataclasses.replace(pool_settings, max_cost_usd=budget)
            spent = _summarize(entry, cuts, probes, rows_by_cut, contexts, state, settings_now, clock, sleep)
            result.spent_usd += spent
            if budget is not None:
                budget = max(budget - spent, 0.0)
        if judge is not None:  # within what the summaries left of the budget
            settings_now = dataclasses.replace(pool_settings, max_cost_usd=budget)
            result.spent_usd += judge.grade(contexts, state, settings_now, clock=clock, sleep=sleep)
    finally:
        if state is not None:
            state.close()
    for rows in rows_by_cut:
        for row in rows:
            if row["summarizer"] == BASELINE + TAIL:
                _tail_lifts(rows, row)
        result.rows += _ordered(rows)
    if judge is not None:  # every row has the judge's columns, graded or not
        from batchcompact.eval.judge import JUDGE_COLUMNS

        for row in result.rows:
            for column in JUDGE_COLUMNS:
                row.setdefault(column, None)
    return result


def _tail_lifts(rows: list[JsonObject], tail: JsonObject) -> None:
    for row in rows:
        if not row["summarizer"].startswith(BASELINE) and row["status"] == "ok":
            row["lift_tail"] = lift(row, tail)


def _ordered(rows: list[JsonObject]) -> list[JsonObject]:
    """A cut's rows: each summary followed by its baselines, the kept tail alone last."""
    tail = [r for r in rows if r["summarizer"] == BASELINE + TAIL]
    return [r for r in rows if r["summarizer"] != BASELINE + TAIL] + tail


def _check_budget(cuts: list[Cut], summarizers: list[EvalSummarizer], options: EvalOptions) -> None:
    if options.max_cost_usd is None or not any(s.priced_model for s in summarizers):
        return
    estimate = estimate_spend(cuts, summarizers, options.pricing_file)
    if estimate is None:
        raise RunAborted("--max-cost cannot be enforced: a summary model has no known price (pass --pricing FILE "
                         "with its prices); nothing was summarized")
    if estimate > options.max_cost_usd:
        raise RunAborted(f"the estimated cost ${estimate:.4f} exceeds --max-cost ${options.max_cost_usd:.4f}; "
                         "nothing was summarized (raise --max-cost or evaluate fewer sessions)")


def _open_state(options: EvalOptions, summarizers: list[EvalSummarizer], judge: Judge | None) -> RunState | None:
    """The run state (its summary cache) when something is worth caching: a model, a custom hook, a judge."""
    if judge is None and all(s.model_key == "builtin" for s in summarizers):
        return None
    from batchcompact.folders import state_folder
    from batchcompact.pipeline.state import RunState

    path = options.state_path or state_folder() / "state.sqlite"
    path.parent.mkdir(parents=True, exist_ok=True)
    return RunState(path)


def _summarize(entry: EvalSummarizer, cuts: list[Cut], probes: list[list[Probe]],
               rows_by_cut: list[list[JsonObject]], contexts: list[JudgedContext], state: RunState | None,
               pool_settings: PoolSettingsArg, clock: Clock | None, sleep: Sleep | None) -> float:
    """One summarizer over every cut; returns what it spent in this run."""
    jobs = [(str(i), list(cut.plan.calls)) for i, cut in enumerate(cuts) if cut.plan is not None]
    outcomes, buyer = buy(entry.summarizer, entry.model_key, jobs, state, pool_settings, clock=clock, sleep=sleep)
    as_paid = getattr(buyer, "as_paid", lambda r: r)
    spent = 0.0
    for index, cut in enumerate(cuts):
        row = _base_row(cut, entry.label)
        rows_by_cut[index].append(row)
        outcome = outcomes.get(str(index))
        if cut.skip:
            continue
        if cut.plan is None:
            row.update(status="skipped", reason=cut.note or "nothing before the cut to summarize")
            continue
        if outcome is None or outcome.status != "ok":
            row.update(status="failed" if outcome is None or outcome.status == "failed" else outcome.status,
                       reason=(outcome.error if outcome is not None else None) or "not summarized")
            continue
        spent += outcome.cost_usd
        paid = [as_paid(r) for r in outcome.results]
        row["cost_usd"] = _cost(paid)
        texts = {call.kind: r.text for call, r in zip(cut.plan.calls, outcome.results, strict=True)}
        summary = compose_summary(cut.plan, texts)
        own = "\n\n".join(texts.values())
        contexts.append((row, score_row(row, cut, probes[index], summary, own), probes[index], cut))
        rows_by_cut[index] += baseline_rows(row, cut, probes[index], contexts)
    return spent


def _cost(results: list[SummaryResult | None]) -> float | None:
    costs = [r.cost_usd for r in results if r is not None]
    if any(c is None for c in costs):
        return None
    return round(sum(c for c in costs if c is not None), 6)
