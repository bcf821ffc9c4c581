"""The real pi (npm @mariozechner/pi-coding-agent 0.73.1) opens and resumes every pi session we write.

`batchcompact run --force --branch-summaries --copy-unchanged` (built-in summarizer) compacts the pi
samples and the real pi fixtures; one output is resumed by pi for a turn and compacted again by us (the
new cut inside the earlier kept tail). Then pi judges every file written, two ways:

- pi's own modules (`tests/agents/pi/pi_modules.mjs`: `SessionManager.open`, `buildSessionContext`,
  `convertToLlm`, `prepareCompaction` from the installed package, run with node) open each file:
  no line dropped, no migration or reset needed, no orphan, the leaf on our last line, our compaction
  the one in force, and the LLM messages pi rebuilds equal, value for value, what `core/context.py`
  builds. The same `prepareCompaction` on the real fixtures gives the planner's `FIXTURE_TABLE`
  (tests/pi_cut_points.py) and the cut our planner computes for every pi session at several budgets.
- the pi CLI itself (`pi -p … --session FILE`) resumes each file in a sandbox (HOME in tmp, offline,
  no tools, extensions, skills or context files) against a loopback fake Anthropic Messages API
  declared in its `models.json`: exactly one request, which starts with our summary, carries the kept
  tail's tool calls in order and each branch summary, nothing from before our cut, and the prompt last;
  a second resume of the same file still starts from our summary. pi refuses, in print mode, a
  session whose recorded cwd does not exist here, so the sandbox copy's header `cwd` names the
  sandbox's work folder; every other byte is ours, and pi appends to it without rewriting it.
"""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from agent_judges import REPLY, content_blocks
from conftest import SAMPLES, fixture_path
from pi_cut_points import FIXTURE_TABLE
from pi_judges import lines, our_compaction, pi_binary, pi_modules, pi_turn

from batchcompact.adapters.pi.read import read_pi_session
from batchcompact.agents import file_tools
from batchcompact.core.context import (
    BRANCH_SUMMARY_PREFIX,
    BRANCH_SUMMARY_SUFFIX,
    COMPACTION_SUMMARY_PREFIX,
    COMPACTION_SUMMARY_SUFFIX,
    build_session_context,
    convert_to_llm,
)
from batchcompact.core.planner import CompactionPlan, CompactionSettings, Skip, prepare_compaction

pytestmark = pytest.mark.slow

FIXTURES = ("before-compaction.jsonl", "large-session.jsonl")
SAMPLE_NAMES = tuple(sorted(p.name for p in (SAMPLES / "pi").glob("*.jsonl")))
UNCHANGED = {"small-fix.jsonl"}  # everything fits in keep_recent_tokens: copied as it is
AGAIN = "again/big-refactor.jsonl"  # our output resumed by pi for a turn, then compacted again by us
WRITTEN = SAMPLE_NAMES + FIXTURES + (AGAIN,)
EXTRA_KEEPS = (1000, 10000, 30000, 75000)  # budgets compared with pi live, beyond the recorded table


@pytest.fixture(scope="module")
def pi_bin() -> Path:
    return pi_binary()


