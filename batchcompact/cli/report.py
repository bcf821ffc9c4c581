"""`batchcompact report`: usage and cost across session archives (a thin wrapper over batchcompact.report)."""

from __future__ import annotations

import sys
from datetime import date, datetime
from typing import TYPE_CHECKING, Any

import click

from batchcompact.agents import product_names
from batchcompact.cli.command import AliasChoice
from batchcompact.cli.config import ExpandedPath
from batchcompact.cli.options import executor_options
from batchcompact.cli.output import check_output, output_options, pick_format
from batchcompact.core.words import counted
from batchcompact.errors import UsageError
from batchcompact.report.dimensions import GROUPINGS, by_help
from batchcompact.report.readers import agent_names

if TYPE_CHECKING:
    from batchcompact.report.produce import ReportOutput, ReportRequest

INCOMPLETE_EXIT = 1  # the report was made, without rows an input lost (a usage export cut short)


def _parse_date(ctx: click.Context, param: click.Parameter, value: str | None) -> date | None:
    if value is None:
        return None
    for fmt in ("%Y-%m-%d", "%Y%m%d"):
        try:
            return datetime.strptime(value, fmt).date()
        except ValueError:
            continue
    raise click.BadParameter(f"{value!r} is not a date; use YYYY-MM-DD or YYYYMMDD")


def _check_timezone(ctx: click.Context, param: click.Parameter, value: str) -> str:
    from zoneinfo import ZoneInfo, ZoneInfoNotFoundError

    try:
        ZoneInfo(value)
    except (ZoneInfoNotFoundError, ValueError):
        raise click.BadParameter(
            f"unknown time zone {value!r} (use an IANA name such as Europe/Berlin)"
        ) from None
    return value


