"""The price map read one entry at a time (`price_index`): the same entries as parsing it whole, an index
that is a cache and never a failure, and the CLI's output unchanged by it."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

from batchcompact import price_index
from batchcompact.errors import UsageError
from batchcompact.formats.jsonl import loads_line
from batchcompact.price_index import IndexedEntries, bundled_entries, entry_spans, index_file
from batchcompact.pricing import PriceTable, _objects, bundled_map_path, read_price_map

ROOT = Path(__file__).resolve().parents[1]


def _indexed(data: bytes) -> IndexedEntries:
    found = entry_spans(data)
    assert found is not None
    return IndexedEntries(data, *found)


def test_every_entry_of_the_bundled_map_is_what_the_whole_parse_gives():
    """litellm's own map (which has a key at the wrong indentation: a layout-based split would merge two
    entries): the same keys in the same order, each value equal, and every model priced the same."""
    path = bundled_map_path()
    whole = _objects(read_price_map(path))
    indexed = _indexed(path.read_bytes())
    assert list(indexed) == list(whole) and len(indexed) > 1000
    assert all(indexed[key] == value for key, value in whole.items())
    lazy, eager = PriceTable(_indexed(path.read_bytes())), PriceTable(whole)
    for key in whole:
        assert lazy.lookup(key) == eager.lookup(key), key


ODD_MAPS = {
    "minified": b'{"a":{"input_cost_per_token":1e-6},"b":{"x":[1,{"y":"}"}]}}',
    "odd white space and CRLF": b'\r\n\t{ "a" :\n{"p": 1}\r\n ,\n"b":{ }  ,"c" :{"q":"\\"}{"}}\n\n',
    "non-ASCII values and keys": '{"ä-modèle": {"note": "日本語 ✓"}, "z": {"p": 2, "s": "ünïcode"}}'.encode(),
    "escaped keys": b'{"a\\"b": {"p": 1}, "\\u00e9t\\u00e9": {"p": 2}, "c\\\\": {"p": 3}}',
    "duplicates: first place, last value": b'{"a": {"p": 1}, "b": {"p": 2}, "a": {"p": 3}}',
    "a duplicate whose last value is no object": b'{"a": {"p": 1}, "b": {"p": 2}, "a": "gone"}',
    "values that are not objects, and sample_spec": b'{"n": 1, "s": "x", "l": [{}], "sample_spec": {"p": 0}, "m": {}}',
    "NaN, which json accepts and orjson refuses": b'{"a": {"p": NaN}, "b": {"p": 1}}',
    "empty": b"{}",
}


@pytest.mark.parametrize("data", list(ODD_MAPS.values()), ids=list(ODD_MAPS))
def test_odd_maps_give_the_entries_the_whole_parse_gives(data):
    whole = _objects(loads_line(data))
    indexed = _indexed(data)
    assert list(indexed) == list(whole)
    for key, value in whole.items():
        got = indexed[key]
        assert json.dumps(got, sort_keys=True) == json.dumps(value, sort_keys=True)  # NaN != NaN


@pytest.mark.parametrize("data", [
    b'[{"a": {}}]', b'{"a": {}} {"b": {}}', b'{"a": {}', b'{"a": {},}', b'{"a" {}}', b"", b"   ",
    b'\xef\xbb\xbf{"a": {}}', b'{"a": {"b": "\xff"}}', b'{"a": ' + b"[" * 100_000 + b"]" * 100_000 + b"}",
], ids=["a list", "two documents", "torn", "trailing comma", "no colon", "empty file", "white space",
        "BOM", "not UTF-8", "nested too deep"])
def test_what_is_not_one_json_object_is_left_to_the_whole_parse(data):
    assert entry_spans(data) is None


def _map(tmp_path: Path, entries: dict) -> Path:
    path = tmp_path / "map.json"
    path.write_text(json.dumps(entries, indent=4))
    return path


def test_the_index_is_written_once_and_then_read(tmp_path, monkeypatch):
    path = _map(tmp_path, {"m": {"input_cost_per_token": 1e-6}, "n": {"input_cost_per_token": 2e-6}})
    first = bundled_entries(path)
    where = index_file(path)
    assert where.is_file() and where.parent.parent == Path(os.environ["XDG_CACHE_HOME"]) / "batchcompact"
    assert dict(first) == {"m": {"input_cost_per_token": 1e-6}, "n": {"input_cost_per_token": 2e-6}}

    def no_scan(data):
        raise AssertionError("the index was not read")

    monkeypatch.setattr(price_index, "entry_spans", no_scan)
    again = bundled_entries(path)
    assert dict(again) == dict(first)


def test_an_index_made_for_other_bytes_is_not_used(tmp_path):
    """The map changed (litellm upgraded in place): the index is rebuilt, never a stale price read."""
    path = _map(tmp_path, {"m": {"p": 10}, "n": {"p": 1}})
    assert bundled_entries(path)["m"] == {"p": 10}
    size = path.stat().st_size
    _map(tmp_path, {"m": {"p": 1}, "n": {"p": 10}})  # the same size, the entries moved
    assert path.stat().st_size == size
    assert dict(bundled_entries(path)) == {"m": {"p": 1}, "n": {"p": 10}}
    path.write_text(json.dumps({"n": {}}))  # another size, the spans of other keys
    assert dict(bundled_entries(path)) == {"n": {}}


@pytest.mark.parametrize("damage", [
    lambda index: "{torn",
    lambda index: json.dumps({**index, "version": 99}),
    lambda index: json.dumps({**index, "spans": index["spans"][:-1]}),
    lambda index: json.dumps({**index, "spans": [*index["spans"][:-1], 10**9]}),
    lambda index: json.dumps({**index, "keys": [1] + index["keys"][1:]}),
    lambda index: json.dumps([index]),
], ids=["not JSON", "another version", "a span missing", "a span past the end", "a key not a string",
        "not an object"])
def test_a_damaged_index_is_rebuilt(tmp_path, damage):
    path = _map(tmp_path, {"m": {"p": 1}, "n": {"p": 2}})
    bundled_entries(path)
    where = index_file(path)
    where.write_text(damage(json.loads(where.read_text())))
    assert dict(bundled_entries(path)) == {"m": {"p": 1}, "n": {"p": 2}}
    assert json.loads(where.read_text())["spans"] == entry_spans(path.read_bytes())[1]  # written again


def test_an_index_tampered_with_to_match_the_hash_is_an_error_naming_it(tmp_path):
    path = _map(tmp_path, {"m": {"p": 1}, "n": {"p": 2}})
    bundled_entries(path)
    where = index_file(path)
    index = json.loads(where.read_text())
    index["spans"][0] += 1  # inside the object: no longer one
    where.write_text(json.dumps(index))
    with pytest.raises(UsageError, match=f"price map index {where} does not match its map at 'm'; delete it"):
        bundled_entries(path)["m"]


def test_a_cache_that_cannot_be_written_costs_the_parse_not_an_error(tmp_path, monkeypatch):
    blocked = tmp_path / "not-a-folder"
    blocked.write_text("")
    monkeypatch.setenv("XDG_CACHE_HOME", str(blocked))
    path = _map(tmp_path, {"m": {"p": 1}})
    assert dict(bundled_entries(path)) == {"m": {"p": 1}}
    assert not index_file(path).exists()


def test_a_map_that_cannot_be_read_is_left_to_the_whole_parse(tmp_path):
    assert bundled_entries(tmp_path / "missing.json") is None
    bad = tmp_path / "bad.json"
    bad.write_text('{"a": {}')
    assert bundled_entries(bad) is None
    assert not index_file(bad).exists()


def test_an_override_merges_over_indexed_entries_field_by_field(tmp_path):
    """`--pricing`: a field given replaces the bundled one, the others stay, a new key is added last."""
    table = PriceTable.load()
    override = tmp_path / "override.json"
    override.write_text(json.dumps({"gpt-4o-mini": {"input_cost_per_token": 1e-6}, "acme-1": {"max_input_tokens": 9},
                                    "sample_spec": {"max_input_tokens": 1}}))
    merged = PriceTable.load(override)
    bundled = table.lookup("gpt-4o-mini")
    got = merged.lookup("gpt-4o-mini")
    assert got.input_cost_per_token == 1e-6 and got.output_cost_per_token == bundled.output_cost_per_token
    assert merged.context_window("acme-1") == 9 and "sample_spec" not in merged
    assert len(merged) == len(table) + 1


def _report(sessions: Path, cache: Path) -> str:
    env = {**os.environ, "XDG_CACHE_HOME": str(cache)}
    out = subprocess.run([sys.executable, "-m", "batchcompact", "report", str(sessions), "--no-cache", "--format",
                          "json", "--timezone", "UTC"], capture_output=True, text=True, env=env, cwd=ROOT)
    assert out.returncode == 0, out.stderr
    return out.stdout


def test_the_cli_reports_the_same_with_a_new_index_a_kept_one_and_none(tmp_path):
    sessions = ROOT / "sample_sessions"
    cache = tmp_path / "cache"
    built = _report(sessions, cache)
    assert list((cache / "batchcompact" / f"price-map-index-v{price_index.INDEX_VERSION}").glob("*.json"))
    kept = _report(sessions, cache)
    blocked = tmp_path / "blocked"
    blocked.write_text("")
    none = _report(sessions, blocked)
    assert built == kept == none
    assert json.loads(built)["totals"]["cost_usd"] > 0


def test_an_index_altered_to_keep_the_hash_is_one_line_from_the_cli(tmp_path):
    """A report and a plan that meet such an index stop with exit 2 and one line naming it (never a price
    read from the wrong bytes, never a traceback); deleting it, as the line says, mends it."""
    sessions = ROOT / "sample_sessions"
    cache = tmp_path / "cache"
    expected = _report(sessions, cache)
    (where,) = (cache / "batchcompact" / f"price-map-index-v{price_index.INDEX_VERSION}").glob("*.json")
    index = json.loads(where.read_text())
    index["spans"] = [edge + 1 for edge in index["spans"]]
    where.write_text(json.dumps(index))
    env = {**os.environ, "XDG_CACHE_HOME": str(cache)}
    for args in (["report", str(sessions), "--no-cache", "--format", "json"], ["plan", str(sessions / "pi"), "--force"]):
        done = subprocess.run([sys.executable, "-m", "batchcompact", *args], capture_output=True, text=True, env=env,
                              cwd=ROOT)
        assert done.returncode == 2 and "Traceback" not in done.stderr, done.stderr
        (line,) = done.stderr.strip().splitlines()
        assert re.fullmatch(rf"Error: price map index {re.escape(str(where))} does not match its map at '[^']+'; "
                            r"delete it", line), line
    where.unlink()
    assert _report(sessions, cache) == expected
