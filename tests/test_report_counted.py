"""Counted once, said plainly (issue 50): a pi fork or a migrated copy of a session counts each request
once, Copilot CLI's own compaction call is counted, a cut export is named, an unknown model is named."""

from __future__ import annotations

import json
import uuid
from pathlib import Path

import pytest
from click.testing import CliRunner
from conftest import fixture_path
from pi_copies import our_migrated, pi_fork, pi_migrated, read_lines, write_lines

from batchcompact.cli import cli

PATHS = [["--no-cache"], ["--cache-above", "0"]]  # the path without polars, and the parts


def report(tmp_path: Path, *args: object, cache: list[str], code: int = 0) -> dict:
    result = CliRunner().invoke(cli, ["report", *map(str, args), "--format", "json", *cache,
                                      "--cache-dir", str(tmp_path / "cache")], catch_exceptions=False)
    assert result.exit_code == code, result.output
    return json.loads(result.stdout)


TOTALS = ("requests", "input_tokens", "output_tokens", "cache_read_tokens", "cache_write_tokens", "cost_usd")


def totals(data: dict) -> dict:
    return {k: data["totals"][k] for k in TOTALS}


@pytest.mark.parametrize("cache", PATHS)
def test_a_pi_fork_counts_its_copied_requests_once(tmp_path, cache):
    """A session and a `/fork` of its first 60% (and a `forkFrom` copy of all of it into another project)
    report what the session alone reports; each request stays the original session's."""
    v1 = fixture_path("pi", "large-session.jsonl")
    original = pi_migrated(v1, tmp_path / "sessions" / "a" / "original.jsonl")
    alone = report(tmp_path, original, "--by", "session", cache=cache)
    assert alone["totals"]["requests"] > 400
    entries = read_lines(original)[1:]
    branch = pi_fork(original, tmp_path / "sessions" / "a", leaf_index=int(len(entries) * 0.6))
    moved = pi_fork(original, tmp_path / "sessions" / "b", cwd="/elsewhere")
    for forks in ([branch], [moved], [branch, moved]):
        both = report(tmp_path, original, *forks, "--by", "session", cache=cache)
        assert totals(both) == totals(alone), forks
        assert [row["session_id"] for row in both["rows"]] == [row["session_id"] for row in alone["rows"]]
    # across machines: the session exported on one, its fork on another, both exports read together
    exports = []
    for machine, path in (("alpha", original), ("beta", branch)):
        exports.append(tmp_path / f"{machine}.jsonl")
        result = CliRunner().invoke(cli, ["report", str(path), "--by", "request", "--format", "jsonl", "--machine",
                                          machine, "-o", str(exports[-1]), "--no-cache"], catch_exceptions=False)
        assert result.exit_code == 0, result.output
    assert totals(report(tmp_path, *exports, "--by", "machine", cache=cache)) == totals(alone)
    assert totals(report(tmp_path, exports[1], original, cache=cache)) == totals(alone)
    # a fork alone still reports its copied requests (nothing else holds them)
    fork_only = report(tmp_path, branch, "--by", "session", cache=cache)
    assert 0 < fork_only["totals"]["requests"] < alone["totals"]["requests"]


def one_request(path: Path, session: str, model: str) -> Path:
    """A session of one request whose times and counts are fixed: only its session id and model vary."""
    return write_lines(path, [
        {"type": "session", "version": 3, "id": session, "timestamp": "2026-03-01T10:00:00.000Z", "cwd": "/p"},
        {"type": "message", "id": "a1", "parentId": None, "timestamp": "2026-03-01T10:00:00.000Z",
         "message": {"role": "assistant", "content": [], "provider": "openai", "model": model, "timestamp": 1,
                     "usage": {"input": 1000, "output": 100, "cacheRead": 0, "cacheWrite": 0}}}])


