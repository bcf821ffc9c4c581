"""`run --strategy handoff` (core/handoff.py, pipeline/outcome.py `_write_handoff`, adapters/pi/write.py
`build_handoff`): the original left byte for byte, one new session beside it (or under --output-dir) with
only the handoff document, its call recorded like a compaction's, reruns idempotent, bad input refused.

oh-my-pi's and pi's own code opening the new sessions: tests/agents/pi/test_judge_omp.py."""

from __future__ import annotations

import hashlib
import json
import os
import shutil
from pathlib import Path

import pytest
from conftest import SAMPLES, cli_invoker
from run_cli import FAST, Result, model_args, write_session

from batchcompact.adapters.pi.read import read_pi_session
from batchcompact.core.context import session_context
from batchcompact.core.handoff import ALREADY_A_HANDOFF, HANDOFF_CLOSE, HANDOFF_OPEN
from batchcompact.core.prompts import HANDOFF_HEADINGS, HISTORY_HEADINGS

HANDOFF = ("--strategy", "handoff", "--force", *FAST)


@pytest.fixture
def bc(capsys, monkeypatch):
    run = cli_invoker(capsys, monkeypatch)
    return lambda *args: Result(*run(*args))


def digests(folder: Path) -> dict[str, str]:
    return {p.name: hashlib.sha256(p.read_bytes()).hexdigest() for p in sorted(folder.glob("*.jsonl"))}


def lines(path: Path) -> list[dict]:
    return [json.loads(line) for line in path.read_text().splitlines()]


def handoffs(folder: Path, original: Path) -> list[Path]:
    """The files in `folder` whose header names `original` as their parent session."""
    return [p for p in sorted(folder.rglob("*.jsonl"))
            if lines(p)[0].get("parentSession") == str(original.resolve())]


@pytest.fixture
def archive(tmp_path) -> Path:
    folder = tmp_path / "sessions"
    folder.mkdir()
    for name in ("big-refactor.jsonl", "branched.jsonl"):
        shutil.copyfile(SAMPLES / "pi" / name, folder / name)
    return folder


def test_handoff_leaves_the_original_and_writes_one_new_session_beside_it(bc, archive):
    before = digests(archive)

    result = bc("run", archive, "--in-place", *HANDOFF, "--format", "json")

    assert result.code == 0, result.err
    rows = {Path(r["input_path"]).name: r for r in result.json()["rows"]}
    assert {n: r["status"] for n, r in rows.items()} == {"big-refactor.jsonl": "compacted", "branched.jsonl": "compacted"}
    after = digests(archive)
    assert {n: d for n, d in after.items() if n in before} == before  # byte for byte, no backup either
    assert not list(archive.glob("*.bak*"))
    for name, row in rows.items():
        assert row["reason"].startswith("handed off")
        (new,) = handoffs(archive, archive / name)
        assert row["output_path"] == str(new)  # the report says where each session went
        header, message = lines(new)  # nothing else from the old history
        original = lines(archive / name)[0]
        assert header == {"type": "session", "version": 3, "id": header["id"], "timestamp": header["timestamp"],
                          "cwd": original["cwd"], "parentSession": str((archive / name).resolve())}
        assert new.name.endswith(f"_{header['id']}.jsonl") and header["id"] != original["id"]
        assert message["type"] == "custom_message" and message["customType"] == "handoff"
        assert message["display"] is True and message["parentId"] is None and message["attribution"] == "agent"
        content = message["content"]
        assert content.startswith(HANDOFF_OPEN) and content.endswith(HANDOFF_CLOSE)
        document = content[len(HANDOFF_OPEN):-len(HANDOFF_CLOSE)]
        # the built-in summary's headings (the same facts); an LLM is asked for oh-my-pi's (test below)
        for heading in ("## Goal", "## Progress", "## Next Steps", "## Critical Context"):
            assert heading in document
        assert "<modified-files>" in document and message["details"]["modifiedFiles"]
        assert "usage" not in message  # the built-in summarizer calls no model
        # our own reader: a valid pi session whose context is the document alone
        session = read_pi_session(new)
        assert session.problems == []
        assert [m.message["customType"] for m in session_context(session).messages] == ["handoff"]