@click.command("report")
@click.argument("paths", nargs=-1, type=ExpandedPath())  # checked one by one, as every command's (discover.py)
@click.option(
    "--by",
    type=click.Choice(GROUPINGS),
    default="day",
    show_default=True,
    help=by_help(),
)
@click.option("--breakdown", is_flag=True, help="Split each group per model.")
@click.option(
    "--machine", metavar="NAME",
    help="This machine's name in the report and in every exported row [default: the host name].",
)
@click.option("--since", callback=_parse_date, metavar="DATE", help="First day to include (YYYY-MM-DD).")
@click.option("--until", callback=_parse_date, metavar="DATE", help="Last day to include (YYYY-MM-DD).")
@click.option(
    "--last", type=click.IntRange(min=1), metavar="N",
    help="Only the last N periods (1 = today/this week/this month), or the N latest sessions, projects, models, blocks.",
)
@click.option(
    "--start-of-week",
    type=click.Choice(["monday", "tuesday", "wednesday", "thursday", "friday", "saturday", "sunday"]),
    default="monday",
    show_default=True,
    help="First day of a week for --by week and --last.",
)
@click.option(
    "--order", type=click.Choice(["asc", "desc"]),
    help="Sort periods and blocks by time, sessions by last activity, projects and models by cost.",
)
@click.option(
    "--agent", "agents", multiple=True, type=AliasChoice(agent_names(), product_names()),
    help="Only this agent's rows (repeatable; batchcompact: the run reports); without PATHS only its places "
    "are read. An agent's product name is taken too (claude-code = claude, gemini-cli = gemini, ...).",
)
@click.option(
    "--source", "sources", multiple=True, type=AliasChoice(agent_names(), product_names()), metavar="AGENT",
    help="The same as --agent (its older name, kept for scripts and config files).",
)
@click.option(
    "--project", "projects", multiple=True, metavar="DIR",
    help="Only this project: its working directory or that folder's name (repeatable).",
)
@click.option(
    "--session", "sessions", multiple=True, metavar="ID", help="Only this session id or id prefix (repeatable)."
)
@click.option(
    "--token-limit", metavar="N|max", callback=lambda ctx, param, value: _token_limit(value),
    help="--by block: show each block's share of N tokens ('max' = the largest finished block).",
)
@click.option("--compact", is_flag=True, help="Narrow table: key, input, output, total, cost (automatic on narrow terminals).")
@click.option(
    "--timezone",
    default="UTC",
    show_default=True,
    callback=_check_timezone,
    help="Time zone for days, weeks, months and --since/--until.",
)
@output_options()
@click.option(
    "--pricing",
    "pricing_file",
    type=click.Path(exists=True, dir_okay=False),
    help="JSON price map (litellm's shape) overriding the bundled prices.",
)
@click.option(
    "--cost-mode",
    type=click.Choice(["auto", "calculate", "recorded"]),
    default="auto",
    show_default=True,
    help="auto: recorded cost where the file has one, else computed.",
)
@click.option(
    "--cache-dir",
    type=click.Path(file_okay=False),
    help="Usage cache folder [default: $XDG_CACHE_HOME/batchcompact or ~/.cache/batchcompact].",
)
@click.option("--no-cache", is_flag=True, help="Parse everything; neither read nor write the usage cache.")
@click.option(
    "--cache-above",
    metavar="SIZE",
    default="256MB",
    show_default=True,
    callback=lambda ctx, param, value: parse_size(value),  # bytes, checked while parsing: names its source
    help="Keep per-file usage parts only for archives larger than SIZE (e.g. 0, 512MB, 2GB): a smaller "
    "one is read whole, which is faster than loading the parts; its report is stored either way. The first "
    "report of a larger archive writes its parts while it reads the files.",
)
@click.option("--jobs", type=click.IntRange(min=1), help="Processes for parsing [default: CPUs, at most 8].")
@click.option(
    "--chart", type=click.Path(dir_okay=False), callback=lambda ctx, param, value: _chart_file(value),
    help="Draw the table's cost per row, stacked by model (.png; a .html FILE is the page of --html)."
)
@click.option(
    "--html", "html", type=click.Path(dir_okay=False), metavar="FILE",
    callback=lambda ctx, param, value: _page_file(value),
    help="Also write one self-contained HTML page of the spend (headline, chart over time by a dimension "
    "you switch, tables, sessions) with the same filters; opens from file:// with no network.",
)
@executor_options
def report(paths: tuple[str, ...], fmt: str, output: str | None, json_flag: bool, compact: bool, chart: str | None,
           html: str | None, machine: str | None, cache_dir: str | None, no_cache: bool, cache_above: int,
           jobs: int | None, executor: str = "local", ray_address: str | None = None,
           **counting: Any) -> int:  # Any: the other options by ReportSettings' field names, each of its own type
    """Usage and cost across session archives (every agent's, and batchcompact runs).

    PATHS are files or folders (walked for *.jsonl, *.jsonl.zst, compactions*.parquet and the JSON
    files and SQLite databases an agent keeps, e.g. opencode.db). Without PATHS, every agent's places
    found on this machine are read (Claude Code, Codex, pi and its descendants, OpenCode, Kilo, Gemini
    CLI and the others in `batchcompact.discover`), each named on stderr.
    Tokens: input = non-cached input for every agent; cost is USD. Requests with no tokens at all
    are left out (counted with -v).

    \b
    Examples:
      batchcompact report
      batchcompact report --by block --token-limit max
      batchcompact report --by session --last 5 --order desc
      batchcompact report --by agent
      batchcompact report --by branch --project shop --since 2026-03-01
      batchcompact report --by provider --breakdown
      batchcompact report --by request --format parquet -o /shared/usage/$(hostname).parquet
      batchcompact report /shared/usage/ --by machine
      batchcompact report --agent gemini --agent opencode --by model
      batchcompact report ~/.claude/projects ~/.codex/sessions --by month
      batchcompact report ~/.pi/agent/sessions --by model --since 2026-01-01 --format json
      batchcompact report runs/ --source batchcompact --by session --chart cost.png
      batchcompact report /shared/usage/ --html /shared/usage/spend.html
    """
    from batchcompact.report.machine import machine_id, machine_name
    from batchcompact.report.produce import ReportRequest, produce_report
    from batchcompact.report.settings import ReportSettings

    ctx = click.get_current_context()
    quiet = bool((ctx.obj or {}).get("quiet"))
    verbose = int((ctx.obj or {}).get("verbose") or 0)
    fmt = pick_format(fmt, json_flag)
    if chart and chart.lower().endswith((".html", ".htm")):  # the page replaces the old SVG chart
        if html:
            raise UsageError(f"--chart {chart} is an HTML page as --html {html} is: give one")
        chart, html = None, chart
    aliases, groups = _project_table(ctx)
    agents = tuple(dict.fromkeys((*counting.pop("agents"), *counting.pop("sources"))))  # --source: --agent
    # `counting`: the other options named as ReportSettings' fields (--by, --since, ...), as parsed
    settings = ReportSettings(**counting, agents=agents, project_aliases=aliases, project_groups=groups,
                              machine=machine_name(machine), machine_id=machine_id())
    request = ReportRequest(paths=paths, settings=settings, fmt=fmt, output=output, chart=chart, html=html,
                            cache_dir=cache_dir, no_cache=no_cache, cache_above=cache_above, jobs=jobs,
                            executor=executor, ray_address=ray_address)
    if fmt == "parquet" and not output:
        raise click.UsageError("--format parquet needs --output FILE")
    out = produce_report(request, say=None if quiet else lambda m: click.echo(m, err=True),
                         warn=lambda w: click.echo(f"warning: {w}", err=True))
    _print(out, fmt, output, compact, quiet=quiet, verbose=verbose)
    if out.requests == 0 and not quiet:
        _say_nothing_matched(request)
    if out.incomplete:  # an export cut short, a file not read: the numbers lack their rows
        click.echo(f"warning: the report is incomplete: {counted(out.incomplete, 'file')} not read or cut short "
                   "(named above); exit 1", err=True)
        return INCOMPLETE_EXIT
    return 0


