"""The real oh-my-pi (npm @oh-my-pi/pi-coding-agent 18.2.3, on npm's bun 1.4.4) judges the sessions we write
into its home, by its own code.

`batchcompact run --force --branch-summaries --copy-unchanged` compacts every pi sample and real pi fixture
laid out as oh-my-pi keeps them (`~/.omp/agent/sessions/<cwd>/`), and the v3 samples once more as oh-my-pi
writes them today (a fixed-width title slot line before the header). Then:

- oh-my-pi's own modules (`tests/agents/pi/omp_modules.ts`: `SessionManager.open` and its
  `buildSessionContext`, from the installed package's `src/`, run with its bun) open each output: the
  header kept, no line dropped or rewritten, the leaf on our last line, our compaction the one in force,
  and the context it rebuilds equal, message by message, to the one we claim (`core/context.py` with
  oh-my-pi's rules, and `batchcompact show --context`): its failed, aborted and retried turns left out
  as oh-my-pi leaves them out;
- the omp CLI (`omp -p … --resume FILE`) resumes a compacted session against a loopback Anthropic
  Messages API declared in its `models.yml`: one request, our summary in it once, the kept tail's tool
  calls in order, nothing from before our cut, the prompt last; oh-my-pi appends to our file;
- after that turn, oh-my-pi's own `prepareCompaction` reads our compaction as the previous one: its
  summary is the previous summary and its file lists (`details`) are in the file operations it carries on.
"""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from agent_judges import content_blocks, npm_cli
from conftest import SAMPLES, fixture_path
from pi_judges import (
    PI_PACKAGE,
    PI_VERSION,
    lines,
    omp_binary,
    omp_modules,
    omp_turn,
    our_compaction,
    pi_modules,
    same_message,
    sandbox_copy,
)

from batchcompact.adapters.pi.omp import OMP_RULES
from batchcompact.adapters.pi.read import read_pi_session
from batchcompact.core.context import session_context

pytestmark = pytest.mark.slow

FIXTURES = ("before-compaction.jsonl", "large-session.jsonl")
SAMPLE_NAMES = tuple(sorted(p.name for p in (SAMPLES / "pi").glob("*.jsonl")))
V3_SAMPLES = tuple(n for n in SAMPLE_NAMES if n != "legacy-v1.jsonl")
SLOT = "slot-"  # the copies written as oh-my-pi writes today: a title slot line first
UNCHANGED = {"small-fix.jsonl", SLOT + "small-fix.jsonl"}  # fits in keep_recent_tokens: copied as it is
WRITTEN = SAMPLE_NAMES + FIXTURES + tuple(SLOT + n for n in V3_SAMPLES)
PROJECT = "--work--"  # oh-my-pi's folder for a cwd


def title_slot(title: str = "") -> str:
    """oh-my-pi's first line (session-title-slot.ts): a title padded to a fixed width, rewritten in place."""
    line = {"type": "title", "v": 1, "title": title, "updatedAt": "2026-05-01T10:00:00.000Z", "pad": ""}
    line["pad"] = " " * (255 - len(json.dumps(line, separators=(",", ":"))))
    return json.dumps(line, separators=(",", ":")) + "\n"


@pytest.fixture(scope="module")
def omp_bin() -> Path:
    return omp_binary()


def sources() -> dict[str, Path]:
    found = {name: SAMPLES / "pi" / name for name in SAMPLE_NAMES}
    found.update({name: fixture_path("pi", name) for name in FIXTURES})
    return found


@pytest.fixture(scope="module")
def written(omp_bin, tmp_path_factory) -> dict[str, tuple[Path, Path]]:
    """Every session we write into oh-my-pi's home, by name: (the input, our output)."""
    root = tmp_path_factory.mktemp("omp-written")
    inbox = root / "home" / ".omp" / "agent" / "sessions" / PROJECT
    out = root / "out" / ".omp" / "agent" / "sessions"
    inbox.mkdir(parents=True)
    for name, source in sources().items():
        shutil.copyfile(source, inbox / name)
        if name in V3_SAMPLES:
            (inbox / (SLOT + name)).write_bytes(title_slot(name).encode() + source.read_bytes())
    done = subprocess.run(
        [sys.executable, "-m", "batchcompact", "run", str(inbox.parent), "--output-dir", str(out), "--min-age", "0",
         "--force", "--branch-summaries", "--copy-unchanged", "--format", "json"],
        capture_output=True, text=True, timeout=600,
    )
    assert done.returncode == 0, done.stderr
    rows = {Path(r["input_path"]).name: r["status"] for r in json.loads(done.stdout)["rows"]}
    assert rows == {name: "skipped" if name in UNCHANGED else "compacted" for name in WRITTEN}
    return {name: (inbox / name, out / PROJECT / name) for name in WRITTEN}


