"""`batchcompact batches`: the provider batches that `run --batch` submitted; `--cancel ID`."""

from __future__ import annotations

from pathlib import Path

import click

from batchcompact.cli.output import output_options

COLUMNS = (
    ("id", "batch"),
    ("provider", "provider"),
    ("created", "created"),
    ("status", "status"),
    ("requests", "requests"),
    ("done", "done"),
    ("failed", "failed"),
    ("expired", "expired"),
    ("est_cost_usd", "est $"),
    ("cost_usd", "cost $"),
)


@click.command()
@click.option("--output-dir", type=click.Path(file_okay=False), default=None,
              help="The --output-dir of the runs (their state is OUTPUT_DIR/.batchcompact/state.sqlite).")
@click.option("--state", "state", type=click.Path(dir_okay=False), default=None,
              help="The run state database the runs used (their --state).")
@click.option("--cancel", "cancel", metavar="ID", default=None,
              help="Ask the provider to cancel this batch (provider id or local id); finished requests are "
              "still collected by the next run, the rest are resubmitted while attempts remain.")
@click.option("--api-key", envvar="BATCHCOMPACT_API_KEY", show_envvar=True, default=None, show_default=False,
              help="API key for --cancel (default: the provider's usual variable). Never logged or written.")
@click.option("--refresh", is_flag=True, help="Ask the providers for the status of open batches first.")
@click.option("--limit", type=click.IntRange(min=1), default=50, show_default=True,
              help="Ended batches to show (open ones are always shown).")
@output_options(dir_okay=True)  # a folder here is the old `batches -o DIR`
@click.pass_context
def batches(ctx: click.Context, output_dir: str | None, state: str | None, cancel: str | None, api_key: str | None,
            refresh: bool, limit: int, fmt: str, output: str | None, json_flag: bool) -> int:
    """List open and recent provider batches (as of the last run, or now with --refresh): id, provider, created,
    status, requests done/failed/expired, estimated and actual cost (at the batch price).

    \b
    Examples:
      batchcompact batches --output-dir compacted
      batchcompact batches --state ~/.local/state/batchcompact/state.sqlite --cancel batch_abc123
    """
    from batchcompact.cli.output import (
        old_output_dir,
        open_output,
        pick_format,
        print_table,
        require_output,
        write_rows,
    )
    from batchcompact.pipeline.batch_commands import cancel_batch, list_batches, refresh_batches
    from batchcompact.pipeline.run_options import RunOptions

    output_dir, output = old_output_dir(ctx, "batches", output, output_dir, fmt, json_flag)
    fmt = pick_format(fmt, json_flag)
    require_output(fmt, output)

    options = RunOptions(output_dir=Path(output_dir) if output_dir else None,
                         state_path=Path(state) if state else None)
    path = options.resolved_state_path()
    if cancel:
        row = cancel_batch(path, cancel, api_key)
        if fmt == "table":
            click.echo(f"batch {row['id']}: {row['status']}")
        else:
            write_rows(fmt, output, [row])
        return 0
    if refresh:
        refresh_batches(path, api_key)
    rows = list_batches(path, limit)
    if fmt != "table":
        write_rows(fmt, output, rows, [key for key, _ in COLUMNS])
    elif not rows:
        click.echo(f"no batches in {path}")
    else:
        with open_output(output) as out:
            print_table(rows, COLUMNS, out)
    return 0
