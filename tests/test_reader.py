"""The pi reader: fixtures, migration, problems (each with its line), round trips, garbage."""

from __future__ import annotations

import json
import os
import random

import pytest
from conftest import fixture_path
from factories import Builder

from batchcompact.adapters.pi.read import NO_HEADER, read_pi_session
from batchcompact.core.entries import ERROR, WARNING
from batchcompact.formats.jsonl import dumps_line


def test_large_session_fixture_reads_1018_entries_without_problems():
    session = read_pi_session(fixture_path("pi", "large-session.jsonl"))
    assert len(session.entries) == 1018
    assert session.version == 1
    assert session.problems == []
    assert session.compactable
    # v1 is a single chain after migration: the path is the whole file.
    assert len(session.tree.path()) == 1018
    assert session.entries[0].line == 2 and session.entries[-1].line == 1019


def test_before_compaction_fixture_maps_its_two_compactions_to_entry_ids():
    session = read_pi_session(fixture_path("pi", "before-compaction.jsonl"))
    assert len(session.entries) == 1002
    assert session.problems == []
    compactions = [e for e in session.entries if e.type == "compaction"]
    assert [c.line for c in compactions] == [360, 629]
    # firstKeptEntryIndex 293 and 551 index the line array with the header at 0: lines 294 and 552.
    by_line = {e.line: e for e in session.entries}
    assert compactions[0].data["firstKeptEntryId"] == by_line[294].id
    assert compactions[1].data["firstKeptEntryId"] == by_line[552].id
    assert "firstKeptEntryIndex" not in compactions[0].data


def test_v1_ids_are_deterministic_and_unique():
    path = fixture_path("pi", "large-session.jsonl")
    first = [e.id for e in read_pi_session(path).entries]
    second = [e.id for e in read_pi_session(path).entries]
    assert first == second
    assert len(set(first)) == len(first)
    assert all(len(i) == 8 and int(i, 16) >= 0 for i in first)


def test_v2_hook_message_role_becomes_custom(tmp_path):
    header = {"type": "session", "version": 2, "id": "s", "timestamp": "t", "cwd": "/"}
    entry = {"type": "message", "id": "a1", "parentId": None, "timestamp": "t",
             "message": {"role": "hookMessage", "customType": "x", "content": "hi", "display": True}}
    path = tmp_path / "v2.jsonl"
    path.write_text(dumps_line(header) + dumps_line(entry))
    session = read_pi_session(path)
    assert session.entries[0].message["role"] == "custom"
    assert session.header["version"] == 3 and session.version == 2


def test_v3_file_serializes_back_byte_identical(tmp_path):
    b = Builder()
    b.user("héllo ✓ 😀 \"quoted\" \\ back\nnewline")
    b.assistant("ok", calls=[("read", {"path": "src/a.ts", "n": 1.5, "deep": {"x": [1, None, True]}})], usage=120)
    b.tool_result("\u0001 control \t tab")
    path = b.write(tmp_path / "s.jsonl")
    # JavaScript's JSON.stringify form: compact, non-ASCII kept.
    text = "".join(dumps_line(x) for x in [b.header(), *b.entries])
    path.write_text(text, encoding="utf-8")
    session = read_pi_session(path)
    rewritten = dumps_line(session.header) + "".join(dumps_line(e.data) for e in session.entries)
    assert rewritten.encode("utf-8") == path.read_bytes()


def test_migrated_fixture_round_trips_through_serialization(tmp_path):
    session = read_pi_session(fixture_path("pi", "before-compaction.jsonl"))
    text = dumps_line(session.header) + "".join(dumps_line(e.data) for e in session.entries)
    out = tmp_path / "v3.jsonl"
    out.write_text(text, encoding="utf-8")
    again = read_pi_session(out)
    assert again.version == 3 and again.problems == []
    assert [e.data for e in again.entries] == [e.data for e in session.entries]
    assert dumps_line(again.header) + "".join(dumps_line(e.data) for e in again.entries) == text


def _problems(tmp_path, text: bytes | str, name="s.jsonl"):
    path = tmp_path / name
    path.write_bytes(text.encode() if isinstance(text, str) else text)
    session = read_pi_session(path)
    return session, [(p.line, p.severity, p.message) for p in session.problems]


