"""Shared click options for commands that summarize: which summarizer, and how the pool runs.

Flag names equal keyword names: `--api-base` -> `api_base`, so a command can pass them straight on:
`build_summarizer(model, api_base=api_base, api_key=api_key, timeout=timeout, summarizer_spec=summarizer)`
and `pool_settings_from(concurrency=..., rpm=..., tpm=..., max_attempts=..., redact=not no_redact)`.
The API key is never echoed: `show_default=False`, `show_envvar` only names the variable.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING, Any, TypeAlias

import click

if TYPE_CHECKING:
    from batchcompact.summarize.pool_settings import PoolSettings

# Any: a click command function takes each option's value by name, each of its option's own type
CommandFunction: TypeAlias = Callable[..., Any]
OptionDecorator: TypeAlias = Callable[[CommandFunction], CommandFunction]  # what click.option gives

MODEL_ENV = "BATCHCOMPACT_MODEL"
API_KEY_ENV = "BATCHCOMPACT_API_KEY"


def _positive(ctx: click.Context, param: click.Parameter, value: float | None) -> float | None:
    if value is not None and value <= 0:
        raise click.BadParameter("must be greater than 0")
    return value


def _model_option() -> OptionDecorator:
    return click.option(
        "--model",
        envvar=MODEL_ENV,
        show_envvar=True,
        default="builtin",
        show_default=True,
        help="Summary model as litellm names it (e.g. openai/gpt-4o-mini, anthropic/claude-sonnet-4-5), "
        "or 'builtin' for the offline summarizer (no network, cost 0).",
    )


def _provider_option_list() -> list[OptionDecorator]:
    """--api-base, --api-key, --timeout: where and how a model is reached."""
    return [
        click.option("--api-base", default=None, help="Base URL of an OpenAI-compatible or proxy endpoint."),
        click.option(
            "--api-key",
            envvar=API_KEY_ENV,
            show_envvar=True,
            default=None,
            show_default=False,
            help="API key for the summary model (default: the provider's usual variable, e.g. OPENAI_API_KEY). "
            "Never logged or written.",
        ),
        click.option(
            "--timeout",
            type=float,
            default=600.0,
            show_default=True,
            callback=_positive,
            help="Seconds before one summary call times out (it is then retried).",
        ),
    ]


def _no_redact_option() -> OptionDecorator:
    return click.option(
        "--no-redact",
        is_flag=True,
        default=False,
        help="Send prompts as they are. By default likely secrets (API keys, tokens, passwords, private keys) "
        "are replaced with [REDACTED:kind] before a prompt leaves the machine.",
    )


def _apply(func: CommandFunction, options: list[OptionDecorator]) -> CommandFunction:
    for option in reversed(options):
        func = option(func)
    return func


def summarizer_options(func: CommandFunction) -> CommandFunction:
    """--model, --api-base, --api-key, --timeout, --summarizer, --check, --no-redact."""
    options: list[OptionDecorator] = [
        _model_option(),
        *_provider_option_list(),
        click.option(
            "--summarizer",
            default=None,
            metavar="MODULE:CALLABLE",
            help="A custom summarizer: module:callable or an installed 'batchcompact.summarizers' entry point. "
            "Its summaries are marked fromHook.",
        ),
        click.option(
            "--check",
            is_flag=True,
            default=False,
            help="Before the run, send one tiny real request to prove the key and the endpoint "
            "(exit 3 if it fails). The provider and its key are always checked without a request.",
        ),
        _no_redact_option(),
    ]
    return _apply(func, options)


def provider_options(func: CommandFunction) -> CommandFunction:
    """--api-base, --api-key, --timeout, --no-redact: for commands that pick their models otherwise (eval)."""
    return _apply(func, [*_provider_option_list(), _no_redact_option()])


def pool_options(func: CommandFunction) -> CommandFunction:
    """--concurrency, --rpm, --tpm, --max-attempts."""
    options: list[OptionDecorator] = [
        click.option(
            "--concurrency",
            type=int,
            default=8,
            show_default=True,
            callback=_positive,
            help="Model calls in flight at once.",
        ),
        click.option(
            "--rpm", type=float, default=None, callback=_positive, help="Requests per minute limit."
        ),
        click.option("--tpm", type=float, default=None, callback=_positive, help="Tokens per minute limit."),
        click.option(
            "--max-attempts",
            type=int,
            default=6,
            show_default=True,
            callback=_positive,
            help="Attempts per call for retryable errors (429, 5xx, timeouts, connection errors).",
        ),
    ]
    for option in reversed(options):
        func = option(func)
    return func


def pool_settings_from(
    *,
    concurrency: int = 8,
    rpm: float | None = None,
    tpm: float | None = None,
    max_attempts: int = 6,
    max_cost_usd: float | None = None,
    redact: bool = True,
) -> PoolSettings:
    """`PoolSettings` from the option values (imports the pool lazily)."""
    from batchcompact.summarize.pool_settings import PoolSettings

    return PoolSettings(
        concurrency=concurrency,
        rpm=rpm,
        tpm=tpm,
        max_attempts=max_attempts,
        max_cost_usd=max_cost_usd,
        redact=redact,
    )