@pytest.mark.parametrize("cache", PATHS)
def test_requests_alike_but_for_their_model_are_two_requests(tmp_path, cache):
    """The pi key holds the model: two sessions' requests at the same millisecond with the same counts are
    told apart by it (they were taken for one request and its copy), while a copy naming the same model is
    still counted once."""
    one_request(tmp_path / "a.jsonl", "s-a", "gpt-4o")
    one_request(tmp_path / "b.jsonl", "s-b", "gpt-4o-mini")
    assert report(tmp_path, tmp_path / "a.jsonl", tmp_path / "b.jsonl", cache=cache)["totals"]["requests"] == 2
    one_request(tmp_path / "copy" / "a.jsonl", "s-a-copy", "gpt-4o")
    assert report(tmp_path, tmp_path / "a.jsonl", tmp_path / "copy" / "a.jsonl",
                  cache=cache)["totals"]["requests"] == 1


@pytest.mark.parametrize("cache", PATHS)
def test_a_v1_session_and_its_migrated_copies_count_once(tmp_path, cache):
    """pi v1 rows were keyed by line number: the file, pi's v3 rewrite of it (random ids) and ours
    (derived ids) counted three times."""
    v1 = fixture_path("pi", "large-session.jsonl")
    alone = report(tmp_path, v1, cache=cache)
    by_pi = pi_migrated(v1, tmp_path / "pi" / "migrated.jsonl")
    by_us = our_migrated(v1, tmp_path / "ours" / "migrated.jsonl")
    for copies in ([by_pi], [by_us], [by_pi, by_us]):
        assert totals(report(tmp_path, v1, *copies, cache=cache)) == totals(alone), copies


# --- Copilot CLI's own compaction call ---------------------------------------------------------------

RECORDED_COPILOT = Path(__file__).parent / "data" / "recorded" / "copilot-cli" / "session-compacted.jsonl"


def copilot_log(tmp_path: Path, name: str, events: list[dict]) -> Path:
    return write_lines(tmp_path / name / "session-state" / "9bea0655" / "events.jsonl", events)


def by_kind(tmp_path: Path, *paths: Path, cache: list[str]) -> dict:
    result = CliRunner().invoke(cli, ["report", *map(str, paths), "--by", "request", "--format", "jsonl", *cache,
                                      "--cache-dir", str(tmp_path / "cache")], catch_exceptions=False)
    assert result.exit_code == 0, result.output
    out: dict[str, list] = {}
    for row in map(json.loads, result.stdout.splitlines()):
        out.setdefault(row["kind"], []).append(
            (row["model"], row["input_tokens"], row["output_tokens"], row["cache_read_tokens"]))
    return out


@pytest.mark.parametrize("cache", PATHS)
def test_copilots_own_compaction_call_counts_once(tmp_path, cache):
    """A real Copilot CLI log compacted by `copilot -p /compact` (tests/data/recorded): its 11 usage records,
    and the compaction call recorded only in `compaction_complete.compactionTokensUsed` (7,522 input
    including 3,761 cache reads, 9 output, gpt-4.1): 12 requests (11 before), once in two copies."""
    events = read_lines(RECORDED_COPILOT)
    records = [e["data"]["usage"] for e in events if e["type"] == "session.usage_record"]
    assert len(records) == 11
    log = copilot_log(tmp_path, "a", events)
    kinds = by_kind(tmp_path, log, cache=cache)
    assert kinds["compaction"] == [("gpt-4.1", 7522 - 3761, 9, 3761)]
    assert sorted(kinds["main"]) == sorted(("gpt-4.1", r["inputTokens"] - r["cacheReadTokens"], r["outputTokens"],
                                            r["cacheReadTokens"]) for r in records)
    copy = copilot_log(tmp_path, "b", events)
    assert by_kind(tmp_path, log, copy, cache=cache) == kinds
    # a log whose compaction call also has its own usage record counts that record, not both
    end = next(i for i, e in enumerate(events) if e["type"] == "session.compaction_complete")
    used = events[end]["data"]["compactionTokensUsed"]
    record = {"type": "session.usage_record", "id": "compaction-call", "timestamp": events[end]["timestamp"],
              "data": {"usage": {"model": "gpt-4.1", "inputTokens": used["inputTokens"],
                                 "outputTokens": used["outputTokens"], "cacheReadTokens": used["cacheReadTokens"],
                                 "cacheWriteTokens": 0, "interactionType": "conversation-compaction",
                                 "apiCallId": "chatcmpl-compaction"}}}
    both = copilot_log(tmp_path, "c", [*events[:end], record, *events[end:]])
    assert by_kind(tmp_path, both, cache=cache) == kinds


