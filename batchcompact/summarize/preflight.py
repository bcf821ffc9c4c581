"""Preflight: refuse a summary model that cannot work before any file is planned or any money is spent.

`preflight(model, api_base, api_key)` resolves the provider as litellm does (`litellm.get_llm_provider`,
imported lazily) and checks that the provider's credentials are present, without sending anything:

- a model litellm cannot place is a usage error (exit 2) whose one line says what would work, e.g.
  `openai/<name> --api-base URL` for a local OpenAI-compatible server;
- litellm itself failing (not importable, its bundled data broken, an error inside `get_llm_provider`)
  is not an unknown model: `ProviderLibraryError` (exit 3) says litellm broke and nothing was sent;
- a missing API key (no `--api-key`, none of the provider's variables set) aborts (exit 3), unless
  `--api-base` is given: local servers (vLLM, llama.cpp, Ollama, LM Studio) are usually keyless, so a
  placeholder key is sent instead;
- variables that are not keys (Azure's base and version, Vertex's project, AWS credentials that may come
  from a profile) are left for the provider to judge: their absence is logged, not fatal.

`check_endpoint(...)` (`summarize/endpoint_check.py`) is `--check`: one tiny real request that proves the key
and the endpoint. Both raise our errors only (`UsageError`, `RunAborted` subclasses), so the CLI turns them
into one line and an exit code.
"""

from __future__ import annotations

import logging
import os
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from types import ModuleType

from batchcompact.errors import RunAborted, UsageError

log = logging.getLogger(__name__)

# Sent as the key when --api-base names a server and no key is configured: keyless servers ignore it,
# and the OpenAI client refuses to send a request without one.
PLACEHOLDER_KEY = "no-key"

# Where each provider's requests go when no --api-base is given (for "cannot reach <base URL>").
DEFAULT_BASES = {
    "openai": "https://api.openai.com/v1",
    "anthropic": "https://api.anthropic.com",
    "gemini": "https://generativelanguage.googleapis.com",
    "mistral": "https://api.mistral.ai/v1",
    "deepseek": "https://api.deepseek.com",
    "openrouter": "https://openrouter.ai/api/v1",
    "xai": "https://api.x.ai/v1",
    "together_ai": "https://api.together.xyz/v1",
    "fireworks_ai": "https://api.fireworks.ai/inference/v1",
    "cohere": "https://api.cohere.ai",
}
# Environment variables that override a provider's default base URL.
_BASE_VARS = {"openai": ("OPENAI_BASE_URL", "OPENAI_API_BASE"), "anthropic": ("ANTHROPIC_API_BASE",)}
_KEY_NAME = re.compile(r"(?:_API_KEY|_KEY|_TOKEN)$")
_AWS = re.compile(r"^AWS_")


class MissingCredentialsError(RunAborted):
    """The provider's API key is not configured; nothing was sent."""


class EndpointCheckError(RunAborted):
    """`--check`: the one test request failed (unreachable endpoint, refused key, bad model)."""


@dataclass(frozen=True)
class ProviderInfo:
    """Where a model's requests go and with which key (the key never appears in a repr)."""

    model: str  # as given on the command line
    provider: str  # litellm's provider name: openai, anthropic, gemini, ...
    provider_model: str  # the model name the provider sees
    base_url: str  # the endpoint, for messages ("cannot reach <base_url>: ...")
    api_base: str | None  # --api-base as given
    key_source: str  # "--api-key", "$OPENAI_API_KEY", "environment" (litellm found it), "placeholder"
    api_key: str | None = field(default=None, repr=False)  # what to send: --api-key or the placeholder

    @property
    def keyless(self) -> bool:
        return self.key_source == "placeholder"


class ProviderLibraryError(RunAborted):
    """litellm itself failed (not importable, its bundled data broken, an error of its own): the model could
    not be checked, which is not the same as an unknown model. Nothing was sent."""


def _litellm() -> ModuleType:
    from batchcompact.summarize.litellm_import import import_litellm

    try:
        return import_litellm()
    except Exception as exc:  # ImportError, a broken bundled price map, ...: litellm's failure, not the model's
        raise ProviderLibraryError(
            f"litellm could not be loaded ({_first_line(exc)}): the model was not checked and nothing was sent; "
            "reinstall it (pip install --force-reinstall litellm), or rerun with BATCHCOMPACT_DEBUG=1 for the "
            "traceback") from exc


