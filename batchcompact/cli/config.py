"""Where every option's value comes from: command line > environment > config file > agent settings > default.

One generic resolver covers every option of every command, including options added later: each option
gets the environment variables BATCHCOMPACT_<COMMAND>_<OPTION> and BATCHCOMPACT_<OPTION>, and the config
file's top-level keys plus its [<command>] section become click's `default_map`. Nothing here imports
more than the standard library and click, so `--help` stays instant.
"""

from __future__ import annotations

import os
import sys
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, TextIO

import click

from batchcompact.agents import presets as agent_presets
from batchcompact.agents import product_names
from batchcompact.core.jsontypes import JsonObject, JsonValue
from batchcompact.errors import UsageError
from batchcompact.folders import config_folder

ENV_PREFIX = "BATCHCOMPACT_"
CONFIG_ENV = "BATCHCOMPACT_CONFIG"

# Tables a command's section may hold beside its options ([report.projects]: project aliases and groups),
# kept in `Resolution.tables` for the command to read.
TABLES = {"report": ("projects",)}

# Options that are the same in every command; they are not looked up per command.
GLOBAL_NAMES = ("quiet", "verbose", "config_file", "help")

# Each agent's documented compaction defaults, as batchcompact's planner options: the registered agents'
# `presets` (batchcompact/agents/<name>/__init__.py). Sources are listed in docs/cli.md ("Presets").
PRESETS: dict[str, Mapping[str, object]] = agent_presets()
# `--preset claude` = `--preset claude-code`: an agent's name for its one preset (agents.product_names)
PRESET_ALIASES: dict[str, str] = {agent: preset for preset, agent in product_names().items()}


def option_key(param: click.Parameter) -> str:
    """The name a user writes in the config file: the long flag without dashes (`min-age`, `format`)."""
    longs = [o for o in getattr(param, "opts", ()) if o.startswith("--")]
    if longs:
        return max(longs, key=len)[2:]
    return (param.name or "").replace("_", "-")


def env_names(command: str, param: click.Parameter) -> list[str]:
    key = option_key(param).upper().replace("-", "_")
    return [f"{ENV_PREFIX}{command.upper().replace('-', '_')}_{key}", f"{ENV_PREFIX}{key}"]


def default_config_path() -> Path:
    return config_folder() / "config.toml"


def find_config(explicit: str | None) -> tuple[Path | None, str]:
    """The config file in use and how it was chosen; an explicitly named file must exist."""
    if explicit:
        path, how = Path(expand_path(explicit)), "--config"
    elif os.environ.get(CONFIG_ENV):
        path, how = Path(expand_path(os.environ[CONFIG_ENV])), CONFIG_ENV
    else:
        path = default_config_path()
        return (path if path.is_file() else None), "default location"
    if not path.is_file():
        raise UsageError(f"config file not found: {path} (from {how})")
    return path, how


def load_config(path: Path | None) -> JsonObject:
    if path is None:
        return {}
    import tomllib

    try:
        with open(path, "rb") as handle:
            return tomllib.load(handle)
    except tomllib.TOMLDecodeError as exc:
        raise UsageError(f"{path}: invalid TOML: {exc}") from None
    except OSError as exc:
        raise UsageError(f"{path}: cannot read: {exc.strerror}") from None


def expand_path(text: str) -> str:
    """`~` and $VARIABLES expanded, as a shell would have done for an unquoted argument."""
    return os.path.expanduser(os.path.expandvars(text))


class ExpandedPath(click.Path):
    """A click.Path that first expands `~` and $VARIABLES (quoted arguments reach us unexpanded)."""

    # Any: click's own signature (the raw value in; the path, or a session's `<db>#<id>`, out)
    def convert(self, value: Any, param: click.Parameter | None, ctx: click.Context | None) -> Any:
        if isinstance(value, str):
            value = expand_path(value)
            from batchcompact.agents import file_of, store_agent

            if self.exists and store_agent(value) is not None:  # a session in a database: `<db>#<id>`
                super().convert(file_of(value), param, ctx)
                return value
        return super().convert(value, param, ctx)


