"""The cheap tests that decide which lines a usage reader parses never drop a line it would count.

Codex: `codex.read_lines` reads how a rollout line starts (outer type, then an event's own type, at fixed
offsets for the usual 24-character time) instead of searching the line, and `extract_codex` reads repeated
events and turn contexts by comparing their bytes with the last parsed one; Claude: snapshot lines are skipped by their start. Each is checked against the
plain rule it replaces on every recorded rollout and session (the shared fixtures, the samples, and the
ccusage edge cases), and on lines written in other shapes (keys reordered, spaces, duplicate-free).
"""

from __future__ import annotations

import io
import json
from pathlib import Path

import orjson
import pytest

from batchcompact.adapters.claude.report import KEEP_MARKER, SKIP_STARTS, extract_claude
from batchcompact.adapters.codex import report as codex
from batchcompact.adapters.codex.report import OTHER, WANT, extract_codex, read_lines
from batchcompact.adapters.common.lines import ExtractStats
from batchcompact.adapters.common.usage_rows import UsageRows
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


def wanted_line(raw: bytes) -> bool:
    """Whether `read_lines` hands the line on to the reader."""
    return any(read_lines(io.BytesIO(raw), ExtractStats(path="t")))


def plain_lines(fh, stats):
    """The plain rule the start tests replace: every line holding a marker, parsed (OTHER: no line is
    read by its bytes)."""
    for number, raw in enumerate(fh, start=1):
        stats.lines += 1
        if any(marker in raw for marker in WANT):
            yield number, raw, OTHER, 0


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


def _rows_and_stats(path: Path) -> tuple[list[tuple], dict]:
    rows, stats = UsageRows(), ExtractStats(path=str(path))
    extract_codex(path, rows, stats)
    counts = stats.to_dict()
    for how in ("parsed", "skipped_cheap", "read_by_bytes"):  # how lines were read, not what they said
        counts.pop(how)
    return rows.rows, counts


def test_codex_rows_are_the_same_as_with_the_plain_search(monkeypatch):
    """Rows, warnings and event counts match parsing every line that holds a marker: the start tests
    drop no line the reader reads, and no line read by its bytes says other than its parse."""
    files = codex_files()
    fast = [_rows_and_stats(p) for p in files]
    monkeypatch.setattr(codex, "read_lines", plain_lines)
    assert fast == [_rows_and_stats(p) for p in files]
    assert sum(len(rows) for rows, _ in fast) > 100


def test_claude_rows_are_the_same_as_with_a_snapshot_search(monkeypatch):
    """The snapshot skip by the line's start gives the rows the old search anywhere in the line gave."""
    import batchcompact.adapters.claude.report as claude

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


def test_the_fixtures_exercise_both_readings_by_bytes():
    """The comparison above has teeth: real rollouts hold repeated events and turn contexts that are
    read by their bytes."""
    stats = [ExtractStats(path=str(p)) for p in codex_files()]
    for path, stat in zip(codex_files(), stats, strict=True):
        extract_codex(path, UsageRows(), stat)
    assert sum(s.read_by_bytes for s in stats) > 100
    assert sum(s.repeats_dropped for s in stats) > 100


def test_the_in_place_comparisons_are_the_sliced_ones():
    """`_repeats` and `_same_turn` compare a line in place with the last parsed one's info or rest; they
    must say what comparing `_info_bytes` / `_turn_rest` (slices of the line) says, on every recorded
    token_count and turn_context line against the others' values, cut short, and with a nested marker."""
    import random

    lines = []
    for path in codex_files():
        with open(path, "rb") as handle:
            lines += [(raw, kind, at) for _, raw, kind, at in read_lines(handle, ExtractStats(path=str(path)))
                      if kind in (codex.TOKEN_COUNT, codex.TURN_CONTEXT)]
    rng = random.Random(28)
    events = [(raw, at) for raw, kind, at in lines if kind is codex.TOKEN_COUNT]
    turns = [(raw, at) for raw, kind, at in lines if kind is codex.TURN_CONTEXT]
    assert len(events) > 100 and len(turns) > 20
    infos = [i for raw, at in events if codex._whole_object(i := codex._info_bytes(raw, at))]
    rests = [r for raw, at in turns if (r := codex._turn_rest(raw, at)) is not None]
    nested = b'{"x":{},"rate_limits":1}'
    for raw, at in rng.sample(events, min(len(events), 300)):
        own = codex._info_bytes(raw, at)
        cut = raw[:rng.randrange(at, len(raw))]
        for line in (raw, cut, raw.replace(b',"info":', b',"info":' + nested[:-1] + b',"y":', 1)):
            for info in [*rng.sample(infos, 5), *([own] if codex._whole_object(own) else []), nested]:
                assert codex._repeats(line, at, info) == (codex._info_bytes(line, at) == info), (line, info)
    for raw, at in rng.sample(turns, min(len(turns), 300)):
        own = codex._turn_rest(raw, at)
        cut = raw[:rng.randrange(at, len(raw))]
        escaped = raw.replace(b'"turn_id":"', b'"turn_id":"\\"', 1)
        for line in (raw, cut, escaped, raw[:at] + raw[at:].replace(b'"turn_id"', b'"turn"', 1)):
            after_id = line[line.find(b'"', at + len(codex.TURN_ID)):]  # from the id's closing quote, if any
            for rest in [*rng.sample(rests, 5), *([own] if own is not None else []), line[at:], after_id]:
                assert codex._same_turn(line, at, rest) == (codex._turn_rest(line, at) == rest), (line, rest)