def _first_line(exc: BaseException) -> str:
    text = str(exc).strip().splitlines()
    return f"{type(exc).__name__}: {text[0]}" if text else type(exc).__name__


def _is_unknown_model(litellm: ModuleType, exc: Exception) -> bool:
    """litellm's own answer "I cannot tell this model's provider" (a BadRequestError it raises itself), as
    opposed to an error inside litellm, which it wraps as "GetLLMProvider Exception - ..."."""
    bad_request = getattr(getattr(litellm, "exceptions", None), "BadRequestError", None)
    if bad_request is None or not isinstance(exc, bad_request):
        return False
    return "GetLLMProvider Exception" not in str(exc)


def unknown_model_message(model: str, api_base: str | None, option: str | None = None,
                          server_hint: bool = True, without_litellm: bool = False) -> str:
    """One line: why `model` cannot be used and what would work. `option`: the command's option that names
    the model (`--model`, `--summary-model`); None (a caller that does not say) names none, so the line
    never suggests an option the command lacks. `server_hint`: the command takes --api-base.
    `without_litellm`: the suggestion is checked from litellm's files (provider_names), not by litellm."""
    name = model.split("/", 1)[-1] if "/" in model else model
    local = f"{option} openai/{name}" if option else f"openai/{name}"
    near = _near_model(model, without_litellm)
    said = f"unknown model {model!r}: litellm cannot tell its provider" + (f" (did you mean {near!r}?)" if near else "")
    if api_base:
        return f"{said}; for an OpenAI-compatible server use {local} --api-base {api_base}"
    server = " --api-base http://127.0.0.1:8000/v1" if server_hint else ""
    return (f"{said}; name it provider/model (e.g. openai/gpt-4o-mini, anthropic/claude-haiku-4-5, "
            f"gemini/gemini-2.5-flash), or for a local OpenAI-compatible server use {local}{server}")


def _near_model(model: str, without_litellm: bool = False) -> str | None:
    """The bundled price map's name closest to a mistyped `model` (`gpt-4o-mni` -> `gpt-4o-mini`) that
    litellm places, or None. `without_litellm`: only a `provider/name` whose provider litellm's files name."""
    import difflib

    from batchcompact.pricing import PriceTable

    try:
        names = PriceTable.load(None).names()
        if without_litellm:
            from batchcompact.summarize.provider_names import known_providers

            providers = known_providers() or frozenset()
            return next((near for near in difflib.get_close_matches(model.strip(), names, n=3, cutoff=0.85)
                         if "/" in near and near.split("/", 1)[0] in providers), None)
        litellm = _litellm()
        for near in difflib.get_close_matches(model.strip(), names, n=3, cutoff=0.85):
            try:
                if litellm.get_llm_provider(model=near)[1]:
                    return near
            except Exception:
                continue
    except Exception:  # a suggestion is a courtesy: the error it decorates is what matters
        return None
    return None


def resolve_provider(model: str, api_base: str | None = None, option: str | None = None,
                     server_hint: bool = True) -> tuple[str, str, str | None]:
    """(provider model name, provider, provider's own default base or None) as litellm resolves `model`;
    `option`, `server_hint`: for the message of an unknown model (`unknown_model_message`)."""
    if not model or not model.strip():
        raise UsageError(f"{option or 'the model'} is empty: name a model such as openai/gpt-4o-mini, or 'builtin'")
    from batchcompact.summarize.provider_names import plainly_unknown

    if plainly_unknown(model, api_base):  # told from litellm's files: no import of litellm (seconds) to refuse it
        raise UsageError(unknown_model_message(model, api_base, option, server_hint, without_litellm=True))
    litellm = _litellm()
    try:
        name, provider, _key, base = litellm.get_llm_provider(model=model.strip(), api_base=api_base)
    except Exception as exc:
        if _is_unknown_model(litellm, exc):
            raise UsageError(unknown_model_message(model, api_base, option, server_hint)) from None
        raise ProviderLibraryError(
            f"litellm failed while resolving {model.strip()!r} ({_first_line(exc)}): not an unknown model, litellm "
            "itself broke; nothing was sent (check its installation, or rerun with BATCHCOMPACT_DEBUG=1 for the "
            "traceback)") from exc
    if not provider:
        raise UsageError(unknown_model_message(model, api_base, option, server_hint))
    return name, provider, base


