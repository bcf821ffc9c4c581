"""`batchcompact run`: the main job. Compact whole archives safely and resumably."""

from __future__ import annotations

import sys
from pathlib import Path
from typing import TYPE_CHECKING, Any, TypeAlias

import click

from batchcompact.cli.options import (
    agent_fields,
    branch_options,
    executor_options,
    open_executor,
    parse_duration,
    planner_options,
    pop_settings,
    resolve_jobs,
    strategy_option,
)
from batchcompact.cli.output import (
    folder_checked,
    old_output_dir,
    output_options,
    pick_format,
    reason_kind,
    require_output,
    write_rows,
)
from batchcompact.cli.summarize_options import (
    pool_options,
    pool_settings_from,
    summarizer_options,
)
from batchcompact.core.jsontypes import JsonObject
from batchcompact.core.words import counted
from batchcompact.money import sum_usd
from batchcompact.pipeline.statuses import COMPACTED, FAILED_STATUSES, KNOWN_INVALID, SKIPPED

if TYPE_CHECKING:
    from batchcompact.pipeline.executor import Executor
    from batchcompact.pipeline.run import RunSummary
    from batchcompact.pipeline.run_request import RunRequest

# Any: `run`'s options by name, as click parsed them, each of its own type
Params: TypeAlias = dict[str, Any]

def _duration_checked(value: str) -> str:
    """--min-age checked while the options are parsed (so a bad one names the option and where it came
    from: a config file, the environment); kept as given, for the messages that quote it."""
    parse_duration(value)
    return value


def _counted(rows: list[JsonObject], min_age: str) -> str:
    kinds: dict[str, int] = {}
    for row in rows:
        kind = reason_kind(row.get("reason"), min_age)
        kinds[kind] = kinds.get(kind, 0) + 1
    return ", ".join(f"{n} {kind}" for kind, n in sorted(kinds.items(), key=lambda kv: (-kv[1], kv[0])))


def summary_text(summary: RunSummary, wall: float, min_age: str = "10m", quiet: bool = False) -> str:
    """The run summary for people. Skips and failures are counted by reason; failed files are listed
    with their reason (file and line). Quiet: only what needs attention (nothing on a clean run)."""
    rows = summary.rows
    by = summary.by_status
    before = sum(r["tokens_before"] or 0 for r in rows if r["status"] == COMPACTED)
    after = sum(r["tokens_after_est"] or 0 for r in rows if r["status"] == COMPACTED)
    calls = sum(r["calls"] or 0 for r in rows)
    cost = sum_usd(r["cost_usd"] for r in rows)
    unpriced = sum(1 for r in rows if r.get("unpriced"))
    if unpriced and not any(r["cost_usd"] for r in rows):
        cost_text = "cost unpriced (the model has no known price)"
    else:
        cost_text = f"cost ${cost:.4f}" + (f" (+{unpriced} unpriced)" if unpriced else "")
    failed = [r for r in rows if r["status"] in FAILED_STATUSES]
    lines = []
    if not quiet:
        lines.append(f"run {summary.run_id}: {counted(len(rows), 'session')}: "
                     + (", ".join(f"{n} {s}" for s, n in sorted(by.items())) or "none"))
        skipped = [r for r in rows if r["status"] == SKIPPED]
        if skipped:
            lines.append(f"  {len(skipped)} skipped: {_counted(skipped, min_age)}")
        known = by.get(KNOWN_INVALID, 0)
        if known:
            lines.append(f"  {known} {KNOWN_INVALID}: reported by an earlier run and unchanged since "
                         "(not a failure; --strict makes it one; `batchcompact validate` shows the problems)")
        lines += [
            f"tokens (compacted sessions): {before:,} -> ~{after:,}",
            f"summary calls: {calls}, {cost_text}",
            f"wall time: {wall:.1f}s",
        ]
        if summary.report_path:
            lines.append(f"report: {summary.report_path}")
    if failed:
        if quiet:
            lines.append(f"run {summary.run_id}: {len(failed)} of {counted(len(rows), 'session')} failed; "
                         f"report: {summary.report_path}")
        lines.append(f"  {len(failed)} failed: {_counted(failed, min_age)}")
    for row in failed[:20]:
        lines.append(f"  {row['status']}: {row['input_path']}: {row['reason']}")
    if len(failed) > 20:
        lines.append(f"  ... and {len(failed) - 20} more (see the report)")
    if not quiet:
        lines.extend(getattr(summary, "notes", None) or [])
    if summary.aborted:
        lines.append(f"run aborted: {summary.aborted}")
    stopped = getattr(summary, "stopped", None)
    if stopped:
        lines.append(f"run stopped by {stopped}: sessions not reached are reported skipped; "
                     "rerun the same command to continue")
    if not quiet and rows and all(r["status"] == SKIPPED and "--min-age" in (r.get("reason") or "") for r in rows):
        # a copy made a moment ago (a test, a restore) looks live: say how to include it
        every, them = ("the session was", "it") if len(rows) == 1 else (f"all {len(rows):,} sessions were", "them")
        lines.append(f"nothing compacted: {every} modified within --min-age {min_age}; "
                     f"to include {them} anyway, rerun with --min-age 0")
    return "\n".join(lines)


