"""`batchcompact run` end to end: the installed CLI on real files, with the builtin summarizer or litellm
talking to the loopback test server (tests/llm_server.py).

Each test drives `batchcompact.cli:main` in-process (so exit codes are the real mapped ones and litellm is
imported once per test session) on copies of the shared pi fixtures or on small sessions built here.
"""

from __future__ import annotations

import hashlib
import json
import os
import re
import shutil
import threading
import time
from pathlib import Path
from typing import Any

import pytest
from conftest import SAMPLES, cli_invoker, fixture_path
from run_cli import API_KEY, FAST, MODEL, Result, model_args, write_session

FORCE = ("--force", "--keep-recent-tokens", "1500")


# -- helpers ---------------------------------------------------------------------------------------------
@pytest.fixture
def bc(capsys, monkeypatch):
    """Run `batchcompact ARGS...` through `batchcompact.cli:main`: a `Result` (conftest's `cli_invoker`)."""
    run = cli_invoker(capsys, monkeypatch)
    return lambda *args: Result(*run(*args))


def small_archive(root: Path, names: tuple[str, ...] = ("alpha", "bravo", "charlie")) -> dict[str, Path]:
    return {name: write_session(root / "project" / f"{name}.jsonl", name) for name in names}


def copy_fixtures(dest: Path) -> list[Path]:
    folder = fixture_path("pi", "before-compaction.jsonl").parent
    dest.mkdir(parents=True, exist_ok=True)
    copies = []
    for source in sorted(folder.glob("*.jsonl")):
        target = dest / source.name
        shutil.copyfile(source, target)
        copies.append(target)
    return copies


def snapshot(paths) -> dict[Path, tuple[bytes, int]]:
    return {p: (p.read_bytes(), p.stat().st_mtime_ns) for p in paths}


def session_files(folder: Path) -> list[Path]:
    """Every file under `folder` except the run's own state and reports."""
    return sorted(p for p in folder.rglob("*") if p.is_file() and ".batchcompact" not in p.relative_to(folder).parts)


def rows_by_name(result: Result) -> dict[str, dict[str, Any]]:
    return {Path(r["input_path"]).stem: r for r in result.json()["rows"]}


def session_of(request) -> str:
    """The session a summary request is about (every message of a built session carries `[name]`)."""
    names = set(re.findall(r"\[([a-z0-9]+)\] (?:request|answer) \d+:", request.user_prompt))
    assert len(names) == 1, names
    return names.pop()


def assert_valid(bc, *paths: Path) -> None:
    result = bc("validate", *paths)
    assert result.code == 0, result.out + result.err


# -- output-dir mode -------------------------------------------------------------------------------------
def test_output_dir_leaves_originals_and_writes_valid_compacted_sessions(bc, tmp_path):
    originals = copy_fixtures(tmp_path / "in")
    before = snapshot(originals)
    out = tmp_path / "out"

    result = bc("run", tmp_path / "in", "--output-dir", out, "--force", *FAST, "--format", "json")

    assert result.code == 0, result.err
    assert snapshot(originals) == before
    outputs = [out / p.name for p in originals]
    assert session_files(out) == sorted(outputs)
    assert {r["status"] for r in result.json()["rows"]} == {"compacted"}
    assert_valid(bc, *outputs)
    for original, output in zip(originals, outputs, strict=True):
        old_header = json.loads(before[original][0].split(b"\n", 1)[0])
        if old_header.get("version") == 3:
            assert output.read_bytes().startswith(before[original][0])
        else:  # older versions are written as v3, as pi migrates them
            new_header = json.loads(output.read_bytes().split(b"\n", 1)[0])
            assert (new_header["version"], new_header["id"]) == (3, old_header["id"])
        compaction = json.loads(output.read_bytes().splitlines()[-1])
        assert compaction["type"] == "compaction"
        first_kept_line = next(
            n for n, line in enumerate(output.read_text().splitlines(), 1)
            if json.loads(line).get("id") == compaction["firstKeptEntryId"]
        )
        shown = bc("show", output, "--context")
        assert shown.code == 0
        headers = [line for line in shown.out.splitlines() if line.startswith("--- ")]
        assert headers[0] == "--- user (compactionSummary, synthesized)"
        assert compaction["summary"].splitlines()[0] in shown.out
        kept = [int(h.rsplit("line ", 1)[1].rstrip(")")) for h in headers[1:]]
        assert kept and min(kept) >= first_kept_line and kept == sorted(kept)


