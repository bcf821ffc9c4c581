"""`batchcompact eval`: measure what compactions keep. A thin wrapper over `batchcompact.eval.run.evaluate`."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Any

import click

from batchcompact.cli.options import agent_fields, planner_options, pop_settings, resolve_jobs
from batchcompact.cli.output import output_options, pick_format, print_table, require_output, write_rows
from batchcompact.cli.summarize_options import pool_options, pool_settings_from, provider_options
from batchcompact.core.jsontypes import JsonObject
from batchcompact.core.words import counted

if TYPE_CHECKING:
    from batchcompact.eval.run import EvalSummarizer

RECALLS = (("file_recall", "files"), ("symbol_recall", "symbols"), ("command_recall", "commands"),
           ("rule_recall", "rules"), ("task_recall", "tasks"), ("overall", "overall"), ("vs_first", "vs first N"),
           ("vs_words", "vs words"), ("vs_list", "vs list"), ("carryover", "carry-over"))
TABLE_COLUMNS = (
    ("path", "session"), ("compaction", "#"), ("cut_at", "cut %"), ("shown", "summarizer"), ("status", "status"),
    *RECALLS,
    ("judge_overall", "judge"), ("summary_tokens", "summary tokens"), ("cost_usd", "cost"), ("reason", "reason"),
)
MEAN_COLUMNS = (("shown", "summarizer"), ("cuts", "cuts"), ("names_recall", "files+symbols"), *RECALLS,
                ("summary_tokens", "summary tokens"))


def parse_cut_at(value: str | None, existing: bool) -> tuple[int, ...]:
    """`--cut-at 30,50,70` as percents (1-99, in order, no repeats)."""
    if not value:
        return ()
    if existing:
        raise click.UsageError("--cut-at and --existing cannot be combined: --cut-at places new cuts, "
                               "--existing scores the compactions already in the files")
    try:
        percents = tuple(dict.fromkeys(int(part) for part in value.split(",") if part.strip()))
    except ValueError:
        percents = ()
    if not percents or any(not 1 <= p <= 99 for p in percents):
        raise click.BadParameter(f"{value!r}: expected percents from 1 to 99, e.g. 30,50,70,90",
                                 param_hint="--cut-at")
    return tuple(sorted(percents))


def _shown(row: JsonObject) -> JsonObject:
    """A row as the table shows it: a baseline named with the summary whose length it takes, a lift over
    the first N tokens with a `!` when the summary does not beat them."""
    from batchcompact.eval.baselines import BASELINE, LABEL

    shown = dict(row)
    label = row["summarizer"]
    if label.startswith(BASELINE):
        name = LABEL.get(label[len(BASELINE):], label)
        shown["shown"] = f"  {name}" + (f" ({row['baseline_for']})" if row.get("baseline_for") else "")
    else:
        shown["shown"] = label
    for kind in ("first", "words", "list"):
        lift = row.get(f"lift_{kind}")
        shown[f"vs_{kind}"] = None if lift is None else f"{lift:+.4f}" + (" !" if lift <= 0 else "")
    return shown


def resolve_summarizers(specs: tuple[str, ...], *, api_base: str | None, api_key: str | None, timeout: float,
                        pricing: str | None) -> list[EvalSummarizer]:
    """Each --summarizer as an `EvalSummarizer`: `builtin`, `module:callable` (or an installed summarizer
    entry point), else a litellm model (checked before any file is read)."""
    from importlib.metadata import entry_points

    from batchcompact.eval.run import EvalSummarizer
    from batchcompact.summarize import BuiltinSummarizer, build_summarizer, load_summarizer
    from batchcompact.summarize.custom import ENTRY_POINT_GROUP

    hooks = {ep.name for ep in entry_points(group=ENTRY_POINT_GROUP)}
    out = []
    for spec in dict.fromkeys(s.strip() for s in specs):
        if spec.lower() == "builtin":
            out.append(EvalSummarizer("builtin", BuiltinSummarizer(), "builtin"))
        elif ("/" not in spec and ":" in spec) or spec in hooks:
            out.append(EvalSummarizer(spec, load_summarizer(spec), f"custom:{spec}"))
        else:
            from batchcompact.summarize.preflight import preflight

            provider = preflight(spec, api_base, api_key)
            summarizer = build_summarizer(spec, api_base=api_base, api_key=api_key, timeout=timeout,
                                          pricing_file=pricing, provider=provider)
            out.append(EvalSummarizer(spec, summarizer, spec, priced_model=spec))
    return out


@click.command("eval")
@click.argument("paths", nargs=-1)
@click.option("--existing", is_flag=True,
              help="Score the compactions already in the files (the agents' own and ours) instead of planning "
                   "new ones; each --summarizer re-summarizes the same spans.")
@click.option("--cut-at", "cut_at", default=None, metavar="PERCENTS",
              help="Place cuts inside each session instead of at its end: before the model turn this many "
                   "percent in (comma-separated, e.g. 30,50,70,90), each compacted as `run --force` would, with "
                   "the turns that really followed read for hindsight probes.")
@click.option("--model", "--summarizer", "summarizers", multiple=True, metavar="NAME",
              help="builtin, a litellm model (openai/gpt-4o-mini) or module:callable; repeat to compare "
                   "(--summarizer is its older name) [default: builtin, or none with --existing].")
@click.option("--judge-model", default=None, metavar="MODEL",
              help="Also have this litellm model answer probe questions from the compacted context and grade "
                   "the answers 0-5 (accuracy, context awareness, artifact trail, completeness, continuity, "
                   "instruction following).")
@click.option("--state", "state", type=click.Path(dir_okay=False), default=None,
              help="Run state database whose summary cache is used [default: run's, under $XDG_STATE_HOME].")
@click.option("--max-cost", type=click.FloatRange(min=0), default=None, metavar="USD",
              help="Refuse to start above this estimate; stop launching calls once spend reaches it.")
@output_options()
@planner_options
@provider_options
@pool_options
@click.pass_context
def eval_command(ctx: click.Context, paths: tuple[str, ...], existing: bool, cut_at: str | None,
                 summarizers: tuple[str, ...],
                 judge_model: str | None, state: str | None, max_cost: float | None, fmt: str, output: str | None,
                 json_flag: bool, pricing: str | None, jobs: int | None, api_base: str | None, api_key: str | None,
                 timeout: float, no_redact: bool, concurrency: int, rpm: float | None, tpm: float | None,
                 max_attempts: int, **kwargs: Any) -> int:  # Any: the planner's options by name, each of its own type
    """Measure what compactions keep: the files, code names, commands and values the agent's next turns
    used that only the replaced span held (hindsight), and the user's rules and requests, scored against
    the compacted context (summary + kept messages), beside baselines at the summary's own length (the kept
    tail alone, the first and the last N tokens of the replaced history, its distinct words unchosen, its user
    messages then its names by frequency). `overall` is the mean over the probe kinds present. One
    row per (session, compaction, summarizer or baseline); nothing is written to a session.

    Summaries are bought as `run` buys them (pool, summary cache, redaction, --max-cost), so a rerun pays
    nothing and prints the same numbers. docs/eval.md describes the method and its limits.

    \b
    Examples:
      batchcompact eval sessions/ --cut-at 30,50,70,90 --summarizer builtin --summarizer openai/gpt-4o-mini
      batchcompact eval --existing ~/.claude/projects --summarizer builtin
      batchcompact eval sessions/ --force --summarizer mypkg.hooks:summarize --format json -o eval.json
    """
    from batchcompact.discover import cli_paths
    from batchcompact.eval.run import EvalOptions, evaluate
    from batchcompact.pipeline.planning import PlanOptions

    paths = tuple(cli_paths(paths, "eval"))
    fmt = pick_format(fmt, json_flag)
    require_output(fmt, output)
    agent = agent_fields(ctx, kwargs.pop("agent_settings", True))
    settings = pop_settings(kwargs)
    percents = parse_cut_at(cut_at, existing)
    specs = summarizers or (() if existing else ("builtin",))
    chosen = resolve_summarizers(specs, api_base=api_base, api_key=api_key, timeout=timeout, pricing=pricing)
    judge = None
    if judge_model:
        from batchcompact.eval.judge import Judge

        judge = Judge(resolve_summarizers((judge_model,), api_base=api_base, api_key=api_key, timeout=timeout,
                                          pricing=pricing)[0].summarizer, judge_model)
    pool = pool_settings_from(concurrency=concurrency, rpm=rpm, tpm=tpm, max_attempts=max_attempts,
                              max_cost_usd=max_cost, redact=not no_redact)
    options = EvalOptions(existing=existing, state_path=Path(state) if state else None, pricing_file=pricing,
                          max_cost_usd=max_cost, jobs=resolve_jobs(jobs), cut_at=percents,
                          plan_options=PlanOptions(pricing_file=pricing, agent_settings=agent))
    result = evaluate(paths, settings, options, chosen, pool, judge)
    quiet = (ctx.find_root().obj or {}).get("quiet", False)
    scored, unscored = _scored(result.rows)
    for problem in result.problems:
        click.echo(f"error: {problem}", err=True)
    if fmt == "table":
        from batchcompact.cli.output import open_output
        from batchcompact.eval.pooling import mean_rows

        with open_output(output) as out:
            columns = [c for c in TABLE_COLUMNS if judge is not None or c[0] != "judge_overall"]
            print_table([_shown(r) for r in result.rows], columns, out, drop_first=("reason", "status", "cut_at"))
            means = mean_rows(result.rows)
            if means:
                out.write(f"\nPooled over the cuts ({means[0]['cuts']} with a score):\n")
                print_table([_shown(r) for r in means], MEAN_COLUMNS, out)
                out.write("overall: the mean of the recalls of the probe kinds present, not pooled by probe "
                          "count (docs/eval.md).\n")
    else:
        write_rows(fmt, output, result.rows, summary=lambda: {
            "scored": scored, "not_scored": unscored, "skipped": result.skipped, "problems": result.problems, "spent_usd": result.spent_usd,
            "exit_code": result.exit_code})
    if not quiet:
        skipped = ", ".join(f"{n} {reason}" for reason, n in sorted(result.skipped.items()))
        others = ", ".join(f"{n} {reason}" for reason, n in sorted(unscored.items()))
        click.echo(f"eval: {counted(scored, 'compaction')} scored, {counted(len(result.rows), 'row')}"
                   + (f"; not scored: {others}" if others else "")
                   + (f"; sessions skipped: {skipped}" if skipped else "")
                   + f"; spent ${result.spent_usd:.4f}", err=True)
    return result.exit_code


def _scored(rows: list[JsonObject]) -> tuple[int, dict[str, int]]:
    """(compactions with a score, the others counted by why): a compaction is scored when one of its rows
    is `ok` with an `overall` (what the pooled table counts as "with a score"); else the reason of its
    first row that is not ok, or "no probe to score"."""
    rows_of: dict[tuple[str, int, int | None], list[JsonObject]] = {}  # (path, compaction, cut_at)
    for row in rows:
        rows_of.setdefault((row["path"], row["compaction"], row["cut_at"]), []).append(row)
    scored = 0
    unscored: dict[str, int] = {}
    for members in rows_of.values():
        if any(r["status"] == "ok" and r.get("overall") is not None for r in members):
            scored += 1
            continue
        failed = next((r for r in members if r["status"] != "ok"), None)
        reason = (failed.get("reason") or failed["status"]) if failed is not None else "no probe to score"
        unscored[reason] = unscored.get(reason, 0) + 1
    return scored, unscored
