"""Bad input never reaches a traceback or exit 4 (#56): the fuzzer (bench/fuzz.py) at a small seeded size,
and one test from the command line for each crash it found, each failing before its fix."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest
from conftest import REPO, SHARED_FIXTURES

CLAUDE_LINE = {
    "parentUuid": None, "isSidechain": False, "userType": "external", "cwd": "/home/user/projects/webapp",
    "sessionId": "bd6e388f-417b-444a-b6e3-88a50c28ea27", "version": "2.1.42", "type": "assistant",
    "uuid": "2cee0a20-9240-4684-9a32-ed061bec9080", "timestamp": "2026-10-12T13:24:34.881Z",
    "requestId": "req_1", "message": {
        "model": "claude-haiku-4-5-20251001", "id": "msg_1", "type": "message", "role": "assistant",
        "content": [{"type": "text", "text": "Found it."}],
        "usage": {"input_tokens": 5, "cache_creation_input_tokens": 10, "cache_read_input_tokens": 0,
                  "output_tokens": 11}},
}


def claude_file(tmp_path: Path, text: str) -> Path:
    """One Claude Code session under `tmp_path/projects/...` holding the line `text` (raw JSON text)."""
    path = tmp_path / "projects" / "-home-user-projects-webapp" / "bd6e388f-417b-444a-b6e3-88a50c28ea27.jsonl"
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text + "\n")
    return path


def claude_line_with(**usage) -> str:
    line = json.loads(json.dumps(CLAUDE_LINE))
    marker = {}
    for key, value in usage.items():
        line["message"]["usage"][key] = f"@{key}@"
        marker[key] = value
    text = json.dumps(line)
    for key, raw in marker.items():
        text = text.replace(f'"@{key}@"', raw)
    return text


@pytest.mark.parametrize("raw", ["1e999", "18446744073709551616", "-1e999", "NaN", "4.5e22"])
@pytest.mark.parametrize("fmt", ["table", "json", "parquet"])
def test_report_takes_a_token_count_that_is_no_count_as_0_with_a_warning(bc, tmp_path, raw, fmt):
    """`"output_tokens": 1e999` (int() of inf: OverflowError) or 2**64 (past the Int64 column: OverflowError in
    pyarrow, or polars' cast of the cost) stopped the report with exit 4."""
    path = claude_file(tmp_path, claude_line_with(output_tokens=raw))
    out_file = ["-o", tmp_path / "r.parquet"] if fmt == "parquet" else []
    code, out, err = bc("report", tmp_path / "projects", "--no-cache", "--jobs", "1", "--format", fmt, *out_file,
                        "--timezone", "UTC")
    assert code == 0, err
    assert "internal error" not in err
    if raw not in ("1e999", "-1e999", "NaN"):  # a count the reader took: named by its line
        assert f"{path}:1: output_tokens" in err and "is not a token count" in err and "counted as 0" in err
    if fmt == "json":
        (row,) = json.loads(out)["rows"]
        assert row["output_tokens"] == 0 and row["input_tokens"] == 5


@pytest.mark.parametrize("model", [["gpt-5"], {"id": "gpt-5"}, 4.5])
@pytest.mark.parametrize("extra", [[], ["--by", "model"], ["--html", "page.html"]])
def test_report_leaves_a_model_that_is_not_text_empty(bc, tmp_path, model, extra):
    """A Codex rollout whose turn_context model is a list, an object or a number: unhashable in the cold
    report's price lookup (`report/fast.py` tiers), or `'float' object has no attribute 'strip'` in the
    price map's resolve: exit 4."""
    source = next((REPO / "sample_sessions" / "codex").rglob("rollout-*.jsonl"))
    lines = []
    for raw in source.read_text().splitlines():
        obj = json.loads(raw)
        if obj.get("type") == "turn_context":
            obj["payload"]["model"] = model
        lines.append(json.dumps(obj))
    path = tmp_path / "sessions" / source.name
    path.parent.mkdir()
    path.write_text("\n".join(lines) + "\n")
    extra = [str(tmp_path / e) if e.endswith(".html") else e for e in extra]
    code, out, err = bc("report", tmp_path / "sessions", "--no-cache", "--jobs", "1", *extra)
    assert code == 0, err
    assert "internal error" not in err
    assert f"{path}:" in err and ": model " in err and "is not text; left empty" in err


@pytest.mark.parametrize("when", ["2026-02-30T25:61:61.000Z", "0000-00-00T00:00:00Z", "yesterday"])
def test_the_html_page_takes_a_request_with_no_time(bc, tmp_path, when):
    """An impossible date leaves the request without a day: the page sorted the days with None among them
    (`'<' not supported between 'NoneType' and 'datetime.date'`), exit 4."""
    claude_file(tmp_path, json.dumps({**CLAUDE_LINE, "timestamp": when}))
    page = tmp_path / "page.html"
    code, _, err = bc("report", tmp_path / "projects", "--no-cache", "--jobs", "1", "--html", page)
    assert code == 0, err
    assert page.stat().st_size > 0


def test_show_counts_an_entry_whose_type_is_null(bc, tmp_path):
    """`"type": null` beside strings: show sorted the entry types (`'<' not supported between 'NoneType' and
    'str'`), exit 4."""
    lines = (REPO / "sample_sessions" / "pi" / "small-fix.jsonl").read_text().splitlines()
    entry = json.loads(lines[2])
    entry["type"] = None
    lines[2] = json.dumps(entry)
    path = tmp_path / "s.jsonl"
    path.write_text("\n".join(lines) + "\n")
    code, out, err = bc("show", path)
    assert code in (0, 1), err
    assert "internal error" not in err
    assert "(no type) 1" in out  # an entry whose type is null or no name (pipeline/session_info.py)


def test_validate_says_a_value_nested_too_deeply_for_the_schema_check(bc, tmp_path):
    """A token count that is an object nested 1,000 levels (orjson parses up to 1,024): the JSON Schema
    error's repr of it recursed past Python's limit (RecursionError), exit 4. Now the entry is invalid,
    with its line."""
    lines = (REPO / "sample_sessions" / "pi" / "small-fix.jsonl").read_text().splitlines()
    at = next(i for i, raw in enumerate(lines) if '"usage"' in raw and '"assistant"' in raw)
    entry = json.loads(lines[at])
    entry["message"]["usage"]["output"] = "@DEEP@"
    lines[at] = json.dumps(entry).replace('"@DEEP@"', '{"a":' * 1000 + "1" + "}" * 1000)
    path = tmp_path / "s.jsonl"
    path.write_text("\n".join(lines) + "\n")
    code, out, err = bc("validate", path)
    assert code == 1, err
    assert f"{path}:{at + 1}: error:" in out and "nested too deeply to check" in out


def test_a_first_line_nested_too_deeply_to_parse_is_not_a_transcript(bc, tmp_path):
    """Detection probed the line with json after orjson refused it, and json's RecursionError escaped:
    `show` exited 4."""
    path = tmp_path / "s.jsonl"
    path.write_text("[" * 5000 + "]" * 5000 + "\n")
    code, _, err = bc("show", path)
    assert code == 1, err
    assert "internal error" not in err and str(path) in err


def test_run_compacts_a_gemini_chat_whose_token_count_is_not_finite(bc, tmp_path):
    """Gemini CLI's reader took `int()` of a recorded `1e999` (OverflowError): the session failed as an
    internal error, exit 4 (the same helper in the Codex, Qwen, Copilot, OpenCode and Claude readers)."""
    source = REPO / "tests" / "data" / "recorded" / "gemini-cli" / "session-tools.jsonl"
    lines = source.read_text().splitlines()
    last = max(i for i, raw in enumerate(lines) if '"tokens"' in raw)  # the last model message
    obj = json.loads(lines[last])
    obj["tokens"]["output"] = "@INF@"
    lines[last] = json.dumps(obj).replace('"@INF@"', "1e999")
    path = tmp_path / "chats" / "session-tools.jsonl"
    path.parent.mkdir()
    path.write_text("\n".join(lines) + "\n")
    code, out, err = bc("run", tmp_path / "chats", "--output-dir", tmp_path / "out", "--min-age", "0", "--force",
                        "--jobs", "1", "--format", "json")
    assert code == 0, err
    (row,) = json.loads(out)["rows"]
    assert row["status"] in ("compacted", "skipped"), row
    assert "internal error" not in out + err


def test_the_fuzzer_finds_no_traceback_exit_4_or_hang():
    """bench/fuzz.py at its suite size: seeded, every agent's seeds and every command, at most 45 s of cases
    (the cases are in this process; one in 40 also runs the installed command line). A failure prints the
    case (agent, file, mutation, command) and its traceback: replay it with `python -m bench.fuzz --seed 56
    --cases N --keep DIR`."""
    if not SHARED_FIXTURES.is_dir():
        pytest.skip("the fuzzer's seeds include ../shared/fixtures")
    import sys

    sys.path.insert(0, str(REPO))
    from bench import fuzz

    saved = dict(os.environ)
    try:
        tally = fuzz.fuzz(cases=2000, seed=56, timeout=20.0, spot_every=40, budget=45.0)
    finally:
        os.environ.clear()
        os.environ.update(saved)
    assert tally.cases >= len(fuzz.COMMANDS)
    assert set(tally.by_command) == set(fuzz.COMMANDS)
    said = [f"case {f['case']}: {f['agent']} {f['file']} [{f['mutation']}] {f['command']}: {f['problem']}: "
            + (f.get("traceback") or f["stderr"]).strip().splitlines()[-1] for f in tally.failures]
    assert not tally.failures, "\n".join(said)


def pi_lines() -> list[dict]:
    return [json.loads(raw) for raw in (REPO / "sample_sessions" / "pi" / "small-fix.jsonl").read_text().splitlines()]


def write_lines(path: Path, objs: list, raw: dict[str, str] | None = None) -> Path:
    """JSON lines; each `"@NAME@"` placeholder replaced by `raw[NAME]` (JSON text json.dumps cannot make)."""
    text = "\n".join(json.dumps(obj) for obj in objs) + "\n"
    for name, value in (raw or {}).items():
        text = text.replace(f'"@{name}@"', value)
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text)
    return path