def test_rerun_makes_no_model_call_and_reports_finished(bc, tmp_path, llm_server):
    small_archive(tmp_path / "in")
    args = ("run", tmp_path / "in", "--output-dir", tmp_path / "out", *FORCE, *FAST, *model_args(llm_server), "--format", "json")

    first = bc(*args)
    assert first.code == 0, first.err
    assert {r["status"] for r in first.json()["rows"]} == {"compacted"}
    calls = len(llm_server.requests)
    assert calls >= 3
    outputs = snapshot(session_files(tmp_path / "out"))

    second = bc(*args)

    assert second.code == 0, second.err
    assert len(llm_server.requests) == calls
    for row in second.json()["rows"]:
        assert row["status"] == "skipped"
        assert row["reason"].startswith("finished in an earlier run")
    assert snapshot(session_files(tmp_path / "out")) == outputs


def test_min_age_skips_recently_modified_files(bc, tmp_path):
    small_archive(tmp_path / "in", ("alpha",))

    result = bc("run", tmp_path / "in", "--output-dir", tmp_path / "out", *FORCE, "--jobs", "1", "--format", "json")

    assert result.code == 0
    (row,) = result.json()["rows"]
    assert row["status"] == "skipped" and "--min-age" in row["reason"]
    assert session_files(tmp_path / "out") == []


def test_a_file_dated_in_the_future_is_said_to_be_so(bc, tmp_path):
    """A file copied from a machine whose clock runs ahead stays under --min-age until this clock gets
    there, and the reason says so (it said "modified -172800s ago")."""
    (path,) = small_archive(tmp_path / "in", ("alpha",)).values()
    ahead = time.time() + 2 * 86400
    os.utime(path, (ahead, ahead))

    result = bc("run", tmp_path / "in", "--output-dir", tmp_path / "out", "--min-age", "1h", "--jobs", "1",
                "--format", "json")

    assert result.code == 0
    (row,) = result.json()["rows"]
    assert row["status"] == "skipped"
    assert re.fullmatch(r"modified 17\d{4}s in the future \(a clock ahead of this machine's\?\), under --min-age "
                        r"until then \(live session\?\)", row["reason"]), row["reason"]


# -- in place --------------------------------------------------------------------------------------------
@pytest.mark.parametrize("backup", [True, False])
def test_in_place_replaces_atomically_with_optional_backup(bc, tmp_path, backup):
    originals = list(small_archive(tmp_path / "in", ("alpha", "bravo")).values())
    legacy = tmp_path / "in" / "project" / "legacy.jsonl"  # v1: rewritten as v3, as pi does
    shutil.copyfile(SAMPLES / "pi" / "legacy-v1.jsonl", legacy)
    before = snapshot([*originals, legacy])

    extra = () if backup else ("--no-backup",)
    result = bc("run", tmp_path / "in", "--in-place", *extra, *FORCE, *FAST,
                "--state", tmp_path / "state.sqlite", "--report-dir", tmp_path / "reports", "--format", "json")

    assert result.code == 0, result.out + result.err
    assert {r["status"] for r in result.json()["rows"]} == {"compacted"}
    names = {p.name for p in before}
    expected = names | ({n + ".bak" for n in names} if backup else set())
    assert {p.name for p in legacy.parent.iterdir()} == expected  # and no temp file left behind
    for path, (old, _) in before.items():
        new = path.read_bytes()
        assert json.loads(new.splitlines()[-1])["type"] == "compaction"
        if path == legacy:
            assert json.loads(new.split(b"\n", 1)[0])["version"] == 3
        else:
            assert len(new) > len(old) and new.startswith(old)
        if backup:
            assert Path(str(path) + ".bak").read_bytes() == old
    assert_valid(bc, *before)