# ---- lines read by their bytes: each case gives what parsing every line gives ----

T24 = "2026-01-01T00:00:00.000Z"  # Codex's usual time: the fixed-offset start test


def _usage(n: int) -> dict:
    return {"input_tokens": n, "cached_input_tokens": 0, "output_tokens": 1, "reasoning_output_tokens": 0,
            "total_tokens": n + 1}


def _info(n: int, **extra) -> dict:
    return {**extra, "total_token_usage": _usage(n), "last_token_usage": _usage(n), "model_context_window": 1000}


def _line(kind: str, payload: dict, when: str = T24) -> str:
    return json.dumps({"timestamp": when, "type": kind, "payload": payload}, separators=(",", ":"))


def _event(info, percent: float = 1.0, when: str = T24) -> str:
    payload = {"type": "token_count", "info": info, "rate_limits": {"primary": {"used_percent": percent}}}
    return _line("event_msg", payload, when)


def _turn(model: str, turn: str, when: str = T24) -> str:
    return _line("turn_context", {"turn_id": turn, "cwd": "/p", "model": model, "effort": "high"}, when)


META = _line("session_meta", {"id": "s-1", "cwd": "/p"})


def _both(tmp_path, monkeypatch, text: str):
    path = tmp_path / "rollout-2026-01-01T00-00-00-s.jsonl"
    path.write_text(text)
    fast_rows, fast_stats = UsageRows(), ExtractStats(path=str(path))
    extract_codex(path, fast_rows, fast_stats)
    with monkeypatch.context() as patch:
        patch.setattr(codex, "read_lines", plain_lines)
        plain = _rows_and_stats(path)
    assert _rows_and_stats(path) == plain
    return fast_rows.rows, fast_stats


def test_a_repeat_is_read_by_its_bytes(tmp_path, monkeypatch):
    rows, stats = _both(tmp_path, monkeypatch, "\n".join(
        [META, _turn("gpt-5", "t1"), _event(_info(10)), _event(_info(10), percent=2.0), _event(_info(30))]) + "\n")
    assert [r[12] for r in rows] == [10, 30]
    assert stats.read_by_bytes == 1 and stats.repeats_dropped == 1


def test_a_turn_context_that_differs_only_in_its_turn_id_is_read_by_its_bytes(tmp_path, monkeypatch):
    rows, stats = _both(tmp_path, monkeypatch, "\n".join([
        META, _turn("gpt-5", "t1"), _event(_info(10)), _turn("gpt-5", "t2"), _event(_info(20)),
        _turn("gpt-5.1", "t3"), _event(_info(30))]) + "\n")
    assert [r[8] for r in rows] == ["gpt-5", "gpt-5", "gpt-5.1"]  # a changed model is parsed
    assert stats.read_by_bytes == 1


def test_a_repeat_names_its_model_again_as_its_parse_would(tmp_path, monkeypatch):
    rows, stats = _both(tmp_path, monkeypatch, "\n".join([
        META, _event(_info(10, model="gpt-a")), _turn("gpt-b", "t2"), _event(_info(10, model="gpt-a"), percent=3.0),
        _event(_info(20))]) + "\n")
    assert [r[8] for r in rows] == ["gpt-a", "gpt-a"] and stats.read_by_bytes == 1


def test_a_torn_or_glued_repeat_is_parsed_and_reported(tmp_path, monkeypatch):
    repeat = _event(_info(10), percent=2.0)
    rows, stats = _both(tmp_path, monkeypatch, "\n".join([META, _event(_info(10)), repeat + repeat, repeat[:-9]]))
    assert stats.read_by_bytes == 0 and stats.malformed == 2
    assert any(":3: invalid JSON" in w for w in stats.warnings)
    assert any(":4: invalid JSON (torn last line?)" in w for w in stats.warnings)
    assert [r[12] for r in rows] == [10]


