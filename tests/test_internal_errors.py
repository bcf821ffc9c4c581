"""Failures that must not hide: a bug is said as a bug (one line naming the file, "internal error", the
BATCHCOMPACT_DEBUG=1 hint, exit 4) while bad input keeps its own one-line reasons; preflight tells an
unknown model from litellm failing; the tokenizer says once when it estimates.

Bugs are injected with monkeypatch into the code the file tasks run: with `--jobs 1` they run in this
process, with `--jobs 2` in forked workers that inherit the patch.
"""

from __future__ import annotations

import json
import logging
import shutil
from pathlib import Path

import pytest
from conftest import SAMPLES

from batchcompact.errors import DEBUG_HINT

HINT = f"({DEBUG_HINT})"
BROKEN = "small-fix.jsonl"


@pytest.fixture
def archive(tmp_path) -> Path:
    target = tmp_path / "in"
    shutil.copytree(SAMPLES / "pi", target, ignore=shutil.ignore_patterns("*.md", "*.json"))
    return target


def break_reading(monkeypatch, *modules) -> None:
    """Reading BROKEN raises a KeyError (a bug, not bad input); every other file reads normally."""
    from batchcompact.pipeline import planning

    real = planning.read_session

    def read_session(path, **options):
        if Path(path).name == BROKEN:
            raise KeyError("boom")
        return real(path, **options)

    for module in (planning, *modules):
        monkeypatch.setattr(module, "read_session", read_session)


def internal_lines(err: str) -> list[str]:
    """The lines that say a bug, but plan's count of its error rows by kind (`  1 error: 1 internal error`)."""
    return [line for line in err.splitlines() if "internal error" in line and not line.startswith("  1 error: ")]


@pytest.mark.parametrize("jobs", ["1", "2"])
def test_plan_says_a_bug_in_one_line_and_exits_4_after_planning_the_others(bc, archive, monkeypatch, jobs):
    break_reading(monkeypatch)
    code, out, err = bc("plan", archive, "--force", "--format", "json", "--jobs", jobs)
    assert code == 4
    assert "Traceback" not in err
    assert internal_lines(err) == [f"{archive / BROKEN}: internal error: KeyError('boom') {HINT}"]
    rows = {Path(r["path"]).name: r for r in json.loads(out)["rows"]}
    assert rows[BROKEN]["status"] == "error"
    assert {r["status"] for name, r in rows.items() if name != BROKEN} <= {"compact", "skip"}
    assert len(rows) == len(list(archive.glob("*.jsonl")))  # every other file was still planned


def test_plan_with_debug_prints_the_traceback(bc, archive, monkeypatch):
    break_reading(monkeypatch)
    monkeypatch.setenv("BATCHCOMPACT_DEBUG", "1")
    code, _, err = bc("plan", archive, "--force", "--format", "json", "--jobs", "1")
    assert code == 4
    assert "Traceback (most recent call last)" in err and "KeyError: 'boom'" in err


def test_plan_exits_1_not_4_for_bad_input(bc, tmp_path):
    """An unreadable file is an `error` row with its own reason, not an internal error: exit 1 (some sessions
    invalid, as validate says it), not 4."""
    (tmp_path / "empty.jsonl").write_bytes(b"")
    shutil.copy(SAMPLES / "pi" / BROKEN, tmp_path / BROKEN)
    code, out, err = bc("plan", tmp_path, "--format", "json")
    assert code == 1 and internal_lines(err + out) == []
    assert {r["status"] for r in json.loads(out)["rows"]} >= {"error"}


def test_run_records_the_bug_continues_and_shows_the_traceback_only_with_debug(bc, archive, tmp_path, monkeypatch):
    from batchcompact.pipeline import session_task

    break_reading(monkeypatch, session_task)
    args = ("run", archive, "--force", "--min-age", "0", "--jobs", "1", "--format", "json")
    code, out, err = bc(*args, "--output-dir", tmp_path / "out")
    rows = {Path(r["input_path"]).name: r for r in json.loads(out)["rows"]}
    assert code == 4 and "Traceback" not in err
    assert rows[BROKEN]["status"] == "failed"
    assert rows[BROKEN]["reason"] == f"internal error: KeyError('boom') {HINT}"
    assert sum(r["status"] == "compacted" for r in rows.values()) >= 3  # the others were compacted
    assert json.loads(out)["exit_code"] == 4

    monkeypatch.setenv("BATCHCOMPACT_DEBUG", "1")
    code, _, err = bc(*args, "--output-dir", tmp_path / "out2")
    assert code == 4 and "Traceback (most recent call last)" in err and "KeyError: 'boom'" in err