# -- lock ------------------------------------------------------------------------------------------------
def test_a_second_run_on_a_held_state_is_refused_with_exit_3(bc, tmp_path):
    from batchcompact.pipeline.state import RunState

    small_archive(tmp_path / "in", ("alpha",))
    out = tmp_path / "out"
    args = ("run", tmp_path / "in", "--output-dir", out, *FORCE, *FAST)

    with RunState(out / ".batchcompact" / "state.sqlite"):
        result = bc(*args)
    assert result.code == 3
    assert result.err.strip() == (
        f"Error: another batchcompact run holds the lock on {out / '.batchcompact' / 'state.sqlite'} "
        f"(pid {os.getpid()}); wait for it to finish, or pass a different --state"
    )
    assert session_files(out) == []

    assert bc(*args).code == 0  # the lock is released with the holder
    assert session_files(out) == [out / "project" / "alpha.jsonl"]


# -- a file that changes while it is compacted -----------------------------------------------------------
@pytest.mark.parametrize("in_place", [False, True])
def test_a_file_modified_during_its_summary_is_not_replaced(bc, tmp_path, llm_server, in_place):
    from llm_server import Answer

    paths = small_archive(tmp_path / "in", ("alpha", "bravo"))
    live = paths["bravo"]
    # a whole entry, then half of the next one: the agent is caught in the middle of a write
    appended = json.dumps({"type": "message", "id": "feedbeef", "parentId": None,
                           "timestamp": "2026-01-02T00:00:00.000Z",
                           "message": {"role": "user", "content": "still typing", "timestamp": 9}}) + "\n"
    appended += '{"type":"message","id":"feedbee2","parentId":"feedbeef","timestamp":"2026-01-02'
    before = snapshot(paths.values())

    once = threading.Lock()

    def behaviour(body):
        if "[bravo]" in json.dumps(body) and once.acquire(blocking=False):
            with open(live, "a") as handle:  # the agent writes while the summary is in flight
                handle.write(appended)
        return Answer()

    llm_server.default = behaviour
    where = ("--in-place", "--state", tmp_path / "state.sqlite", "--report-dir", tmp_path / "r") if in_place \
        else ("--output-dir", tmp_path / "out")
    result = bc("run", tmp_path / "in", *where, *FORCE, *FAST, *model_args(llm_server), "--format", "json")

    rows = rows_by_name(result)
    assert rows["bravo"]["status"] == "changed_during_run", rows["bravo"]["reason"]
    assert result.code == 0
    assert rows["alpha"]["status"] == "compacted"
    assert live.read_bytes() == before[live][0] + appended.encode()  # the agent's write survived
    if in_place:
        assert not Path(str(live) + ".bak").exists()
        assert {p.name for p in live.parent.iterdir()} == {"alpha.jsonl", "alpha.jsonl.bak", "bravo.jsonl"}
    else:
        assert session_files(tmp_path / "out") == [tmp_path / "out" / "project" / "alpha.jsonl"]


# -- budget ----------------------------------------------------------------------------------------------
def test_max_cost_below_the_estimate_refuses_to_start(bc, tmp_path, llm_server):
    small_archive(tmp_path / "in")

    result = bc("run", tmp_path / "in", "--output-dir", tmp_path / "out", *FORCE, *FAST, *model_args(llm_server),
                "--max-cost", "0.00001")

    assert result.code == 3
    assert "exceeds --max-cost $0.0000; nothing was summarized" in result.err
    assert llm_server.requests == []
    assert session_files(tmp_path / "out") == []