@pytest.fixture(scope="module")
def omp_opened(omp_bin, written, tmp_path_factory) -> dict[str, dict[str, Any]]:
    """What oh-my-pi's SessionManager makes of each output (opened from a copy in its home), by name."""
    root = tmp_path_factory.mktemp("omp-opened")
    folder = root / "home" / ".omp" / "agent" / "sessions" / PROJECT
    folder.mkdir(parents=True)
    copies = []
    for name, (_, output) in written.items():
        shutil.copyfile(output, folder / name)
        copies.append(str(folder / name))
    answer = omp_modules(omp_bin, root / "home", {"open": copies})
    return dict(zip(written, answer["open"], strict=True))


def first_difference(ours: list, theirs: list) -> str:
    for index, (a, b) in enumerate(zip(ours, theirs, strict=False)):
        if not same_message(a, b):
            return f"message {index}: ours {json.dumps(a)[:300]} / omp {json.dumps(b)[:300]}"
    return f"lengths differ: ours {len(ours)}, omp {len(theirs)}"


@pytest.mark.parametrize("name", WRITTEN)
def test_omp_opens_our_file_as_written(name, written, omp_opened):
    _, output = written[name]
    seen = omp_opened[name]
    raw = lines(output)
    slot = 1 if raw[0]["type"] == "title" else 0
    assert slot == (1 if name.startswith(SLOT) else 0), "the title slot was not kept first"
    assert seen["header"]["id"] == raw[slot]["id"]
    assert not seen["rewritten"], "oh-my-pi had to rewrite the file"
    assert seen["entries"] == len(raw) - 1 - slot == seen["lines"] - 1 - slot, "oh-my-pi dropped a line"
    assert seen["leafId"] == seen["lastLineId"] == raw[-1]["id"]


@pytest.mark.parametrize("name", WRITTEN)
def test_omp_rebuilds_the_context_we_claim_with_our_compaction(name, written, omp_opened):
    source, output = written[name]
    seen = omp_opened[name]
    session = read_pi_session(output)
    assert session.context_rules == OMP_RULES
    ours = [m.message for m in session_context(session).messages]
    theirs = seen["messages"]
    assert len(ours) == len(theirs) and all(map(same_message, ours, theirs)), first_difference(ours, theirs)
    compaction = our_compaction(source, output)
    if name in UNCHANGED:
        assert compaction is None
        return
    assert seen["compactionInForce"] == compaction["id"]
    assert theirs[0]["role"] == "compactionSummary" and theirs[0]["summary"] == compaction["summary"]
    assert compaction["firstKeptEntryId"] in seen["branch"]


def test_show_context_counts_what_omp_rebuilds(written, omp_opened):
    """`show --context` (the CLI) claims oh-my-pi's context, not pi's: failed requests left out. The
    samples hold such turns, so pi's rules would claim more messages on most of them."""
    differs_from_pi = 0
    for name, (_, output) in written.items():
        done = subprocess.run([sys.executable, "-m", "batchcompact", "show", "--context", "--format", "json",
                               str(output)], capture_output=True, text=True, timeout=120)
        assert done.returncode == 0, done.stderr
        shown = json.loads(done.stdout)
        (shown,) = shown["rows"]
        claimed = [m["source_role"] for m in shown["context_messages"]]
        rebuilt = [m["role"] for m in omp_opened[name]["messages"]]
        assert claimed == rebuilt, name
        pi_rules = read_pi_session(output)
        pi_rules.context_rules = None
        differs_from_pi += len(session_context(pi_rules).messages) != len(rebuilt)
    assert differs_from_pi >= 5


# ---- the omp CLI itself -----------------------------------------------------------------------------


RESUMED = ("big-refactor.jsonl", SLOT + "branched.jsonl", "before-compaction.jsonl")


@pytest.fixture(scope="module")
def resumed(omp_bin, written, tmp_path_factory) -> dict[str, tuple[Path, bytes, list[dict[str, Any]]]]:
    """RESUMED outputs resumed by omp for one turn: (the file, its bytes before, the requests)."""
    root = tmp_path_factory.mktemp("omp-resumed")
    home, work = root / "home", root / "work"
    work.mkdir()
    out = {}
    for name in RESUMED:
        session = sandbox_copy(written[name][1], work, home / ".omp" / "agent" / "sessions" / PROJECT)
        before = session.read_bytes()
        out[name] = (session, before, omp_turn(omp_bin, home, work, session, f"judge turn on {name}"))
    return out