def test_validate_says_a_bug_and_exits_4(bc, archive, monkeypatch):
    break_reading(monkeypatch)
    code, out, err = bc("validate", archive, "--format", "json")
    assert code == 4 and "Traceback" not in err
    assert internal_lines(err) == [f"{archive / BROKEN}: internal error: KeyError('boom') {HINT}"]
    rows = {Path(r["path"]).name: r for r in json.loads(out)["rows"]}
    assert sum(r["valid"] for r in rows.values()) == len(rows) - 1


def test_report_names_the_file_a_bug_stopped(bc, archive, monkeypatch):
    from batchcompact.report import extract_rows  # every reader's entry, the polars path's and the fast one's

    real = extract_rows.detect_usage_source

    def detect_usage_source(path):
        if Path(path).name == BROKEN:
            raise AttributeError("no such thing")
        return real(path)

    monkeypatch.setattr(extract_rows, "detect_usage_source", detect_usage_source)
    code, out, err = bc("report", archive, "--no-cache", "--jobs", "1")
    assert code == 4 and out == "" and "Traceback" not in err
    assert err.strip().splitlines() == [
        f"Error: {archive / BROKEN}: internal error: AttributeError('no such thing') {HINT}"]


@pytest.mark.parametrize("path", ["polars", "fast"])
def test_a_bug_outside_the_file_work_is_one_line_and_exit_4(bc, archive, monkeypatch, tmp_path, path):
    """The aggregation of either report path (the polars one with a cache, the fast one under --no-cache)."""
    from batchcompact.report import aggregate, fast

    def build_report(*args, **kwargs):
        raise ZeroDivisionError("division by zero")

    cache = ("--cache-dir", tmp_path / "cache", "--cache-above", "0") if path == "polars" else ("--no-cache",)
    if path == "polars":  # a first report writes the parts (then reports with other options read them)
        assert bc("report", archive, *cache, "--by", "model", "--jobs", "1")[0] == 0
        monkeypatch.setattr(aggregate, "build_report", build_report)
    else:  # the CLI's fast path feeds a Builder as files arrive, then asks it for the report
        monkeypatch.setattr(fast.Builder, "report", build_report)
    code, out, err = bc("report", archive, *cache, "--jobs", "1")
    assert (code, out) == (4, "")
    assert err.strip().splitlines() == [f"Error: internal error: ZeroDivisionError('division by zero') {HINT}"]
    monkeypatch.setenv("BATCHCOMPACT_DEBUG", "1")
    with pytest.raises(ZeroDivisionError):
        bc("report", archive, *cache, "--jobs", "1")


# -- preflight: an unknown model is not litellm failing ----------------------------------------------------

def test_preflight_unknown_model_is_a_usage_error():
    from batchcompact.errors import UsageError
    from batchcompact.summarize.preflight import preflight

    with pytest.raises(UsageError, match="unknown model 'no-such-model-xyz'"):
        preflight("no-such-model-xyz", api_key="k")


def test_preflight_says_when_litellm_cannot_be_loaded(bc, archive, tmp_path, monkeypatch):
    from batchcompact.summarize import litellm_import
    from batchcompact.summarize.preflight import ProviderLibraryError, preflight

    def broken():
        raise ImportError("No module named 'litellm'")

    monkeypatch.setattr(litellm_import, "import_litellm", broken)
    with pytest.raises(ProviderLibraryError, match="litellm could not be loaded"):
        preflight("openai/gpt-4o-mini", api_key="k")
    code, _, err = bc("run", archive, "--output-dir", tmp_path / "out", "--model", "openai/gpt-4o-mini",
                      "--api-key", "k", "--force", "--min-age", "0")
    assert code == 3 and "Traceback" not in err and "unknown model" not in err
    assert [line for line in err.splitlines() if line.startswith("Error:")] == [
        "Error: litellm could not be loaded (ImportError: No module named 'litellm'): the model was not checked and "
        "nothing was sent; reinstall it (pip install --force-reinstall litellm), or rerun with "
        "BATCHCOMPACT_DEBUG=1 for the traceback"]
    assert not (tmp_path / "out").exists() or not list((tmp_path / "out").rglob("*.jsonl"))


def test_preflight_says_when_litellm_breaks_resolving_a_known_model(monkeypatch):
    from batchcompact.summarize.preflight import ProviderLibraryError, _litellm, preflight

    litellm = _litellm()

    def get_llm_provider(**kwargs):
        raise KeyError("model_cost")  # litellm's own data broken, as a broken price map would

    monkeypatch.setattr(litellm, "get_llm_provider", get_llm_provider)
    with pytest.raises(ProviderLibraryError, match=r"litellm failed while resolving 'openai/gpt-4o-mini' "
                                                   r"\(KeyError: 'model_cost'\): not an unknown model"):
        preflight("openai/gpt-4o-mini", api_key="k")