def test_max_cost_with_an_unpriced_model_refuses_to_start(bc, tmp_path, llm_server):
    small_archive(tmp_path / "in", ("alpha",))
    args = [a if a != MODEL else "openai/no-such-model-in-the-price-map" for a in model_args(llm_server)]

    result = bc("run", tmp_path / "in", "--output-dir", tmp_path / "out", *FORCE, *FAST, *args, "--max-cost", "1")

    assert result.code == 3
    assert result.err.strip() == ("Error: --max-cost cannot be enforced: openai/no-such-model-in-the-price-map has no "
                                  "known price (pass --pricing FILE with its prices); nothing was summarized")
    assert llm_server.requests == []
    assert session_files(tmp_path / "out") == []


def test_max_cost_reached_mid_run_stops_launching_calls(bc, tmp_path, llm_server):
    from llm_server import Answer

    small_archive(tmp_path / "in", ("alpha", "bravo", "charlie", "delta"))
    llm_server.default = Answer(prompt_tokens=400_000, completion_tokens=1_000)  # ~$0.06 per call

    # the estimate (a few thousand prompt tokens per session) is far below the budget; the first
    # session's one or two calls (a split turn) reach it, after which no call is launched
    result = bc("run", tmp_path / "in", "--output-dir", tmp_path / "out", *FORCE, *FAST, *model_args(llm_server),
                "--max-cost", "0.1", "--concurrency", "1", "--format", "json")

    assert result.code == 1, result.err  # sessions left uncompacted by the budget are failed ones (#56)
    rows = rows_by_name(result)
    statuses = sorted(r["status"] for r in rows.values())
    assert statuses.count("compacted") >= 1 and statuses.count("budget_exhausted") >= 1
    assert set(statuses) == {"compacted", "budget_exhausted"}
    sent = {session_of(r) for r in llm_server.requests}
    assert sent == {name for name, r in rows.items() if r["status"] == "compacted"}
    outputs = {p.stem for p in session_files(tmp_path / "out")}
    assert outputs == sent
    for row in rows.values():
        if row["status"] == "budget_exhausted":
            assert "budget" in row["reason"] and row["output_path"] is None


# -- exit codes ------------------------------------------------------------------------------------------
def test_a_permanent_error_fails_one_session_with_exit_1(bc, tmp_path, llm_server):
    from llm_server import Answer, Error

    small_archive(tmp_path / "in")
    llm_server.default = lambda body: Error(400, "unsupported parameter") if "[bravo]" in json.dumps(body) \
        else Answer()

    result = bc("run", tmp_path / "in", "--output-dir", tmp_path / "out", *FORCE, *FAST, *model_args(llm_server), "--format", "json")

    assert result.code == 1
    rows = rows_by_name(result)
    assert {n: r["status"] for n, r in rows.items()} == {"alpha": "compacted", "bravo": "failed",
                                                         "charlie": "compacted"}
    assert "rejected the request" in rows["bravo"]["reason"]
    assert {p.stem for p in session_files(tmp_path / "out")} == {"alpha", "charlie"}


@pytest.mark.parametrize(
    "args, message",
    [
        (("--output-dir", "OUT", "--in-place"), "Error: --output-dir and --in-place cannot be combined: the run "
                                                "writes either to the folder or over the originals; drop one"),
        ((), "choose where to write: --output-dir DIR, or --in-place"),
        (("--output-dir", "OUT", "--min-age", "soon"), "'soon' is not a duration like 30s, 10m, 2h or 1d"),
    ],
)
def test_usage_errors_exit_2(bc, tmp_path, args, message):
    small_archive(tmp_path / "in", ("alpha",))
    args = tuple(str(tmp_path / "out") if a == "OUT" else a for a in args)

    result = bc("run", tmp_path / "in", *args)

    assert result.code == 2
    assert message in result.err
    assert not (tmp_path / "out").exists()


def test_a_missing_path_is_a_usage_error(bc, tmp_path):
    result = bc("run", tmp_path / "nope", "--output-dir", tmp_path / "out")
    assert result.code == 2
    assert result.err.strip() == f"Error: path not found: {tmp_path / 'nope'}"


