"""Exact token counts remembered across runs: tokenizing is the slowest part of planning.

A prompt's count depends only on its text and the encoding, so the cache key is a hash of exactly what
would be sent (system prompt + user prompt) and the encoding's name. It lives beside the report cache,
`$XDG_CACHE_HOME/batchcompact/token-counts-v1.sqlite` (`BATCHCOMPACT_TOKEN_CACHE` names another file,
`off` disables it), so `plan` (which has no run state) and `run` share it: a rerun, or a `run` after a
`plan`, counts nothing again.

The cache is an optimisation and never a failure: any SQLite error turns it off for the process. Each
process opens its own connection (a forked worker never uses its parent's).
"""

from __future__ import annotations

import hashlib
import logging
import os
import sqlite3
from pathlib import Path
from typing import cast

from batchcompact.folders import cache_folder

log = logging.getLogger(__name__)

def cache_path() -> Path | None:
    configured = os.environ.get("BATCHCOMPACT_TOKEN_CACHE")
    if configured:
        return None if configured.lower() in ("off", "0", "no", "false") else Path(configured).expanduser()
    return cache_folder() / "token-counts-v1.sqlite"


class TokenCountCache:
    """text hash + encoding -> count, in one small SQLite table."""

    def __init__(self, path: Path | None) -> None:
        self.path = path
        self._pid: int | None = None
        self._db: sqlite3.Connection | None = None
        self.disabled = path is None
        self.hits = 0

    def _connect(self) -> sqlite3.Connection | None:
        if self.disabled:
            return None
        if self._db is not None and self._pid == os.getpid():
            return self._db
        try:
            path = cast(Path, self.path)  # (not disabled: a path)
            path.parent.mkdir(parents=True, exist_ok=True)
            db = sqlite3.connect(path, timeout=2.0, isolation_level=None, check_same_thread=False)
            db.execute("PRAGMA journal_mode=WAL")
            db.execute("CREATE TABLE IF NOT EXISTS counts (key BLOB PRIMARY KEY, tokens INTEGER NOT NULL) WITHOUT ROWID")
        except (sqlite3.Error, OSError) as exc:
            self._off(exc)
            return None
        self._db, self._pid = db, os.getpid()
        return db

    def _off(self, exc: Exception) -> None:
        log.debug("token count cache %s turned off: %s", self.path, exc)
        self.disabled = True
        self._db = None

    @staticmethod
    def key(text: str, encoding: str) -> bytes:
        digest = hashlib.blake2b(encoding.encode(), digest_size=16)
        digest.update(text.encode("utf-8", "surrogatepass"))
        return digest.digest()

    def get(self, key: bytes) -> int | None:
        db = self._connect()
        if db is None:
            return None
        try:
            row = db.execute("SELECT tokens FROM counts WHERE key = ?", (key,)).fetchone()
        except sqlite3.Error as exc:
            self._off(exc)
            return None
        if row is not None:
            self.hits += 1
        return None if row is None else int(row[0])

    def put(self, key: bytes, tokens: int) -> None:
        db = self._connect()
        if db is None:
            return
        try:
            db.execute("INSERT OR IGNORE INTO counts (key, tokens) VALUES (?, ?)", (key, tokens))
        except sqlite3.Error as exc:
            self._off(exc)


_CACHE: TokenCountCache | None = None


def shared_cache() -> TokenCountCache:
    """The process's cache (reopened per process; the path is read from the environment once)."""
    global _CACHE
    if _CACHE is None:
        _CACHE = TokenCountCache(cache_path())
    return _CACHE


def answers_counts() -> bool:
    """Whether a cache file is there to answer counts from. Without one every count is made here, so a
    pool's parent loads the encoding before forking (its workers share it); with one, the workers load it
    only at their first miss (a rerun or a `run` after `plan` loads none)."""
    path = cache_path()
    return path is not None and path.exists()


def reset_shared_cache() -> None:
    """Forget the process's cache object (tests change the environment)."""
    global _CACHE
    _CACHE = None


def count_prompt_tokens(system_prompt: str, user_prompt: str, model: str | None = None) -> int:
    """Exact tokens of a call's two prompts, remembered as one entry whatever their length (a hit loads no
    encoding: a plan whose every count is remembered loads none)."""
    from batchcompact.tokenizer import count_tokens, encoding_name_for, has_encoding

    cache = shared_cache()
    key = cache.key(f"{system_prompt}\0{user_prompt}", encoding_name_for(model))
    found = cache.get(key)
    if found is not None:
        return found
    tokens = count_tokens(system_prompt, model) + count_tokens(user_prompt, model)
    if has_encoding(model):
        cache.put(key, tokens)
    return tokens