@pytest.mark.parametrize("name", RESUMED)
def test_omp_resumes_from_our_summary_and_kept_tail(name, written, resumed):
    source, output = written[name]
    session, before, requests = resumed[name]
    assert len(requests) == 1, "omp made a request of its own (a compaction?) before the turn"
    messages = requests[0]["messages"]
    sent = list(content_blocks(messages))
    texts = [b.get("text") or "" for _, b in sent if b.get("type") == "text"]
    compaction = our_compaction(source, output)
    summary = compaction["summary"]
    assert sum(text.count(summary) for text in texts) == 1, "our summary is not sent exactly once"
    assert summary in texts[0] or summary in texts[1], "the request does not start from our summary"
    context = [m.message for m in session_context(read_pi_session(output)).messages]
    expected = [b["id"] for m in context if m["role"] == "assistant" for b in m["content"] if b.get("type") == "toolCall"]
    sent_calls = [b["id"] for _, b in sent if b.get("type") == "tool_use"]
    assert sent_calls == expected, "the kept tail's tool calls were not sent in order"
    path = read_pi_session(output).path_entries()
    first = next(i for i, e in enumerate(path) if e.id == compaction["firstKeptEntryId"])
    dropped = {b["id"] for e in path[:first] if e.message and e.message.get("role") == "assistant"
               for b in e.message.get("content") or [] if isinstance(b, dict) and b.get("type") == "toolCall"}
    assert not dropped & set(sent_calls), "something from before our cut was sent"
    assert messages[-1]["role"] == "user" and texts[-1] == f"judge turn on {name}"
    after = session.read_bytes()
    assert after.startswith(before), "omp rewrote our file instead of appending to it"
    appended = [json.loads(line) for line in after[len(before):].decode().splitlines()]
    assert appended[0]["parentId"] == lines(output)[-1]["id"]


def test_omp_prepare_compaction_reads_our_compaction_and_its_file_lists(omp_bin, written, resumed, tmp_path):
    """After a turn on top of our compaction, oh-my-pi's prepareCompaction takes ours as the previous one."""
    copies = []
    for name in RESUMED:
        copy = tmp_path / name
        shutil.copyfile(resumed[name][0], copy)
        copies.append(str(copy))
    answer = omp_modules(omp_bin, tmp_path / "home", {"prepare": [{"file": c, "keep": 2000} for c in copies]})
    for name, prepared in zip(RESUMED, answer["prepare"], strict=True):
        source, output = written[name]
        compaction = our_compaction(source, output)
        assert prepared["previousSummary"] == compaction["summary"], name
        details = compaction["details"]
        assert details["readFiles"] and details["modifiedFiles"], name
        assert set(details["readFiles"]) <= set(prepared["read"]) | set(prepared["edited"]), name
        assert set(details["modifiedFiles"]) <= set(prepared["edited"]), name


# ---- run --strategy handoff: the new sessions, opened by oh-my-pi's code and pi's ----------------------

HANDED_OFF = ("big-refactor.jsonl", SLOT + "branched.jsonl", "before-compaction.jsonl")


@pytest.fixture(scope="module")
def handed_off(omp_bin, tmp_path_factory) -> dict[str, tuple[Path, Path]]:
    """HANDED_OFF sessions handed off in oh-my-pi's home, by name: (the original, the new session)."""
    root = tmp_path_factory.mktemp("omp-handoff")
    folder = root / "home" / ".omp" / "agent" / "sessions" / PROJECT
    folder.mkdir(parents=True)
    found = sources()
    for name in HANDED_OFF:
        source = found[name.removeprefix(SLOT)]
        prefix = title_slot(name).encode() if name.startswith(SLOT) else b""
        (folder / name).write_bytes(prefix + source.read_bytes())
    before = {name: (folder / name).read_bytes() for name in HANDED_OFF}
    done = subprocess.run(
        [sys.executable, "-m", "batchcompact", "run", str(folder), "--in-place", "--strategy", "handoff", "--force",
         "--min-age", "0", "--format", "json"], capture_output=True, text=True, timeout=600)
    assert done.returncode == 0, done.stderr
    rows = {Path(r["input_path"]).name: r for r in json.loads(done.stdout)["rows"]}
    assert {name: (folder / name).read_bytes() for name in HANDED_OFF} == before
    return {name: (folder / name, Path(rows[name]["output_path"])) for name in HANDED_OFF}