def test_report_takes_a_recorded_cost_past_float_s_range(bc, tmp_path):
    """`"cost": {"total": 1000...0}` (400 digits, an int json reads): `float()` of it overflowed in
    `as_float` (OverflowError), exit 4; the cost is now no cost and the request is priced from its tokens."""
    objs = pi_lines()
    at = next(i for i, obj in enumerate(objs) if obj.get("message", {}).get("usage"))
    objs[at]["message"]["usage"]["cost"] = {"total": "@HUGE@"}
    write_lines(tmp_path / "pi" / "s.jsonl", objs, {"HUGE": "1" + "0" * 400})
    code, out, err = bc("report", tmp_path / "pi", "--no-cache", "--jobs", "1", "--format", "json")
    assert code == 0, err
    assert "internal error" not in err


def test_plan_takes_a_pi_header_whose_cwd_is_a_list(bc, tmp_path):
    """pi's settings were looked up under `Path(cwd)` for a cwd that is a list (TypeError), exit 4."""
    objs = pi_lines()
    objs[0]["cwd"] = ["/home/user/src/ledgerkit"]
    path = write_lines(tmp_path / "s.jsonl", objs)
    code, out, err = bc("plan", path, "--force", "--format", "json")
    assert code in (0, 1), err
    assert "internal error" not in out + err


