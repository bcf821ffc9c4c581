"""Exact token counts with tiktoken, from encodings on this machine only (never downloaded).

litellm ships cl100k_base and o200k_base in tiktoken's cache format; we point TIKTOKEN_CACHE_DIR at that
folder (found without importing litellm) unless the user set the variable. If no encoding can be loaded
offline, counting falls back to the chars/4 estimate and says so once per process: one warning line
on stderr naming the encoding and why (no cache folder, the blob missing, tiktoken not importable, a
broken blob).
"""

from __future__ import annotations

import logging
import os
from functools import lru_cache
from importlib.util import find_spec
from pathlib import Path
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    import tiktoken

log = logging.getLogger(__name__)

# cl100k_base and o200k_base blobs, named by the sha1 of their public URL (tiktoken's cache key).
_REQUIRED_BLOBS = ("9b5ad71b2ce5302211f9c61530b329a4922fc6a4", "fb374d419588a4632f3f557e76b4b70aebbca790")


def bundled_cache_dir() -> Path | None:
    spec = find_spec("litellm")
    if spec is None or not spec.submodule_search_locations:
        return None
    folder = Path(next(iter(spec.submodule_search_locations))) / "litellm_core_utils" / "tokenizers"
    return folder if folder.is_dir() else None


def configure_offline_cache() -> Path | None:
    """Point tiktoken at a local cache; returns the folder used (None when none has the encodings)."""
    current = os.environ.get("TIKTOKEN_CACHE_DIR")
    if current and any((Path(current) / blob).exists() for blob in _REQUIRED_BLOBS):
        return Path(current)
    folder = bundled_cache_dir()
    if folder is not None:
        os.environ["TIKTOKEN_CACHE_DIR"] = str(folder)
    return folder


def encoding_name_for(model: str | None) -> str:
    """o200k_base for the GPT-4o / o-series / GPT-5 generation, cl100k_base for everything else."""
    name = (model or "").lower().split("/")[-1]
    if name.startswith(("gpt-4o", "gpt-4.1", "gpt-5", "o1", "o3", "o4", "chatgpt-4o", "codex")):
        return "o200k_base"
    return "cl100k_base"


_warned = False  # the chars/4 fallback is said once per process, whatever the encoding


def _fall_back(name: str, why: str) -> None:
    """Say, once, that token counts are estimated (one line on stderr through logging)."""
    global _warned
    if not _warned:
        _warned = True
        log.warning("exact token counts unavailable (%s %s); token counts are estimated as chars/4", name, why)


@lru_cache(maxsize=4)
def _encoding(name: str) -> tiktoken.Encoding | None:
    folder = configure_offline_cache()
    if folder is None:
        _fall_back(name, "not found offline: no TIKTOKEN_CACHE_DIR with it and litellm's copy is missing")
        return None
    if not (folder / _blob_for(name)).exists():
        _fall_back(name, f"not found offline in {folder}")
        return None
    try:
        import tiktoken
    except ImportError as exc:
        _fall_back(name, f"cannot be loaded: tiktoken is not importable ({exc})")
        return None
    log.debug("loading the %s encoding", name)
    try:
        return tiktoken.get_encoding(name)
    except Exception as exc:  # a broken cache must not turn into a download or a crash
        _fall_back(name, f"could not be loaded offline ({exc})")
        return None


def _blob_for(name: str) -> str:
    return {"cl100k_base": _REQUIRED_BLOBS[0], "o200k_base": _REQUIRED_BLOBS[1]}.get(name, _REQUIRED_BLOBS[0])


def warm_up(model: str | None = None) -> None:
    """Load the model's encoding now (before forking workers, so they inherit it)."""
    _encoding(encoding_name_for(model))


def has_encoding(model: str | None = None) -> bool:
    """Whether exact counts are available offline for the model's encoding."""
    return _encoding(encoding_name_for(model)) is not None


def count_tokens(text: str, model: str | None = None) -> int:
    """Exact count for the model's encoding; chars/4 when no encoding is available offline."""
    encoding = _encoding(encoding_name_for(model))
    if encoding is None:
        return (len(text) + 3) // 4
    return len(encoding.encode_ordinary(text))  # special-token text is counted as plain text
