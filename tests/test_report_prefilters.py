"""The cheap tests that decide which lines a usage reader parses never drop a line it would count.

Codex: `codex.wanted_line` reads how a rollout line starts (outer type, then an event's own type) instead
of searching the line; Claude: snapshot lines are skipped by their start. Each is checked against the
plain rule it replaces on every recorded rollout and session (the shared fixtures, the samples, and the
ccusage edge cases), and on lines written in other shapes (keys reordered, spaces, duplicate-free).
"""

from __future__ import annotations

import json
from pathlib import Path

import orjson
import pytest

from batchcompact.report import codex
from batchcompact.report.claude import KEEP_MARKER, SKIP_STARTS, extract_claude
from batchcompact.report.codex import WANT, extract_codex, wanted_line
from batchcompact.report.lines import ExtractStats
from batchcompact.report.schema import UsageRows
from tests.conftest import SAMPLES, shared_fixtures


def _files(*globs: str) -> list[Path]:
    root = shared_fixtures()
    found = {p for pattern in globs for base in (root, SAMPLES) for p in base.glob(pattern)}
    return sorted(found)


def codex_files() -> list[Path]:
    files = _files("codex/**/*.jsonl", "agents/codex-edge-cases/**/*.jsonl")
    assert files, "no Codex rollouts found"
    return files


def claude_files() -> list[Path]:
    files = _files("claude/**/*.jsonl")
    assert files, "no Claude sessions found"
    return files


def read_by_codex(obj: dict) -> bool:
    """The lines extract_codex reads: session_meta, turn_context, token_count events."""
    payload = obj.get("payload")
    kind = obj.get("type")
    if kind in ("session_meta", "turn_context"):
        return True
    return kind == "event_msg" and isinstance(payload, dict) and payload.get("type") == "token_count"


def test_every_codex_line_the_reader_reads_passes_the_start_test():
    checked = read = 0
    for path in codex_files():
        for raw in path.read_bytes().splitlines(keepends=True):
            try:
                obj = orjson.loads(raw)
            except orjson.JSONDecodeError:
                continue
            if not isinstance(obj, dict):
                continue
            checked += 1
            if read_by_codex(obj):
                read += 1
                assert wanted_line(raw), f"{path}: {raw[:120]!r}"
    assert read > 500 and checked > read  # real rollouts, with lines the test skips


@pytest.mark.parametrize("line", [
    {"type": "event_msg", "timestamp": "2026-01-01T00:00:00Z", "payload": {"type": "token_count", "info": None}},
    {"timestamp": "2026-01-01T00:00:00Z", "type": "event_msg", "payload": {"info": None, "type": "token_count"}},
    {"payload": {"id": "x"}, "timestamp": "2026-01-01T00:00:00Z", "type": "session_meta"},
    {"timestamp": "2026-01-01T00:00:00Z", "payload": {"model": "gpt-5"}, "type": "turn_context"},
])
@pytest.mark.parametrize("separators", [(",", ":"), (", ", ": ")])
def test_lines_in_other_shapes_are_searched_as_before(line, separators):
    raw = json.dumps(line, separators=separators).encode() + b"\n"
    assert wanted_line(raw)


def test_lines_the_start_rules_out_are_ones_the_reader_ignores():
    skipped = [
        {"timestamp": "2026-01-01T00:00:00Z", "type": "response_item",
         "payload": {"type": "function_call_output", "output": "token_count \"session_meta\" \"turn_context\""}},
        {"timestamp": "2026-01-01T00:00:00Z", "type": "event_msg",
         "payload": {"type": "agent_message", "message": "token_count"}},
    ]
    for line in skipped:
        raw = json.dumps(line, separators=(",", ":")).encode()
        assert any(marker in raw for marker in WANT)  # the plain search would have parsed it
        assert not wanted_line(raw) and not read_by_codex(line)


def _rows(extract, path: Path) -> list[tuple]:
    rows = UsageRows()
    extract(path, rows, ExtractStats(path=str(path)))
    return rows.rows


def test_codex_rows_are_the_same_as_with_the_plain_search(monkeypatch):
    files = codex_files()
    fast = [_rows(extract_codex, p) for p in files]
    monkeypatch.setattr(codex, "wanted_line", lambda raw: any(marker in raw for marker in WANT))
    assert fast == [_rows(extract_codex, p) for p in files]
    assert sum(map(len, fast)) > 100


def test_claude_rows_are_the_same_as_with_a_snapshot_search(monkeypatch):
    """The snapshot skip by the line's start gives the rows the old search anywhere in the line gave."""
    import batchcompact.report.claude as claude

    files = claude_files()
    fast = [_rows(extract_claude, p) for p in files]
    assert SKIP_STARTS == (b'{"type":"file-history-snapshot"',)
    monkeypatch.setattr(claude, "SKIP_STARTS", ())  # parse every line that has usage
    assert fast == [_rows(extract_claude, p) for p in files]
    assert sum(map(len, fast)) > 100


def test_a_line_starting_as_a_snapshot_is_read_when_it_holds_an_assistant_line(tmp_path):
    """A duplicate key makes it an assistant line for every JSON parser (the last one wins): KEEP_MARKER."""
    assistant = {"sessionId": "s", "timestamp": "2026-01-01T00:00:00Z", "requestId": "r", "type": "assistant",
                 "message": {"id": "m1", "model": "claude-sonnet-4-5",
                             "usage": {"input_tokens": 5, "output_tokens": 7}}}
    raw = '{"type":"file-history-snapshot",' + json.dumps(assistant, separators=(",", ":"))[1:]
    assert raw.encode().startswith(SKIP_STARTS) and KEEP_MARKER in raw.encode()
    snapshot = json.dumps({"type": "file-history-snapshot", "messageId": "m", "usage": "not a request"},
                          separators=(",", ":"))
    path = tmp_path / "s.jsonl"
    path.write_text(snapshot + "\n" + raw + "\n")
    stats = ExtractStats(path=str(path))
    rows = UsageRows()
    extract_claude(path, rows, stats)
    assert [(r[12], r[13]) for r in rows.rows] == [(5, 7)]
    assert stats.parsed == 1 and stats.skipped_cheap == 1  # the snapshot line was never parsed


@pytest.mark.parametrize(("raw", "wanted"), [
    (b'{"timestamp":"2026-01-01T00:00:00Z","type":"event_msg","payload":{"type":"token_count","info":null}}', True),
    (b'{"timestamp":"2026-01-01T00:00:00Z","type":"event_msg","payload":{"type":"token_count_v2","x":1}}', False),
    (b'{"timestamp":"2026-01-01T00:00:00Z","type":"event_msg","payload":{"info":1,"type":"token_count"}}', True),
    (b'{"timestamp":"2026\\"x","type":"response_item","payload":{"type":"token_count"}}', True),  # searched
    (b'{"timestamp":"2026-01-01T00:00:00Z","type":"turn_context","payload":{}}', True),
    (b'{"timestamp":"2026-01-01T00:00:00Z","type":"response_item","payload":{"text":"token_count"}}', False),
    (b'{"timestamp":"2026-01-01T00:00:00Z","type":"session_metadata","payload":{}}', False),
])
def test_the_start_test_reads_types_exactly(raw, wanted):
    assert bool(wanted_line(raw)) is wanted