def test_a_rerun_does_not_hand_off_twice(bc, archive, tmp_path):
    first = bc("run", archive, "--in-place", *HANDOFF, "--format", "json")
    assert first.code == 0
    written = digests(archive)

    # the run state says so, and without it (another state file) the new session already there says so
    again = bc("run", archive, "--in-place", *HANDOFF, "--format", "json")
    fresh = bc("run", archive, "--in-place", *HANDOFF, "--state", tmp_path / "other.sqlite", "--format", "json")

    assert digests(archive) == written
    assert {r["status"] for r in again.json()["rows"]} == {"skipped"}
    reasons = {Path(r["input_path"]).name: r["reason"] for r in fresh.json()["rows"]}
    for name in ("big-refactor.jsonl", "branched.jsonl"):
        (new,) = handoffs(archive, archive / name)
        assert reasons[name] == f"already handed off ({new})"
    # the new sessions themselves are not handed off again
    assert all(r["status"] == "skipped" for r in fresh.json()["rows"])
    news = [r for r in fresh.json()["rows"] if Path(r["input_path"]).name not in ("big-refactor.jsonl", "branched.jsonl")]
    assert len(news) == 2 and {r["reason"] for r in news} == {ALREADY_A_HANDOFF}


def test_output_dir_gets_only_the_new_sessions(bc, archive, tmp_path):
    before = digests(archive)
    out = tmp_path / "out"

    result = bc("run", archive, "--output-dir", out, *HANDOFF, "--format", "json")

    assert result.code == 0, result.err
    assert digests(archive) == before
    written = sorted(p.name for p in out.glob("*.jsonl"))
    assert len(written) == 2 and not set(written) & set(before)
    for name in before:
        assert len(handoffs(out, archive / name)) == 1


def test_a_session_mid_turn_is_not_handed_off(bc, tmp_path):
    folder = tmp_path / "s"
    session = write_session(folder / "live.jsonl", "live")
    raw = lines(session)
    call = {"type": "message", "id": "c0ffee01", "parentId": raw[-1]["id"], "timestamp": "2026-01-01T01:00:00.000Z",
            "message": {"role": "assistant", "content": [{"type": "toolCall", "id": "call_1", "name": "bash",
                                                          "arguments": {"command": "make"}}],
                        "stopReason": "toolUse", "timestamp": 5}}
    with open(session, "a") as handle:
        handle.write(json.dumps(call) + "\n")
    before = digests(folder)

    result = bc("run", folder, "--in-place", *HANDOFF, "--format", "json")

    assert result.code == 0, result.err
    (row,) = result.json()["rows"]
    assert row["status"] == "skipped"
    assert row["reason"] == ("mid-turn: its last assistant turn has tool calls without results; "
                             "hand off once the turn has ended")
    assert digests(folder) == before and len(list(folder.iterdir())) == 1


@pytest.mark.skipif(os.geteuid() == 0, reason="root writes into a read-only folder")
def test_an_output_folder_that_cannot_be_written_leaves_nothing(bc, archive, tmp_path):
    out = tmp_path / "out"
    out.mkdir()
    out.chmod(0o500)
    try:
        result = bc("run", archive, "--output-dir", out, *HANDOFF, "--format", "json")
    finally:
        out.chmod(0o700)
    assert {r["status"] for r in result.json()["rows"]} == {"failed"}
    assert all("Permission denied" in r["reason"] for r in result.json()["rows"])
    assert [p for p in out.rglob("*") if p.suffix == ".jsonl" or ".batchcompact-tmp" in p.name] == []


def test_an_output_folder_that_cannot_be_written_leaves_nothing_even_as_root(bc, archive, tmp_path):
    """Root writes anywhere: the folder is a file instead, which no one can write into."""
    out = tmp_path / "out"
    out.mkdir()
    blocked = out / "sessions-blocked"
    blocked.write_text("a file where the folder should be\n")
    nested = archive / "sessions-blocked"
    nested.mkdir()
    shutil.move(str(archive / "branched.jsonl"), nested / "branched.jsonl")

    result = bc("run", archive, "--output-dir", out, *HANDOFF, "--format", "json")

    rows = {Path(r["input_path"]).name: r for r in result.json()["rows"]}
    assert rows["branched.jsonl"]["status"] == "failed", rows["branched.jsonl"]["reason"]
    assert rows["big-refactor.jsonl"]["status"] == "compacted"  # the other session is handed off
    assert blocked.read_text() == "a file where the folder should be\n"
    assert [p.name for p in out.iterdir() if ".batchcompact-tmp" in p.name] == []


def test_other_formats_are_not_handed_off(bc, tmp_path):
    folder = tmp_path / "codex"
    shutil.copytree(SAMPLES / "codex", folder)
    before = {p: p.read_bytes() for p in folder.rglob("*.jsonl")}

    result = bc("run", folder, "--in-place", *HANDOFF, "--format", "json")

    assert result.code == 0, result.err
    rows = result.json()["rows"]
    assert rows and {r["status"] for r in rows} == {"skipped"}
    assert all("cannot be handed off" in r["reason"] for r in rows)
    assert {p: p.read_bytes() for p in folder.rglob("*.jsonl")} == before