def _say_nothing_matched(request: ReportRequest) -> None:
    """A report of zero under filters (--project, --session, --since, --until, --agent) says so, and what the
    paths hold without them: a typo in a project's name is otherwise an empty table and exit 0."""
    import dataclasses
    import json

    from batchcompact.report.produce import produce_report

    settings = request.settings
    named = [f"--since {settings.since}" if settings.since else "", f"--until {settings.until}" if settings.until else "",
             *(f"--project {p}" for p in settings.projects), *(f"--session {s}" for s in settings.sessions),
             *((f"--agent {a}" for a in settings.agents) if request.paths else ())]
    named = [n for n in named if n]
    if not named:
        return
    plain = dataclasses.replace(settings, since=None, until=None, projects=(), sessions=(),
                                agents=() if request.paths else settings.agents, by="project", breakdown=False,
                                last=None)
    held = produce_report(dataclasses.replace(request, settings=plain, fmt="json", output=None, chart=None,
                                              html=None))
    found = json.loads(held.texts["wide"]) if held.texts.get("wide") else {"rows": [], "totals": {}}
    totals = found.get("totals") or {}
    if not totals.get("requests"):
        click.echo(f"warning: nothing matched {' '.join(named)}: the paths hold no usage at all", err=True)
        return
    projects = [str(row.get("project")) for row in found.get("rows") or []]
    shown = ", ".join(projects[:5]) + (f", … {len(projects) - 5} more" if len(projects) > 5 else "")
    first, last = (str(totals.get(k) or "")[:10] for k in ("first_timestamp", "last_timestamp"))
    click.echo(f"warning: nothing matched {' '.join(named)}: the paths hold {counted(totals['requests'], 'request')} "
               f"from {first} to {last} of {', '.join(totals.get('agents') or [])} in "
               f"{counted(len(projects), 'project')} ({shown})", err=True)


