"""`batchcompact plan`: the free dry run. Which sessions need compaction, where each is cut, what it costs."""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

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
    echo_err,
    open_output,
    output_options,
    pick_format,
    print_table,
    reason_kind,
    require_output,
    write_rows,
)
from batchcompact.core.jsontypes import JsonObject
from batchcompact.core.words import counted
from batchcompact.errors import is_internal_error, outcome_exit_code
from batchcompact.money import from_pico, to_pico
from batchcompact.pipeline.statuses import PLAN_COMPACT, PLAN_ERROR, PLAN_SKIP

if TYPE_CHECKING:
    from batchcompact.core.planner import CompactionSettings
    from batchcompact.pipeline.dry_run import DryRun

TABLE_COLUMNS = (
    ("path", "session"),
    ("status", "status"),
    ("model", "model"),
    ("tokens_before", "tokens"),
    ("context_window", "window"),
    ("window_source", "window from"),
    ("threshold", "threshold"),
    ("first_kept_line", "cut@line"),
    ("split_turn", "split"),
    ("messages_to_summarize", "msgs"),
    ("calls", "calls"),
    ("prompt_tokens", "prompt tok"),
    ("est_cost_usd", "est $"),
    ("branch_calls", "branches"),
    ("reason", "reason"),
)

# What a narrow terminal loses first.
DROP_FIRST = ("window_source", "split_turn", "branch_calls", "messages_to_summarize", "calls", "context_window",
              "threshold", "prompt_tokens", "first_kept_line", "model", "tokens_before")


@dataclass
class Totals:
    """The plan's totals, added up row by row as the rows are printed."""

    status: Counter[str] = field(default_factory=Counter)
    skip_reasons: Counter[str] = field(default_factory=Counter)
    error_reasons: Counter[str] = field(default_factory=Counter)
    calls: int = 0
    prompt_tokens: int = 0
    tokens_before: int = 0
    tokens_after: int = 0
    # whole picodollars (batchcompact/money.py): the totals do not depend on the order of the rows
    cost_pico: int = 0
    batch_cost_pico: int = 0
    unpriced: int = 0
    branch_calls: int = 0
    branch_cost_pico: int | None = 0
    min_age: str = ""  # --min-age as given, for the skips it explains

    @property
    def cost(self) -> float:
        return from_pico(self.cost_pico)

    @property
    def batch_cost(self) -> float:
        return from_pico(self.batch_cost_pico)

    @property
    def branch_cost(self) -> float | None:
        return None if self.branch_cost_pico is None else from_pico(self.branch_cost_pico)

    def add(self, row: JsonObject) -> None:
        self.status[row["status"]] += 1
        if row["status"] == PLAN_SKIP:
            self.skip_reasons[reason_kind(row.get("reason"), self.min_age)] += 1
        if row["status"] == PLAN_ERROR:
            self.error_reasons[reason_kind(row.get("reason"), "")] += 1
        if row.get("branch_calls"):
            self.branch_calls += row["branch_calls"]
            if self.branch_cost_pico is not None and row.get("branch_est_cost_usd") is not None:
                self.branch_cost_pico += to_pico(row["branch_est_cost_usd"])
            else:
                self.branch_cost_pico = None
        if row["status"] != PLAN_COMPACT:
            return
        self.calls += row["calls"] or 0
        self.prompt_tokens += row["prompt_tokens"] or 0
        self.tokens_before += row["tokens_before"] or 0
        self.tokens_after += row["tokens_after_est"] or 0
        if row["est_cost_usd"] is None:
            self.unpriced += 1
        else:
            self.cost_pico += to_pico(row["est_cost_usd"])
            self.batch_cost_pico += to_pico(row["est_batch_cost_usd"] or 0.0)

    def as_dict(self) -> JsonObject:
        return {
            "sessions": sum(self.status.values()),
            "by_status": dict(sorted(self.status.items())),
            "calls": self.calls,
            "prompt_tokens": self.prompt_tokens,
            "tokens_before": self.tokens_before,
            "tokens_after_est": self.tokens_after,
            "est_cost_usd": self.cost,
            "est_batch_cost_usd": self.batch_cost,
            "unpriced_sessions": self.unpriced,
            "branch_calls": self.branch_calls,
            "branch_est_cost_usd": self.branch_cost,
        }

    def summary(self) -> str:
        parts = ", ".join(f"{n} {s}" for s, n in sorted(self.status.items()))
        cost = f"${self.cost:.4f} on demand, ${self.batch_cost:.4f} with a batch API"
        if self.unpriced:
            cost += f" (+ {counted(self.unpriced, 'session')} whose summary model has no known price)"
        branches = ""
        if self.branch_calls:
            price = "unknown" if self.branch_cost is None else f"${self.branch_cost:.4f}"
            branches = (f"\nabandoned branches: {self.branch_calls} could be summarized with "
                        f"`run --branch-summaries` ({counted(self.branch_calls, 'call')}, {price})")
        skips = ", ".join(f"{n} {kind}" for kind, n in self.skip_reasons.most_common())
        errors = ", ".join(f"{n} {kind}" for kind, n in sorted(self.error_reasons.items(),
                                                                key=lambda kv: (-kv[1], kv[0])))
        return (
            f"{counted(sum(self.status.values()), 'session')}: {parts or 'none'}\n"
            + (f"  {self.status['skip']} skip: {skips}\n" if skips else "")
            + (f"  {self.status[PLAN_ERROR]} error: {errors}\n" if errors else "") +
            f"to compact: {counted(self.status['compact'], 'session')}, {self.tokens_before:,} -> "
            f"~{counted(self.tokens_after, 'token')}, {counted(self.calls, 'call')}, "
            f"{counted(self.prompt_tokens, 'prompt token')}\n"
            f"estimated cost: {cost}" + branches
        )