@pytest.fixture(scope="module")
def written(pi_bin, tmp_path_factory) -> dict[str, tuple[Path, Path]]:
    """Every pi session we write, by name: (the input, our output)."""
    root = tmp_path_factory.mktemp("pi-written")
    inbox, out = root / "in", root / "out"
    inbox.mkdir()
    sources = [SAMPLES / "pi" / name for name in SAMPLE_NAMES] + [fixture_path("pi", name) for name in FIXTURES]
    for source in sources:
        shutil.copyfile(source, inbox / source.name)
    done = subprocess.run(
        [sys.executable, "-m", "batchcompact", "run", str(inbox), "--output-dir", str(out), "--min-age", "0",
         "--force", "--branch-summaries", "--copy-unchanged", "--format", "json"],
        capture_output=True, text=True, timeout=300,
    )
    assert done.returncode == 0, done.stderr
    rows = {Path(r["input_path"]).name: r["status"] for r in json.loads(done.stdout)["rows"]}
    assert rows == {s.name: "skipped" if s.name in UNCHANGED else "compacted" for s in sources}
    written = {s.name: (inbox / s.name, out / s.name) for s in sources}
    # pi resumes one of them for a turn, then we compact that again (our earlier compaction gives way).
    resumed = root / "resumed"
    resumed.mkdir()
    session = _sandbox_copy(written[Path(AGAIN).name][1], resumed)
    pi_turn(pi_bin, root / "home", resumed, session, "judge turn before the second compaction")
    again = subprocess.run(
        [sys.executable, "-m", "batchcompact", "run", str(session), "--output-dir", str(root / "again"),
         "--min-age", "0", "--force", "--keep-recent-tokens", "4000"],
        capture_output=True, text=True, timeout=300,
    )
    assert again.returncode == 0 and "1 compacted" in again.stdout, again.stdout + again.stderr
    written[AGAIN] = (session, root / AGAIN)
    return written


@pytest.fixture(scope="module")
def pi_opened(pi_bin, written, tmp_path_factory) -> dict[str, dict[str, Any]]:
    """What pi's SessionManager makes of each file we wrote (opened from a copy), by name."""
    root = tmp_path_factory.mktemp("pi-opened")
    copies = []
    for name, (_, output) in written.items():
        copy = root / name
        copy.parent.mkdir(parents=True, exist_ok=True)
        shutil.copyfile(output, copy)
        copy.chmod(0o644)
        copies.append(str(copy))
    answer = pi_modules(pi_bin, root / "home", {"open": copies})
    return dict(zip(written, answer["open"], strict=True))


def _our_context(output: Path) -> tuple[list[dict[str, Any]], list[str]]:
    """The LLM messages core/context.py builds for our output, and their AgentMessage roles."""
    session = read_pi_session(output)
    context = build_session_context(session.tree.path())
    messages = [m.message for m in context.messages]
    return convert_to_llm(messages), [m["role"] for m in messages]


def _first_difference(ours: list, theirs: list) -> str:
    for index, (a, b) in enumerate(zip(ours, theirs, strict=False)):
        if a != b:
            return f"message {index}: ours {json.dumps(a)[:300]} / pi {json.dumps(b)[:300]}"
    return f"lengths differ: ours {len(ours)}, pi {len(theirs)}"


@pytest.mark.parametrize("name", WRITTEN)
def test_pi_opens_our_file_as_written(name, written, pi_opened):
    _, output = written[name]
    seen = pi_opened[name]
    raw = lines(output)
    assert seen["header"] == {"id": raw[0]["id"], "version": 3}  # a valid header: pi did not reset the file
    assert not seen["rewritten"], "pi had to migrate (rewrite) the file"
    assert seen["entries"] == len(raw) - 1 == seen["lines"] - 1, "pi dropped a line it could not parse"
    assert seen["orphans"] == []
    assert seen["leafId"] == seen["lastLineId"] == raw[-1]["id"]


@pytest.mark.parametrize("name", WRITTEN)
def test_pi_rebuilds_the_context_we_build_and_takes_our_compaction(name, written, pi_opened):
    source, output = written[name]
    seen = pi_opened[name]
    ours, roles = _our_context(output)
    assert seen["llm"] == ours, _first_difference(ours, seen["llm"])
    assert seen["roles"] == roles
    compaction = our_compaction(source, output)
    if name in UNCHANGED:
        assert compaction is None
        return
    assert seen["compactionInForce"] == compaction["id"]
    assert seen["roles"][0] == "compactionSummary"
    assert seen["llm"][0]["content"][0]["text"] == (
        COMPACTION_SUMMARY_PREFIX + compaction["summary"] + COMPACTION_SUMMARY_SUFFIX
    )
    branch = seen["branch"]
    kept_from = branch.index(compaction["firstKeptEntryId"])
    assert kept_from < branch.index(compaction["id"])


