"""JSON Schemas in schemas/ and batchcompact.schemas: fixtures validate, broken entries name the field."""

from __future__ import annotations

import copy
import json
import random
from importlib import resources
from typing import Any

import pytest
from code_helpers import written_entry_problems
from conftest import REPO, fixture_path
from jsonschema import Draft202012Validator

from batchcompact import schemas
from batchcompact.adapters.pi import schema as pi_schema
from batchcompact.adapters.pi.read import read_pi_session
from batchcompact.adapters.pi.schema import (
    SCHEMA_FILES,
    validate_entry,
    validate_header,
    validate_session,
)
from batchcompact.core.entries import ERROR
from batchcompact.schemas import SchemaCompileError, load_schema

PI_FIXTURES = ("large-session.jsonl", "before-compaction.jsonl")
TS = "2026-11-22T03:00:00.000Z"
USAGE = {
    "input": 1200,
    "output": 300,
    "cacheRead": 0,
    "cacheWrite": 0,
    "totalTokens": 1500,
    "cost": {"input": 0.0036, "output": 0.0045, "cacheRead": 0, "cacheWrite": 0, "total": 0.0081},
}


def entry(type_: str, **fields: Any) -> dict[str, Any]:
    return {"type": type_, "id": "a1b2c3d4", "parentId": "00ff00ff", "timestamp": TS, **fields}


def message(role: str, **fields: Any) -> dict[str, Any]:
    return entry("message", message={"role": role, "timestamp": 1763700000000, **fields})


def assistant(**overrides: Any) -> dict[str, Any]:
    fields = {
        "content": [
            {"type": "thinking", "thinking": "look at the file", "thinkingSignature": "sig"},
            {"type": "text", "text": "Reading it."},
            {"type": "toolCall", "id": "toolu_1", "name": "read", "arguments": {"path": "a.ts"}},
        ],
        "api": "anthropic-messages",
        "provider": "anthropic",
        "model": "claude-sonnet-4-5",
        "usage": copy.deepcopy(USAGE),
        "stopReason": "toolUse",
    }
    fields.update(overrides)
    return message("assistant", **fields)


def written_compaction(**overrides: Any) -> dict[str, Any]:
    fields = {
        "summary": "## Goal\nShip it.",
        "firstKeptEntryId": "0a1b2c3d-1111-2222-3333-444455556666",
        "tokensBefore": 150_000,
        "details": {"readFiles": ["a.ts"], "modifiedFiles": ["b.ts"]},
        "fromHook": False,
        "usage": copy.deepcopy(USAGE),
    }
    fields.update(overrides)
    return entry("compaction", **fields)


VALID_ENTRIES = {
    "user-string": message("user", content="fix the bug"),
    "user-blocks": message(
        "user",
        content=[{"type": "text", "text": "see"}, {"type": "image", "data": "iVBO", "mimeType": "image/png"}],
    ),
    "assistant": assistant(),
    "assistant-error": assistant(content=[], stopReason="error", errorMessage="overloaded"),
    "assistant-legacy-partialJson": assistant(
        content=[{"type": "toolCall", "id": "t", "name": "bash", "arguments": {}, "partialJson": '{"cmd'}]
    ),
    "assistant-usage-without-totalTokens": assistant(
        usage={k: v for k, v in USAGE.items() if k != "totalTokens"}
    ),
    "assistant-redacted-thinking": assistant(
        content=[{"type": "thinking", "thinking": "", "thinkingSignature": "enc", "redacted": True}]
    ),
    "toolResult": message(
        "toolResult",
        toolCallId="toolu_1",
        toolName="read",
        content=[{"type": "text", "text": "x"}],
        isError=False,
    ),
    "toolResult-pruned": message(
        "toolResult",
        toolCallId="toolu_1",
        toolName="read",
        content=[{"type": "text", "text": "[Output truncated - 900 tokens]"}],
        isError=False,
        details={"truncation": None},
        prunedAt=1763700001000,
    ),
    "bashExecution": message(
        "bashExecution", command="ls", output="a\n", exitCode=0, cancelled=False, truncated=False
    ),
    "bashExecution-no-exitCode": message(
        "bashExecution",
        command="sleep 9",
        output="",
        cancelled=True,
        truncated=False,
        excludeFromContext=True,
    ),
    "custom-role (migrated hookMessage)": message("custom", customType="note", content="hi", display=True),
    "thinking_level_change": entry("thinking_level_change", thinkingLevel="high"),
    "model_change": entry("model_change", provider="openai", modelId="gpt-5"),
    "compaction-pi": entry("compaction", summary="s", firstKeptEntryId="deadbeef", tokensBefore=9000),
    "compaction-written": written_compaction(),
    "compaction-retainedTail": entry(
        "compaction",
        summary="s",
        tokensBefore=9000,
        retainedTail=[{"role": "user", "content": "go on", "timestamp": 1}],
    ),
    "branch_summary": entry("branch_summary", fromId="root", summary="tried X", details={"readFiles": []}),
    "custom": entry("custom", customType="ext-state", data={"anything": [1, 2]}),
    "custom_message": entry(
        "custom_message", customType="ext", content=[{"type": "text", "text": "t"}], display=False
    ),
    "label": entry("label", targetId="deadbeef", label="checkpoint"),
    "label-cleared": entry("label", targetId="deadbeef"),
    "session_info": entry("session_info", name="refactor"),
    "session_info-empty": entry("session_info"),
    "root-entry": {**entry("model_change", provider="p", modelId="m"), "parentId": None},
    "uuid-id": {**entry("label", targetId="x"), "id": "d703a1a9-1b7b-4fb1-b512-c9738b1fe617"},
}


