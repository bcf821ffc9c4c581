"""Flag sets shared by several commands, as decorators. Flag names equal keyword names."""

from __future__ import annotations

import dataclasses
import os
import re
from collections.abc import Callable
from typing import TYPE_CHECKING, Any, TypeVar

import click

from batchcompact.cli.command import AliasChoice
from batchcompact.cli.config import PRESET_ALIASES, PRESETS
from batchcompact.core.defaults import (
    DEFAULT_KEEP_RECENT_TOKENS,
    DEFAULT_RESERVE_TOKENS,
    DEFAULT_SUMMARY_BUDGET,
)

if TYPE_CHECKING:
    from batchcompact.core.planner import CompactionSettings
    from batchcompact.pipeline.executor import Executor

# Any: a click command function takes each option's value by name, each of its option's own type
_Command = TypeVar("_Command", bound=Callable[..., Any])


# The least --summary-budget: the file tags take at most half (core/planner.TAGS_SHARE); the other half holds
# the nine headings (~70 tokens), a line for each section with content and a split turn's prefix (#55: at 200
# the sections read "(none)" where the span had content).
MIN_SUMMARY_BUDGET = 500


def _default_jobs() -> int:
    return max(os.cpu_count() or 1, 1)


def planner_options(func: _Command) -> _Command:
    """The settings of the pure planner (pi's compaction settings plus oh-my-pi's thresholds)."""
    options = [
        click.option("--preset", type=AliasChoice(sorted(PRESETS), PRESET_ALIASES), default=None,
                     help="Start from this agent's documented compaction defaults (see docs/cli.md); "
                          "options, environment and config file still override them. The agent's name is "
                          "taken too: " + ", ".join(f"{a} = {p}" for a, p in sorted(PRESET_ALIASES.items()))
                          + "."),
        click.option("--agent-settings/--no-agent-settings", "agent_settings", default=True, show_default=True,
                     help="Apply pi's own settings.json compaction settings (global and the project's "
                          ".pi/settings.json under the session's cwd) to pi sessions, for settings not set here."),
        click.option("--keep-recent-tokens", type=click.IntRange(min=1), default=DEFAULT_KEEP_RECENT_TOKENS,
                     show_default=True, help="Tokens of recent history kept verbatim after the cut."),
        click.option("--reserve-tokens", type=click.IntRange(min=0), default=DEFAULT_RESERVE_TOKENS,
                     show_default=True, help="Tokens reserved for the reply; compact when context > window - reserve."),
        click.option("--summary-budget", type=click.IntRange(min=MIN_SUMMARY_BUDGET), default=DEFAULT_SUMMARY_BUDGET,
                     show_default=True, metavar="TOKENS",
                     help="Tokens the whole summary may hold (file tags included, at most half of it; "
                          f"at least {MIN_SUMMARY_BUDGET}): the built-in fills it by priority and never passes it, a model is told it and gets it as max_tokens, a "
                          "--summarizer hook reads it as call.max_tokens (docs/summaries.md)."),
        click.option("--context-window", type=click.IntRange(min=1), default=None,
                     help="Context window of the sessions' model (default: from litellm's bundled model map)."),
        click.option("--threshold-percent", type=click.FloatRange(min=1, max=99), default=None,
                     help="Compact when context > this percent of the window (oh-my-pi's thresholdPercent)."),
        click.option("--threshold-tokens", type=click.IntRange(min=1), default=None,
                     help="Compact when context > this many tokens (oh-my-pi's thresholdTokens)."),
        click.option("--force", is_flag=True, help="Plan a compaction whatever the session's size (like /compact)."),
        click.option("--instructions", default=None, metavar="TEXT",
                     help="Extra focus for the summary (like /compact TEXT); reaches every summary call."),
        click.option("--prune-tool-outputs", is_flag=True,
                     help="Also replace old, large tool outputs with a marker (oh-my-pi pruning)."),
        click.option("--pricing", "pricing", type=click.Path(exists=True, dir_okay=False), default=None,
                     help="JSON file of model prices (litellm's map shape) overriding the bundled map."),
        click.option("--jobs", type=click.IntRange(min=1), default=None,
                     help="Processes used to read and plan files [default: number of cores]."),
    ]
    for option in reversed(options):
        func = option(func)
    return func