@dataclass
class Resolution:
    """What the resolver decided for one command invocation (kept on the click context for `config`)."""

    command: str
    config_path: Path | None
    config_how: str
    file_values: JsonObject = field(default_factory=dict)  # param name -> value
    preset: str | None = None
    preset_values: JsonObject = field(default_factory=dict)
    unknown_keys: list[str] = field(default_factory=list)
    tables: JsonObject = field(default_factory=dict)  # [command.<table>] -> its contents (TABLES)


def option_source(param: click.Parameter, resolution: Resolution | None) -> tuple[str, JsonValue] | None:
    """Where an option's value comes from when the command line does not give it, and the value:
    ("environment NAME", text), ("config FILE", value) or ("preset NAME", value); None for its default."""
    envvar = param.envvar  # ours are names (resolve), never another sequence
    envs = envvar if isinstance(envvar, list) else [envvar] if isinstance(envvar, str) and envvar else []
    env_hit = next((e for e in envs if os.environ.get(e)), None)
    if env_hit:
        return f"environment {env_hit}", os.environ[env_hit]
    if resolution is not None and param.name in resolution.file_values:
        return f"config {resolution.config_path}", resolution.file_values[param.name]
    if resolution is not None and param.name in resolution.preset_values:
        return f"preset {resolution.preset}", resolution.preset_values[param.name]
    return None


def _section(data: JsonObject, command: str) -> JsonObject:
    """Top-level keys apply to every command; the [command] table overrides them."""
    values = {k: v for k, v in data.items() if not isinstance(v, dict)}
    section = data.get(command)
    if isinstance(section, dict):
        values.update(section)
    return values


def _scan_args(args: list[str], name: str) -> str | None:
    """The value of a `--name VALUE` / `--name=VALUE` argument, before click parses anything."""
    for index, arg in enumerate(args):
        if arg == "--":
            break
        if arg == name and index + 1 < len(args):
            return args[index + 1]
        if arg.startswith(name + "="):
            return arg[len(name) + 1:]
    return None


def resolve(command: click.Command, name: str, args: list[str], parent: click.Context | None) -> tuple[
    JsonObject, Resolution
]:
    """The `default_map` for one command (config file over preset), and a record of where values came from.

    Also gives every visible option its BATCHCOMPACT_* environment variables (kept if it already has one).
    """
    explicit = _scan_args(args, "--config")
    if explicit is None and parent is not None:
        explicit = (parent.obj or {}).get("config_file")
    path, how = find_config(explicit)
    data = load_config(path)
    section = _section(data, name)
    resolution = Resolution(command=name, config_path=path, config_how=how)

    by_key: dict[str, click.Parameter] = {}
    for param in command.params:
        if not isinstance(param, click.Option):
            continue
        if param.name not in GLOBAL_NAMES and not param.hidden:
            names = env_names(name, param)
            own = [param.envvar] if isinstance(param.envvar, str) else list(param.envvar or ())
            # the command's own variable first, then one the option already had, then the shared one
            param.envvar = list(dict.fromkeys([names[0], *own, names[1]]))
        by_key[option_key(param)] = param
        by_key[option_key(param).replace("-", "_")] = param
        if param.name:
            by_key[param.name] = param

    default_map: JsonObject = {}
    preset = _scan_args(args, "--preset") or os.environ.get(f"{ENV_PREFIX}{name.upper()}_PRESET") \
        or os.environ.get(f"{ENV_PREFIX}PRESET") or section.get("preset")
    preset = PRESET_ALIASES.get(preset, preset) if isinstance(preset, str) else preset
    if preset in PRESETS and "preset" in by_key:
        resolution.preset = preset
        resolution.preset_values = {k: v for k, v in PRESETS[preset].items() if k in by_key}
        default_map.update(resolution.preset_values)
    for key, value in section.items():
        if isinstance(value, dict) and key in TABLES.get(name, ()):
            resolution.tables[key] = value
            continue
        option = by_key.get(key)
        if option is None:
            if isinstance(data.get(name), dict) and key in data[name]:
                resolution.unknown_keys.append(key)
            continue
        if option.name in GLOBAL_NAMES[:3]:
            continue
        default_map[option.name] = value
        resolution.file_values[option.name] = value
    checked = parent.find_root().meta.setdefault(CHECKED_KEY, set()) if parent is not None else set()
    if path is not None and str(path) not in checked:  # the whole file, once per command line (`config`
        checked.add(str(path))                         # resolves every command)
        for line in config_problems(path, data, name, set(by_key), parent):
            click.echo(f"warning: {line}", err=True)
    return default_map, resolution