def _without(obj: dict[str, Any], *path: str | int) -> dict[str, Any]:
    obj = copy.deepcopy(obj)
    target: Any = obj
    for part in path[:-1]:
        target = target[part]
    del target[path[-1]]
    return obj


def _with(obj: dict[str, Any], value: Any, *path: str | int) -> dict[str, Any]:
    obj = copy.deepcopy(obj)
    target: Any = obj
    for part in path[:-1]:
        target = target[part]
    target[path[-1]] = value
    return obj


# (name, entry, the field path the first error must start with)
BROKEN_ENTRIES = [
    ("compaction without summary", _without(written_compaction(), "summary"), "summary"),
    (
        "compaction without firstKeptEntryId",
        _without(written_compaction(), "firstKeptEntryId"),
        "firstKeptEntryId",
    ),
    ("compaction tokensBefore string", _with(written_compaction(), "many", "tokensBefore"), "tokensBefore"),
    ("compaction usage cost missing", _without(written_compaction(), "usage", "cost"), "usage.cost"),
    ("wrong role", _with(assistant(), "robot", "message", "role"), "message.role"),
    ("role not a string", _with(assistant(), 7, "message", "role"), "message.role"),
    ("message without role", _without(assistant(), "message", "role"), "message.role"),
    ("message not an object", _with(assistant(), "hi", "message"), "message"),
    ("message missing", _without(assistant(), "message"), "message"),
    (
        "toolCall without name",
        _without(assistant(), "message", "content", 2, "name"),
        "message.content[2].name",
    ),
    (
        "toolCall arguments a string",
        _with(assistant(), "{}", "message", "content", 2, "arguments"),
        "message.content[2].arguments",
    ),
    (
        "unknown content block",
        _with(assistant(), {"type": "video"}, "message", "content", 1),
        "message.content[1].type",
    ),
    (
        "image block in assistant",
        _with(assistant(), {"type": "image", "data": "", "mimeType": "image/png"}, "message", "content", 0),
        "message.content[0].type",
    ),
    (
        "text block without text",
        _without(assistant(), "message", "content", 1, "text"),
        "message.content[1].text",
    ),
    (
        "usage with a string",
        _with(assistant(), "abc", "message", "usage", "totalTokens"),
        "message.usage.totalTokens",
    ),
    (
        "usage cost total null",
        _with(assistant(), None, "message", "usage", "cost", "total"),
        "message.usage.cost.total",
    ),
    ("assistant without usage", _without(assistant(), "message", "usage"), "message.usage"),
    ("stopReason unknown", _with(assistant(), "done", "message", "stopReason"), "message.stopReason"),
    ("message timestamp ISO string", _with(assistant(), TS, "message", "timestamp"), "message.timestamp"),
    (
        "user content a number",
        _with(VALID_ENTRIES["user-string"], 5, "message", "content"),
        "message.content",
    ),
    (
        "toolResult without toolCallId",
        _without(VALID_ENTRIES["toolResult"], "message", "toolCallId"),
        "message.toolCallId",
    ),
    (
        "toolResult isError string",
        _with(VALID_ENTRIES["toolResult"], "no", "message", "isError"),
        "message.isError",
    ),
    (
        "bashExecution without output",
        _without(VALID_ENTRIES["bashExecution"], "message", "output"),
        "message.output",
    ),
    (
        "custom role without customType",
        _without(VALID_ENTRIES["custom-role (migrated hookMessage)"], "message", "customType"),
        "message.customType",
    ),
    ("branch_summary without fromId", _without(VALID_ENTRIES["branch_summary"], "fromId"), "fromId"),
    ("label without targetId", _without(VALID_ENTRIES["label"], "targetId"), "targetId"),
    ("model_change without modelId", _without(VALID_ENTRIES["model_change"], "modelId"), "modelId"),
    (
        "thinking_level_change level number",
        _with(VALID_ENTRIES["thinking_level_change"], 3, "thinkingLevel"),
        "thinkingLevel",
    ),
    ("custom_message display missing", _without(VALID_ENTRIES["custom_message"], "display"), "display"),
    ("session_info name number", _with(VALID_ENTRIES["session_info"], 1, "name"), "name"),
    ("entry without id", _without(VALID_ENTRIES["label"], "id"), "id"),
    ("entry with empty id", _with(VALID_ENTRIES["label"], "", "id"), "id"),
    ("entry without parentId", _without(VALID_ENTRIES["label"], "parentId"), "parentId"),
    ("entry timestamp epoch number", _with(VALID_ENTRIES["label"], 1763700000000, "timestamp"), "timestamp"),
    (
        "retainedTail with a bad message",
        _with(VALID_ENTRIES["compaction-retainedTail"], [{"role": "user"}], "retainedTail"),
        "retainedTail[0].timestamp",
    ),
    ("entry without type", _without(VALID_ENTRIES["label"], "type"), "type"),
]