def test_show_and_report_take_a_provider_and_a_time_nested_1000_levels(bc, tmp_path):
    """`str()` of a value nested 1,000 levels (orjson reads up to 1,024) recursed past Python's limit:
    in show's model line and in the report's key of a pi request, exit 4."""
    objs = pi_lines()
    objs[1]["provider"] = "@DEEP@"
    at = next(i for i, obj in enumerate(objs) if obj.get("message", {}).get("usage"))
    objs[at]["message"]["timestamp"] = "@DEEP@"
    objs[at]["message"]["usage"]["input"] = 5
    path = write_lines(tmp_path / "pi" / "s.jsonl", objs, {"DEEP": "[" * 1000 + "]" * 1000})
    code, out, err = bc("show", path)
    assert code in (0, 1) and "internal error" not in err, err
    code, out, err = bc("report", tmp_path / "pi", "--no-cache", "--jobs", "1")
    assert code == 0, err


def test_a_legacy_gemini_chat_nested_too_deeply_is_invalid_json(bc, tmp_path):
    """A legacy Gemini CLI chat (one JSON document) nested deeper than json recurses: RecursionError out of
    the reader, exit 4; now the file is invalid, said with its path."""
    text = (REPO / "tests" / "data" / "recorded" / "gemini-cli" / "legacy-session.json").read_text()
    path = tmp_path / "chats" / "session-2026-01-01T00-00-x.json"
    path.parent.mkdir()
    path.write_text(text.replace('"type": "user"', '"type": "user", "deep": ' + "[" * 5000 + "]" * 5000, 1))
    code, out, err = bc("validate", path)
    assert code == 1, out + err
    assert "nested too deeply to parse" in out


