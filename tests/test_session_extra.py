"""What a reader knows beyond the entries (core/session.py): shared code reads `Session` fields; each adapter's own
record is a `SessionExtra` dataclass in its folder (`adapters/<agent>/extra.py`), which only that adapter reads, and
which reads as its defaults on a session its reader did not build."""

from __future__ import annotations

import dataclasses
import importlib
from pathlib import Path

import pytest
from factories import Builder

from batchcompact.core.session import Session, SessionExtra
from batchcompact.formats.detect import read_session

ADAPTERS = Path(__file__).resolve().parent.parent / "batchcompact" / "adapters"
RECORDS = [
    (path.parent.name, cls)
    for path in sorted(ADAPTERS.glob("*/extra.py"))
    for cls in vars(importlib.import_module(f"batchcompact.adapters.{path.parent.name}.extra")).values()
    if isinstance(cls, type) and issubclass(cls, SessionExtra) and cls is not SessionExtra
]


def test_every_adapter_with_a_writer_that_reads_its_own_lines_has_a_record():
    assert {agent for agent, _ in RECORDS} >= {"claude", "codex", "copilot", "gemini", "openclaw", "opencode", "pi",
                                              "qwen"}


@pytest.mark.parametrize(("agent", "record"), RECORDS, ids=[cls.__name__ for _, cls in RECORDS])
def test_a_record_is_a_dataclass_whose_fields_all_have_defaults(agent, record):
    assert dataclasses.is_dataclass(record)
    record()  # `of` gives a session its reader did not build the defaults


@pytest.mark.parametrize(("agent", "record"), RECORDS, ids=[cls.__name__ for _, cls in RECORDS])
def test_of_reads_the_defaults_on_a_session_of_another_reader(agent, record):
    session = Session("mem.jsonl", "toy", {"id": "toy-1"}, [])
    assert record.of(session) == record()
    session.extra = SessionExtra()  # another adapter's record
    assert record.of(session) == record()


def test_a_reader_builds_its_record_and_the_fields_shared_code_reads(tmp_path):
    from batchcompact.adapters.claude.extra import ClaudeSessionExtra

    claude = Path(__file__).resolve().parent.parent / "sample_sessions" / "claude"
    path = next(p for p in sorted(claude.rglob("*.jsonl")) if "subagents" not in p.parts)
    session = read_session(path)
    extra = ClaudeSessionExtra.of(session)
    assert session.extra is extra and extra.uuids and extra.entry_lines
    assert session.size == path.stat().st_size and session.last_line > 0 and session.subagent is False

    b = Builder()
    b.user("x")
    pi = read_session(b.write(tmp_path / "s.jsonl"))
    assert pi.extra is None and pi.context_rules is None and pi.not_writable is None
    assert ClaudeSessionExtra.of(pi) == ClaudeSessionExtra()