@pytest.mark.parametrize("name", PI_FIXTURES)
def test_every_fixture_entry_validates(name: str) -> None:
    session = read_pi_session(fixture_path("pi", name))
    assert session.version == 1 and session.header["version"] == 3  # migrated in memory
    assert validate_session(session) == []
    # The fast path and jsonschema itself agree on every line.
    header_validator = Draft202012Validator(load_schema("pi-session-header.schema.json"))
    assert list(header_validator.iter_errors(session.header)) == []
    for e in session.entries:
        checker = schemas.definition_checker(pi_schema.ENTRY_SCHEMA, pi_schema.ENTRY_DEFS[e.type])
        assert checker.validator.is_valid(e.data), e


@pytest.mark.parametrize("name", SCHEMA_FILES)
def test_each_schema_is_a_valid_draft_2020_12_schema(name: str) -> None:
    schema = load_schema(name)
    Draft202012Validator.check_schema(schema)
    assert schema["$schema"] == "https://json-schema.org/draft/2020-12/schema"


def test_schemas_ship_inside_the_package() -> None:
    folder = resources.files("batchcompact").joinpath("schemas")
    for name in SCHEMA_FILES:
        assert json.loads(folder.joinpath(name).read_text()) == json.loads(
            (REPO / "schemas" / name).read_text()
        )


@pytest.mark.parametrize("name", sorted(VALID_ENTRIES))
def test_valid_entries(name: str) -> None:
    obj = VALID_ENTRIES[name]
    assert validate_entry(obj) == []
    assert Draft202012Validator(load_schema("pi-entry.schema.json"), registry=schemas._registry()).is_valid(
        obj
    )


@pytest.mark.parametrize(("name", "obj", "field"), BROKEN_ENTRIES, ids=[b[0] for b in BROKEN_ENTRIES])
def test_broken_entries_name_the_field(name: str, obj: dict[str, Any], field: str) -> None:
    problems = validate_entry(obj)
    assert problems, name
    assert any(p.startswith(f"{field}:") for p in problems), problems
    # The union schema (as another tool would use it) rejects it too.
    union = Draft202012Validator(load_schema("pi-entry.schema.json"), registry=schemas._registry())
    assert not union.is_valid(obj)


