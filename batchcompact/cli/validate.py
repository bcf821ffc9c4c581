"""`batchcompact validate`: structural and schema checks, a line per problem."""

from __future__ import annotations

import json

import click

from batchcompact.cli.options import resolve_jobs
from batchcompact.core.entries import Problem


@click.command()
@click.argument("paths", nargs=-1)
@click.option("--format", "fmt", type=click.Choice(["text", "json"]), default="text", show_default=True)
@click.option("--jobs", type=click.IntRange(min=1), default=None, help="Processes [default: number of cores].")
@click.option("--errors-only", is_flag=True, help="Do not print warnings.")
def validate(paths: tuple[str, ...], fmt: str, jobs: int | None, errors_only: bool) -> int:
    """Check session files under PATHS (files, directories, globs) for problems; without PATHS, every
    agent's session folders found on this machine (named on stderr).

    Prints `path:line: severity: message` for each problem, then a summary. Errors (invalid JSON, torn
    last line, missing header, duplicate ids, dangling or cyclic parentIds, schema violations, ...) make
    a file invalid, and `run` will not rewrite it; warnings (unknown entry types) do not.
    Exit 0 when every file is valid, 1 otherwise.

    \b
    Examples:
      batchcompact validate ~/.pi/agent/sessions
      batchcompact validate 'archive/**/*.jsonl' --format json
    """
    from batchcompact.discover import cli_paths
    from batchcompact.formats.scan import iter_session_files
    from batchcompact.pipeline.parallel import map_bounded
    from batchcompact.pipeline.validation import validate_file

    paths = cli_paths(paths, "validate")  # no PATHS: every agent's session folders
    files = (str(item.path) for item in iter_session_files(paths))
    results = map_bounded(validate_file, files, resolve_jobs(jobs))
    total = invalid = errors = warnings = 0
    if fmt == "json":
        rows = []
        for row in results:
            rows.append(row)
            total += 1
            invalid += not row["valid"]
        click.echo(json.dumps(rows, ensure_ascii=False, indent=1))
        return 0 if invalid == 0 else 1
    for row in results:
        total += 1
        invalid += not row["valid"]
        errors += row["errors"]
        warnings += row["warnings"]
        for problem in row["problems"]:
            if errors_only and problem["severity"] != "error":
                continue
            click.echo(str(Problem(**problem)))
    click.echo(
        f"{total} files checked: {total - invalid} valid, {invalid} invalid ({errors} errors, {warnings} warnings)",
        err=True,
    )
    return 0 if invalid == 0 else 1