def test_report_takes_a_hermes_provider_that_is_a_blob(bc, tmp_path):
    """Hermes' `billing_provider` cell holding a blob (SQLite keeps any type): `.replace("-", "_")` on bytes
    (TypeError), exit 4."""
    import shutil
    import sqlite3

    db = tmp_path / ".hermes" / "state.db"
    db.parent.mkdir()
    shutil.copyfile(SHARED_FIXTURES / "agents" / "hermes" / ".hermes" / "state.db", db)
    with sqlite3.connect(db) as con:
        con.execute("UPDATE sessions SET billing_provider = ?", (b"\xff\xfe",))
    code, out, err = bc("report", tmp_path / ".hermes", "--no-cache", "--jobs", "1", "--format", "json")
    assert code == 0, err
    assert json.loads(out)["rows"]


def test_run_takes_a_claude_message_whose_time_is_not_finite(bc, tmp_path):
    """`"timestamp": 1e999` on an assistant line: `int()` of inf in `core/context.parse_timestamp_ms`
    (OverflowError), the session failed as an internal error, exit 4."""
    source = next(p for p in (REPO / "sample_sessions" / "claude").rglob("*.jsonl") if "subagents" not in p.parts)
    objs = [json.loads(raw) for raw in source.read_text().splitlines()]
    at = next(i for i, obj in enumerate(objs) if obj.get("type") == "assistant")
    objs[at]["timestamp"] = "@INF@"
    path = write_lines(tmp_path / "projects" / source.parent.name / source.name, objs, {"INF": "1e999"})
    code, out, err = bc("run", path, "--output-dir", tmp_path / "out", "--min-age", "0", "--force", "--jobs", "1")
    assert code in (0, 1), out + err
    assert "internal error" not in out + err


def test_report_takes_a_kimi_time_nested_1000_levels(bc, tmp_path):
    """kimi-cli's call key joined `str()` of the line's time, here an object nested 1,000 levels: str()
    recursed past Python's limit (RecursionError), exit 4."""
    source = SHARED_FIXTURES / "agents" / "kimi" / "kimi-cli-legacy-wire" / ".kimi"
    if not source.is_dir():
        pytest.skip("needs ../shared/fixtures")
    import shutil

    home = tmp_path / ".kimi"
    shutil.copytree(source, home)
    wire = next(home.rglob("wire.jsonl"))
    lines = wire.read_text().splitlines()
    at = next(i for i, raw in enumerate(lines) if "token_usage" in raw)
    lines[at] = lines[at].replace('"timestamp":1770983427.123', '"timestamp":' + '{"a":' * 1000 + "1" + "}" * 1000, 1)
    assert '"a"' in lines[at]
    wire.write_text("\n".join(lines) + "\n")
    code, out, err = bc("report", home, "--no-cache", "--jobs", "1")
    assert code == 0, err


