"""What every batchcompact command shares: the global options, the settings resolver, grouped help.

`adopt(command)` turns any click command into one of ours (the group calls it on every command it
loads), so a command added later gets the global options, BATCHCOMPACT_* variables, config-file values
and grouped help without doing anything.
"""

from __future__ import annotations

import logging
import sys
from collections.abc import Iterable
from typing import Any, TypedDict

import click

from batchcompact.cli.config import Resolution, option_source, resolve

RESOLUTION_KEY = "batchcompact.resolution"
DEPRECATED_KEY = "batchcompact.deprecated"


class RootOptions(TypedDict, total=False):
    """The global options' values, kept on the root context's `obj` (set by their callbacks)."""

    quiet: bool
    verbose: int
    config_file: str


def _root_obj(ctx: click.Context) -> RootOptions:
    root = ctx.find_root()
    root.ensure_object(dict)
    return root.obj


def _set_quiet(ctx: click.Context, param: click.Parameter, value: bool) -> None:
    if value:
        _root_obj(ctx)["quiet"] = True


def _set_verbose(ctx: click.Context, param: click.Parameter, value: int) -> None:
    obj = _root_obj(ctx)
    obj["verbose"] = obj.get("verbose", 0) + (value or 0)


def _set_config(ctx: click.Context, param: click.Parameter, value: str | None) -> None:
    if value:
        _root_obj(ctx)["config_file"] = value


def global_options() -> list[click.Option]:
    """-q, -v and --config: accepted before or after the subcommand (the group and each command have them)."""
    return [
        click.Option(["-q", "--quiet"], is_flag=True, expose_value=False, callback=_set_quiet, is_eager=True,
                     help="Only errors on stderr, no progress bars: a clean run prints nothing (for cron)."),
        click.Option(["-v", "--verbose"], count=True, expose_value=False, callback=_set_verbose, is_eager=True,
                     help="Log each decision to stderr (-vv for debug)."),
        click.Option(["--config", "config_file"], metavar="FILE", expose_value=False, callback=_set_config,
                     is_eager=True,
                     help="Settings file [default: $BATCHCOMPACT_CONFIG or $XDG_CONFIG_HOME/batchcompact/config.toml]."),
    ]


class PlainFormatter(logging.Formatter):
    """Warnings and errors in the voice of every other line on stderr (`warning: TEXT`, `error: TEXT`), not a
    logger's (`WARNING batchcompact.formats.scan: TEXT`); another library's keep its name. -v's and -vv's
    lines keep the level and the logger, which say where they come from."""

    def format(self, record: logging.LogRecord) -> str:
        if record.levelno < logging.WARNING:
            return f"{record.levelname} {record.name}: {record.getMessage()}"
        source = "" if record.name.split(".")[0] == "batchcompact" else f"{record.name}: "
        return f"{record.levelname.lower()}: {source}{record.getMessage()}"


def configure_logging(obj: RootOptions) -> None:
    level = logging.WARNING
    if obj.get("quiet"):
        level = logging.ERROR
    elif obj.get("verbose", 0) == 1:
        level = logging.INFO
    elif obj.get("verbose", 0) >= 2:
        level = logging.DEBUG
    handler = logging.StreamHandler(sys.stderr)
    handler.setFormatter(PlainFormatter())
    logging.basicConfig(level=level, handlers=[handler], force=True)


# Option groups in --help, by parameter name; options not named here are listed under "Options".
HELP_GROUPS: tuple[tuple[str, tuple[str, ...]], ...] = (
    ("Input and output", ("fmt", "output", "output_dir", "in_place", "no_backup", "copy_unchanged", "state",
                          "report_dir", "errors_only", "with_context", "chart", "strict")),
    ("Selection", ("min_age", "limit", "since", "until", "sources", "by", "breakdown", "timezone", "dry_run",
                   "existing")),
    ("Compaction settings", ("preset", "agent_settings", "keep_recent_tokens", "reserve_tokens", "summary_budget",
                             "context_window",
                             "threshold_percent", "threshold_tokens", "force", "instructions",
                             "prune_tool_outputs", "branch_summaries", "min_branch_tokens",
                             "branch_reserve_tokens")),
    ("Summarizer", ("model", "summary_model", "api_base", "api_key", "timeout", "summarizer", "summarizers", "no_redact",
                    "judge_model")),
    ("Cost and rate limits", ("max_cost", "concurrency", "rpm", "tpm", "max_attempts", "pricing", "pricing_file",
                              "cost_mode")),
    ("Provider batch API", ("use_batch", "wait", "batch_attempts")),
    ("Performance", ("jobs", "cache_dir", "no_cache")),
    ("Global options", ("quiet", "verbose", "config_file", "help")),
)


def _say_where(exc: click.BadParameter, resolution: Resolution | None) -> None:
    """A bad value that came from the environment, the config file or a preset names where it came from
    ("Invalid value for '--jobs': 'two' is not a whole number (from environment BATCHCOMPACT_JOBS)"):
    a cron job's command line does not show it."""
    param, ctx = exc.param, exc.ctx
    if param is None or ctx is None or param.name is None:
        return
    if ctx.get_parameter_source(param.name) is click.core.ParameterSource.COMMANDLINE:
        return
    found = option_source(param, resolution)
    if found is not None:
        exc.message = f"{exc.message.rstrip('.')} (from {found[0]})"  # type: ignore[misc]  # Final in click's types; click formats it later


