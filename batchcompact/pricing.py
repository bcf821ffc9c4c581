"""Model prices and context windows from litellm's bundled map, read as plain JSON.

`import litellm` costs seconds, so this module never imports it: `importlib.util.find_spec("litellm")`
locates the installed package without executing it, and the bundled
`model_prices_and_context_window_backup.json` is read as JSON, one entry at a time: `price_index` keeps
where each entry lies in the cache folder, so a command parses only the models it prices. Nothing is
ever downloaded.

A `--pricing FILE` is a JSON object of the same shape (model key -> fields). Its entries are merged
over the bundled ones field by field, so an override may give just the prices it changes; a key the
bundled map lacks is added.

Name resolution (`PriceTable.lookup`), first hit wins:
  1. the name as written (stripped), then lower-cased;
  2. with a `provider` given, `"<alias>/<model>"` is tried BEFORE the bare name (so provider `google`
     + `gemini-2.5-flash` gives `gemini/gemini-2.5-flash`, not the Vertex entry); the alias
     maps agent provider names to litellm prefixes (`google` -> `gemini`, `openai-codex` -> `openai`, ...);
  3. the bare model with a known provider prefix removed (`anthropic/claude-opus-4-5` -> `claude-opus-4-5`);
  4. each of the above with decorations removed: a `:thinking`/`:free`-style suffix, a `@version`,
     a trailing `-latest`, a date suffix `-20250929` / `-2025-09-29` (so unknown snapshot dates fall back
     to the model's alias entry);
  5. for a provider whose models some map entries list under another prefix only (`google` -> Gemini
     models only listed as `vertex_ai/...`), that prefix;
  6. for a `claude-*` name still unresolved, Bedrock's `anthropic.<name>-vN:M` or `-vN`, any version, the
     lowest first (same list price; the bundled map drops retired Anthropic ids such as
     `claude-sonnet-4-20250514` (`-v1:0`) and `claude-3-5-sonnet-20241022` (`-v2:0`) but keeps Bedrock's);
  7. otherwise `None`: an unknown model is never priced as free.

Costs: `model_price.py` (one model's entry, its price sets and the cost of a request).
"""

from __future__ import annotations

import functools
import importlib.util
import re
from collections import ChainMap
from collections.abc import Mapping
from pathlib import Path

from batchcompact.core.jsontypes import JsonObject, JsonValue
from batchcompact.errors import UsageError
from batchcompact.formats.jsonl import loads_line
from batchcompact.model_price import ModelInfo
from batchcompact.price_index import SKIPPED, bundled_entries

BUNDLED_MAP_NAME = "model_prices_and_context_window_backup.json"

# Agent provider names -> litellm key prefixes.
PROVIDER_ALIASES: dict[str, str] = {
    "google": "gemini",
    "google-gemini-cli": "gemini",
    "google-generative-ai": "gemini",
    "gemini": "gemini",
    "google-vertex": "vertex_ai",
    "vertex": "vertex_ai",
    "vertex_ai": "vertex_ai",
    "openai": "openai",
    "openai-codex": "openai",
    "azure-openai-responses": "azure",
    "azure": "azure",
    "anthropic": "anthropic",
    "amazon-bedrock": "bedrock",
    "bedrock": "bedrock",
    "mistral": "mistral",
    "groq": "groq",
    "xai": "xai",
    "openrouter": "openrouter",
    "deepseek": "deepseek",
    # Qwen Code's models are Alibaba Cloud's (DashScope) in the map; ccusage tries `qwen/` and `alibaba/`.
    "qwen": "dashscope",
    "alibaba": "dashscope",
    "dashscope": "dashscope",
}

# Where a provider's model is listed under another provider's prefix only (Google's retired or preview
# Gemini models survive as `vertex_ai/...`, at the same list price): tried after every other candidate.
PROVIDER_FALLBACKS: dict[str, tuple[str, ...]] = {"gemini": ("vertex_ai",)}