def test_omp_opens_the_handoff_session_and_its_context_is_the_document(omp_bin, handed_off, tmp_path):
    copies = []
    for _, new in handed_off.values():
        shutil.copyfile(new, tmp_path / new.name)
        copies.append(str(tmp_path / new.name))
    answer = omp_modules(omp_bin, tmp_path / "home", {"open": copies})
    for (name, (original, new)), seen in zip(handed_off.items(), answer["open"], strict=True):
        header, message = lines(new)
        assert seen["header"] == {"id": header["id"], "version": 3, "parentSession": str(original.resolve())}, name
        assert seen["entries"] == 1 and not seen["rewritten"] and seen["leafId"] == message["id"]
        (context,) = seen["messages"]  # the document, nothing of the old history
        assert (context["role"], context["customType"], context["display"]) == ("custom", "handoff", True)
        assert context["content"] == message["content"]


def test_omp_resumes_the_handoff_session_from_the_document(omp_bin, handed_off, tmp_path):
    home, work = tmp_path / "home", tmp_path / "work"
    work.mkdir()
    original, new = handed_off["big-refactor.jsonl"]
    session = sandbox_copy(new, work, home / ".omp" / "agent" / "sessions" / PROJECT)
    before = session.read_bytes()
    (request,) = omp_turn(omp_bin, home, work, session, "judge turn after the handoff")
    messages = request["messages"]
    texts = [b.get("text") or "" for _, b in content_blocks(messages) if b.get("type") == "text"]
    document = lines(new)[1]["content"]
    assert any(document in text for text in texts[:2]), "the request does not start from the handoff document"
    assert sum(text.count(document) for text in texts) == 1
    assert not [b for _, b in content_blocks(messages) if b.get("type") in ("tool_use", "tool_result")]  # no old history
    assert texts[-1].endswith("judge turn after the handoff")  # after omp's date and cwd reminder
    assert session.read_bytes().startswith(before)


def test_pi_opens_the_handoff_session_and_its_context_is_the_document(handed_off, tmp_path):
    """pi (its SessionManager and convertToLlm, tests/agents/pi/pi_modules.mjs) reads the same file: the
    custom_message is sent to the model as a user message holding the document."""
    pi_bin = npm_cli(PI_PACKAGE, PI_VERSION, "pi")
    copies = []
    for _, new in handed_off.values():
        shutil.copyfile(new, tmp_path / new.name)
        copies.append(str(tmp_path / new.name))
    answer = pi_modules(pi_bin, tmp_path / "home", {"open": copies})
    for (name, (_, new)), seen in zip(handed_off.items(), answer["open"], strict=True):
        header, message = lines(new)
        assert seen["header"] == {"id": header["id"], "version": 3} and not seen["rewritten"], name
        assert seen["entries"] == 1 and seen["leafId"] == message["id"] and seen["orphans"] == []
        assert seen["roles"] == ["custom"]
        (llm,) = seen["llm"]
        assert llm["role"] == "user"
        text = llm["content"] if isinstance(llm["content"], str) else "".join(b["text"] for b in llm["content"])
        assert text == message["content"]


# ---- oh-my-pi's thresholds: its settings files and its trigger, at and around the threshold -----------

WINDOW = 400_000  # above every sample's context
THRESHOLD_SAMPLES = ("big-refactor.jsonl", "branched.jsonl", "second-compaction.jsonl")


def our_trigger_tokens(path: Path) -> int:
    """The context size our planner compares with the threshold (given to oh-my-pi's trigger as it is)."""
    from batchcompact.core.planner import _context_tokens

    return _context_tokens(read_pi_session(path).path_entries(), OMP_RULES)[1]


def variants(tokens: int) -> list[tuple[str, dict]]:
    """(name, the project's .omp/settings.json compaction) around a context of `tokens`."""
    out: list[tuple[str, dict]] = [("defaults", {})]
    for delta in (-1, 0, 1):
        out.append((f"tokens{delta:+d}", {"thresholdTokens": tokens + delta}))
        # the global thresholdPercent unset: oh-my-pi's reserve rule, max(15% of the window, reserve)
        out.append((f"reserve{delta:+d}", {"reserveTokens": WINDOW - tokens - delta, "thresholdPercent": -1}))
        out.append((f"percent{delta:+d}", {"thresholdPercent": (tokens + delta) * 100 / WINDOW}))
    out.append(("percent-over-tokens", {"thresholdPercent": 10, "thresholdTokens": tokens - 1}))
    out.append(("unset-threshold", {"thresholdTokens": -1, "thresholdPercent": -1, "reserveTokens": 1000}))
    out.append(("disabled", {"enabled": False, "thresholdTokens": 1}))
    return out