@click.command()
@click.argument("paths", nargs=-1)
@click.option("--output-dir", type=click.Path(file_okay=False), default=None, callback=folder_checked,
              help="Write compacted sessions here, mirroring each input's path under its argument.")
@click.option("--in-place", is_flag=True, help="Replace originals (atomically, after verification).")
@click.option("--no-backup", is_flag=True, help="With --in-place: do not keep NAME.jsonl.bak.")
@click.option("--copy-unchanged", is_flag=True, help="Also copy sessions that need nothing to --output-dir.")
@click.option("--min-age", default="10m", show_default=True, metavar="DURATION",
              callback=lambda ctx, param, value: _duration_checked(value),
              help="Skip files modified more recently than this (live sessions); 0 to disable.")
@click.option("--state", "state", type=click.Path(dir_okay=False), default=None,
              help="Run state database [default: OUTPUT_DIR/.batchcompact/state.sqlite].")
@click.option("--report-dir", type=click.Path(file_okay=False), default=None, callback=folder_checked,
              help="Folder of compactions-<run>.parquet reports [default: OUTPUT_DIR/.batchcompact/reports].")
@click.option("--max-cost", type=click.FloatRange(min=0), default=None, metavar="USD",
              help="Refuse to start above this estimate; stop launching calls once spend reaches it.")
@click.option("--limit", type=click.IntRange(min=0), default=None, help="Compact at most N sessions.")
@click.option("--dry-run", is_flag=True, help="Plan only (same as `batchcompact plan`).")
@click.option("--strict", is_flag=True,
              help="Fail (exit 1) on invalid files every time, not only the first time a run sees them.")
@output_options(dir_okay=True)  # a folder here is the old `run -o DIR`
@click.option("--branch-summaries", is_flag=True,
              help="Also summarize abandoned branches of pi sessions (a branch_summary entry on the active path).")
@click.option("--batch", "use_batch", is_flag=True,
              help="Buy summaries through the provider's batch API at batch prices (OpenAI, Azure, Anthropic): "
              "submit and return; rerun with the same arguments to collect and write.")
@click.option("--wait", "wait", is_flag=True,
              help="With --batch: poll until every batch has ended (backoff, progress bar), then collect and write.")
@click.option("--batch-attempts", type=click.IntRange(min=1), default=3, show_default=True,
              help="With --batch: submissions per request (expired, errored or cancelled ones are resubmitted).")
@branch_options
@planner_options
@strategy_option
@summarizer_options
@pool_options
@executor_options
@click.pass_context
def run(ctx: click.Context, paths: tuple[str, ...], fmt: str, output: str | None, json_flag: bool,
        dry_run: bool, **params: Any) -> int:  # Any: as `Params`
    """Compact the sessions under PATHS: plan, summarize, write, verify, report. Without PATHS, every
    agent's session folders found on this machine (named on stderr).

    Without --model the built-in offline summarizer writes the summaries (no network, no key, cost 0).
    Originals are never modified unless --in-place. Reruns skip finished sessions and never pay twice
    for a summary. Exit codes: 0 all compacted or skipped (also files a live agent changed during the
    run, sessions another run holds, a run stopped with Ctrl-C or SIGTERM, and invalid files an earlier
    run already reported, unchanged since, unless --strict), 1 some sessions failed (or a file is invalid
    for the first time), 2 usage error (also: no session files found, an unknown --model), 3 run aborted
    (authentication or a missing key, litellm broken, a failed --check, lock held, budget refused, state or
    report folder unusable), 4 internal error (a session failed on a bug in batchcompact; the others were
    processed). docs/reliability.md lists the faults.
    Progress bars appear only when stderr is a terminal; -q prints nothing unless something failed.
    --format/-o print the per-session rows (the same as the Parquet report) instead of the summary.

    \b
    Examples:
      batchcompact run sample_sessions --output-dir out --min-age 0
      batchcompact run ~/.pi/agent/sessions --output-dir compacted --model openai/gpt-4o-mini --max-cost 5
      batchcompact run archive/ --in-place --model anthropic/claude-haiku-4-5 --concurrency 16 --rpm 500
      batchcompact run archive/ --output-dir compacted --model openai/gpt-4o-mini --batch   # nightly, from cron
    """
    from batchcompact.pipeline.run_request import compact

    if not params["in_place"] and not dry_run:
        params["output_dir"], output = old_output_dir(ctx, "run", output, params["output_dir"], fmt, json_flag)
    fmt = pick_format(fmt, json_flag)
    require_output(fmt, output)
    if dry_run:
        from batchcompact.cli.plan import plan_instead_of_run

        return plan_instead_of_run(ctx, paths, fmt=fmt, output=output, **params)
    quiet = (ctx.find_root().obj or {}).get("quiet", False)
    request, executor = run_request(ctx, paths, params, progress=sys.stderr.isatty() and not quiet)
    if executor is not None:
        ctx.call_on_close(executor.close)
    min_age = params["min_age"]
    summary = compact(request, executor=executor, say=None if quiet else lambda line: click.echo(line, err=True),
                      on_round=None if quiet else lambda s, wall: click.echo(summary_text(s, wall, min_age), err=True))
    print_summary(summary, fmt, output, min_age, quiet, params["output_dir"])
    return summary.exit_code