def test_an_info_holding_a_rate_limits_key_is_always_parsed(tmp_path, monkeypatch):
    """Equal bytes up to the first `,"rate_limits":` prove nothing when that key is inside the info."""
    odd = {"a": {}, "rate_limits": 2}  # the bytes before the inner key end in a brace
    rows, stats = _both(tmp_path, monkeypatch, "\n".join(
        [META, _event(_info(10, extra=odd)), _event(_info(20, extra=odd))]) + "\n")
    assert [r[12] for r in rows] == [10, 20] and stats.read_by_bytes == 0


def test_lines_in_another_shape_take_the_general_path(tmp_path, monkeypatch):
    """A key before `type` at the type's usual offset, and times of other widths, are read by parsing."""
    odd = ('{"timestamp":"' + T24 + '","typo":"response_item","type":"event_msg","payload":{"type":"token_count",'
           '"info":' + json.dumps(_info(10), separators=(",", ":")) + '}}')
    assert odd.index("response_item") == 48
    short = "2026-01-01T00:00:01Z"
    rows, stats = _both(tmp_path, monkeypatch, "\n".join([
        META, odd, _turn("gpt-x", "t1", short), _event(_info(20), when=short), _event(_info(20), 2.0, short)]) + "\n")
    assert [(r[12], r[8]) for r in rows] == [(10, "gpt-5"), (20, "gpt-x")]
    assert stats.repeats_dropped == 1


# ---- Claude: lines are parsed only when they hold the string "assistant" ----

def test_claude_rows_are_the_same_as_with_a_usage_search(monkeypatch):
    """Searching for `"assistant"` (every line a request is read from holds it) keeps every line that
    searching for `"usage"` kept and counted."""
    import batchcompact.adapters.claude.report as claude

    files = claude_files()
    fast = [_rows(extract_claude, p) for p in files]
    assert claude.WANT == (b'"assistant"',)
    monkeypatch.setattr(claude, "WANT", (b'"usage"',))
    assert fast == [_rows(extract_claude, p) for p in files]
    assert sum(map(len, fast)) > 100


def test_claude_lines_written_with_spaces_are_still_read(tmp_path):
    """`json.dumps` with its default separators writes `"type": "assistant"`: the search still finds it,
    in a top-level assistant line and inside an agent_progress line."""
    assistant = {"type": "assistant", "sessionId": "s", "timestamp": "2026-01-01T00:00:00Z", "requestId": "r1",
                 "message": {"id": "m1", "model": "claude-sonnet-4-5", "usage": {"input_tokens": 5, "output_tokens": 7}}}
    inner = {**assistant, "requestId": "r2", "message": {**assistant["message"], "id": "m2"}}
    progress = {"type": "progress", "sessionId": "s", "timestamp": "2026-01-01T00:00:01Z",
                "data": {"type": "agent_progress", "message": inner}}
    user = {"type": "user", "sessionId": "s", "message": {"role": "user", "content": "x"},
            "toolUseResult": {"usage": {"input_tokens": 100, "output_tokens": 100}}}
    path = tmp_path / "s.jsonl"
    path.write_text("\n".join(json.dumps(line) for line in (assistant, progress, user)) + "\n")
    stats = ExtractStats(path=str(path))
    rows = UsageRows()
    extract_claude(path, rows, stats)
    assert sorted((r[10], r[12], r[13]) for r in rows.rows) == [("m1:r1", 5, 7), ("m2:r2", 5, 7)]
    assert stats.parsed == 2 and stats.skipped_cheap == 1  # the user line's tool usage is never parsed


def test_a_total_larger_than_its_parts_gives_its_rest_to_output():
    from batchcompact.adapters.common.lines import rest_is_output

    numbers = [10, 0, 5, 0]
    rest_is_output(numbers, 40)
    assert numbers == [10, 25, 5, 0]  # no output recorded: the rest is output
    numbers = [10, 3, 5, 0]
    rest_is_output(numbers, 40)
    assert numbers == [10, 3, 5, 0]  # output recorded: the rest is left out
    numbers = [10, 3, 5, 0, 2]
    rest_is_output(numbers, 40, else_into=4)
    assert numbers == [10, 3, 5, 0, 22]  # Droid: the rest is thinking
    numbers = [10, 0, 5, 0]
    rest_is_output(numbers, 12)
    assert numbers == [10, 0, 5, 0]  # a total smaller than its parts changes nothing