def test_authentication_error_aborts_with_exit_3_and_writes_nothing(bc, tmp_path, llm_server):
    from llm_server import Error

    originals = small_archive(tmp_path / "in")
    before = snapshot(originals.values())
    llm_server.default = Error(401, "Incorrect API key provided", type="invalid_request_error",
                               code="invalid_api_key")

    result = bc("run", tmp_path / "in", "--output-dir", tmp_path / "out", *FORCE, *FAST, *model_args(llm_server),
                "--concurrency", "1", "--format", "json")

    assert result.code == 3
    aborted = result.json()["aborted"]
    assert aborted.startswith(f"{MODEL} (HTTP 401) refused the credentials: ")
    assert aborted.endswith("Incorrect API key provided (check --api-key / the provider's key variable)")
    rows = rows_by_name(result)
    tried = [n for n, r in rows.items() if r["status"] == "failed"]
    assert len(tried) == 1 and rows[tried[0]]["reason"] == f"run aborted: {aborted}"
    for name, row in rows.items():  # the others were never sent: the run stopped before them
        if name not in tried:
            assert (row["status"], row["reason"]) == ("skipped", f"not attempted: run aborted: {aborted}")
    assert len({session_of(r) for r in llm_server.requests}) == 1  # no other session's call was launched
    assert session_files(tmp_path / "out") == []
    assert snapshot(originals.values()) == before
    assert API_KEY not in result.out + result.err

    text = bc("run", tmp_path / "in", "--output-dir", tmp_path / "out2", *FORCE, *FAST, *model_args(llm_server))
    assert text.code == 3
    assert text.out.splitlines()[-1] == f"run aborted: {aborted}"
    assert API_KEY not in text.out + text.err


