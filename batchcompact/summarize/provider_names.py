"""What litellm would answer about a model name, read from its data files without importing it (seconds).

`run --model nosuch/model` and a missing key used to wait for `import litellm` (3-7 s) before being
refused. The obvious cases are told here from litellm's own files, found with `find_spec` as the price map
is (`pricing.bundled_map_path`): the providers it names (its `LlmProviders` enum, its JSON-configured
providers, the bundled map's `litellm_provider` values) and the map's model keys. Each answer is one that
litellm gives too; every other name (a bare name litellm may route by a rule, an `--api-base`, a provider
this table does not know the key of) is left to litellm. When a file cannot be read, nothing is decided.
"""

from __future__ import annotations

import functools
import json
import re
from collections.abc import Mapping
from pathlib import Path

# A provider's key variables, as litellm's validate_environment names them (any one set is enough).
KEY_VARIABLES = {
    "openai": ("OPENAI_API_KEY",),
    "anthropic": ("ANTHROPIC_API_KEY",),
    "gemini": ("GOOGLE_API_KEY", "GEMINI_API_KEY"),
    "mistral": ("MISTRAL_API_KEY",),
    "deepseek": ("DEEPSEEK_API_KEY",),
    "openrouter": ("OPENROUTER_API_KEY",),
    "xai": ("XAI_API_KEY",),
    "groq": ("GROQ_API_KEY",),
}
_ENUM = re.compile(r"^class LlmProviders\(str, Enum\):\n(.*?)^\S", re.M | re.S)
_MEMBER = re.compile(r'^\s+[A-Z0-9_]+\s*=\s*"([^"]+)"', re.M)


def _litellm_folder() -> Path | None:
    """litellm's package folder: where its bundled price map lies (`pricing.bundled_map_path`)."""
    from batchcompact.errors import UsageError
    from batchcompact.pricing import bundled_map_path

    try:
        return bundled_map_path().parent
    except UsageError:
        return None


@functools.lru_cache(maxsize=1)
def known_providers() -> frozenset[str] | None:
    """Every provider prefix litellm places (`openai/...`), or None when its files cannot be read."""
    folder = _litellm_folder()
    if folder is None:
        return None
    try:
        enum = _ENUM.search((folder / "types" / "utils.py").read_text(encoding="utf-8"))
        json_path = folder / "llms" / "openai_like" / "providers.json"
        configured = json.loads(json_path.read_text(encoding="utf-8")) if json_path.is_file() else {}
    except (OSError, ValueError):
        return None
    if enum is None or not isinstance(configured, dict):
        return None
    names = set(_MEMBER.findall(enum.group(1))) | set(configured)
    entries = _map_entries()
    if entries is None or not names:
        return None
    names |= {str(e.get("litellm_provider")) for e in entries.values() if e.get("litellm_provider")}
    return frozenset(names)


def _map_entries() -> Mapping[str, dict] | None:
    from batchcompact.price_index import bundled_entries
    from batchcompact.pricing import bundled_map_path

    try:
        return bundled_entries(bundled_map_path())
    except Exception:  # no map: litellm is asked, and says what is wrong
        return None


def plainly_unknown(model: str, api_base: str | None) -> bool:
    """True when litellm cannot place `model`: a `prefix/name` whose prefix is no provider of litellm's and
    which is no model of its map. A bare name (litellm routes some by rule) and an `--api-base` are not
    judged here."""
    model = model.strip()
    if api_base or "/" not in model:
        return False
    providers = known_providers()
    entries = _map_entries()
    if providers is None or entries is None:
        return False
    return model.split("/", 1)[0] not in providers and model not in entries


def missing_key(model: str, env: Mapping[str, str]) -> tuple[str, ...]:
    """The key variables of `model`'s provider when none is set (the provider's prefix, or the map's
    provider of a bare name); () when one is set or when the provider is not in KEY_VARIABLES."""
    model = model.strip()
    prefix = model.split("/", 1)[0] if "/" in model else None
    if prefix is not None:
        providers = known_providers()
        if providers is None or prefix not in providers:
            return ()
        provider = prefix
    else:
        entries = _map_entries()
        if entries is None or model not in entries:
            return ()
        provider = str(entries[model].get("litellm_provider") or "")
    names = KEY_VARIABLES.get(provider, ())
    return () if any(env.get(name) for name in names) else names