CHECKED_KEY = "batchcompact.config_checked"


def config_problems(path: Path, data: JsonObject, name: str, here: set[str],
                    parent: click.Context | None = None) -> list[str]:
    """Every key and section of the config file that no command knows, each with the nearest known name:
    a top-level key no command has, a [section] that is no command, a key its command has not, a table
    its command does not read ([report.projects] is the one). `name`/`here`: the running command and its
    keys, so the other commands' options are loaded only when the file holds something `name` lacks."""
    sections = {key: value for key, value in data.items() if isinstance(value, dict)}
    top = [key for key, value in data.items() if not isinstance(value, dict)]
    if all(key in here for key in top) and set(sections) <= {name} and all(
            key in here or key in TABLES.get(name, ()) for key in sections.get(name, {})):
        return []
    keys = _command_keys(parent)
    keys[name] = keys.get(name, set()) | here
    every = set().union(*keys.values())
    problems = []
    for key in top:
        if key not in every:
            problems.append(f"{path}: no command has an option {key!r}{_nearest(key, every)}")
    for section, values in sections.items():
        if section not in keys:
            known = ", ".join(sorted(keys))
            problems.append(f"{path}: unknown section [{section}]{_nearest(section, set(keys), '[{}]')} "
                            f"(the sections are the commands: {known})")
            continue
        tables = TABLES.get(section, ())
        for key, value in values.items():
            if isinstance(value, dict) and key not in keys[section]:
                if key not in tables:
                    problems.append(f"{path}: [{section}] has no table [{section}.{key}]"
                                    + _nearest(key, set(tables), f"[{section}.{{}}]"))
            elif key not in keys[section]:
                problems.append(f"{path}: [{section}] has no option {key!r}{_nearest(key, keys[section])} "
                                f"(see `batchcompact {section} --help`)")
    return problems


def _nearest(key: str, known: set[str], shape: str = "{!r}") -> str:
    """' (did you mean NAME?)' for the closest known name (dashes and underscores alike), else ''."""
    import difflib

    spelled = sorted({k.replace("_", "-") for k in known})
    found = difflib.get_close_matches(key.replace("_", "-"), spelled, n=1, cutoff=0.6)
    return f"; did you mean {shape.format(found[0])}?" if found else ""


def _command_keys(parent: click.Context | None) -> dict[str, set[str]]:
    """Each command's option keys as the config file may write them (`min-age`, `min_age`, the name), from
    the group that runs them (`parent`: its context)."""
    root = parent.find_root() if parent is not None else None
    group = root.command if root is not None else None
    if root is None or not isinstance(group, click.Group):
        return {}
    keys: dict[str, set[str]] = {}
    for command in group.list_commands(root):
        found = group.get_command(root, command)
        if found is None:
            continue
        names = set(GLOBAL_NAMES[:3]) | {"config"}
        for param in found.params:
            if isinstance(param, click.Option):
                key = option_key(param)
                names.update((key, key.replace("-", "_"), param.name or key))
        keys[command] = names
    return keys


def color_enabled(stream: TextIO | None = None) -> bool:
    """Colour only on a terminal, and never with NO_COLOR set (https://no-color.org)."""
    if os.environ.get("NO_COLOR"):
        return False
    stream = stream if stream is not None else sys.stdout
    try:
        return stream.isatty()
    except (AttributeError, ValueError):
        return False