# -- the Parquet report ----------------------------------------------------------------------------------
def test_parquet_report_matches_outcomes_and_server_usage(bc, tmp_path, llm_server):
    import polars as pl
    import pyarrow.parquet as pq
    from llm_server import Answer, Error

    from batchcompact.pricing import PriceTable

    small_archive(tmp_path / "in", ("alpha", "bravo", "charlie", "delta"))
    usage = {"alpha": (1234, 56), "bravo": (2345, 67), "delta": (4567, 89)}

    def behaviour(body):
        name = next(n for n in ("alpha", "bravo", "charlie", "delta") if f"[{n}]" in json.dumps(body))
        if name == "charlie":
            return Error(400, "content policy")
        return Answer(prompt_tokens=usage[name][0], completion_tokens=usage[name][1])

    llm_server.default = behaviour
    out = tmp_path / "out"
    args = ("run", tmp_path / "in", "--output-dir", out, *FORCE, *FAST, *model_args(llm_server))
    assert bc(*args).code == 1
    assert bc(*args).code == 1  # the failed session is tried again; the others are finished

    files = sorted((out / ".batchcompact" / "reports").glob("compactions-*.parquet"))
    assert len(files) == 2
    metadata = pq.read_schema(files[0]).metadata
    assert metadata[b"schema_version"] == b"3"
    report = pl.read_parquet(files)
    first_run, second_run = (pq.read_table(f, columns=["run_id"])["run_id"][0].as_py() for f in files)
    if report.filter(pl.col("run_id") == first_run)["started_at"][0] > \
            report.filter(pl.col("run_id") == second_run)["started_at"][0]:
        first_run, second_run = second_run, first_run
    first = {Path(r["input_path"]).stem: r for r in report.filter(pl.col("run_id") == first_run).to_dicts()}
    second = {Path(r["input_path"]).stem: r for r in report.filter(pl.col("run_id") == second_run).to_dicts()}

    sent: dict[str, list] = {}
    for request in llm_server.requests:
        sent.setdefault(session_of(request), []).append(request)
    price = PriceTable.load(None).lookup(MODEL).rates()[0]
    for name, (prompt, completion) in usage.items():
        row = first[name]
        calls = len(sent[name])
        assert row["status"] == "compacted"
        assert row["output_path"] == str(out / "project" / f"{name}.jsonl")
        assert row["calls"] == calls and row["attempts"] == calls
        assert (row["prompt_tokens"], row["completion_tokens"]) == (prompt * calls, completion * calls)
        assert row["cost_usd"] == pytest.approx(
            calls * (prompt * price.input_cost_per_token + completion * price.output_cost_per_token))
        assert row["model"] == MODEL and row["session_id"] == f"session-{name}" and row["format"] == "pi"
        assert row["tokens_before"] > row["tokens_after_est"] > 0
        written = json.loads(Path(row["output_path"]).read_text().splitlines()[-1])
        assert written["usage"]["input"] == row["prompt_tokens"]
        assert written["usage"]["output"] == row["completion_tokens"]
        assert written["usage"]["cost"]["total"] == pytest.approx(row["cost_usd"])
        assert written["firstKeptEntryId"] == row["first_kept_entry_id"]
        assert second[name]["status"] == "skipped" and second[name]["calls"] == 0
    assert first["charlie"]["status"] == second["charlie"]["status"] == "failed"
    assert "content policy" in first["charlie"]["reason"]
    assert first["charlie"]["output_path"] is None
    # tried once per run (a failed summary was never paid for, so it is not in the state)
    assert len(sent["charlie"]) == first["charlie"]["attempts"] + second["charlie"]["attempts"] > 0
    assert report["ended_at"].is_not_null().all()
    assert (report["ended_at"] >= report["started_at"]).all()

    # `report` over the compacted sessions and the run reports counts each summary once: the entries'
    # usage and the run report rows share a key. charlie's failed attempts were never paid for.
    from batchcompact.report import collect_usage
    from batchcompact.report.aggregate import scan_usage

    collected = collect_usage([out], use_cache=False)  # the sessions and, inside, the run reports
    try:
        usage_rows = scan_usage(collected.parts).filter(pl.col("kind") == "compaction").collect()
    finally:
        collected.cleanup()
    per_session = usage_rows.group_by("session_id").agg(pl.col("output_tokens").sum(), pl.len().alias("n"))
    assert {r["session_id"]: (r["output_tokens"], r["n"]) for r in per_session.to_dicts()} == {
        f"session-{name}": (completion * len(sent[name]), 1) for name, (_, completion) in usage.items()
    }


def test_the_server_sees_each_summary_once_even_with_concurrent_sessions(bc, tmp_path, llm_server):
    from llm_server import Answer

    small_archive(tmp_path / "in", tuple(f"s{i}" for i in range(6)))
    seen: list[str] = []
    lock = threading.Lock()

    def behaviour(body):
        with lock:
            seen.append(hashlib.sha256(json.dumps(body["messages"]).encode()).hexdigest())
        return Answer(delay=0.05)

    llm_server.default = behaviour
    result = bc("run", tmp_path / "in", "--output-dir", tmp_path / "out", *FORCE, *FAST, *model_args(llm_server),
                "--concurrency", "4", "--format", "json")

    assert result.code == 0
    assert len(seen) == len(set(seen)) == sum(r["calls"] for r in result.json()["rows"])
    assert llm_server.max_in_flight <= 4


def test_in_place_rerun_makes_no_model_call(bc, tmp_path, llm_server):
    paths = small_archive(tmp_path / "in", ("alpha", "bravo"))
    args = ("run", tmp_path / "in", "--in-place", "--state", tmp_path / "state.sqlite", "--report-dir",
            tmp_path / "reports", *FORCE, *FAST, *model_args(llm_server), "--format", "json")
    assert bc(*args).code == 0
    calls = len(llm_server.requests)
    compacted = snapshot(paths.values())

    second = bc(*args)

    assert second.code == 0
    assert len(llm_server.requests) == calls  # --force does not compact our own output a second time
    assert {(r["status"], r["reason"]) for r in second.json()["rows"]} == {("skipped", "already compacted")}
    assert snapshot(paths.values()) == compacted


