"""`batchcompact config`: the effective settings of each command and where each value came from."""

from __future__ import annotations

import json

import click

from batchcompact.agents import AGENTS, load
from batchcompact.cli.config import PRESETS, env_names, option_key, option_source
from batchcompact.cli.output import open_output, output_options, pick_format, write_rows
from batchcompact.core.jsontypes import JsonObject, JsonValue

SECRET_NAMES = frozenset({"api_key"})


def _agent_settings() -> dict[str, tuple[JsonValue, str]]:
    """Option name -> (value, source) from the agents' own global settings files (`Agent.settings_shown`);
    an earlier agent's value wins."""
    shown: dict[str, tuple[JsonValue, str]] = {}
    for agent in reversed(AGENTS):
        if agent.settings_shown:
            values, files = load(agent.settings_shown)(None)
            name = agent.display_name
            shown.update({key: (value, f"{name} settings {files[-1]} ({name} sessions only)")
                          for key, value in values.items()})
    return shown


def effective_settings(name: str, command: click.Command, parent: click.Context) -> list[JsonObject]:
    """One row per option: key, value, source (command line is not considered: this is what a run would get)."""
    from batchcompact.cli.command import RESOLUTION_KEY

    ctx = command.make_context(name, [], parent=parent, resilient_parsing=True)
    resolution = ctx.meta[RESOLUTION_KEY]
    shown = _agent_settings()
    rows = []
    for param in command.params:
        if not isinstance(param, click.Option) or param.hidden or param.name in ("help", "quiet", "verbose",
                                                                                    "config_file"):
            continue
        value: JsonValue  # an option's value as the `config` rows show it (JSON)
        source: str
        found = option_source(param, resolution)
        if found is not None:
            source, value = found
        elif param.name in shown and "preset" in {p.name for p in command.params}:
            value, source = shown[param.name]
        else:
            default = param.get_default(ctx, call=True)
            value = None if default is None or type(default).__name__ == "Sentinel" else default
            source = "default"
        if param.name in SECRET_NAMES and value:
            value = "********"
        if isinstance(value, tuple):
            value = list(value)
        rows.append({"command": name, "option": option_key(param), "value": value, "source": source,
                     "env": env_names(name, param)[1]})
    return rows


def _toml_value(value: JsonValue) -> str:
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, int | float):
        return repr(value)
    if isinstance(value, list):
        return "[" + ", ".join(_toml_value(v) for v in value) + "]"
    return json.dumps(str(value))


def _command_names() -> list[str]:
    from batchcompact.cli import COMMANDS

    return [name for name in COMMANDS if name != "config"]


@click.command()
@click.argument("commands", nargs=-1, type=click.Choice(_command_names()))
@output_options(formats=("table", "json", "jsonl", "csv", "parquet"))
@click.pass_context
def config(ctx: click.Context, commands: tuple[str, ...], fmt: str, output: str | None, json_flag: bool) -> int:
    """Print the effective settings of COMMANDS (default: all) and where each came from.

    Precedence: command line > environment (BATCHCOMPACT_<COMMAND>_<OPTION>, then BATCHCOMPACT_<OPTION>)
    > config file ([<command>] section, then top-level keys) > --preset or pi's settings.json > default.
    The table format is TOML you can paste into the config file, each value with its source.

    \b
    Examples:
      batchcompact config run
      BATCHCOMPACT_MIN_AGE=1h batchcompact --config ~/cron.toml config run --format json
    """
    from batchcompact.cli.command import RESOLUTION_KEY

    parent = ctx.parent
    group = parent.command if parent else None
    names = commands or tuple(_command_names())
    rows: list[JsonObject] = []
    resolution = None
    for name in names:
        command = group.get_command(parent, name) if parent is not None and isinstance(group, click.Group) else None
        if command is None:
            continue
        rows.extend(effective_settings(name, command, ctx.parent or ctx))
    resolution = ctx.meta.get(RESOLUTION_KEY)
    fmt = pick_format(fmt, json_flag)
    if fmt != "table":
        if fmt in ("csv", "parquet"):  # one type per column
            for row in rows:
                row["value"] = None if row["value"] is None else json.dumps(row["value"], default=str)
        write_rows(fmt, output, rows, summary={
            "config_file": str(resolution.config_path) if resolution and resolution.config_path else None,
            "presets": sorted(PRESETS)})
        return 0
    where = resolution.config_path if resolution and resolution.config_path else "none"
    with open_output(output) as out:
        out.write(f"# config file: {where}" + (f" (from {resolution.config_how})" if resolution and
                                              resolution.config_path else "") + "\n")
        current = None
        for row in rows:
            if row["command"] != current:
                current = row["command"]
                out.write(f"\n[{current}]\n")
            if row["value"] is None:
                out.write(f"# {row['option']} =  (unset)  # {row['source']}\n")
            else:
                out.write(f"{row['option']} = {_toml_value(row['value'])}  # {row['source']}\n")
    return 0
