"""`run` as one library call: a `RunRequest` (every setting of the run, as values) and `compact(request)`.

The command line (cli/run.py) parses its options into one request and makes this one call, then prints
the `RunSummary`; a program does the same without click. What happens here, in order: the price map is
read (a broken one is one usage error, not a failure per session), the summary model is checked before
any file is read (an unknown model, a missing key, a failed `--check` cost nothing), the summarizer is
built, and the archive is run (`run.run_archive`), again after each wait while `--batch --wait` has
batches open (`batch_commands.run_until_collected`).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING

from batchcompact.core.planner import CompactionSettings
from batchcompact.pipeline.run import RunOptions, RunSummary

if TYPE_CHECKING:
    from batchcompact.pipeline.executor import Executor
    from batchcompact.summarize.pool_settings import PoolSettings
    from batchcompact.summarize.preflight import ProviderInfo


@dataclass(frozen=True)
class SummarizerChoice:
    """Which summarizer writes the summaries and how its model is reached (`--model`, `--summarizer`, ...)."""

    model: str = "builtin"
    api_base: str | None = None
    api_key: str | None = None
    timeout: float = 600.0  # seconds per summary call
    spec: str | None = None  # --summarizer MODULE:FUNC, a custom summarizer
    check: bool = False  # --check: one tiny request to the endpoint before any file is read

    @property
    def summary_model(self) -> str:
        """The name the run reports and the state key use: the model, or `custom:<spec>`."""
        return self.model if not self.spec else f"custom:{self.spec}"

    @property
    def calls_a_provider(self) -> bool:
        return not self.spec and self.model.strip().lower() != "builtin"


@dataclass(frozen=True)
class RunRequest:
    """One `run`: the sessions, the planner's settings, the run's options, the summarizer and the pool."""

    paths: tuple[str, ...]
    settings: CompactionSettings
    options: RunOptions
    summarizer: SummarizerChoice
    pool: PoolSettings  # rate limits, attempts, redaction (its module imported by the command line)
    wait_rounds: int = 0  # --batch --wait: how often to wait for the open batches and run again


def check_provider(choice: SummarizerChoice, say: Callable[[str], None] | None = None) -> ProviderInfo | None:
    """Resolve and check the summary model before any file is read; None for the built-in and custom
    summarizers. An unknown model is a usage error (exit 2), a missing key or a failed `--check` aborts
    (exit 3). `say` gets the one line `--check` has to tell."""
    if not choice.calls_a_provider:
        if choice.check and say is not None:
            say("check: nothing to check (the summarizer does not call a provider)")
        return None
    from batchcompact.summarize.endpoint_check import check_endpoint
    from batchcompact.summarize.preflight import preflight

    info = preflight(choice.model, choice.api_base, choice.api_key, option="--model")
    if choice.check:
        latency = check_endpoint(info, timeout=min(choice.timeout, 60.0))
        if say is not None:
            say(f"check: {info.model} at {info.base_url} answered in {latency:.2f}s (key: {info.key_source})")
    return info


def compact(request: RunRequest, *, executor: Executor | None = None, say: Callable[[str], None] | None = None,
            on_round: Callable[[RunSummary, float], None] | None = None) -> RunSummary:
    """Run `request` over its archive: the summary of the last round (see the module docstring), with
    `wall_s` the seconds since the first round started (the checks and the summarizer's set-up left out).

    `executor`: where file work runs (None: local processes, closed at the end; one given stays open).
    `say`: lines for people (the `--check` result); `on_round(summary, seconds)`: each summary followed by
    a wait (`--wait`)."""
    import time

    from batchcompact.pipeline.batch_commands import run_until_collected
    from batchcompact.pipeline.run import run_archive
    from batchcompact.pricing import PriceTable

    options = request.options
    PriceTable.load(options.pricing_file)  # a missing or broken price map is one usage error
    provider = check_provider(request.summarizer, say)
    from batchcompact.summarize import build_summarizer

    choice = request.summarizer
    summarizer = build_summarizer(choice.model, api_base=choice.api_base, api_key=choice.api_key,
                                  timeout=choice.timeout, summarizer_spec=choice.spec,
                                  pricing_file=options.pricing_file, provider=provider)
    started = time.monotonic()
    summary = run_until_collected(
        lambda: run_archive(request.paths, request.settings, options, summarizer, request.pool, executor=executor),
        options.resolved_state_path(), rounds=request.wait_rounds, api_key=choice.api_key,
        progress=options.progress,
        on_round=None if on_round is None else lambda s: on_round(s, time.monotonic() - started))
    summary.wall_s = time.monotonic() - started
    return summary
