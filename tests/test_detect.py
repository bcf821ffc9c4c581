"""Format detection by sniffing the first lines, and `read_session` dispatch."""

from __future__ import annotations

import json
import re

import pytest
from conftest import fixture_path

from batchcompact.agents import AGENTS, describe
from batchcompact.errors import SessionReadError
from batchcompact.formats.detect import PROBE_BYTES, detect_session_agent, read_session

FIXTURES = [
    (("pi", "large-session.jsonl"), "pi"),
    (("pi", "before-compaction.jsonl"), "pi"),
    (
        ("claude", "projects", "-home-USER-projects-spotter", "4d5611e5-241a-462a-8d15-5122611a9569.jsonl"),
        "claude",
    ),
    (("claude", "projects", "-home-USER-projects-spotter", "short.jsonl"), "claude"),
    (
        ("claude", "projects", "-Users-chip-dev-ai-music", "fed8ce56-bc79-401f-a83e-af084253362f.jsonl"),
        "claude",
    ),
    (("claude", "projects", "sample-project", "5c0375b4-57a5-4f26-b12d-d022ee4e51b7.jsonl"), "claude"),
    (("claude", "coverage", "agent-sessions_claude_small.jsonl"), "claude"),
    (("claude", "coverage", "claude-code-log_dag_compact_after_rewind.jsonl"), "claude"),
    (
        (
            "codex",
            "sessions",
            "2026",
            "02",
            "23",
            "rollout-2026-02-23T13-19-38-019c8a70-dda7-7f33-98ea-f30553347322.jsonl",
        ),
        "codex",
    ),
    (("codex", "coverage", "agent-sessions_codex_small.jsonl"), "codex"),
]


@pytest.mark.parametrize(("parts", "expected"), FIXTURES, ids=[p[-1][:24] for p, _ in FIXTURES])
def test_fixtures_are_detected(parts, expected):
    path = fixture_path(*parts)
    assert detect_session_agent(path) == expected
    session = read_session(path)
    assert session.agent == expected and session.errors == []


def write_lines(tmp_path, name, objs, raw_prefix: bytes = b""):
    path = tmp_path / name
    path.write_bytes(raw_prefix + b"".join(json.dumps(o).encode() + b"\n" for o in objs))
    return path


@pytest.mark.parametrize(
    ("objs", "expected"),
    [
        ([{"type": "session", "version": 3, "id": "s", "timestamp": "t", "cwd": "/"}], "pi"),
        ([{"timestamp": "t", "type": "session_meta", "payload": {"id": "x"}}], "codex"),
        ([{"timestamp": "t", "type": "response_item", "payload": {"type": "message"}}], "codex"),
        ([{"type": "summary", "summary": "title", "leafUuid": "u"}], "claude"),
        ([{"type": "file-history-snapshot", "messageId": "m", "snapshot": {}}], "claude"),
        (
            [{"type": "user", "uuid": "u", "sessionId": "s", "message": {"role": "user", "content": "hi"}}],
            "claude",
        ),
        ([{"type": "message", "id": "a"}], None),  # a pi entry without its header
        ([{"hello": "world"}, [1, 2]], None),
        ([], None),
    ],
)
def test_sniffing_rules(tmp_path, objs, expected):
    assert detect_session_agent(write_lines(tmp_path, "f.jsonl", objs)) == expected


def test_invalid_lines_are_skipped_while_sniffing(tmp_path):
    path = write_lines(
        tmp_path, "f.jsonl", [{"type": "user", "uuid": "u", "sessionId": "s"}], b"not json\n\n"
    )
    assert detect_session_agent(path) == "claude"


def test_a_first_line_longer_than_the_probe_is_judged_by_its_start(tmp_path):
    big = "x" * (2 * PROBE_BYTES)
    codex = write_lines(
        tmp_path, "c.jsonl", [{"timestamp": "t", "type": "session_meta", "payload": {"text": big}}]
    )
    claude = write_lines(
        tmp_path, "a.jsonl", [{"type": "file-history-snapshot", "messageId": "m", "data": big}]
    )
    assert detect_session_agent(codex) == "codex"
    assert detect_session_agent(claude) == "claude"


def test_missing_or_binary_files(tmp_path):
    assert detect_session_agent(tmp_path / "nope.jsonl") is None
    binary = tmp_path / "b.jsonl"
    binary.write_bytes(bytes(range(256)) * 10)
    assert detect_session_agent(binary) is None


def test_read_session_dispatch_and_explicit_format(tmp_path):
    path = write_lines(tmp_path, "f.jsonl", [{"hello": "world"}])
    readers = describe([a for a in AGENTS if a.reader is not None])
    with pytest.raises(SessionReadError, match=f"not a {re.escape(readers)} transcript"):
        read_session(path)
    claude = write_lines(
        tmp_path,
        "c.jsonl",
        [{"type": "user", "uuid": "u", "sessionId": "s", "message": {"role": "user", "content": "hi"}}],
    )
    assert read_session(claude, "claude").agent == "claude"
    assert read_session(claude).path_entries()[0].role == "user"


def test_a_first_line_orjson_refuses_is_judged_by_json(bc, tmp_path):
    """Both detectors probe a line with orjson first and let `json` decide what orjson refuses (here NaN and
    an integer beyond 64 bits in a pi header, which the pi reader accepts): the file is still a pi session
    to `plan` and to `report`, from the CLI."""
    from pathlib import Path

    from batchcompact.report.detect import detect_usage_source as report_detect

    source = Path(__file__).resolve().parent.parent / "sample_sessions" / "pi" / "big-refactor.jsonl"
    header, rest = source.read_bytes().split(b"\n", 1)
    assert header.endswith(b"}")
    path = tmp_path / "odd-header.jsonl"
    path.write_bytes(header[:-1] + b',"probe":NaN,"big":123456789012345678901234567890}\n' + rest)
    assert detect_session_agent(path) == "pi" and report_detect(path) == "pi"
    code, out, err = bc("plan", path, "--force", "--format", "json")
    assert code == 0, err
    rows = json.loads(out)["rows"]
    assert [(row["format"], row["status"]) for row in rows] == [("pi", "compact")], rows
    code, out, err = bc("report", path, "--no-cache", "--format", "json")
    assert code == 0, err
    assert json.loads(out)["totals"]["agents"] == ["pi"]