_DATE_SUFFIX = re.compile(r"-(?:20\d{6}|20\d{2}-\d{2}-\d{2})$")
_BEDROCK_VERSION = re.compile(r"-v(\d+)(?::(\d+))?$")


class PriceTable:
    """The merged price map with name resolution. Build it with `PriceTable.load()` (cached)."""

    def __init__(self, entries: Mapping[str, JsonObject], source: str = "") -> None:
        """`entries`: model key -> its fields, only entries that are objects and not `sample_spec` (a
        plain dict, or the bundled map's `price_index.IndexedEntries`, which parses each on first use)."""
        self._entries = entries
        self._lower = {k.lower(): k for k in entries}
        self._infos: dict[str, ModelInfo] = {}
        self._resolved: dict[tuple[str, str | None], str | None] = {}
        self._versions: dict[str, list[tuple[tuple, str]]] | None = None  # Bedrock ids by model (`_bedrock`)
        self.source = source

    @classmethod
    def load(cls, pricing_file: str | Path | None = None) -> PriceTable:
        """The bundled map with `pricing_file`'s entries merged over it; cached per file."""
        key = str(Path(pricing_file).expanduser().resolve()) if pricing_file else None
        return _load_cached(key)

    def __len__(self) -> int:
        return len(self._entries)

    def __contains__(self, key: str) -> bool:
        return key in self._entries

    def names(self) -> list[str]:
        """Every model key of the map (for a "did you mean" of a mistyped name)."""
        return list(self._entries)

    def resolve(self, model: str, provider: str | None = None) -> str | None:
        """The map key that `model` (as an agent wrote it) resolves to, or None. See the module docstring."""
        if not model:
            return None
        cache_key = (model, provider)
        if cache_key not in self._resolved:
            self._resolved[cache_key] = self._resolve(model.strip(), provider)
        return self._resolved[cache_key]

    def lookup(self, model: str, provider: str | None = None) -> ModelInfo | None:
        key = self.resolve(model, provider)
        if key is None:
            return None
        if key not in self._infos:
            self._infos[key] = ModelInfo.from_entry(key, self._entries[key])
        return self._infos[key]

    def context_window(self, model: str, provider: str | None = None) -> int | None:
        info = self.lookup(model, provider)
        return info.max_input_tokens if info else None

    def max_output_tokens(self, model: str, provider: str | None = None) -> int | None:
        info = self.lookup(model, provider)
        return info.max_output_tokens if info else None

    def cost(
        self,
        model: str,
        *,
        input_tokens: int,
        output_tokens: int,
        cache_read_tokens: int = 0,
        cache_write_tokens: int = 0,
        batch: bool = False,
        provider: str | None = None,
        cache_write_1h_tokens: int = 0,
    ) -> float | None:
        """USD for one request (`input_tokens` = non-cached input); None when the model is unpriced."""
        info = self.lookup(model, provider)
        if info is None:
            return None
        return info.cost(
            input_tokens=input_tokens,
            output_tokens=output_tokens,
            cache_read_tokens=cache_read_tokens,
            cache_write_tokens=cache_write_tokens,
            batch=batch,
            cache_write_1h_tokens=cache_write_1h_tokens,
        )

    def _find(self, name: str) -> str | None:
        if name in self._entries:
            return name
        return self._lower.get(name.lower())

    def _resolve(self, model: str, provider: str | None) -> str | None:
        prefix, _, bare = model.partition("/") if "/" in model else ("", "", model)
        provider_alias = PROVIDER_ALIASES.get(provider.lower(), provider.lower()) if provider else None
        candidates: list[str] = []
        for name in _variants(model):
            if provider_alias:
                candidates.append(f"{provider_alias}/{name}")
            candidates.append(name)
        if prefix:
            prefix_alias = PROVIDER_ALIASES.get(prefix.lower(), prefix.lower())
            for name in _variants(bare):
                candidates.append(f"{prefix_alias}/{name}")
                if provider_alias:
                    candidates.append(f"{provider_alias}/{name}")
                candidates.append(name)
        for candidate in candidates:
            found = self._find(candidate)
            if found:
                return found
        if prefix and "/" in bare:  # "openrouter/anthropic/claude-..." -> "anthropic/claude-..."
            return self._resolve(bare, provider)
        for fallback in PROVIDER_FALLBACKS.get(provider_alias or "", ()):
            for name in _variants(bare):
                found = self._find(f"{fallback}/{name}")
                if found:
                    return found
        # Anthropic retires old ids from the map while Bedrock keeps them at the same price.
        for name in _variants(bare):
            if name.lower().startswith("claude-"):
                found = self._bedrock(name)
                if found:
                    return found
        return None

    def _bedrock(self, name: str) -> str | None:
        """Bedrock's entry for the Anthropic model `name`: `anthropic.<name>-vN:M` or `-vN`, whatever its
        version (`claude-3-5-sonnet-20241022` is `-v2:0`), the lowest first, then `anthropic.<name>`."""
        if self._versions is None:
            self._versions = {}
            for lower, key in self._lower.items():
                if lower.startswith("anthropic.") and (match := _BEDROCK_VERSION.search(lower)):
                    order = (int(match[1]), match[2] is None, int(match[2] or 0))  # -vN:M, then -vN, then N+1
                    self._versions.setdefault(lower[len("anthropic."):match.start()], []).append((order, key))
            for found in self._versions.values():
                found.sort()
        versions = self._versions.get(name.lower())
        return versions[0][1] if versions else self._find(f"anthropic.{name}")