HEADER = '{"type":"session","version":3,"id":"s1","timestamp":"t","cwd":"/"}\n'
E1 = '{"type":"message","id":"a","parentId":null,"timestamp":"t","message":{"role":"user","content":"x"}}\n'
E2 = '{"type":"message","id":"b","parentId":"a","timestamp":"t","message":{"role":"user","content":"y"}}\n'


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("", [(None, ERROR, "empty file")]),
        (HEADER + E1 + "{not json\n" + E2, [(3, WARNING, "invalid JSON: Expecting property name enclosed in double quotes at "
                                              "column 2; pi skips this line: left as it is, outside every context")]),
        (HEADER + E1 + "[1, 2]\n", [(3, ERROR, "line is a JSON list, not an object")]),
        (HEADER + E1 + '{"type":"message","id":"b","par', [(3, ERROR, "torn last line: no newline and incomplete JSON (still being written?)")]),
        (HEADER + E1 + E2.rstrip("\n"), [(3, WARNING, "last line has no trailing newline")]),
        (E1 + E2, [(1, WARNING, NO_HEADER)]),
        ('{"type":"session","version":3,"timestamp":"t"}\n' + E1, [(1, ERROR, "session header has no string 'id'")]),
        (HEADER + '{"type":"message","parentId":null,"timestamp":"t","message":{"role":"user","content":"x"}}\n',
         [(2, WARNING, "'message' entry has no 'id': pi keeps it on no path; left as it is")]),
        (HEADER + '{"type":"message","id":"a","timestamp":"t","message":{"role":"user","content":"x"}}\n',
         [(2, WARNING, "'message' entry has no 'parentId': a root, as pi takes it")]),
        (HEADER + E1 + E1, [(3, ERROR, "duplicate id 'a' (first used on line 2)")]),
        (HEADER + E1.replace('"parentId":null', '"parentId":"zz"'),
         [(2, WARNING, "parentId 'zz' points to no entry; a root, as pi takes it (entries before it are not in its "
                       "context)")]),
        (HEADER + E1.replace('"type":"message"', '"type":["message"]'), [(2, ERROR, "'type' must be a string, not a list")]),
        (HEADER + E1.replace('"type":"message"', '"type":{}'), [(2, ERROR, "'type' must be a string, not an object")]),
        (HEADER + E1.replace('"role":"user"', '"role":[]'), [(2, ERROR, "message 'role' must be a string")]),
        (HEADER + E1 + '{"type":"weird","id":"c","parentId":"a","timestamp":"t"}\n',
         [(3, WARNING, "unknown entry type 'weird'; kept and ignored for context")]),
        (HEADER + E1 + '{"type":"compaction","id":"c","parentId":"a","timestamp":"t","summary":"s","firstKeptEntryId":"nope","tokensBefore":1}\n',
         [(3, ERROR, "compaction firstKeptEntryId 'nope' is not on the path to this compaction")]),
    ],
    ids=["empty", "invalid-json", "not-object", "torn-last-line", "no-final-newline", "no-header", "header-no-id",
         "no-id", "no-parentId", "duplicate-id", "dangling-parent", "type-a-list", "type-an-object", "role-a-list",
         "unknown-type", "first-kept-off-path"],
)
def test_each_problem_is_reported_with_its_line(tmp_path, text, expected):
    session, problems = _problems(tmp_path, text)
    assert problems == expected
    assert session.compactable == all(sev != ERROR for _, sev, _ in expected)


def test_parent_cycle_is_an_error_and_paths_terminate(tmp_path):
    a = '{"type":"message","id":"a","parentId":"b","timestamp":"t","message":{"role":"user","content":"x"}}\n'
    b = '{"type":"message","id":"b","parentId":"a","timestamp":"t","message":{"role":"user","content":"y"}}\n'
    session, problems = _problems(tmp_path, HEADER + a + b)
    assert any(sev == ERROR and "parent cycle" in msg for _, sev, msg in problems)
    assert len(session.tree.path()) == 2
    assert not session.compactable


def test_invalid_utf8_is_reported_with_line(tmp_path):
    bad = E2.encode().replace(b'"y"', b'"\xff\xfe"')
    session, problems = _problems(tmp_path, HEADER.encode() + E1.encode() + bad)
    assert problems == [(3, ERROR, "invalid UTF-8 at byte 0")] or problems[0][:2] == (3, ERROR)
    assert "UTF-8" in problems[0][2]


