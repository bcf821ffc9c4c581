"""litellm's bundled price map, parsed one entry at a time: where each entry lies, remembered.

Parsing the whole map (3 MB, ~4,200 models) cost ~30 ms of every command's start-up, and a command
prices a handful of models. So the first command after litellm is installed or upgraded finds the byte
span of each top-level entry (the standard library's JSON scanner: a full, strict parse that reports
where each value ends) and keeps that index in the cache folder, `price-map-index-v1/<hash of the
map's path>.json`. Every later command reads the map's bytes, checks their SHA-256 and size against
the index's, and parses only the entries it looks up, each with `loads_line`, as the whole file was
read before: the same values, at ~5 ms instead of ~30.

The index is a cache: one that is missing, unreadable, damaged or made for other bytes is rebuilt (and
written again when the folder allows; a read-only cache costs the full parse, not an error). The one
case it cannot see at load is an index edited by hand to keep the map's hash and size while pointing
elsewhere: the entry looked up then is no object, and that is a one-line error naming the index (exit
2, "delete it"), never a wrong price. A map the scanner cannot read as one JSON object returns None: the
caller then parses it whole and reports what is wrong with it as before.
"""

from __future__ import annotations

import hashlib
import json
import json.decoder
import logging
import os
from collections.abc import Iterator, Mapping
from pathlib import Path

import orjson

from batchcompact.core.jsontypes import JsonObject
from batchcompact.errors import UsageError
from batchcompact.folders import cache_folder
from batchcompact.formats.jsonl import loads_line

log = logging.getLogger(__name__)

INDEX_VERSION = 1
SKIPPED = "sample_spec"  # litellm's template entry: documentation, not a model


class IndexedEntries(Mapping):
    """A map's entries (model key -> its fields, a dict), each parsed from its span on first use."""

    def __init__(self, data: bytes, keys: list[str], spans: list[int], index: Path | None = None) -> None:
        self._data = data
        self._at = {key: 2 * number for number, key in enumerate(keys)}
        self._spans = spans
        self._parsed: dict[str, JsonObject] = {}
        self._index = index

    def __getitem__(self, key: str) -> JsonObject:
        found = self._parsed.get(key)
        if found is None:
            at = self._at[key]
            start, end = self._spans[at], self._spans[at + 1]
            try:
                found = loads_line(self._data[start:end])
            except ValueError:
                found = None
            if not isinstance(found, dict):  # the index matched the map's hash, so it was tampered with
                raise UsageError(f"price map index {self._index} does not match its map at {key!r}; delete it")
            self._parsed[key] = found
        return found

    def __iter__(self) -> Iterator[str]:
        return iter(self._at)

    def __len__(self) -> int:
        return len(self._at)

    def __contains__(self, key: object) -> bool:
        return key in self._at


def bundled_entries(path: Path) -> IndexedEntries | None:
    """The map at `path` as `IndexedEntries` (the entries whose value is an object, but `sample_spec`),
    through its index in the cache folder (built and written on a miss); None when the file cannot be
    read or is not one JSON object (the caller's full parse then says why)."""
    try:
        with open(path, "rb") as fh:
            data = fh.read()
    except OSError:
        return None
    digest = hashlib.sha256(data).hexdigest()
    where = index_file(path)
    found = _read_index(where, digest, len(data))
    if found is None:
        found = entry_spans(data)
        if found is None:
            return None
        _write_index(where, digest, len(data), *found)
    return IndexedEntries(data, *found, index=where)


def index_file(path: Path) -> Path:
    """Where the index of the map at `path` is kept: one file per map path (two environments with two
    litellm versions keep two; an upgrade in place replaces its own)."""
    name = hashlib.sha256(os.fsencode(str(path))).hexdigest()[:16]
    return cache_folder() / f"price-map-index-v{INDEX_VERSION}" / f"{name}.json"


def entry_spans(data: bytes) -> tuple[list[str], list[int]] | None:
    """Every top-level key whose value is an object (but `sample_spec`), in the order a parse of the
    whole map keeps them, and the byte span of its value: [start, end, start, end, ...]. A key given
    twice keeps its first place and its last value, as a dict does. None when `data` is not UTF-8 holding
    one JSON object, with nothing after it but white space."""
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError:
        return None
    # the standard library's own scanner (json.decoder's internals, which typeshed does not list)
    scan = json.JSONDecoder().scan_once  # type: ignore[attr-defined]  # set in JSONDecoder.__init__
    space = json.decoder.WHITESPACE.match  # type: ignore[attr-defined]  # json.decoder's module constant
    found: dict[str, tuple[int, int, bool]] = {}
    try:
        at = space(text, 0).end()
        if text[at:at + 1] != "{":
            return None
        at = space(text, at + 1).end()
        if text[at:at + 1] == "}":
            at += 1
        else:
            while True:
                if text[at:at + 1] != '"':
                    return None
                key, at = json.decoder.scanstring(text, at + 1)  # type: ignore[attr-defined]  # (as above)
                at = space(text, at).end()
                if text[at:at + 1] != ":":
                    return None
                start = space(text, at + 1).end()
                value, at = scan(text, start)
                found[key] = (start, at, isinstance(value, dict))
                at = space(text, at).end()
                if text[at:at + 1] == "}":
                    at += 1
                    break
                if text[at:at + 1] != ",":
                    return None
                at = space(text, at + 1).end()
    except (ValueError, StopIteration, RecursionError):
        return None
    if space(text, at).end() != len(text):
        return None
    keys = [key for key, (_, _, is_object) in found.items() if is_object and key != SKIPPED]
    chars = [edge for key in keys for edge in found[key][:2]]
    return keys, chars if len(text) == len(data) else _byte_offsets(text, chars)


def _byte_offsets(text: str, chars: list[int]) -> list[int]:
    """Character offsets into `text` (increasing) as offsets into its UTF-8 bytes."""
    out, char, byte = [], 0, 0
    for offset in chars:
        byte += len(text[char:offset].encode("utf-8"))
        char = offset
        out.append(byte)
    return out


def _read_index(where: Path, digest: str, size: int) -> tuple[list[str], list[int]] | None:
    try:
        with open(where, "rb") as fh:
            index = orjson.loads(fh.read())
    except (OSError, ValueError):
        return None
    if not isinstance(index, dict) or index.get("version") != INDEX_VERSION or index.get("sha256") != digest \
            or index.get("size") != size:
        return None
    keys, spans = index.get("keys"), index.get("spans")
    if not isinstance(keys, list) or not isinstance(spans, list) or len(spans) != 2 * len(keys) \
            or not all(type(key) is str for key in keys) \
            or not all(type(edge) is int and 0 <= edge <= size for edge in spans):
        log.debug("price map index %s is damaged: rebuilt", where)
        return None
    return keys, spans


def _write_index(where: Path, digest: str, size: int, keys: list[str], spans: list[int]) -> None:
    """Write the index beside the others, whole or not at all (a temporary file renamed over it)."""
    body = orjson.dumps({"version": INDEX_VERSION, "sha256": digest, "size": size, "keys": keys, "spans": spans})
    import tempfile  # only here: the module costs ~5 ms to import, and most commands find the index

    try:
        where.parent.mkdir(parents=True, exist_ok=True)
        fd, tmp = tempfile.mkstemp(dir=where.parent, prefix=".index-", suffix=".tmp")
        try:
            with os.fdopen(fd, "wb") as fh:
                fh.write(body)
            os.replace(tmp, where)
        except BaseException:
            Path(tmp).unlink(missing_ok=True)
            raise
    except OSError as exc:
        log.debug("price map index %s not written: %s", where, exc)