@pytest.mark.parametrize("cache", PATHS)
def test_a_copilot_compaction_batchcompact_wrote_is_left_to_the_run_report(tmp_path, cache):
    """Our writer records our summary calls in `compactionTokensUsed` too (no model, a name-based attempt
    id: adapters/copilot/write.py); the run report counts them, so the log does not count them again."""
    from batchcompact.adapters.copilot.write import NAMESPACE, compaction_tokens_used

    events = [e for e in read_lines(RECORDED_COPILOT) if not e["type"].startswith("session.compaction")]
    before = by_kind(tmp_path, copilot_log(tmp_path, "a", events), cache=cache)
    ours = {"type": "session.compaction_complete", "id": "e-ours", "timestamp": events[-1]["timestamp"],
            "data": {"success": True, "compactionAttemptId": str(uuid.uuid5(NAMESPACE, "s|leaf|kept|attempt")),
                     "compactionTokensUsed": compaction_tokens_used(
                         {"input": 900, "output": 80, "cacheRead": 100, "cacheWrite": 0}, 1)}}
    assert by_kind(tmp_path, copilot_log(tmp_path, "b", [*events, ours]), cache=cache) == before
    assert "compaction" not in before


# --- a request that names no model -------------------------------------------------------------------

def pi_requests(path: Path, models: list[str | None]) -> Path:
    """A pi session with one assistant message per model (None: the message names no model)."""
    lines: list[dict] = [{"type": "session", "version": 3, "id": "s-models", "timestamp": "2026-02-01T10:00:00.000Z",
                          "cwd": "/work/app"}]
    for n, model in enumerate(models):
        message = {"role": "assistant", "content": [], "timestamp": 1769940000000 + n,
                   "usage": {"input": 100 + n, "output": 10, "cacheRead": 0, "cacheWrite": 0}}
        if model is not None:
            message.update(provider="acme", model=model)
        lines.append({"type": "message", "id": f"e{n}", "parentId": f"e{n - 1}" if n else None,
                      "timestamp": f"2026-02-01T10:00:0{n}.000Z", "message": message})
    return write_lines(path, lines)


@pytest.mark.parametrize("cache", PATHS)
def test_a_request_with_no_model_is_named_and_every_unpriced_model_too(tmp_path, cache):
    session = pi_requests(tmp_path / "s.jsonl", [None, "no-such-model-x", None, "claude-sonnet-4-5"])
    result = CliRunner().invoke(cli, ["report", str(session), "--by", "model", "--format", "json", *cache,
                                      "--cache-dir", str(tmp_path / "cache")], catch_exceptions=False)
    assert result.exit_code == 0, result.output
    rows = {row["model"]: row["requests"] for row in json.loads(result.stdout)["rows"]}
    assert rows == {"(unknown model)": 2, "no-such-model-x": 1, "claude-sonnet-4-5": 1}
    warning = next(line for line in result.stderr.splitlines() if "no price for" in line)
    assert "(unknown model)" in warning and "no-such-model-x" in warning and "claude" not in warning
    table = CliRunner().invoke(cli, ["report", str(session), "--by", "model", *cache, "--cache-dir",
                                     str(tmp_path / "cache")], catch_exceptions=False)
    assert "(unknown model)" in table.stdout


# --- --breakdown keeps each group's rows together ----------------------------------------------------