def test_deep_json_does_not_crash(tmp_path):
    deep = "[" * 200000 + "]" * 200000
    session, problems = _problems(tmp_path, HEADER + E1 + deep + "\n")
    assert problems[0][0] == 3 and problems[0][1] == ERROR


def test_random_bytes_never_crash(tmp_path):
    rng = random.Random(7)
    for index in range(50):
        blob = bytes(rng.randrange(256) for _ in range(rng.randrange(1, 400)))
        if rng.random() < 0.5:
            blob = HEADER.encode() + blob
        path = tmp_path / f"r{index}.jsonl"
        path.write_bytes(blob)
        session = read_pi_session(path)
        assert session.problems, "garbage must produce at least one problem"


def test_truncated_fixture_reports_torn_line_and_keeps_the_rest(tmp_path):
    data = fixture_path("pi", "large-session.jsonl").read_bytes()
    cut = data[: len(data) // 2]
    if cut.endswith(b"\n"):
        cut = cut[:-5]
    path = tmp_path / "torn.jsonl"
    path.write_bytes(cut)
    session = read_pi_session(path)
    errors = [p for p in session.problems if p.severity == ERROR]
    assert len(errors) == 1 and "torn last line" in errors[0].message
    assert errors[0].line == cut.count(b"\n") + 1
    assert len(session.entries) == cut.count(b"\n") - 1


def test_fifty_megabyte_single_line(tmp_path):
    big = {"type": "message", "id": "big", "parentId": "a", "timestamp": "t",
           "message": {"role": "toolResult", "toolCallId": "c", "toolName": "bash",
                       "content": [{"type": "text", "text": "x" * (50 * 1024 * 1024)}], "isError": False}}
    path = tmp_path / "big.jsonl"
    with open(path, "w") as out:
        out.write(HEADER + E1 + json.dumps(big) + "\n")
    session = read_pi_session(path)
    assert session.problems == [] and len(session.entries) == 2
    os.remove(path)


def test_orjson_fast_path_keeps_the_standard_librarys_semantics(tmp_path):
    """Lines orjson refuses but json accepts are kept; errors keep json's wording."""
    import json as std_json

    from batchcompact.formats.jsonl import iter_json_lines, loads_line

    lines = [
        b'{"a": NaN}\n',  # orjson: no NaN
        b'{"s": "\\ud800"}\n',  # orjson: no lone surrogates
        b'{"ok": 1}\n',
        b'{"broken": \n',
        b'{"deep": ' + b"[" * 1500 + b"]" * 1500 + b"}\n",  # too deep for both parsers
    ]
    path = tmp_path / "odd.jsonl"
    path.write_bytes(b"".join(lines))
    problems = []
    got = [obj for _, obj in iter_json_lines(path, problems)]
    expected = [std_json.loads(line) for line in lines[:3]]
    assert [std_json.dumps(o) for o in got] == [std_json.dumps(o) for o in expected]
    assert [(p.line, p.message) for p in problems] == [
        (4, "invalid JSON: the line ends before its JSON does (torn: a write cut short?)"),
        (5, "JSON nested too deeply to parse"),
    ]
    assert loads_line(b'{"x": [1, 2]}') == {"x": [1, 2]}
    # The one documented difference: integers beyond 64 bits come back as floats (no transcript has one).
    assert loads_line(b'{"big": 123456789012345678901234567890}') == {"big": 1.2345678901234568e29}


def test_paused_gc_hands_new_objects_to_the_oldest_generation_and_keeps_others_freezes():
    import gc

    from batchcompact.formats.jsonl import paused_gc

    assert gc.isenabled()
    gc.collect()
    with paused_gc():
        assert not gc.isenabled()
        made = [{"k": [i]} for i in range(1000)]
        cycle: list = []
        cycle.append(cycle)
    assert gc.isenabled() and gc.get_freeze_count() == 0
    oldest = {id(o) for o in gc.get_objects(generation=2)}
    assert all(id(o) in oldest for o in made[::97])  # not left in the youngest generation to be scanned
    del cycle
    assert gc.collect() >= 1  # a full collection still finds garbage made while it was paused
    gc.freeze()  # someone else's freeze (a pre-forking server) is left as it is
    try:
        frozen = gc.get_freeze_count()
        with paused_gc():
            [{"k": [i]} for i in range(10)]
        assert gc.isenabled() and gc.get_freeze_count() == frozen
    finally:
        gc.unfreeze()