def _pi_rows(results: list[dict[str, Any]]) -> dict[int, tuple]:
    """pi's preparation per keep budget, in FIXTURE_TABLE's columns (split = pi makes two calls)."""
    rows = {}
    for item in results:
        plan = item["plan"]
        two_calls = plan["isSplitTurn"] and plan["turnPrefixMessages"] > 0
        rows[item["keep"]] = (
            plan["firstKeptLine"], plan["turnStartLine"] if two_calls else None, two_calls,
            plan["messagesToSummarize"], plan["turnPrefixMessages"], plan["tokensBefore"],
            plan["readFiles"], plan["modifiedFiles"],
        )
    return rows


@pytest.fixture(scope="module")
def pi_prepared(pi_bin, tmp_path_factory) -> dict[str, dict[int, dict[str, Any]]]:
    """pi's prepareCompaction on copies of every pi input, at the table's budgets and a few more."""
    root = tmp_path_factory.mktemp("pi-prepared")
    keeps = sorted({row[0] for rows in FIXTURE_TABLE.values() for row in rows} | set(EXTRA_KEEPS))
    sources = [fixture_path("pi", name) for name in FIXTURES] + [SAMPLES / "pi" / n for n in SAMPLE_NAMES]
    request = {"prepare": []}
    for source in sources:
        shutil.copyfile(source, root / source.name)
        (root / source.name).chmod(0o644)
        request["prepare"].append({"file": str(root / source.name), "keep": keeps})
    answer = pi_modules(pi_bin, root / "home", request)
    return {Path(item["file"]).name: {r["keep"]: r for r in item["results"]} for item in answer["prepare"]}


@pytest.mark.parametrize("name", sorted(FIXTURE_TABLE))
def test_planner_fixture_table_is_what_pi_prepare_compaction_gives(name, pi_prepared):
    pi_rows = _pi_rows(list(pi_prepared[name].values()))
    for keep, *expected in FIXTURE_TABLE[name]:
        assert pi_rows[keep] == tuple(expected), f"{name} keep={keep}: pi gives {pi_rows[keep]}"


@pytest.mark.parametrize("name", FIXTURES + SAMPLE_NAMES)
def test_our_cut_is_pi_prepare_compaction_cut(name, pi_prepared):
    """Our planner, with pi's behaviour kept (no false-split fix), cuts where pi does on every pi input."""
    source = fixture_path("pi", name) if name in FIXTURES else SAMPLES / "pi" / name
    path = read_pi_session(source).tree.path()
    for keep, result in pi_prepared[name].items():
        plan = prepare_compaction(path, CompactionSettings(force=True, keep_recent_tokens=keep, fix_false_split=False), file_tools=file_tools())
        expected = _pi_rows([result])[keep]
        if isinstance(plan, Skip):
            # pi would summarize an empty conversation; we skip it (docs/compaction.md)
            assert expected[3] == 0 and not expected[2], (keep, plan.reason)
            continue
        assert isinstance(plan, CompactionPlan)
        got = (plan.first_kept_line, plan.turn_start_line, plan.split_turn, plan.messages_to_summarize,
               plan.turn_prefix_messages, plan.tokens_before, len(plan.read_files), len(plan.modified_files))
        assert got == expected, f"keep={keep}: ours {got}, pi {expected}"
        assert plan.pi_split_turn == result["plan"]["isSplitTurn"], keep


# ---- the pi CLI itself -----------------------------------------------------------------------------


def _sandbox_copy(output: Path, work: Path) -> Path:
    """Our file with only the header's cwd pointed at `work` (pi's print mode needs it to exist)."""
    lines = output.read_text(encoding="utf-8").splitlines(keepends=True)
    header = json.loads(lines[0])
    header["cwd"] = str(work)
    target = work / output.name
    target.write_text(json.dumps(header, separators=(",", ":")) + "\n" + "".join(lines[1:]), encoding="utf-8")
    return target


def _tool_id(call_id: str) -> str:
    """A tool-call id as pi's Anthropic provider sends it for another model (normalizeToolCallId)."""
    return "".join(c if c.isascii() and (c.isalnum() or c in "_-") else "_" for c in call_id)[:64]