def priced_session(path: Path, session: str, calls: list[tuple[str, str, float]]) -> Path:
    """A pi session of (provider, model, recorded cost) calls (the cost is what `auto` counts)."""
    lines: list[dict] = [{"type": "session", "version": 3, "id": session, "timestamp": "2026-02-01T10:00:00.000Z",
                          "cwd": "/work/app"}]
    minute = sum(map(ord, session)) % 60  # another session's calls are at other times
    for n, (provider, model, cost) in enumerate(calls):
        lines.append({"type": "message", "id": f"{session}-{n}", "parentId": None,
                      "timestamp": f"2026-02-01T10:{minute:02d}:{n:02d}.000Z",
                      "message": {"role": "assistant", "content": [], "provider": provider, "model": model,
                                  "timestamp": 1769940000000 + minute * 60_000 + n,
                                  "usage": {"input": 1000 + n, "output": 10, "cacheRead": 0, "cacheWrite": 0,
                                            "cost": {"total": cost}}}})
    return write_lines(path, lines)


CALLS = [("beta", "m1", 5.0), ("alpha", "m1", 4.0), ("alpha", "m2", 3.0), ("alpha", "m3", 2.0), ("beta", "m2", 1.0)]


@pytest.mark.parametrize("cache", PATHS)
def test_breakdown_rows_stay_with_their_group(tmp_path, cache):
    """By cost alone the rows went beta, alpha, alpha, alpha, beta; grouped: alpha ($9) then beta ($6),
    each group's models by cost."""
    session = priced_session(tmp_path / "s" / "a.jsonl", "s-a", CALLS)
    rows = report(tmp_path, session, "--by", "provider", "--breakdown", cache=cache)["rows"]
    assert [(r["provider"], r["model"]) for r in rows] == [
        ("alpha", "m1"), ("alpha", "m2"), ("alpha", "m3"), ("beta", "m1"), ("beta", "m2")]
    rows = report(tmp_path, session, "--by", "provider", "--breakdown", "--order", "asc", cache=cache)["rows"]
    assert [(r["provider"], r["model"]) for r in rows] == [
        ("beta", "m2"), ("beta", "m1"), ("alpha", "m3"), ("alpha", "m2"), ("alpha", "m1")]
    # --by machine: two machines' exports read back
    exports = []
    for machine, calls in (("beta", [c for c in CALLS if c[0] == "beta"]), ("alpha", [c for c in CALLS if c[0] == "alpha"])):
        folder = tmp_path / machine
        priced_session(folder / "s.jsonl", f"s-{machine}", calls)
        exports.append(tmp_path / f"{machine}.jsonl")
        result = CliRunner().invoke(cli, ["report", str(folder), "--by", "request", "--format", "jsonl", "--machine",
                                          machine, "-o", str(exports[-1]), "--no-cache"], catch_exceptions=False)
        assert result.exit_code == 0, result.output
    rows = report(tmp_path, *exports, "--by", "machine", "--breakdown", cache=cache)["rows"]
    assert [(r["machine"], r["model"]) for r in rows] == [
        ("alpha", "m1"), ("alpha", "m2"), ("alpha", "m3"), ("beta", "m1"), ("beta", "m2")]


# --- the Parquet report's period keys are dates ------------------------------------------------------