def _project_table(ctx: click.Context) -> tuple[tuple[tuple[str, str], ...], tuple[tuple[str, tuple[str, ...]], ...]]:
    """The config file's [report.projects] (aliases, groups) as ReportSettings takes them."""
    from batchcompact.cli.command import RESOLUTION_KEY
    from batchcompact.report.settings import project_config

    resolution = ctx.meta.get(RESOLUTION_KEY)
    if resolution is None:
        return (), ()
    try:
        return project_config(resolution.tables.get("projects"), str(resolution.config_path))
    except ValueError as exc:
        raise UsageError(str(exc)) from None


SIZE_UNITS = {"": 1, "B": 1, "KB": 10**3, "MB": 10**6, "GB": 10**9, "TB": 10**12}


def parse_size(text: str) -> int:
    """'256MB', '2GB', '0' (decimal units) -> bytes."""
    value = str(text).strip().upper().replace(" ", "")
    number = value.rstrip("KMGTB")
    unit = value[len(number):]
    try:
        size = float(number)
    except ValueError:
        size = -1.0
    if unit not in SIZE_UNITS or size < 0:
        raise click.BadParameter(f"{text!r}: give a size such as 0, 512MB or 2GB")
    return int(size * SIZE_UNITS[unit])


def _token_limit(value: str | None) -> str | None:
    if value is not None and value != "max" and not value.isdigit():
        raise click.BadParameter(f"{value!r}: give a number of tokens or 'max'")
    return value


def _chart_file(value: str | None) -> str | None:
    check_output(value, "--chart")  # refused before the report's work when it cannot be written
    return value


def _page_file(value: str | None) -> str | None:
    check_output(value, "--html")
    return value


def _print(out: ReportOutput, fmt: str, output: str | None, compact: bool, *, quiet: bool, verbose: int) -> None:
    """The report's output, and on stderr what a person needs to know about it."""
    if out.replayed:
        for warning in out.warnings:  # the full path printed them as they came
            click.echo(f"warning: {warning}", err=True)
    _warn_unpriced(out.unpriced)
    if out.records is not None:
        from batchcompact.cli.output import write_rows

        write_rows(fmt, output, out.records)
    elif out.texts:
        _emit(out.texts, out.table_width, fmt, output, compact)
    if verbose and out.dropped_zero:
        click.echo(f"{counted(out.dropped_zero, 'request')} with no tokens left out", err=True)
    if verbose and out.rejected:
        click.echo(f"{out.rejected} cache parts failed verification and were rebuilt", err=True)
    if quiet:
        return
    unread = f", {out.unread} not read (named above)" if out.unread else ""
    if out.replayed:
        click.echo(f"{counted(out.files, 'file')}: 0 parsed, {out.files - out.unread} from cache (the stored report)"
                   f"{unread}",
                   err=True)
    else:
        click.echo(f"{counted(out.files, 'file')}: {out.parsed} parsed, {out.from_cache} from cache{unread}", err=True)


def _warn_unpriced(models: list[str]) -> None:
    if models:
        click.echo(
            "warning: no price for "
            + ", ".join(models)
            + " (their computed cost is unknown; marked * in the table; add them with --pricing FILE)",
            err=True,
        )


def _emit(texts: dict[str, str], table_width: int | None, fmt: str, output: str | None, compact: bool) -> None:
    """The rendered text to --output or stdout; a table fitted to the terminal (or $COLUMNS): the compact one
    when the wide one does not fit, then its long text columns elided. Piped without $COLUMNS: whole."""
    from batchcompact.cli.output import fit_rendered_table
    from batchcompact.cli.output import table_width as terminal_width

    width = terminal_width(sys.stdout) if fmt == "table" and not output else None
    if width is not None and not compact:
        from batchcompact.report.render import COMPACT_WIDTH

        compact = width < min(COMPACT_WIDTH, table_width or 0)
    text = texts["compact"] if fmt == "table" and compact else texts["wide"]
    if width is not None:
        text = fit_rendered_table(text, width)
    if output:
        from batchcompact.outfile import write_text

        write_text(output, text)
    elif text:
        click.echo(text, nl=False)


if __name__ == "__main__":  # pragma: no cover
    sys.exit(report())