def _expected_calls(context: list[dict[str, Any]]) -> list[str]:
    """The tool calls of our context that pi replays (it drops error and aborted assistant messages)."""
    return [_tool_id(block["id"]) for m in context if m["role"] == "assistant"
            and m.get("stopReason") not in ("error", "aborted")
            for block in m["content"] if block.get("type") == "toolCall"]


def _dropped_calls(output: Path, compaction: dict[str, Any]) -> set[str]:
    """The tool calls on the path before our first kept entry: summarized away."""
    path = read_pi_session(output).tree.path()
    first = next(i for i, e in enumerate(path) if e.id == compaction["firstKeptEntryId"])
    return {_tool_id(block["id"]) for e in path[:first] if e.message and e.message.get("role") == "assistant"
            for block in e.message.get("content") or [] if isinstance(block, dict) and block.get("type") == "toolCall"}


@pytest.mark.parametrize("name", WRITTEN)
def test_pi_resumes_from_our_summary_and_kept_tail(name, pi_bin, written, tmp_path):
    source, output = written[name]
    home, work = tmp_path / "home", tmp_path / "work"
    work.mkdir()
    session = _sandbox_copy(output, work)
    ours = session.read_bytes()
    context, _ = _our_context(output)
    compaction = our_compaction(source, output)
    turns = ("judge turn one", "judge turn two") if name == "second-compaction.jsonl" else ("judge turn one",)
    for turn, prompt in enumerate(turns):
        requests = pi_turn(pi_bin, home, work, session, prompt)
        assert len(requests) == 1, "pi made a request of its own (a compaction?) before the turn"
        messages = requests[0]["messages"]
        blocks = list(content_blocks(messages))
        texts = [b.get("text") for _, b in blocks if b.get("type") == "text"]
        sent_calls = [b["id"] for _, b in blocks if b.get("type") == "tool_use"]
        results = [b["tool_use_id"] for _, b in blocks if b.get("type") == "tool_result"]
        assert set(results) <= set(sent_calls) and len(sent_calls) == len(set(sent_calls))
        assert sent_calls[: len(_expected_calls(context))] == _expected_calls(context)
        assert messages[-1]["role"] == "user" and texts[-1] == prompt
        if turn == 1:
            assert "judge turn one" in texts and REPLY in texts  # the first resumed turn is kept
        summaries = [t for t in texts if t.startswith(COMPACTION_SUMMARY_PREFIX)]
        if compaction is None:
            assert summaries == []
            continue
        assert texts[0] == COMPACTION_SUMMARY_PREFIX + compaction["summary"] + COMPACTION_SUMMARY_SUFFIX
        assert summaries == texts[:1], "an earlier compaction's summary was sent too"
        assert not _dropped_calls(output, compaction) & set(sent_calls), "something from before our cut was sent"
        for entry in lines(output)[len(lines(source)) :]:
            if entry["type"] == "branch_summary":
                assert BRANCH_SUMMARY_PREFIX + entry["summary"] + BRANCH_SUMMARY_SUFFIX in texts
    after = session.read_bytes()
    assert after.startswith(ours), "pi rewrote the file instead of appending to it"
    appended = [json.loads(line) for line in after[len(ours) :].decode().splitlines()]
    assert appended[0]["parentId"] == lines(output)[-1]["id"]  # pi continued from our last line
    roles = [e["message"]["role"] for e in appended if e["type"] == "message"]
    assert roles == ["user", "assistant"] * len(turns), [e["type"] for e in appended]


def test_pi_shows_our_branch_summaries(written, pi_opened):
    source, output = written["branched.jsonl"]
    summaries = [o for o in lines(output)[len(lines(source)) :] if o["type"] == "branch_summary"]
    assert len(summaries) >= 2
    seen = pi_opened["branched.jsonl"]
    shown = [m["content"][0]["text"] for m, role in zip(seen["llm"], seen["roles"], strict=True) if role == "branchSummary"]
    assert shown == [BRANCH_SUMMARY_PREFIX + s["summary"] + BRANCH_SUMMARY_SUFFIX for s in summaries]
    assert all(s["id"] in seen["branch"] for s in summaries)
