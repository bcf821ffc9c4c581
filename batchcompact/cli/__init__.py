"""The command line: a click group whose commands load lazily.

Each command lives in its own module and is a thin wrapper over one library call. Loading them lazily
keeps `batchcompact --help` instant: no command module (and so no litellm, polars or pyarrow) is
imported until that command runs.
"""

from __future__ import annotations

import importlib
import os
import sys
from collections.abc import Callable
from typing import Any, TypeVar

import click

from batchcompact import __version__

# Any: a click callback takes each option's value by name, each of its option's own type
_Callback = TypeVar("_Callback", bound=Callable[..., Any])

# name -> (module, attribute, one-line help shown by --help without importing the module)
COMMANDS: dict[str, tuple[str, str, str]] = {
    "validate": ("batchcompact.cli.validate", "validate", "Check session files for problems."),
    "show": ("batchcompact.cli.show", "show", "Show one session: tree, compactions, context."),
    "plan": ("batchcompact.cli.plan", "plan", "Plan compactions and estimate their cost (dry run)."),
    "run": ("batchcompact.cli.run", "run", "Compact sessions: plan, summarize, write, report."),
    "report": ("batchcompact.cli.report", "report", "Usage and cost across session archives."),
    "config": ("batchcompact.cli.config_command", "config", "Print the effective settings and where each came from."),
    "eval": ("batchcompact.cli.eval", "eval_command", "Measure what compactions keep (probes, recall, a judge)."),
    "batches": ("batchcompact.cli.batches", "batches", "List provider batches of `run --batch`; cancel one."),
}


class LazyGroup(click.Group):
    def make_context(self, info_name: str | None, args: list[str], parent: click.Context | None = None,
                     **extra: Any) -> click.Context:  # Any: click's own context arguments, passed through
        try:
            return super().make_context(info_name, args, parent=parent, **extra)
        except click.UsageError as exc:  # `batchcompact --nosuch`: one line, as in the commands (invoke)
            if type(exc).__name__ != "NoArgsIsHelpError":  # bare `batchcompact` (click 8.2+): the help, exit 2
                exc.ctx = None
            raise

    def list_commands(self, ctx: click.Context) -> list[str]:
        return [name for name, (module, _, _) in COMMANDS.items() if _module_exists(module)]

    def get_command(self, ctx: click.Context, name: str) -> click.Command | None:
        if name not in COMMANDS:
            return None
        module, attr, _ = COMMANDS[name]
        if not _module_exists(module):
            return None
        from batchcompact.cli.command import adopt

        return adopt(getattr(importlib.import_module(module), attr))

    def invoke(self, ctx: click.Context) -> object:
        """Our exceptions become click errors here, and only here: message + exit code."""
        from batchcompact.errors import BatchCompactError, StdoutClosed, UsageError

        try:
            rv = super().invoke(ctx)
        except StdoutClosed:
            raise
        except UsageError as exc:
            if os.environ.get("BATCHCOMPACT_DEBUG"):
                raise
            raise click.UsageError(str(exc)) from exc
        except BatchCompactError as exc:
            if os.environ.get("BATCHCOMPACT_DEBUG"):
                raise
            error = click.ClickException(str(exc))
            error.exit_code = exc.exit_code  # type: ignore[misc]  # a ClassVar in click's types; read per instance
            raise error from exc
        except click.UsageError as exc:  # one line, as every other error: not click's usage block above it
            exc.ctx = None
            raise
        except (click.ClickException, click.exceptions.Exit, click.exceptions.Abort):
            raise
        except BrokenPipeError as exc:  # standard output written past the guard (outfile.py): its reader left
            raise StdoutClosed() from exc
        except Exception as exc:  # a bug, not bad input: said as such in one line, exit 4
            if os.environ.get("BATCHCOMPACT_DEBUG"):
                raise
            raise _internal(exc) from exc
        # Commands return their exit code; make it the process's in every mode (CliRunner included).
        if isinstance(rv, int) and rv != 0:
            ctx.exit(rv)
        return rv

    def format_commands(self, ctx: click.Context, formatter: click.HelpFormatter) -> None:
        rows = [(name, COMMANDS[name][2]) for name in self.list_commands(ctx)]
        if rows:
            with formatter.section("Commands"):
                formatter.write_dl(rows)


def _internal(exc: Exception) -> click.ClickException:
    """An unexpected exception as one line ("internal error", the BATCHCOMPACT_DEBUG hint), exit code 4."""
    from batchcompact.errors import INTERNAL_ERROR_EXIT, internal_error_reason

    error = click.ClickException(internal_error_reason(exc))
    error.exit_code = INTERNAL_ERROR_EXIT  # type: ignore[misc]  # a ClassVar in click's types; read per instance
    return error