# -- the tokenizer's estimate is said once -------------------------------------------------------------------

def test_tokenizer_warns_once_when_it_falls_back_to_chars_over_4(monkeypatch, caplog):
    from batchcompact import tokenizer

    monkeypatch.setattr(tokenizer, "configure_offline_cache", lambda: None)
    monkeypatch.setattr(tokenizer, "_warned", False)
    tokenizer._encoding.cache_clear()
    try:
        with caplog.at_level(logging.WARNING, logger="batchcompact.tokenizer"):
            counts = [tokenizer.count_tokens("x" * 40, model) for model in ("gpt-4o", "claude-haiku-4-5", "gpt-4o")]
        assert counts == [10, 10, 10]
        warnings = [r.getMessage() for r in caplog.records if r.name == "batchcompact.tokenizer"]
        assert len(warnings) == 1 and "\n" not in warnings[0]
        assert "token counts are estimated as chars/4" in warnings[0]
    finally:
        tokenizer._encoding.cache_clear()


def test_tokenizer_with_its_encodings_does_not_warn(monkeypatch, caplog):
    from batchcompact import tokenizer

    monkeypatch.setattr(tokenizer, "_warned", False)
    tokenizer._encoding.cache_clear()
    if tokenizer.configure_offline_cache() is None:
        pytest.fail("litellm's bundled tiktoken encodings are missing: exact counts cannot be tested")
    with caplog.at_level(logging.WARNING, logger="batchcompact.tokenizer"):
        assert tokenizer.count_tokens("hello world", "gpt-4o") == 2
    assert [r for r in caplog.records if r.name == "batchcompact.tokenizer"] == []


# -- a broken setting is one usage error, not a bug in every file nor an invalid file ------------------------

@pytest.mark.parametrize("command", ["plan", "run"])
def test_a_broken_price_map_is_one_usage_error(bc, archive, tmp_path, command):
    (tmp_path / "prices.json").write_text("{broken")
    extra = ("--output-dir", tmp_path / "out", "--min-age", "0") if command == "run" else ()
    code, out, err = bc(command, archive, "--pricing", tmp_path / "prices.json", "--force", *extra)
    assert code == 2 and internal_lines(out + err) == [] and "Traceback" not in err
    assert [line for line in err.splitlines() if line.startswith("Error:")] == [
        f"Error: pricing file {tmp_path / 'prices.json'} is not valid JSON: Expecting property name enclosed in "
        "double quotes: line 1 column 2 (char 1)"]


def test_a_usage_error_inside_a_file_task_stops_the_run_instead_of_marking_files_invalid(bc, archive, tmp_path,
                                                                                        monkeypatch):
    from batchcompact.errors import UsageError
    from batchcompact.pipeline import session_task

    def read_session(path, **kwargs):
        raise UsageError("pass --pricing FILE")

    monkeypatch.setattr(session_task, "read_session", read_session)
    state = tmp_path / "state.sqlite"
    code, _, err = bc("run", archive, "--output-dir", tmp_path / "out", "--min-age", "0", "--force", "--jobs", "1",
                      "--state", state)
    assert code == 2 and "Error: pass --pricing FILE" in err and "Traceback" not in err
    monkeypatch.undo()
    code, out, err = bc("run", archive, "--output-dir", tmp_path / "out", "--min-age", "0", "--force", "--jobs", "1",
                        "--state", state, "--format", "json")
    assert code == 0, err  # nothing was remembered as a known invalid file
    assert "known_invalid" not in {r["status"] for r in json.loads(out)["rows"]}


def test_an_internal_error_that_holds_a_whole_summary_is_said_in_a_readable_line():
    """An exception whose text holds a whole line or summary (a UnicodeEncodeError carries the text it
    failed on) was printed whole: a 10 KB 'one line'. Its two ends are kept."""
    from batchcompact.errors import internal_error_reason

    said = internal_error_reason(UnicodeEncodeError("utf-8", "x" * 10_000 + "\ud800", 10_000, 10_001, "surrogates"))
    assert said.startswith("internal error: UnicodeEncodeError('utf-8', 'xxx") and " … " in said
    assert said.endswith("10000, 10001, 'surrogates') (a bug in batchcompact; rerun with BATCHCOMPACT_DEBUG=1 "
                         "for the traceback)")
    assert len(said) < 600 and "\n" not in said