def strategy_option(func: _Command) -> _Command:
    """`--strategy`: what `run` writes for a session over its threshold (`plan` shows it)."""
    return click.option(
        "--strategy", type=click.Choice(["compact", "handoff"]), default="compact", show_default=True,
        help="compact: append a compaction to the session. handoff (pi's format and its descendants): leave the "
             "session as it is and start a new one beside it that holds only a handoff document "
             "(docs/compaction.md, \"Handoff\").")(func)


def build_settings(
    keep_recent_tokens: int,
    reserve_tokens: int,
    context_window: int | None,
    threshold_percent: float | None,
    threshold_tokens: int | None,
    force: bool,
    instructions: str | None,
    prune_tool_outputs: bool,
    summary_budget: int = DEFAULT_SUMMARY_BUDGET,
) -> CompactionSettings:
    from batchcompact.core.planner import CompactionSettings  # not at import: `report` never plans

    return CompactionSettings(
        reserve_tokens=reserve_tokens,
        keep_recent_tokens=keep_recent_tokens,
        context_window=context_window,
        threshold_percent=threshold_percent,
        threshold_tokens=threshold_tokens,
        force=force,
        instructions=instructions,
        prune_tool_outputs=prune_tool_outputs,
        summary_budget=summary_budget,
    )


def pop_settings(kwargs: dict) -> CompactionSettings:
    """Take the planner options out of a command's kwargs and build the settings."""
    names = (
        "keep_recent_tokens",
        "reserve_tokens",
        "context_window",
        "threshold_percent",
        "threshold_tokens",
        "force",
        "instructions",
        "prune_tool_outputs",
        "summary_budget",
    )
    kwargs.pop("preset", None)  # its values already arrived as option defaults
    settings = build_settings(**{name: kwargs.pop(name) for name in names})
    strategy = kwargs.pop("strategy", None)  # run and plan only (strategy_option)
    return dataclasses.replace(settings, strategy=strategy) if strategy and strategy != settings.strategy else settings


def resolve_jobs(jobs: int | None) -> int:
    return jobs if jobs else _default_jobs()


def branch_options(func: _Command) -> _Command:
    """Branch summaries (issue 7): which abandoned branches are worth a summary."""
    func = click.option("--branch-reserve-tokens", type=click.IntRange(min=0), default=16384, show_default=True,
                        help="Reserve for branch summaries: a branch is read up to window - reserve tokens.")(func)
    func = click.option("--min-branch-tokens", type=click.IntRange(min=0), default=0, show_default=True,
                        help="Skip abandoned branches smaller than this (estimated tokens).")(func)
    return func


def agent_fields(ctx: click.Context, enabled: bool) -> tuple[str, ...]:
    """The planner settings the agent's own settings may still set: those nobody set on the command line,
    in the environment, the config file or a preset (precedence: ... > agent settings > defaults)."""
    if not enabled:
        return ()
    from click.core import ParameterSource

    from batchcompact.agents import settings_fields

    fields = []
    for name in settings_fields():
        source = ctx.get_parameter_source(name) if name != "enabled" else None
        if name == "enabled" or source in (ParameterSource.DEFAULT, None):
            fields.append(name)
    return tuple(fields)


def executor_options(func: _Command) -> _Command:
    """Where file-level work runs: this machine's processes, or a Ray cluster."""
    func = click.option("--ray-address", default=None, metavar="ADDRESS",
                        help="With --executor ray: the cluster (host:6379, ray://host:10001, or 'local' to start "
                             "one here) [default: $RAY_ADDRESS, then auto].")(func)
    func = click.option("--executor", "executor", type=click.Choice(["local", "ray"]), default="local",
                        show_default=True,
                        help="Run file-level work in local processes or as Ray tasks (pip install "
                             "'batchcompact[ray]'; files must be at the same path on every node).")(func)
    return func


def open_executor(kind: str, jobs: int, ray_address: str | None) -> Executor | None:
    """The executor for --executor/--ray-address (None for the local default: callers keep their own)."""
    if kind == "local":
        return None
    from batchcompact.pipeline.executor import make_executor

    return make_executor(kind, jobs=jobs, ray_address=ray_address)


_DURATION = re.compile(r"^\s*(\d+(?:\.\d+)?)\s*([smhd]?)\s*$")


def parse_duration(text: str) -> float:
    """'10m' -> 600.0; units s, m, h, d; a bare number is seconds."""
    match = _DURATION.match(text)
    if not match:
        raise click.BadParameter(f"{text!r} is not a duration like 30s, 10m, 2h or 1d")
    value, unit = float(match.group(1)), match.group(2) or "s"
    return value * {"s": 1, "m": 60, "h": 3600, "d": 86400}[unit]