def test_plan_shows_the_handoff_and_its_one_call(bc, archive):
    result = bc("plan", archive, "--strategy", "handoff", "--force", "--format", "json")

    assert result.code == 0, result.err
    rows = result.json()["rows"]
    assert {r["status"] for r in rows} == {"compact"} and {r["reason"] for r in rows} == {"handoff"}
    assert {r["calls"] for r in rows} == {1}


def test_an_llm_handoff_uses_the_handoff_prompt_and_report_counts_its_call_once(bc, archive, tmp_path, llm_server):
    out = tmp_path / "out"
    archive = tmp_path / "small"
    write_session(archive / "big-refactor.jsonl", "alpha")  # fits the test model's window: one call
    result = bc("run", archive / "big-refactor.jsonl", "--output-dir", out, *HANDOFF, *model_args(llm_server),
                "--format", "json")

    assert result.code == 0, result.err
    (row,) = result.json()["rows"]
    assert row["status"] == "compacted" and row["calls"] == 1
    (request,) = [r for r in llm_server.requests if r.body.get("messages")]
    prompt = request.user_prompt
    assert "handoff document" in prompt
    for heading in HANDOFF_HEADINGS:
        assert heading in prompt
    assert "### Blocked" not in prompt  # oh-my-pi's layout, not the compaction summary's
    assert "### Blocked" in HISTORY_HEADINGS
    (new,) = out.glob("*.jsonl")
    message = lines(new)[1]
    usage = message["usage"]
    assert usage["output"] == row["completion_tokens"] and usage["input"] > 0
    # the report over the original and its handoff: the old history once (the new file copies none of
    # it), the handoff call once
    folder = tmp_path / "both"
    folder.mkdir()
    shutil.copyfile(archive / "big-refactor.jsonl", folder / "big-refactor.jsonl")
    shutil.copyfile(new, folder / new.name)
    alone = bc("report", archive / "big-refactor.jsonl", "--format", "json")
    both = bc("report", folder, "--format", "json")
    assert alone.code == 0 and both.code == 0, both.err
    before, after = alone.json()["totals"], both.json()["totals"]
    assert after["requests"] == before["requests"] + 1
    assert after["output_tokens"] == before["output_tokens"] + usage["output"]
    assert after["input_tokens"] == before["input_tokens"] + usage["input"]


def test_the_same_session_gives_the_same_handoff_file(bc, tmp_path, monkeypatch):
    """With SOURCE_DATE_EPOCH, two runs over copies of one session (and one worker or two) write the same
    file, name and bytes."""
    monkeypatch.setenv("SOURCE_DATE_EPOCH", "1767225600")
    written = []
    for copy, jobs in (("one", "1"), ("two", "2")):
        folder = tmp_path / copy
        folder.mkdir()
        shutil.copyfile(SAMPLES / "pi" / "big-refactor.jsonl", folder / "big-refactor.jsonl")
        result = bc("run", folder, "--output-dir", tmp_path / f"out-{copy}", "--strategy", "handoff", "--force",
                    "--min-age", "0", "--jobs", jobs, "--format", "json")
        assert result.code == 0, result.err
        (new,) = (tmp_path / f"out-{copy}").glob("*.jsonl")
        written.append(new)
    assert written[0].name == written[1].name and written[0].name.startswith("2026-01-01T00-00-00-000Z_")
    first, second = (lines(p) for p in written)
    assert first[0].pop("parentSession") != second[0].pop("parentSession")  # each names its own original
    assert first == second


def test_a_session_compacted_earlier_is_handed_off_from_its_summary_and_kept_tail(bc, tmp_path, llm_server):
    folder = tmp_path / "s"
    write_session(folder / "alpha.jsonl", "alpha", turns=8)
    compacted = bc("run", folder, "--in-place", "--no-backup", "--force", "--keep-recent-tokens", "1500", *FAST)
    assert compacted.code == 0, compacted.err
    summary = lines(folder / "alpha.jsonl")[-1]["summary"]
    before = digests(folder)

    result = bc("run", folder, "--in-place", *HANDOFF, *model_args(llm_server), "--format", "json")

    assert result.code == 0, result.err
    (row,) = result.json()["rows"]
    assert row["status"] == "compacted" and row["reason"].startswith("handed off")
    assert {n: d for n, d in digests(folder).items() if n in before} == before
    (request,) = [r for r in llm_server.requests if r.body.get("messages")]
    prompt = request.user_prompt
    assert f"<previous-summary>\n{summary}\n</previous-summary>" in prompt
    assert "[alpha] request 7" in prompt  # the kept tail is in the conversation handed off
    assert "[alpha] request 0" not in prompt.split("<previous-summary>")[0]  # the summarized part is not
