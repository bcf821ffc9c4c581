"""`batchcompact run`: the main job. Compact whole archives safely and resumably."""

from __future__ import annotations

import re
import sys
from pathlib import Path
from typing import Any

import click

from batchcompact.cli.options import (
    agent_fields,
    branch_options,
    executor_options,
    open_executor,
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
    provider_preflight,
    summarizer_options,
)
from batchcompact.core.words import counted
from batchcompact.money import sum_usd
from batchcompact.pipeline.statuses import COMPACTED, FAILED_STATUSES, KNOWN_INVALID, SKIPPED

_DURATION = re.compile(r"^\s*(\d+(?:\.\d+)?)\s*([smhd]?)\s*$")


def parse_duration(text: str) -> float:
    """'10m' -> 600.0; units s, m, h, d; a bare number is seconds."""
    match = _DURATION.match(text)
    if not match:
        raise click.BadParameter(f"{text!r} is not a duration like 30s, 10m, 2h or 1d")
    value, unit = float(match.group(1)), match.group(2) or "s"
    return value * {"s": 1, "m": 60, "h": 3600, "d": 86400}[unit]


def _duration_checked(value: str) -> str:
    """--min-age checked while the options are parsed (so a bad one names the option and where it came
    from: a config file, the environment); kept as given, for the messages that quote it."""
    parse_duration(value)
    return value


def _counted(rows: list[dict[str, Any]], min_age: str) -> str:
    kinds: dict[str, int] = {}
    for row in rows:
        kind = reason_kind(row.get("reason"), min_age)
        kinds[kind] = kinds.get(kind, 0) + 1
    return ", ".join(f"{n} {kind}" for kind, n in sorted(kinds.items(), key=lambda kv: (-kv[1], kv[0])))


def summary_text(summary: Any, wall: float, min_age: str = "10m", quiet: bool = False) -> str:
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
            lines.append(f"  {known} known invalid: reported by an earlier run and unchanged since "
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
def run(ctx: click.Context, paths: tuple[str, ...], output_dir: str | None, in_place: bool, no_backup: bool,
        copy_unchanged: bool, min_age: str, state: str | None, report_dir: str | None, max_cost: float | None,
        limit: int | None, dry_run: bool, strict: bool, fmt: str, output: str | None, json_flag: bool,
        pricing: str | None, jobs: int | None, model: str,
        api_base: str | None, api_key: str | None, timeout: float, summarizer: str | None, check: bool,
        no_redact: bool,
        concurrency: int, rpm: float | None, tpm: float | None, max_attempts: int, branch_summaries: bool,
        min_branch_tokens: int, branch_reserve_tokens: int, use_batch: bool = False, wait: bool = False,
        batch_attempts: int = 3, **kwargs: Any) -> int:
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
    import time

    from batchcompact.discover import cli_paths
    from batchcompact.pipeline.batch_commands import run_until_collected
    from batchcompact.pipeline.run import RunOptions, check_destination, run_archive

    if not in_place and not dry_run:
        output_dir, output = old_output_dir(ctx, "run", output, output_dir, fmt, json_flag)
    fmt = pick_format(fmt, json_flag)
    require_output(fmt, output)
    if dry_run:
        from batchcompact.cli.plan import plan_instead_of_run

        return plan_instead_of_run(ctx, paths, model, fmt=fmt, output=output, pricing=pricing, jobs=jobs,
                                   min_branch_tokens=min_branch_tokens,
                                   branch_reserve_tokens=branch_reserve_tokens, **kwargs)
    check_destination(in_place, output_dir)  # the options' own conflicts first, then the paths they name
    paths = tuple(cli_paths(paths, "run"))  # no PATHS: every agent's session folders
    batch = None
    if use_batch or wait:  # the batch machinery (asyncio, the batch store) only for --batch runs
        from batchcompact.pipeline.batch import batch_options

        batch = batch_options(use_batch, wait=wait, model=model, api_base=api_base, api_key=api_key,
                              max_attempts=batch_attempts, summarizer_spec=summarizer)
    agent = agent_fields(ctx, kwargs.pop("agent_settings", True))
    executor = open_executor(kwargs.pop("executor"), resolve_jobs(jobs), kwargs.pop("ray_address"))
    if executor is not None:
        ctx.call_on_close(executor.close)
    settings = pop_settings(kwargs)
    quiet = (ctx.find_root().obj or {}).get("quiet", False)
    from batchcompact.pricing import PriceTable

    PriceTable.load(pricing)  # a missing or broken price map is one usage error, not a failure per session
    # before any file is read: an unknown model, a missing key (or a failed --check) costs nothing
    provider = provider_preflight(model, api_base=api_base, api_key=api_key, summarizer=summarizer, check=check,
                                  timeout=timeout, quiet=quiet)
    from batchcompact.summarize import build_summarizer

    summarizer_obj = build_summarizer(model, api_base=api_base, api_key=api_key, timeout=timeout,
                                      summarizer_spec=summarizer, pricing_file=pricing, provider=provider)
    pool = pool_settings_from(concurrency=concurrency, rpm=rpm, tpm=tpm, max_attempts=max_attempts,
                              max_cost_usd=max_cost, redact=not no_redact)
    options = RunOptions(
        output_dir=Path(output_dir) if output_dir else None,
        in_place=in_place,
        backup=not no_backup,
        copy_unchanged=copy_unchanged,
        min_age_s=parse_duration(min_age),
        state_path=Path(state) if state else None,
        report_dir=Path(report_dir) if report_dir else None,
        max_cost_usd=max_cost,
        limit=limit,
        jobs=resolve_jobs(jobs),
        summary_model=model if not summarizer else f"custom:{summarizer}",
        pricing_file=pricing,
        progress=sys.stderr.isatty() and not quiet,
        branch_summaries=branch_summaries,
        min_branch_tokens=min_branch_tokens,
        branch_reserve_tokens=branch_reserve_tokens,
        strict=strict,
        agent_settings=agent,
        batch=batch,
    )
    started = time.monotonic()
    summary = run_until_collected(
        lambda: run_archive(paths, settings, options, summarizer_obj, pool, executor=executor),
        options.resolved_state_path(), rounds=batch_attempts if wait else 0, api_key=api_key,
        progress=options.progress,
        on_round=None if quiet else lambda s: click.echo(summary_text(s, time.monotonic() - started, min_age),
                                                          err=True))
    wall = time.monotonic() - started
    if output:  # a results FILE inside --output-dir may be in a folder the run did not make
        from batchcompact.outfile import make_folder_of

        make_folder_of(output, output_dir)
    if fmt == "table":
        text = summary_text(summary, wall, min_age, quiet=quiet)
        if text:
            if output:
                from batchcompact.outfile import write_text

                write_text(output, text + "\n")
            else:
                click.echo(text, err=quiet)
        return summary.exit_code
    write_rows(fmt, output, summary.rows, summary=lambda: {
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
        click.echo(summary_text(summary, wall, min_age), err=True)
    return summary.exit_code