@click.command()
@click.argument("paths", nargs=-1)
@planner_options
@strategy_option
@click.option("--model", "--summary-model", "summary_model", default=None, metavar="MODEL",
              help="Model to price the summaries with (any litellm name), as `run --model`; --summary-model "
                   "is its older name. Default: the built-in offline summarizer, which costs nothing. Output is "
                   "estimated at the summary budget (--summary-budget), the most a summary may hold.")
@click.option("--min-age", default="0", show_default=True, metavar="DURATION",
              callback=lambda ctx, param, value: _duration_checked(value),
              help="Skip files modified more recently than this (live sessions), as `run --min-age` does.")
@branch_options
@output_options()
@executor_options
@click.pass_context
def plan(ctx: click.Context, paths: Sequence[str], summary_model: str | None, fmt: str, output: str | None,
         pricing: str | None, jobs: int | None, min_branch_tokens: int = 0, branch_reserve_tokens: int = 16384,
         json_flag: bool = False, executor: str = "local", ray_address: str | None = None, min_age: str = "0",
         **kwargs: Any) -> int:  # Any: the planner's options by name (pop_settings), each of its own type
    """Plan compactions of the sessions under PATHS (files, directories, globs) without calling any model.

    Without PATHS, every agent's session folders found on this machine are planned (named on stderr).

    One row per session: status `compact`, `skip` (with the reason) or `error` (unreadable or invalid; see
    `batchcompact validate`). `run --dry-run` is this plan decided as the run would: --min-age, --limit and
    the sessions earlier runs finished (read from the run state) are skipped with the run's reason. Exit 0 when no row is an `error`, 1 when some are (the other files are still
    planned), 2 when the command line is wrong, 4 when a file hit an internal error (a bug: its row and one
    line on stderr say so).

    \b
    Examples:
      batchcompact plan ~/.pi/agent/sessions
      batchcompact plan sample_sessions --force --keep-recent-tokens 5000 --format json
      batchcompact plan archive/ --model gpt-4o-mini --format parquet -o plan.parquet
      batchcompact plan /shared/archive --executor ray --ray-address head:6379
    """
    from batchcompact.discover import cli_paths
    from batchcompact.pipeline.dry_run import decided
    from batchcompact.pipeline.planning import PLAN_COLUMNS, PlanOptions, plan_paths

    fmt = pick_format(fmt, json_flag)
    require_output(fmt, output)
    dry_run = ctx.parent is not None and ctx.parent.info_name == "run"  # `run --dry-run` (plan_instead_of_run)
    if summary_model and summary_model.strip().lower() != "builtin":  # refused as `run` refuses it, before any work
        from batchcompact.summarize.preflight import check_priced_or_known

        check_priced_or_known(summary_model, pricing, option="--model")
    paths = cli_paths(paths, "run" if dry_run else "plan")  # no PATHS: every agent's session folders
    agent_setting = kwargs.pop("agent_settings", True)
    agent = agent_setting if isinstance(agent_setting, tuple) else agent_fields(ctx, agent_setting)
    settings = pop_settings(kwargs)
    options = PlanOptions(summary_model=summary_model, pricing_file=pricing, min_branch_tokens=min_branch_tokens,
                          branch_reserve_tokens=branch_reserve_tokens, agent_settings=agent)
    runner = open_executor(executor, resolve_jobs(jobs), ray_address)
    if runner is not None:
        ctx.call_on_close(runner.close)
    totals = Totals(min_age=min_age)
    warned: set[str] = set()

    internal: list[str] = []
    dry = _dry_run(ctx, settings, min_age)

    def rows() -> Iterator[JsonObject]:
        planned = plan_paths(paths, settings, options, jobs=resolve_jobs(jobs), executor=runner)
        for row in planned if dry is None else decided(planned, dry):
            totals.add(row)
            if row["status"] == PLAN_ERROR and is_internal_error(row.get("reason")):
                internal.append(row["path"])
                echo_err(f"{row['path']}: {row['reason']}")
            if row["status"] == PLAN_COMPACT and row["est_cost_usd"] is None and row["summary_model"] not in warned:
                warned.add(row["summary_model"])
                echo_err(f"warning: no price known for {row['summary_model']!r}; its cost is reported as null")
            yield row

    if fmt == "table":
        collected = list(rows())
        with open_output(output) as out:
            if collected:
                print_table(collected, TABLE_COLUMNS, out, DROP_FIRST)
                out.write("\n")
            out.write(totals.summary() + "\n")
        return outcome_exit_code(totals.status[PLAN_ERROR], len(internal))
    if fmt == "parquet":
        from batchcompact.pipeline.plan_parquet import write_plan_parquet

        require_output(fmt, output)
        assert output is not None  # require_output refused parquet without one
        write_plan_parquet(rows(), output)
    else:
        write_rows(fmt, output, rows(), PLAN_COLUMNS, summary=lambda: {"totals": totals.as_dict()})
    if not (ctx.find_root().obj or {}).get("quiet"):
        echo_err(totals.summary())
    return outcome_exit_code(totals.status[PLAN_ERROR], len(internal))