def _variants(name: str) -> list[str]:
    """`name` and the forms with agent decorations removed, most specific first."""
    out = [name]
    base = name
    for sep in (":", "@"):
        if sep in base and not base.startswith("ft:"):
            stem = base.split(sep, 1)[0]
            if stem and stem not in out:
                out.append(stem)
                base = stem
    if base.endswith("-latest"):
        base = base[: -len("-latest")]
        out.append(base)
    undated = _DATE_SUFFIX.sub("", base)
    if undated != base:
        out.append(undated)
    if base.lower().startswith("claude") and "." in base:  # "claude-sonnet-4.5" -> "claude-sonnet-4-5"
        out.append(undated.replace(".", "-"))
    return out


def bundled_map_path() -> Path:
    """Where litellm's bundled price map lives, found without importing litellm."""
    spec = importlib.util.find_spec("litellm")
    if spec is None or not spec.submodule_search_locations:
        raise UsageError("litellm is not installed, so there is no bundled price map; pass --pricing FILE")
    for location in spec.submodule_search_locations:
        path = Path(location) / BUNDLED_MAP_NAME
        if path.is_file():
            return path
    raise UsageError(f"litellm's {BUNDLED_MAP_NAME} was not found; pass --pricing FILE")


def read_price_map(path: str | Path) -> dict[str, JsonObject]:
    """Read a price map JSON file (model key -> fields)."""
    try:
        with open(path, "rb") as fh:
            data = loads_line(fh.read())  # orjson: the bundled map parses 3x faster than with json
    except FileNotFoundError:
        raise UsageError(f"pricing file {path} does not exist") from None
    except (OSError, ValueError, RecursionError) as exc:
        raise UsageError(f"pricing file {path} is not valid JSON: {exc}") from None
    if not isinstance(data, dict):
        raise UsageError(f"pricing file {path} must be a JSON object mapping model names to prices")
    return data


@functools.lru_cache(maxsize=8)
def _load_cached(pricing_file: str | None) -> PriceTable:
    bundled = bundled_map_path()
    entries: Mapping[str, JsonObject] | None = bundled_entries(bundled)
    if entries is None:  # not a map the index can read: parsed whole, which says what is wrong with it
        entries = _objects(read_price_map(bundled))
    source = f"litellm {_litellm_version()} bundled map"
    if pricing_file:
        extra = _objects(check_user_map(pricing_file, read_price_map(pricing_file)))
        merged = {key: {**entries.get(key, {}), **fields} for key, fields in extra.items()}
        # the bundled keys in their order, then the new ones (read only: ChainMap's stub wants a mutable map)
        entries = ChainMap(merged, entries)  # type: ignore[arg-type]
        source += f" + {pricing_file}"
    return PriceTable(entries, source=source)