def test_error_message_format() -> None:
    bad = _with(assistant(), "abc", "message", "usage", "totalTokens")
    assert validate_entry(bad) == ["message.usage.totalTokens: 'abc' is not of type 'number'"]
    assert validate_entry(_without(written_compaction(), "summary")) == ["summary: missing required property"]
    long_text = "x" * 10_000
    (problem,) = validate_entry(
        _with(VALID_ENTRIES["user-string"], {"text": long_text}, "message", "content")
    )
    assert problem.startswith("message.content: {'text': 'xxx") and len(problem) < 200


def test_unknown_entry_types_are_not_schema_errors() -> None:
    assert validate_entry({"type": "leaf", "targetId": None}) == []
    assert validate_entry({"type": "active_tools_change", "id": 5, "activeToolNames": "no"}) == []
    assert validate_entry({"type": 3}) == ["type: 3 is not of type 'string'"]
    assert validate_entry(["not", "an", "object"])[0].startswith("entry: ")


def test_extra_fields_are_allowed_everywhere() -> None:
    obj = assistant()
    obj["futureField"] = {"x": 1}
    obj["message"]["responseId"] = "resp_1"
    obj["message"]["usage"]["reasoningTokens"] = 12
    obj["message"]["usage"]["cost"]["currency"] = "USD"
    obj["message"]["content"][2]["callMeta"] = [1]
    assert validate_entry(obj) == []
    header = {
        "type": "session",
        "id": "s",
        "timestamp": TS,
        "cwd": "/w",
        "provider": "anthropic",
        "branchedFrom": "/a.jsonl",
    }
    assert validate_header(header) == []


@pytest.mark.parametrize(
    ("header", "field"),
    [
        ({"type": "session", "timestamp": TS, "cwd": "/w"}, "id"),
        ({"type": "session", "id": 42, "timestamp": TS, "cwd": "/w"}, "id"),
        ({"type": "sesion", "id": "s", "timestamp": TS, "cwd": "/w"}, "type"),
        ({"type": "session", "id": "s", "timestamp": TS}, "cwd"),
        ({"type": "session", "id": "s", "timestamp": TS, "cwd": "/w", "version": "3"}, "version"),
        (
            {"type": "session", "id": "s", "timestamp": TS, "cwd": "/w", "parentSession": None},
            "parentSession",
        ),
    ],
)
def test_broken_headers_name_the_field(header: dict[str, Any], field: str) -> None:
    problems = validate_header(header)
    assert any(p.startswith(f"{field}:") for p in problems), problems


def test_written_style_compaction_validates() -> None:
    obj = written_compaction()
    assert validate_entry(obj) == []
    assert written_entry_problems(obj) == []
    branch = entry(
        "branch_summary", fromId="root", summary="s", details={"readFiles": [], "modifiedFiles": []}
    )
    assert written_entry_problems(branch) == []
    # An extension's summary may carry any details.
    assert written_entry_problems(written_compaction(fromHook=True, details="anything")) == []


@pytest.mark.parametrize(
    ("obj", "field"),
    [
        ({**written_compaction(), "id": "0a1b2c3d-1111-2222-3333-444455556666"}, "id"),
        ({**written_compaction(), "id": "A1B2C3D4"}, "id"),
        ({**written_compaction(), "timestamp": "2026-11-22T03:00:00"}, "timestamp"),
        (written_compaction(details={"readFiles": ["a"]}), "details.modifiedFiles"),
        (written_compaction(details={"readFiles": [1], "modifiedFiles": []}), "details.readFiles[0]"),
        ({"type": "leaf", "id": "a1b2c3d4", "parentId": None, "timestamp": TS}, "type"),
        (message("compactionSummary", summary="s", tokensBefore=1), "message.role"),
        (_without(written_compaction(), "summary"), "summary"),
    ],
)
def test_written_schema_is_stricter(obj: dict[str, Any], field: str) -> None:
    problems = written_entry_problems(obj)
    assert any(p.startswith(f"{field}:") for p in problems), problems