def _duration_checked(value: str) -> str:
    from batchcompact.cli.options import parse_duration

    parse_duration(value)
    return value


DRY_RUN_KEY = "batchcompact.dry_run"  # ctx.meta: the run's options that decide beyond the plan


def _dry_run(ctx: click.Context, settings: CompactionSettings, min_age: str) -> DryRun | None:
    """The `DryRun` of `run --dry-run` (its run state and settings hash, --limit, --min-age) or of `plan
    --min-age`; None when nothing but the plan decides."""
    from batchcompact.cli.options import parse_duration
    from batchcompact.pipeline.dry_run import DryRun

    seconds = parse_duration(min_age)
    run = ctx.meta.pop(DRY_RUN_KEY, None)
    if run is None:
        return DryRun(min_age_s=seconds) if seconds > 0 else None
    from types import SimpleNamespace

    from batchcompact.pipeline.run_ledger import run_settings_key

    options, summarizer = run
    key = run_settings_key(settings, options, SimpleNamespace(name=summarizer))
    return DryRun(min_age_s=seconds, limit=options.limit, state_path=options.resolved_state_path(), settings_key=key)


# Any: `run`'s options by name, as click parsed them, each of its own type
def plan_instead_of_run(ctx: click.Context, paths: Sequence[str], **params: Any) -> int:
    """`run --dry-run`: the same as `plan` with run's planner options (the built-in model is plan's default),
    decided as the run would decide (`pipeline/dry_run.py`: --min-age, --limit, earlier runs in the state);
    run's other options (where to write, the pool, ...) do not apply to a plan."""
    from pathlib import Path

    from batchcompact.pipeline.run_options import RunOptions
    from batchcompact.pipeline.run_request import SummarizerChoice

    choice = SummarizerChoice(model=params["model"], spec=params.get("summarizer"))
    options = RunOptions(output_dir=Path(params["output_dir"]) if params.get("output_dir") else None,
                         in_place=params["in_place"], limit=params.get("limit"),
                         state_path=Path(params["state"]) if params.get("state") else None,
                         summary_model=choice.summary_model, branch_summaries=params["branch_summaries"],
                         min_branch_tokens=params["min_branch_tokens"],
                         branch_reserve_tokens=params["branch_reserve_tokens"])
    name = choice.summary_model if choice.spec else "builtin" if not choice.calls_a_provider else choice.model.strip()
    ctx.meta[DRY_RUN_KEY] = (options, name)
    kwargs = {name: value for name, value in params.items() if name in _PLAN_PARAMS}
    # which settings pi's files may still set is known here, where the command line was parsed
    kwargs["agent_settings"] = agent_fields(ctx, kwargs.get("agent_settings", True))
    model = params["model"]
    return ctx.invoke(plan, paths=paths, summary_model=None if model == "builtin" else model, json_flag=False,
                      **kwargs)


_PLAN_PARAMS = frozenset(param.name for param in plan.params)