def test_report_takes_a_kimi_code_config_line_nested_too_deeply(bc, tmp_path):
    """Kimi Code's sub-agent rows take the main agent's cwd from its `config.update` line, parsed with json:
    a line nested 5,000 levels raised RecursionError out of the reader, exit 4."""
    from agent_sessions import write_kimi_code

    write_kimi_code(tmp_path)
    for wire in (tmp_path / ".kimi-code").rglob("main/wire.jsonl"):
        text = wire.read_text().replace('"type": "config.update",', '"type": "config.update", "x": '
                                        + "[" * 5000 + "]" * 5000 + ",")
        wire.write_text(text)
    code, out, err = bc("report", tmp_path / ".kimi-code", "--no-cache", "--jobs", "1")
    assert code == 0, err


def test_report_cleans_a_droid_settings_file_with_a_surrogate_s_bytes(bc, tmp_path):
    """The UTF-8 bytes of a lone surrogate (ED A0 80) in a Droid settings file: json decodes them (bytes are
    read with "surrogatepass"), the row's text was not cleaned and the Parquet table could not encode it
    (UnicodeEncodeError), exit 4."""
    source = SHARED_FIXTURES / "agents" / "droid" / "sessions"
    if not source.is_dir():
        pytest.skip("needs ../shared/fixtures")
    import shutil

    sessions = tmp_path / ".factory" / "sessions"
    shutil.copytree(source, sessions)
    settings = sessions / "-tmp-project" / "session-a.settings.json"
    settings.write_bytes(settings.read_bytes().replace(b"Claude-Sonnet", b"Claude\xed\xa0\x80Sonnet", 1))
    for fmt in ("jsonl", "parquet"):
        out_file = ["-o", tmp_path / "r.parquet"] if fmt == "parquet" else []
        code, out, err = bc("report", sessions, "--no-cache", "--jobs", "1", "--by", "request", "--format", fmt,
                            *out_file)
        assert code == 0, err


def test_show_takes_a_gemini_part_that_is_a_list_nested_1000_levels(bc, tmp_path):
    """A part of a user message that is neither an object nor text, nested 1,000 levels (json parses it): the
    Gemini CLI reader took str() of it for its text and recursed, exit 4 (the 10,000-case run on main)."""
    chat = json.loads((REPO / "tests" / "data" / "recorded" / "gemini-cli" / "legacy-session.json").read_text())
    first_user = next(m for m in chat["messages"] if m.get("type") == "user")
    first_user["content"].append("@deep@")
    path = tmp_path / "chats" / "session-2026-01-01T00-00-x.json"
    path.parent.mkdir()
    path.write_text(json.dumps(chat).replace('"@deep@"', "[" * 1000 + "]" * 1000))
    code, out, err = bc("show", path, "--context")
    assert code in (0, 1), err
    assert "internal error" not in err


def test_validate_takes_a_claude_tool_call_id_nested_1000_levels(bc, tmp_path):
    """A tool call whose id is a list nested 1,000 levels: the Claude Code reader took str() of it to name the
    call's tool and recursed, exit 4 (the 10,000-case run on main)."""
    line = json.loads(json.dumps(CLAUDE_LINE))
    line["message"]["content"] = [{"type": "tool_use", "id": "@deep@", "name": "Read", "input": {}}]
    path = claude_file(tmp_path, json.dumps(line).replace('"@deep@"', "[" * 1000 + "]" * 1000))
    code, out, err = bc("validate", path)
    assert code in (0, 1), out + err
    assert "internal error" not in out + err