def test_an_internal_error_on_one_session_fails_only_that_session(bc, tmp_path, monkeypatch):
    from batchcompact.adapters.pi import write as pi

    small_archive(tmp_path / "in")
    real = pi.build_compaction

    def broken(session, *args, **kwargs):
        if session.session_id == "session-bravo":
            raise KeyError("boom")
        return real(session, *args, **kwargs)

    monkeypatch.setattr(pi, "build_compaction", broken)
    result = bc("run", tmp_path / "in", "--output-dir", tmp_path / "out", *FORCE, *FAST, "--format", "json")

    assert result.code == 4  # a bug, said as such; the other sessions were still compacted
    rows = rows_by_name(result)
    assert {n: r["status"] for n, r in rows.items()} == {"alpha": "compacted", "bravo": "failed",
                                                         "charlie": "compacted"}
    assert rows["bravo"]["reason"] == ("internal error: KeyError('boom') (a bug in batchcompact; "
                                       "rerun with BATCHCOMPACT_DEBUG=1 for the traceback)")
    assert "Traceback" not in result.err
    assert "  1 failed: 1 internal error" in result.err.splitlines()
    assert [line for line in result.err.splitlines() if "bravo" in line] == [
        f"  failed: {tmp_path / 'in' / 'project' / 'bravo.jsonl'}: {rows['bravo']['reason']}"]
    assert {p.stem for p in session_files(tmp_path / "out")} == {"alpha", "charlie"}
    assert len(list((tmp_path / "out" / ".batchcompact" / "reports").glob("*.parquet"))) == 1


def test_an_output_dir_that_would_overwrite_originals_is_refused(bc, tmp_path):
    paths = small_archive(tmp_path / "in", ("alpha",))
    before = snapshot(paths.values())

    result = bc("run", tmp_path / "in", "--output-dir", tmp_path / "in", *FORCE, *FAST)

    assert result.code == 2
    assert result.err.strip() == (f"Error: --output-dir {tmp_path / 'in'} would overwrite the original "
                                  f"{paths['alpha']}; choose another folder, or --in-place")
    assert snapshot(paths.values()) == before
    assert sorted(p.name for p in (tmp_path / "in").rglob("*")) == ["alpha.jsonl", "project"]


def test_outputs_inside_the_inputs_are_not_compacted_again(bc, tmp_path):
    small_archive(tmp_path / "in", ("alpha", "bravo"))
    args = ("run", tmp_path / "in", "--output-dir", tmp_path / "in" / "compacted", *FORCE, *FAST, "--format", "json")
    assert bc(*args).code == 0

    second = bc(*args)

    assert second.code == 0
    assert sorted(Path(r["input_path"]).name for r in second.json()["rows"]) == ["alpha.jsonl", "bravo.jsonl"]
    assert not (tmp_path / "in" / "compacted" / "compacted").exists()


def test_inputs_named_inside_the_output_dir_are_compacted(bc, tmp_path):
    """`run archive/project --output-dir archive`: the inputs sit inside the output folder, and are inputs
    all the same (every one was left out, "0 sessions", exit 0); the outputs beside them are not read
    back on a rerun."""
    paths = small_archive(tmp_path / "archive", ("alpha", "bravo"))
    before = snapshot(paths.values())
    args = ("run", tmp_path / "archive" / "project", "--output-dir", tmp_path / "archive", *FORCE, *FAST,
            "--format", "json")

    first = bc(*args)

    assert first.code == 0, first.err
    assert sorted((Path(r["input_path"]).name, r["status"]) for r in first.json()["rows"]) == [
        ("alpha.jsonl", "compacted"), ("bravo.jsonl", "compacted")]
    assert sorted(p.name for p in (tmp_path / "archive").glob("*.jsonl")) == ["alpha.jsonl", "bravo.jsonl"]
    assert snapshot(paths.values()) == before
    second = bc(*args)
    assert sorted((Path(r["input_path"]).name, r["status"]) for r in second.json()["rows"]) == [
        ("alpha.jsonl", "skipped"), ("bravo.jsonl", "skipped")]