def check_priced_or_known(model: str, pricing_file: str | None = None, option: str | None = None) -> None:
    """`plan`'s check of its summary model, the rule `run` applies: a model litellm cannot place is a
    usage error (exit 2) with `run`'s message. A model the price map prices is taken without loading
    litellm (seconds; `plan` prices without it); only one it does not price is asked of litellm, which
    tells a typo (`gpt-4o-mni`: refused) from a model with no known price (`openai/my-local-model`:
    planned, its cost null with a warning)."""
    from batchcompact.pricing import PriceTable

    if PriceTable.load(pricing_file).lookup(model.strip()) is not None:
        return
    resolve_provider(model, option=option, server_hint=False)


def base_url(provider: str, api_base: str | None = None, provider_base: str | None = None,
             env: Mapping[str, str] | None = None) -> str:
    """The endpoint requests go to: --api-base, the provider's base variable, or its documented default."""
    env = os.environ if env is None else env
    if api_base:
        return api_base
    for name in _BASE_VARS.get(provider, ()):
        if env.get(name):
            return env[name]
    return provider_base or DEFAULT_BASES.get(provider) or f"the {provider} API"


def preflight(model: str, api_base: str | None = None, api_key: str | None = None, *,
              env: Mapping[str, str] | None = None, option: str | None = None) -> ProviderInfo:
    """Resolve `model`'s provider and check its credentials; sends nothing.

    Raises `UsageError` (exit 2) for a model litellm cannot place (its message names `option`, the
    command's option for the model, when given), `MissingCredentialsError` (exit 3) when the provider's
    key is missing and no `--api-base` was given.
    """
    env = os.environ if env is None else env
    if not api_key and not api_base:  # a provider whose key variables are known: refused before litellm loads
        from batchcompact.summarize.provider_names import missing_key, plainly_unknown

        keys: Sequence[str] = () if plainly_unknown(model, api_base) else missing_key(model, env)
        if keys:
            raise MissingCredentialsError(_no_key_message(model, keys))
    name, provider, provider_base = resolve_provider(model, api_base, option)
    url = base_url(provider, api_base, provider_base, env)
    def info(key_source: str, api_key: str | None = None) -> ProviderInfo:
        return ProviderInfo(model=model.strip(), provider=provider, provider_model=name, base_url=url,
                            api_base=api_base, key_source=key_source, api_key=api_key)

    if api_key:
        return info("--api-key", api_key)
    missing = _missing_variables(model.strip(), api_base)
    keys = [m for m in missing if _KEY_NAME.search(m) and not _AWS.match(m)]
    if missing and not keys:
        log.info("%s: not set: %s (the provider may find its credentials elsewhere)", model, ", ".join(missing))
    if not keys:
        found = _configured_key_variable(provider, env)
        return info(f"${found}" if found else "environment")
    if api_base:
        # A keyless local server: send a placeholder (the OpenAI client needs some key).
        return info("placeholder", PLACEHOLDER_KEY)
    raise MissingCredentialsError(_no_key_message(model, keys))


def _no_key_message(model: str, keys: Sequence[str]) -> str:
    return (f"no API key for {model}: set {' or '.join(keys)} or pass --api-key (for a keyless local server add "
            "--api-base URL); nothing was sent")


def _missing_variables(model: str, api_base: str | None) -> list[str]:
    try:
        found = _litellm().validate_environment(model=model, api_base=api_base)
    except Exception as exc:  # litellm could not judge: let the first request tell
        log.debug("validate_environment(%s) failed: %s", model, exc)
        return []
    if found.get("keys_in_environment"):
        return []
    return [str(m) for m in found.get("missing_keys") or []]


def _configured_key_variable(provider: str, env: Mapping[str, str]) -> str | None:
    name = provider.upper().replace("-", "_") + "_API_KEY"
    return name if env.get(name) else None