@pytest.fixture(scope="module")
def thresholds(omp_bin, tmp_path_factory) -> list[dict]:
    """Every variant of every THRESHOLD_SAMPLES session, planned by us and judged by oh-my-pi's code."""
    root = tmp_path_factory.mktemp("omp-thresholds")
    agent = root / "home" / ".omp" / "agent"
    folder = agent / "sessions" / PROJECT
    folder.mkdir(parents=True)
    # the global settings: keep-recent for the cut, a threshold every project setting overrides
    (agent / "config.yml").write_text("theme: dark\ncompaction:\n  keepRecentTokens: 5000  # ours\n"
                                      "  thresholdPercent: 50\nmodelRoles:\n  default: judge/judge-model\n")
    cases = []
    for name in THRESHOLD_SAMPLES:
        source = SAMPLES / "pi" / name
        tokens = our_trigger_tokens(source)
        raw = source.read_text(encoding="utf-8").splitlines(keepends=True)
        for label, project in variants(tokens):
            cwd = root / "projects" / f"{Path(name).stem}-{label}"
            (cwd / ".omp").mkdir(parents=True)
            (cwd / ".omp" / "settings.json").write_text(json.dumps({"compaction": project}))
            header = json.loads(raw[0])
            header["cwd"] = str(cwd)
            copy = folder / f"{Path(name).stem}-{label}.jsonl"
            copy.write_text(json.dumps(header) + "\n" + "".join(raw[1:]), encoding="utf-8")
            cases.append({"file": copy, "cwd": str(cwd), "tokens": tokens, "label": label, "project": project})
    done = subprocess.run([sys.executable, "-m", "batchcompact", "plan", str(folder), "--context-window", str(WINDOW),
                           "--format", "json"], capture_output=True, text=True, timeout=600)
    assert done.returncode == 0, done.stderr
    rows = {Path(r["path"]).name: r for r in json.loads(done.stdout)["rows"]}
    answer = omp_modules(omp_bin, root / "judge-home", {"thresholds": [
        {"cwd": c["cwd"], "agentDir": str(agent), "tokens": c["tokens"], "window": WINDOW} for c in cases]})
    for case, judged in zip(cases, answer["thresholds"], strict=True):
        case.update(ours=rows[case["file"].name], omp=judged)
    return cases


def test_plan_takes_omps_trigger_decision_at_and_around_its_threshold(thresholds):
    decided = {"compact": 0, "skip": 0}
    for case in thresholds:
        ours, omp = case["ours"], case["omp"]
        where = f"{case['file'].name} {case['project']}: ours {ours['status']} {ours.get('reason')}, omp {omp}"
        assert (ours["status"] == "compact") == omp["compact"], where
        if case["label"] != "disabled":  # a skip before the trigger: no threshold in our row
            assert ours["threshold"] == omp["threshold"], where
        decided["compact" if omp["compact"] else "skip"] += 1
    assert decided["compact"] >= 9 and decided["skip"] >= 12  # both sides of the threshold were judged


def test_plan_takes_omps_keep_recent_tokens(thresholds, tmp_path):
    """The global config.yml's keepRecentTokens (5000) places our cut as --keep-recent-tokens 5000 does."""
    case = next(c for c in thresholds if c["label"] == "tokens-1" and c["file"].name.startswith("big-refactor"))
    assert case["omp"]["keepRecentTokens"] == 5000 and case["ours"]["status"] == "compact"
    copy = tmp_path / "big-refactor.jsonl"
    shutil.copyfile(SAMPLES / "pi" / "big-refactor.jsonl", copy)
    done = subprocess.run([sys.executable, "-m", "batchcompact", "plan", str(copy), "--force", "--keep-recent-tokens",
                           "5000", "--context-window", str(WINDOW), "--format", "json"],
                          capture_output=True, text=True, timeout=300)
    (row,) = json.loads(done.stdout)["rows"]
    assert case["ours"]["first_kept_entry_id"] == row["first_kept_entry_id"]