@pytest.mark.parametrize("by", ["day", "week", "month"])
def test_the_parquet_reports_period_keys_are_dates(tmp_path, by):
    """`--format parquet`: `date` and `week` (its first day) are Parquet dates, `month` its first day (they
    were strings); the footer names the table and its version (2). Same groups and sums as JSON."""
    import datetime as dt

    import polars as pl
    import pyarrow.parquet as pq

    samples = Path(__file__).parent.parent / "sample_sessions"
    out = tmp_path / "r.parquet"
    result = CliRunner().invoke(cli, ["report", str(samples), "--by", by, "--format", "parquet", "-o", str(out),
                                      "--cache-dir", str(tmp_path / "cache")], catch_exceptions=False)
    assert result.exit_code == 0, result.output
    key = {"day": "date", "week": "week", "month": "month"}[by]
    frame = pl.read_parquet(out)
    assert frame.schema[key] == pl.Date
    assert str(pq.read_schema(out).field(key).type) == "date32[day]"  # DuckDB's DATE
    metadata = pq.read_schema(out).metadata
    assert (metadata[b"batchcompact_table"], metadata[b"schema_version"]) == (b"report", b"2")
    labels = [row[key] for row in report(tmp_path, samples, "--by", by, cache=["--no-cache"])["rows"]]
    as_dates = [dt.date.fromisoformat(label + "-01" if by == "month" else label) for label in labels]
    assert frame[key].to_list() == as_dates and len(as_dates) > 0
    if by == "week":
        assert all(day.isoweekday() == 1 for day in as_dates)  # weeks start on Monday
    import jsonschema  # every row as schemas/report-v2.schema.json describes it

    schema = json.loads((Path(__file__).parent.parent / "schemas" / "report-v2.schema.json").read_text())
    for row in frame.to_dicts():
        plain = {k: v.isoformat() if isinstance(v, (dt.date, dt.datetime)) else v for k, v in row.items()}
        jsonschema.validate(plain, schema, format_checker=jsonschema.FormatChecker())


# --- an export cut short is named, and the report says it is incomplete ------------------------------

SAMPLES = Path(__file__).parent.parent / "sample_sessions"


def write_export(tmp_path: Path, fmt: str) -> Path:
    out = tmp_path / f"export.{fmt}"
    result = CliRunner().invoke(cli, ["report", str(SAMPLES), "--by", "request", "--format", fmt, "-o", str(out),
                                      "--machine", "laptop", "--no-cache"], catch_exceptions=False)
    assert result.exit_code == 0, result.output
    return out


def counted_rows(data: bytes, fmt: str) -> int:
    """The whole rows of an export's bytes that a report counts (some tokens or a recorded cost)."""
    import csv
    import io

    text = data.decode("utf-8")
    text = text[: text.rindex("\n") + 1]
    records = (list(csv.DictReader(io.StringIO(text))) if fmt == "csv"
               else [json.loads(line) for line in text.splitlines()])
    return sum(1 for r in records if int(r["total_tokens"]) > 0 or float(r["recorded_cost_usd"] or 0) > 0)


def run_report(tmp_path: Path, path: Path, cache: list[str]):
    return CliRunner().invoke(cli, ["report", str(path), "--by", "machine", "--format", "json", *cache,
                                    "--cache-dir", str(tmp_path / "cache")], catch_exceptions=False)


@pytest.mark.parametrize("cache", PATHS)
@pytest.mark.parametrize("fmt", ["jsonl", "csv"])
@pytest.mark.parametrize("where", ["mid-line", "line end"])
def test_an_export_cut_short_is_named_with_the_rows_it_lost(tmp_path, cache, fmt, where):
    """Half a synced export passed for a whole one (a 'line skipped' warning, exit 0, 27 requests of 495):
    it is named, with the rows it lost (every row of a version-2 export says how many it was written
    with), its rows so far are counted, and the report exits 1."""
    whole = write_export(tmp_path, fmt)
    data = whole.read_bytes()
    rows = data.count(b"\n") - (1 if fmt == "csv" else 0)
    assert rows > 100
    full = run_report(tmp_path, whole, cache)
    assert full.exit_code == 0 and "incomplete" not in full.stderr
    assert json.loads(full.stdout)["totals"]["requests"] == counted_rows(data, fmt)
    cut_at = len(data) // 2
    if where == "line end":
        cut_at = data.rindex(b"\n", 0, cut_at) + 1
    cut = tmp_path / "shared" / whole.name
    cut.parent.mkdir()
    cut.write_bytes(data[:cut_at])
    kept = data[:cut_at].count(b"\n") - (1 if fmt == "csv" else 0)  # whole rows left
    result = run_report(tmp_path, cut, cache)
    assert result.exit_code == 1, result.output
    ends = "it ends mid-line" if where == "mid-line" else "it ends early"
    assert (f"warning: {cut}: a usage export cut short (half-synced?): {rows - kept:,} of its {rows:,} rows are "
            f"missing ({ends}); the report is incomplete") in result.stderr
    assert "warning: the report is incomplete: 1 file not read or cut short (named above); exit 1" in result.stderr
    assert json.loads(result.stdout)["totals"]["requests"] == counted_rows(data[:cut_at], fmt)
    again = run_report(tmp_path, cut, cache)  # a stored report replayed says it too
    assert again.exit_code == 1 and "the report is incomplete" in again.stderr