def _module_exists(module: str) -> bool:
    from importlib.util import find_spec

    return find_spec(module) is not None


def _group_options(func: _Callback) -> _Callback:
    from batchcompact.cli.command import global_options

    for option in reversed(global_options()):
        func.__click_params__ = [*getattr(func, "__click_params__", []), option]  # type: ignore[attr-defined]  # click's list of a function's options
    return func


@click.group(cls=LazyGroup, context_settings={"help_option_names": ["-h", "--help"]})
@click.version_option(__version__, prog_name="batchcompact")
@_group_options
@click.pass_context
def cli(ctx: click.Context) -> None:
    """Compact archived LLM coding-agent sessions in bulk ({compacted}), and report what sessions cost:
    theirs and those of {reported}.

    Exit codes: 0 all ok or skipped, 1 some sessions failed or are invalid, 2 usage error (also: no
    session files found), 3 run aborted (authentication, lock held, budget refused, state or report folder
    unusable) or its output not written (-o FILE, stdout: disk full), 4 internal error (a bug in
    batchcompact; the other files were still processed), 130/143 a command other than `run` stopped by
    Ctrl-C/SIGTERM, 141 stdout closed by its reader (`| head`), quietly.

    Global options (-q, -v, --config) go before or after the command. Every option can also be set in
    the config file or as BATCHCOMPACT_<OPTION>; see `batchcompact config` and docs/cli.md.
    Set BATCHCOMPACT_DEBUG=1 to see tracebacks.
    """
    from batchcompact.cli.command import configure_logging

    ctx.ensure_object(dict)
    configure_logging(ctx.obj)


def _named_agents(help_text: str) -> str:
    """The group's help with the registry's agents named: those batchcompact compacts, then those it only
    reports (a new agent is named by its registration alone)."""
    from batchcompact.agents import AGENTS

    def listed(names: list[str]) -> str:
        return ", ".join(names[:-1]) + " and " + names[-1] if len(names) > 1 else "".join(names)

    compacted = [f"{a.display_name} and its descendants" if any(p.label for p in a.places) else a.display_name
                 for a in AGENTS if a.compactable]
    reported = [a.display_name for a in AGENTS if not a.compactable and a.usage]
    return help_text.replace("{compacted}", ", ".join(compacted)).replace("{reported}", listed(reported))


cli.help = _named_agents(cli.help or "")


def main() -> None:
    """Entry point: run the group, map our exceptions to exit codes, and exit with the code."""
    from batchcompact.errors import OutputError, StdoutClosed
    from batchcompact.outfile import guard_stdout, silence_stdout

    guard_stdout()  # a failed write to stdout is said as such (outfile.py), never as an internal error
    try:
        code = _run()
        sys.stdout.flush()  # what is still buffered fails here, not in the interpreter's exit
    except StdoutClosed:
        silence_stdout()
        code = StdoutClosed.exit_code
    except OutputError as exc:  # the last flush
        click.echo(f"Error: {exc}", err=True)
        code = exc.exit_code
    sys.exit(code)


def _run() -> int:
    """The command, its exceptions mapped to exit codes and said in one line; returns the code."""
    from batchcompact.errors import BatchCompactError, StdoutClosed
    from batchcompact.lifecycle import (
        install_stop_signals,
        interrupted_exit_code,
        mark_command_process,
        stop_signal_name,
    )

    install_stop_signals()  # SIGTERM stops every command the way Ctrl-C does
    mark_command_process()  # this process ends with its command (pipeline/runreport/write.py import_pyarrow)
    try:
        rv = cli.main(standalone_mode=False)
    except StdoutClosed:
        raise
    except (click.exceptions.Abort, KeyboardInterrupt):
        click.echo(f"Interrupted ({stop_signal_name()}).", err=True)
        return interrupted_exit_code()
    except click.ClickException as exc:
        exc.show()
        return exc.exit_code
    except BatchCompactError as exc:
        if os.environ.get("BATCHCOMPACT_DEBUG"):
            raise
        click.echo(f"Error: {exc}", err=True)
        return exc.exit_code
    except click.exceptions.Exit as exc:
        return exc.exit_code
    except BrokenPipeError as exc:  # stdout written past the guard, outside a command
        raise StdoutClosed() from exc
    except Exception as exc:  # a bug outside a command (option parsing, config): one line, exit 4
        if os.environ.get("BATCHCOMPACT_DEBUG"):
            raise
        error = _internal(exc)
        error.show()
        return error.exit_code
    # Commands return their exit code (an int); None means success.
    return rv if isinstance(rv, int) else 0
