"""`batchcompact validate`: structural and schema checks, a line per problem."""

from __future__ import annotations

from collections.abc import Iterator, Sequence

import click

from batchcompact.cli.options import resolve_jobs
from batchcompact.cli.output import output_options, pick_format, require_output, write_rows
from batchcompact.core.entries import Problem
from batchcompact.core.jsontypes import JsonObject
from batchcompact.core.words import counted
from batchcompact.errors import is_internal_error, outcome_exit_code

COLUMNS = ("path", "format", "session_id", "entries", "valid", "errors", "warnings", "problems")


@click.command()
@click.argument("paths", nargs=-1)
@output_options(aliases={"text": "table"})
@click.option("--jobs", type=click.IntRange(min=1), default=None, help="Processes [default: number of cores].")
@click.option("--errors-only", is_flag=True, help="Do not print warnings.")
@click.pass_context
def validate(ctx: click.Context, paths: Sequence[str], fmt: str, output: str | None, json_flag: bool,
             jobs: int | None, errors_only: bool) -> int:
    """Check session files under PATHS (files, directories, globs) for problems; without PATHS, every
    agent's session folders found on this machine (named on stderr).

    Prints `path:line: severity: message` for each problem, then a summary. Errors (invalid JSON, torn
    last line, missing header, duplicate ids, dangling or cyclic parentIds, schema violations, ...) make
    a file invalid, and `run` will not rewrite it; warnings (unknown entry types; in a pi session what pi
    passes over when it opens it: a line that is not JSON, a parent not in the file, an entry without an
    id, no header) do not.
    Exit 0 when every file is valid, 1 otherwise, 2 when PATHS hold no session file, 4 when a file hit
    an internal error (a bug in batchcompact; the other files are still checked).
    --format json/jsonl/csv/parquet give one row per file with its problems.

    \b
    Examples:
      batchcompact validate ~/.pi/agent/sessions
      batchcompact validate examples/broken
      batchcompact validate '~/archive/**/*.jsonl' --format json
    """
    from batchcompact.discover import cli_paths
    from batchcompact.pipeline.validation import validate_paths

    paths = cli_paths(paths, "validate")  # no PATHS: every agent's session folders
    fmt = pick_format(fmt, json_flag)
    require_output(fmt, output)
    results = validate_paths(paths, resolve_jobs(jobs))
    counts = {"files": 0, "valid": 0, "invalid": 0, "errors": 0, "warnings": 0}

    internal: list[str] = []

    def checked() -> Iterator[JsonObject]:
        for row in results:
            bugs = [p["message"] for p in row["problems"] if is_internal_error(p["message"])]
            if bugs:
                internal.append(row["path"])
                if fmt != "table":  # the table prints every problem line already
                    click.echo(f"{row['path']}: {bugs[0]}", err=True)
            counts["files"] += 1
            counts["valid" if row["valid"] else "invalid"] += 1
            counts["errors"] += row["errors"]
            counts["warnings"] += row["warnings"]
            yield row

    quiet = (ctx.find_root().obj or {}).get("quiet", False)
    if fmt != "table":
        write_rows(fmt, output, checked(), COLUMNS, summary=lambda: {"totals": counts})
    else:
        from batchcompact.cli.output import open_output

        with open_output(output) as out:
            for row in checked():
                for problem in row["problems"]:
                    if errors_only and problem["severity"] != "error":
                        continue
                    out.write(str(Problem(**problem)) + "\n")
    if not quiet:
        click.echo(
            f"{counted(counts['files'], 'file')} checked: {counts['valid']} valid, {counts['invalid']} invalid "
            f"({counted(counts['errors'], 'error')}, {counted(counts['warnings'], 'warning')})",
            err=True,
        )
    return outcome_exit_code(counts["invalid"], len(internal))