def test_a_gemini_tool_response_whose_name_is_an_object_is_no_name(tmp_path):
    """The fuzzer's case 499 (seed 7): a legacy Gemini CLI chat whose functionResponse (of a call the chat does
    not hold) has an object for its name: the reader took str() of it, which recursed on one nested 1,000
    levels (RecursionError: `show --context` exited 4), and named the tool by an object's repr otherwise. A
    name or an id that is no text or number is none."""
    from batchcompact.pipeline.planning import read_session

    text = (REPO / "tests" / "data" / "recorded" / "gemini-cli" / "legacy-session.json").read_text()
    at = text.index('"functionResponse"', text.index('"toolCalls"'))  # a tool call's recorded result
    call_id = text.index('"id"', at)
    name = text.index('"name"', at)
    id_start, name_start = text.index(":", call_id) + 1, text.index(":", name) + 1
    id_end, name_end = text.index(",", id_start), text.index(",", name_start)
    path = tmp_path / "legacy-session.json"
    path.write_text(text[:id_start] + ' {"no": "id"}' + text[id_end:name_start] + ' {"a": {"b": 1}}'
                    + text[name_end:])
    results = [e.data["message"] for e in read_session(path).entries
               if (e.data.get("message") or {}).get("role") == "toolResult"]
    assert results and all("{" not in str(m.get("toolName")) + str(m.get("toolCallId")) for m in results)


def test_an_amp_thread_whose_message_id_is_an_object_is_reported(bc, tmp_path):
    """The fuzzer's case 2541 (seed 7): an Amp thread whose messageId is an object (unhashable as the cache's
    key: TypeError, `report` exited 4). An id that is no text or number is none; the ledger's events are
    still counted."""
    if not SHARED_FIXTURES.is_dir():
        pytest.skip("needs ../shared/fixtures")
    thread = json.loads((SHARED_FIXTURES / "agents" / "amp" / "threads" / "T-ledger-a.json").read_text())
    for message in thread["messages"]:
        message["messageId"] = {"id": message.get("messageId")}
    path = tmp_path / ".local" / "share" / "amp" / "threads" / "T-ledger-a.json"
    path.parent.mkdir(parents=True)
    path.write_text(json.dumps(thread))
    code, out, err = bc("report", path, "--agent", "amp", "--format", "json", "--no-cache")
    assert code in (0, 1), err
    assert "internal error" not in err
    assert json.loads(out)["totals"]["input_tokens"] > 0


def test_a_claude_line_whose_message_id_is_an_object_is_reported(tmp_path):
    """The fuzzer's case 2075 (seed 11): a Claude Code line whose message id is an object: the usage reader
    took str() of it, which recursed on one nested 1,000 levels (RecursionError: `report` exited 4), and keyed
    the request by an object's repr otherwise. An id that is no text or number is none: the line is counted
    by its line, as one with no ids."""
    from batchcompact.adapters.claude.report import extract_claude
    from batchcompact.adapters.common.lines import ExtractStats
    from batchcompact.adapters.common.usage_rows import UsageRows

    usage = {"input_tokens": 10, "output_tokens": 5, "cache_creation_input_tokens": 0, "cache_read_input_tokens": 0}
    lines = [{"type": "assistant", "sessionId": "s", "timestamp": f"2026-05-01T01:02:0{n}.000Z", "requestId": None,
              "message": {"id": {"nested": n}, "model": "claude-sonnet-4-20250514", "role": "assistant",
                          "usage": usage, "content": []}} for n in range(2)]
    path = tmp_path / "projects" / "-home-u-app" / "s.jsonl"
    path.parent.mkdir(parents=True)
    path.write_text("".join(json.dumps(line) + "\n" for line in lines))
    rows, stats = UsageRows(), ExtractStats(str(path))
    extract_claude(path, rows, stats)
    table = rows.to_table().to_pylist()
    assert len(table) == 2 and all("{" not in str(row.get("dedupe_key")) for row in table), table