class BatchCommand(click.Command):
    """A command whose option values resolve CLI > environment > config file > preset > default."""

    def make_context(self, info_name: str | None, args: list[str], parent: click.Context | None = None,
                     **extra: Any) -> click.Context:  # Any: click's own context arguments, passed through
        name = info_name or self.name or ""
        default_map, resolution = resolve(self, name, list(args), parent)
        inherited = extra.get("default_map") or {}
        extra["default_map"] = {**default_map, **inherited}
        try:
            ctx = super().make_context(info_name, args, parent=parent, **extra)
        except click.BadParameter as exc:
            _say_where(exc, resolution)
            raise
        ctx.meta[RESOLUTION_KEY] = resolution
        return ctx

    def invoke(self, ctx: click.Context) -> object:
        configure_logging(_root_obj(ctx))
        return super().invoke(ctx)

    def format_options(self, ctx: click.Context, formatter: click.HelpFormatter) -> None:
        records: dict[str, tuple[str, str]] = {}
        order: list[str] = []
        help_names = set(ctx.help_option_names)
        for param in self.get_params(ctx):
            if not isinstance(param, click.Option):
                continue  # arguments are in the usage line and the text
            record = param.get_help_record(ctx)
            if record is None:
                continue
            name = "help" if set(param.opts) & help_names else (param.name or "")
            records[name] = record
            order.append(name)
        placed: set[str] = set()
        sections: list[tuple[str, list[tuple[str, str]]]] = []
        for title, names in HELP_GROUPS:
            rows = [records[n] for n in order if n in names and n not in placed]
            placed.update(n for n in order if n in names)
            if rows:
                sections.append((title, rows))
        rest = [records[n] for n in order if n not in placed]
        if rest:
            sections.insert(0, ("Options", rest))
        for title, rows in sections:
            with formatter.section(title):
                formatter.write_dl(rows)


class WholeNumberRange(click.IntRange):
    """click.IntRange that says a word that is no number as such: `'abc' is not a whole number.` (click says
    `'abc' is not a valid integer range.`, which reads as if a range were asked for)."""

    # Any: the raw value, a string from the command line or a number already (click's types say the latter)
    def convert(self, value: Any, param: click.Parameter | None, ctx: click.Context | None) -> int:
        if isinstance(value, str):
            try:
                int(value)
            except ValueError:
                self.fail(f"{value!r} is not a whole number.", param, ctx)
        return super().convert(value, param, ctx)


class NumberRange(click.FloatRange):
    """click.FloatRange that says `'abc' is not a number.` (click: `'abc' is not a valid float range.`)."""

    # Any: the raw value, a string from the command line or a number already (click's types say the latter)
    def convert(self, value: Any, param: click.Parameter | None, ctx: click.Context | None) -> float:
        if isinstance(value, str):
            try:
                float(value)
            except ValueError:
                self.fail(f"{value!r} is not a number.", param, ctx)
        return super().convert(value, param, ctx)


class AliasChoice(click.Choice[str]):
    """A choice that also takes other spellings of its values (`--preset claude` = `--preset claude-code`,
    `report --agent claude-code` = `--agent claude`), named in the option's help, never warned about."""

    def __init__(self, choices: Iterable[str], aliases: dict[str, str]) -> None:
        super().__init__(list(choices))
        self.aliases = {alias: name for alias, name in aliases.items() if name in self.choices}

    def convert(self, value: object, param: click.Parameter | None, ctx: click.Context | None) -> str:
        if isinstance(value, str) and value in self.aliases:
            value = self.aliases[value]
        return super().convert(value, param, ctx)


NUMBER_TYPES: dict[type[click.ParamType], type[click.ParamType]] = {click.IntRange: WholeNumberRange,
                                                                    click.FloatRange: NumberRange}


def adopt(command: click.Command) -> click.Command:
    """Make a plain click command a BatchCommand with the global options (idempotent)."""
    if getattr(command, "_batchcompact_adopted", False) or isinstance(command, click.Group):
        return command
    if type(command) is click.Command:
        command.__class__ = BatchCommand
    from batchcompact.cli.config import ExpandedPath

    for param in command.params:  # `~` and $VARS in every path, from the command line, environment or file
        if type(param.type) is click.Path:
            param.type.__class__ = ExpandedPath
        elif type(param.type) in NUMBER_TYPES:  # the same state, a plainer word for a value that is no number
            param.type.__class__ = NUMBER_TYPES[type(param.type)]
    present = {p.name for p in command.params}
    for option in global_options():
        if option.name not in present:
            command.params.append(option)
    command._batchcompact_adopted = True  # type: ignore[attr-defined]  # a mark on click's own object: adopted once (read with getattr above)
    return command


def deprecated(ctx: click.Context, old: str, new: str) -> None:
    """One warning per old spelling on stderr; old spellings keep working for now."""
    seen = ctx.meta.setdefault(DEPRECATED_KEY, set())
    if old in seen:
        return
    seen.add(old)
    click.echo(f"warning: {old} is deprecated; use {new}", err=True)