_COUNT_FIELDS = frozenset({"max_input_tokens", "max_output_tokens", "max_tokens"})


def check_user_map(path: str | Path, data: JsonObject) -> JsonObject:
    """A `--pricing` file's entries, refused (a usage error naming the entry, its field and line) where a
    value would be ignored: an entry that is no object, a token price (`*cost_per_token*`, `*token_cost*`) or
    a token limit that is not a number >= 0. Without this, "free" left the model unpriced, unsaid."""
    text: list[str] | None = None

    def refuse(key: str, field: str | None, why: str) -> UsageError:
        nonlocal text
        if text is None:
            try:
                text = Path(path).read_text(encoding="utf-8", errors="replace").splitlines()
            except OSError:
                text = []
        where = _line_of(text, key, field)
        place = f"{path}:{where}" if where else str(path)
        what = f"{key!r}" + (f": {field}" if field else "")
        return UsageError(f"pricing file {place}: {what} {why}")

    for key, entry in data.items():
        if key == SKIPPED:
            continue
        if not isinstance(entry, dict):
            raise refuse(key, None, f"is {_json_kind(entry)}, not an object of prices (model key -> fields)")
        for field, value in entry.items():
            if "cost_per_token" not in field and "token_cost" not in field and field not in _COUNT_FIELDS:
                continue
            if value is None:
                continue
            if isinstance(value, bool) or not isinstance(value, (int, float)) or value < 0:
                unit = "a number of tokens" if field in _COUNT_FIELDS else "a number of USD (per token)"
                raise refuse(key, field, f"is {_shown(value)}, not {unit} >= 0")
    return data


def _json_kind(value: JsonValue) -> str:
    return {str: "a string", list: "a list", bool: "true or false", type(None): "null"}.get(
        type(value), f"the number {value}" if isinstance(value, (int, float)) else "not an object")


def _shown(value: JsonValue) -> str:
    import json

    shown = json.dumps(value)
    return shown if len(shown) <= 40 else shown[:39] + "…"


def _line_of(lines: list[str], key: str, field: str | None) -> int | None:
    """The line where `key` (then its `field`) is written, for the message; None when not found."""
    import json

    start = next((i for i, line in enumerate(lines) if json.dumps(key) + ":" in line.replace('" :', '":')), None)
    if start is None:
        return None
    if field is None:
        return start + 1
    found = next((i for i in range(start, len(lines)) if json.dumps(field) in lines[i]), start)
    return found + 1


def _objects(entries: JsonObject) -> dict[str, JsonObject]:
    """A map's model entries: the values that are objects, but litellm's `sample_spec` template."""
    return {key: value for key, value in entries.items() if isinstance(value, dict) and key != SKIPPED}


def _litellm_version() -> str:
    """litellm's installed version: the `Version:` of the one `litellm-*.dist-info/METADATA` beside the
    package (what `importlib.metadata` reads, without its ~20 ms import and search), else the metadata's."""
    spec = importlib.util.find_spec("litellm")
    for location in (spec.submodule_search_locations or []) if spec else []:
        infos = list(Path(location).parent.glob("litellm-*.dist-info"))
        if len(infos) == 1 and (infos[0] / "METADATA").is_file():
            with open(infos[0] / "METADATA", encoding="utf-8") as fh:
                for line in fh:
                    if line.startswith("Version:"):
                        return line[len("Version:"):].strip()
                    if not line.strip():  # end of the headers
                        break
    from importlib.metadata import PackageNotFoundError, version

    try:
        return version("litellm")
    except PackageNotFoundError:
        return "(unknown version)"