def test_a_version_1_export_cut_mid_line_is_named_without_a_count(tmp_path):
    """A version-1 export (before `export_rows`) cut mid-line: named, incomplete, no count to give."""
    lines = [json.loads(line) for line in write_export(tmp_path, "jsonl").read_text().splitlines()]
    old = "".join(json.dumps({**{k: v for k, v in r.items() if k != "export_rows"}, "export_version": 1},
                             separators=(",", ":")) + "\n" for r in lines)
    cut = tmp_path / "old.jsonl"
    cut.write_text(old[: len(old) // 2])
    result = run_report(tmp_path, cut, ["--no-cache"])
    assert result.exit_code == 1, result.output
    assert (f"warning: {cut}: a usage export cut short (half-synced?): it ends mid-line; how many rows it lost "
            "is not known (an export of version 1 does not say); the report is incomplete") in result.stderr


# --- Claude Code: two calls with both ids repeated -----------------------------------------------------

def claude_line(n: int, usage: dict, *, message_id: str = "msg_mock", request_id: str = "req_mock") -> dict:
    return {"type": "assistant", "uuid": f"u{n}", "parentUuid": f"u{n - 1}" if n else None, "sessionId": "s-mock",
            "cwd": "/work/app", "timestamp": f"2026-02-01T10:00:{n:02d}.000Z", "requestId": request_id,
            "message": {"id": message_id, "role": "assistant", "model": "claude-sonnet-4-5",
                        "content": [{"type": "text", "text": f"block {n}"}], "usage": usage}}


def usage(inp: int, out: int, cache_read: int = 0) -> dict:
    return {"input_tokens": inp, "output_tokens": out, "cache_read_input_tokens": cache_read,
            "cache_creation_input_tokens": 0}


@pytest.mark.parametrize("cache", PATHS)
def test_claude_calls_that_repeat_both_ids_are_told_apart_by_their_prompt(tmp_path, cache):
    """A server that answers every request with one message id and request id: each call streamed as two
    lines (the prompt side fixed, the output growing); the second call has another prompt side. Two
    requests (they were one), once in a copy of the file."""
    lines = [claude_line(0, usage(10, 3, 100)), claude_line(1, usage(10, 40, 100)),  # call 1, streamed
             claude_line(2, usage(12, 5, 150)), claude_line(3, usage(12, 60, 150))]  # call 2, streamed
    session = write_lines(tmp_path / "projects" / "-work-app" / "s-mock.jsonl", lines)
    data = report(tmp_path, session, cache=cache)
    assert (data["totals"]["requests"], data["totals"]["input_tokens"], data["totals"]["output_tokens"],
            data["totals"]["cache_read_tokens"]) == (2, 22, 100, 250)
    copy = write_lines(tmp_path / "copy" / "s-mock.jsonl", lines)
    assert totals(report(tmp_path, session, copy, cache=cache)) == totals(data)
    # the usual case is unchanged: the lines of one response (one prompt side) are one request
    one = write_lines(tmp_path / "one" / "s.jsonl", lines[:2])
    assert report(tmp_path, one, cache=cache)["totals"]["output_tokens"] == 40