@pytest.mark.parametrize("model", ["builtin", "litellm"])
def test_a_session_with_half_an_emoji_is_compacted(bc, tmp_path, llm_server, model):
    """A JavaScript agent that cuts a string inside an emoji writes a lone surrogate (`"\\ud83d"`): valid JSON
    to it and to the standard library, and no UTF-8 at all. Such a session failed every run: an internal
    error writing the compaction (built-in), "server error (HTTP 500)" before any request (litellm). Now
    the provider gets U+FFFD, and a written line keeps the surrogate escaped, as JSON.stringify writes it."""
    path = write_session(tmp_path / "in" / "project" / "s.jsonl", "emoji\ud83d")
    assert b"\\ud83d" in path.read_bytes()
    chosen = model_args(llm_server) if model == "litellm" else ("--model", "builtin")

    result = bc("run", tmp_path / "in", "--output-dir", tmp_path / "out", *FORCE, *FAST, *chosen, "--format", "json")

    assert result.code == 0, result.err
    assert [r["status"] for r in result.json()["rows"]] == ["compacted"], result.json()["rows"]
    written = tmp_path / "out" / "project" / "s.jsonl"
    compaction = [json.loads(line) for line in written.read_text(encoding="utf-8").splitlines()][-1]
    assert compaction["type"] == "compaction"
    assert_valid(bc, written)
    if model == "litellm":
        sent = json.dumps([r.body for r in llm_server.requests], ensure_ascii=False)
        assert "emoji\ufffd" in sent and "\\ud83d" not in sent
    else:  # the summary quotes the request; its line holds the surrogate as the input did: escaped
        assert "emoji\ud83d" in compaction["summary"]
        assert b"emoji\\ud83d" in written.read_bytes().splitlines()[-1]


def test_readme_main_job_on_the_sample_sessions(bc, tmp_path):
    shutil.copytree(SAMPLES, tmp_path / "sample_sessions")
    inputs = list((tmp_path / "sample_sessions").rglob("*.jsonl"))
    before = snapshot(inputs)
    out = tmp_path / "out"

    result = bc("run", tmp_path / "sample_sessions", "--output-dir", out, "--min-age", "0", "--format", "json")

    rows = result.json()["rows"]
    assert [r for r in rows if r["status"] == "failed"] == [] and result.code == 0  # the README's first command
    assert snapshot(inputs) == before
    outputs = session_files(out)
    assert sorted(outputs) == sorted(Path(r["output_path"]) for r in rows if r["status"] == "compacted")
    assert len(outputs) >= 3
    assert_valid(bc, *outputs)
    for output in outputs:
        headers = [line for line in bc("show", output, "--context").out.splitlines() if line.startswith("--- ")]
        assert headers[0] == "--- user (compactionSummary, synthesized)" and len(headers) > 1, output


def test_limit_caps_the_sessions_compacted(bc, tmp_path):
    small_archive(tmp_path / "in")
    args = ("run", tmp_path / "in", "--output-dir", tmp_path / "out", *FORCE, *FAST, "--format", "json", "--limit", "1")

    first = bc(*args)
    second = bc(*args)

    assert first.code == second.code == 0
    for result, compacted in ((first, {"alpha"}), (second, {"bravo"})):
        rows = rows_by_name(result)
        assert {n for n, r in rows.items() if r["status"] == "compacted"} == compacted
        assert {r["reason"] for r in rows.values() if r["status"] == "skipped" and not r["reason"].startswith(
            "finished")} == {"--limit 1 reached"}
    assert {p.stem for p in session_files(tmp_path / "out")} == {"alpha", "bravo"}