def test_summary_roles_are_tolerated_when_reading() -> None:
    assert validate_entry(message("compactionSummary", summary="s", tokensBefore=1)) == []
    assert validate_entry(message("branchSummary", summary="s", fromId="root")) == []


def test_validate_session_reports_line_numbers(tmp_path) -> None:
    path = tmp_path / "s.jsonl"
    lines = [
        {"type": "session", "version": 3, "id": "s1", "timestamp": TS, "cwd": "/w"},
        {**VALID_ENTRIES["model_change"], "id": "00000001", "parentId": None},
        {
            **_with(assistant(), "abc", "message", "usage", "totalTokens"),
            "id": "00000002",
            "parentId": "00000001",
        },
        {**_without(VALID_ENTRIES["label"], "targetId"), "id": "00000003", "parentId": "00000002"},
    ]
    path.write_text("".join(json.dumps(line) + "\n" for line in lines))
    session = read_pi_session(path)
    problems = validate_session(session)
    assert [(p.line, p.severity) for p in problems] == [(3, ERROR), (4, ERROR)]
    assert problems[0].message == "message entry: message.usage.totalTokens: 'abc' is not of type 'number'"
    assert str(problems[1]) == f"{path}:4: error: label entry: targetId: missing required property"


def test_validate_session_checks_the_header(tmp_path) -> None:
    path = tmp_path / "h.jsonl"
    path.write_text(json.dumps({"type": "session", "version": 3, "id": "s1", "timestamp": TS}) + "\n")
    (problem,) = validate_session(read_pi_session(path))
    assert (problem.line, problem.message) == (1, "session header: cwd: missing required property")


_JUNK = ["abc", 7, 1.5, None, True, [], {}, [{"type": "text"}], {"type": "toolCall"}]


def _mutate(obj: Any, rng: random.Random) -> Any:
    """Delete or replace one randomly chosen value somewhere inside obj (a copy)."""
    obj = copy.deepcopy(obj)
    containers: list[tuple[Any, Any]] = []

    def walk(node: Any) -> None:
        if isinstance(node, dict):
            for key, value in node.items():
                containers.append((node, key))
                walk(value)
        elif isinstance(node, list):
            for index, value in enumerate(node):
                containers.append((node, index))
                walk(value)

    walk(obj)
    node, key = rng.choice(containers)
    if isinstance(node, dict) and rng.random() < 0.4:
        del node[key]
    else:
        node[key] = rng.choice(_JUNK)
    return obj


def test_fast_check_agrees_with_jsonschema() -> None:
    """The compiled predicates give the same verdict as jsonschema on thousands of mutated entries."""
    rng = random.Random(20261122)
    corpus = list(VALID_ENTRIES.values())
    try:
        corpus += [
            e.data for e in read_pi_session(fixture_path("pi", "before-compaction.jsonl")).entries[:300]
        ]
    except pytest.skip.Exception:
        pass
    checkers = [
        (
            schemas.file_checker(pi_schema.ENTRY_SCHEMA),
            Draft202012Validator(load_schema("pi-entry.schema.json"), registry=schemas._registry()),
        ),
        (
            schemas.file_checker(pi_schema.WRITTEN_ENTRY_SCHEMA),
            schemas.file_checker(pi_schema.WRITTEN_ENTRY_SCHEMA).validator,
        ),
    ]
    invalid = 0
    for _ in range(1200):
        obj = _mutate(rng.choice(corpus), rng)
        for checker, reference in checkers:
            expected = reference.is_valid(obj)
            assert checker.is_valid(obj) == expected, obj
            invalid += not expected
        # validate_entry's per-type dispatch gives the union's verdict.
        assert (validate_entry(obj) == []) == checkers[0][1].is_valid(obj), obj
    assert invalid > 400  # the mutations really do break entries


def test_fast_compiler_refuses_keywords_it_does_not_implement() -> None:
    with pytest.raises(SchemaCompileError):
        schemas._FastCompiler().compile({"type": "array", "minItems": 1}, "urn:x")
    with pytest.raises(SchemaCompileError):
        schemas._FastCompiler().compile({"type": "object", "additionalProperties": False}, "urn:x")