def run_request(ctx: click.Context, paths: tuple[str, ...], params: Params, *,
                progress: bool) -> tuple[RunRequest, Executor | None]:
    """(the `RunRequest` of the parsed options, the executor they open or None): the options' own conflicts
    first, then the paths they name, then the batch settings, in that order of complaint."""
    from batchcompact.discover import cli_paths
    from batchcompact.pipeline.run import RunOptions, check_destination
    from batchcompact.pipeline.run_request import RunRequest, SummarizerChoice

    p = params
    check_destination(p["in_place"], p["output_dir"])
    paths = tuple(cli_paths(paths, "run"))  # no PATHS: every agent's session folders
    choice = SummarizerChoice(model=p.pop("model"), api_base=p.pop("api_base"), api_key=p.pop("api_key"),
                              timeout=p.pop("timeout"), spec=p.pop("summarizer"), check=p.pop("check"))
    batch = None
    if p["use_batch"] or p["wait"]:  # the batch machinery (asyncio, the batch store) only for --batch runs
        from batchcompact.pipeline.batch import batch_options

        batch = batch_options(p["use_batch"], wait=p["wait"], model=choice.model, api_base=choice.api_base,
                              api_key=choice.api_key, max_attempts=p["batch_attempts"], summarizer_spec=choice.spec)
    agent = agent_fields(ctx, p.pop("agent_settings", True))
    jobs = resolve_jobs(p.pop("jobs"))
    executor = open_executor(p.pop("executor"), jobs, p.pop("ray_address"))
    settings = pop_settings(p)
    pool = pool_settings_from(concurrency=p["concurrency"], rpm=p["rpm"], tpm=p["tpm"],
                              max_attempts=p["max_attempts"], max_cost_usd=p["max_cost"], redact=not p["no_redact"])
    options = RunOptions(
        output_dir=Path(p["output_dir"]) if p["output_dir"] else None,
        in_place=p["in_place"],
        backup=not p["no_backup"],
        copy_unchanged=p["copy_unchanged"],
        min_age_s=parse_duration(p["min_age"]),
        state_path=Path(p["state"]) if p["state"] else None,
        report_dir=Path(p["report_dir"]) if p["report_dir"] else None,
        max_cost_usd=p["max_cost"],
        limit=p["limit"],
        jobs=jobs,
        summary_model=choice.summary_model,
        pricing_file=p["pricing"],
        progress=progress,
        branch_summaries=p["branch_summaries"],
        min_branch_tokens=p["min_branch_tokens"],
        branch_reserve_tokens=p["branch_reserve_tokens"],
        strict=p["strict"],
        agent_settings=agent,
        batch=batch,
    )
    rounds = p["batch_attempts"] if p["wait"] else 0
    return RunRequest(paths, settings, options, choice, pool, wait_rounds=rounds), executor


def print_summary(summary: RunSummary, fmt: str, output: str | None, min_age: str, quiet: bool,
                  output_dir: str | None) -> None:
    """The run's result: the summary for people (table), or the rows (JSON, CSV, ...) with the summary on stderr."""
    if output:  # a results FILE inside --output-dir may be in a folder the run did not make
        from batchcompact.outfile import make_folder_of

        make_folder_of(output, output_dir)
    if fmt == "table":
        text = summary_text(summary, summary.wall_s, min_age, quiet=quiet)
        if text:
            if output:
                from batchcompact.outfile import write_text

                write_text(output, text + "\n")
            else:
                click.echo(text, err=quiet)
        return
    write_rows(fmt, output, summary.rows, summary=lambda: {
        "totals": {"sessions": len(summary.rows), "by_status": dict(sorted(summary.by_status.items())),
                   "cost_usd": None if any(r.get("unpriced") for r in summary.rows)
                   else sum_usd(r["cost_usd"] for r in summary.rows),
                   "unpriced_sessions": sum(1 for r in summary.rows if r.get("unpriced"))},
        "run_id": summary.run_id,
        "by_status": summary.by_status,
        "report": str(summary.report_path) if summary.report_path else None,
        "aborted": summary.aborted,
        "notes": summary.notes,
        "exit_code": summary.exit_code,
        # null when a summary model had no price: unknown, not free
        "cost_usd": None if any(r.get("unpriced") for r in summary.rows)
        else sum_usd(r["cost_usd"] for r in summary.rows),
        "unpriced_sessions": sum(1 for r in summary.rows if r.get("unpriced")),
    })
    if not quiet:
        click.echo(summary_text(summary, summary.wall_s, min_age), err=True)
