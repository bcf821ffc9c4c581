"""The synthetic session generator: determinism, and each bundled sample has the property it claims.

Properties are recomputed here with plain `json` (not the project's reader), so the samples are an
independent check of the reader and planner.
"""

from __future__ import annotations

import json
import math
import re
from pathlib import Path

import pytest

from synth.__main__ import main as synth_main
from synth.claude import ClaudeSpec, write_claude_session
from synth.codex import CodexSpec, write_codex_session
from synth.corpus import parse_size, pi_dir_name, plan_corpus, write_corpus
from synth.pi import PiSpec, write_pi_session
from synth.samples import write_samples

SAMPLES = Path(__file__).resolve().parent.parent / "sample_sessions"
BROKEN = Path(__file__).resolve().parent.parent / "examples" / "broken"
THRESHOLD = 128_000 - 16_384  # pi's default trigger for a 128k window
MALFORMED_LINES = [16, 19, 39]


# -- plain-json helpers ----------------------------------------------------------------------
def estimate(message: dict) -> int:
    """chars/4 per pi-sessions.md section 3.1 (the samples contain no images)."""
    role, chars = message.get("role"), 0
    if role in ("user", "toolResult"):
        content = message["content"]
        chars = (
            len(content)
            if isinstance(content, str)
            else sum(len(b["text"]) for b in content if b["type"] == "text")
        )
    elif role == "assistant":
        for block in message["content"]:
            if block["type"] == "text":
                chars += len(block["text"])
            elif block["type"] == "thinking":
                chars += len(block["thinking"])
            elif block["type"] == "toolCall":
                chars += len(block["name"]) + len(
                    json.dumps(block["arguments"], separators=(",", ":"), ensure_ascii=False)
                )
    elif role == "bashExecution":
        chars = len(message["command"]) + len(message["output"])
    return math.ceil(chars / 4)


def load(path: Path) -> tuple[dict, list[dict], list[int]]:
    """(header, entries, numbers of lines that are not JSON objects)."""
    objects, bad = [], []
    for number, line in enumerate(path.read_text(encoding="utf-8").split("\n"), 1):
        if not line:
            continue
        try:
            value = json.loads(line)
        except ValueError:
            bad.append(number)
            continue
        if isinstance(value, dict):
            objects.append(value)
        else:
            bad.append(number)
    return objects[0], objects[1:], bad


def active_path(entries: list[dict]) -> list[dict]:
    by_id = {e["id"]: e for e in entries}
    path, current = [], entries[-1]
    while current is not None:
        path.append(current)
        current = by_id.get(current["parentId"])
    return path[::-1]


def abandoned_leaves(entries: list[dict]) -> list[str]:
    on_path = {e["id"] for e in active_path(entries)}
    parents = {e["parentId"] for e in entries}
    return [e["id"] for e in entries if e["id"] not in parents and e["id"] not in on_path]


def context_tokens(path: list[dict]) -> int:
    """Estimated tokens of the context pi rebuilds from this path (latest compaction + kept + after)."""

    def tokens(entries: list[dict]) -> int:
        total = 0
        for entry in entries:
            if entry["type"] == "message":
                total += estimate(entry["message"])
            elif entry["type"] == "branch_summary":
                total += math.ceil(len(entry["summary"]) / 4)
        return total

    compactions = [i for i, e in enumerate(path) if e["type"] == "compaction"]
    if not compactions:
        return tokens(path)
    at = compactions[-1]
    comp = path[at]
    kept_from = next(i for i, e in enumerate(path) if e.get("id") == comp["firstKeptEntryId"])
    return math.ceil(len(comp["summary"]) / 4) + tokens(path[kept_from:at] + path[at + 1 :])


def usable_assistants(path: list[dict]) -> list[dict]:
    return [
        e["message"]
        for e in path
        if e["type"] == "message"
        and e["message"]["role"] == "assistant"
        and e["message"]["stopReason"] not in ("aborted", "error")
    ]


def pi_sample(name: str) -> Path:
    path = (BROKEN if name == "malformed" else SAMPLES) / "pi" / f"{name}.jsonl"
    assert path.exists(), f"{path} missing: run python -m synth samples sample_sessions"
    return path


# -- determinism -----------------------------------------------------------------------------
def test_pi_same_seed_same_bytes(tmp_path):
    spec = dict(target_bytes=120_000, branch_at=(0.4, 0.7), compaction_at=0.3, malformed=True)
    a = write_pi_session(tmp_path / "a.jsonl", PiSpec(seed=7, **spec))
    b = write_pi_session(tmp_path / "b.jsonl", PiSpec(seed=7, **spec))
    c = write_pi_session(tmp_path / "c.jsonl", PiSpec(seed=8, **spec))
    assert a.path.read_bytes() == b.path.read_bytes()
    assert a.path.read_bytes() != c.path.read_bytes()
    assert a.bytes == a.path.stat().st_size


def test_claude_and_codex_same_seed_same_bytes(tmp_path):
    for root in ("x", "y"):
        write_claude_session(tmp_path / root, ClaudeSpec(seed=3, target_bytes=60_000, subagent=True))
        write_codex_session(tmp_path / root, CodexSpec(seed=3, target_bytes=60_000))
    files_x = sorted(p.relative_to(tmp_path / "x") for p in (tmp_path / "x").rglob("*.jsonl"))
    files_y = sorted(p.relative_to(tmp_path / "y") for p in (tmp_path / "y").rglob("*.jsonl"))
    assert files_x == files_y and len(files_x) == 3
    for rel in files_x:
        assert (tmp_path / "x" / rel).read_bytes() == (tmp_path / "y" / rel).read_bytes()


def test_committed_samples_match_the_generator(tmp_path):
    assert SAMPLES.is_dir(), "sample_sessions/ missing"
    write_samples(tmp_path / "sample_sessions")
    for new, old in ((tmp_path / "sample_sessions", SAMPLES), (tmp_path / "examples" / "broken", BROKEN)):
        generated = sorted(p.relative_to(new) for p in new.rglob("*") if p.is_file())
        committed = sorted(p.relative_to(old) for p in old.rglob("*") if p.is_file())
        assert generated == committed
        for rel in generated:
            assert (new / rel).read_bytes() == (old / rel).read_bytes(), f"{rel} differs: regenerate samples"


def test_sample_sessions_hold_no_broken_file():
    """The README's first command runs over sample_sessions/ and must exit 0."""
    manifest = json.loads((SAMPLES / "manifest.json").read_text())
    assert not any(info.get("malformed_lines") for info in manifest["files"].values())
    assert json.loads((BROKEN / "manifest.json").read_text())["files"]["pi/malformed.jsonl"]["malformed_lines"]


# -- pi v3 invariants ------------------------------------------------------------------------
@pytest.mark.parametrize(
    "name", ["big-refactor", "small-fix", "second-compaction", "huge-last-turn", "branched", "malformed"]
)
def test_pi_v3_structure(name):
    header, entries, _ = load(pi_sample(name))
    assert (
        header["type"] == "session"
        and header["version"] == 3
        and set(header) == {"type", "version", "id", "timestamp", "cwd"}
    )
    assert [e["type"] for e in entries[:2]] == ["model_change", "thinking_level_change"]
    ids = [e["id"] for e in entries]
    assert all(re.fullmatch(r"[0-9a-f]{8}", i) for i in ids) and len(set(ids)) == len(ids)
    seen: set[str] = set()
    for entry in entries:
        assert entry["parentId"] is None if not seen else entry["parentId"] in seen
        seen.add(entry["id"])
    stamps = [e["timestamp"] for e in entries]
    assert stamps == sorted(stamps) and len(set(stamps)) == len(stamps)
    calls = set()
    for entry in entries:
        if entry["type"] != "message":
            continue
        message = entry["message"]
        assert isinstance(message["timestamp"], int)
        if message["role"] == "assistant":
            calls |= {b["id"] for b in message["content"] if b["type"] == "toolCall"}
            usage = message["usage"]
            assert usage["totalTokens"] == (
                usage["input"] + usage["output"] + usage["cacheRead"] + usage["cacheWrite"]
            )
            assert math.isclose(
                usage["cost"]["total"], sum(v for k, v in usage["cost"].items() if k != "total")
            )
            assert message["stopReason"] in ("toolUse", "stop", "aborted", "error")
        elif message["role"] == "toolResult":
            assert message["toolCallId"] in calls and isinstance(message["isError"], bool)
    path = active_path(entries)
    last = usable_assistants(path)[-1]
    manifest = json.loads((pi_sample(name).parent.parent / "manifest.json").read_text())["files"][f"pi/{name}.jsonl"]
    assert manifest["context_tokens"] == context_tokens(path)
    assert manifest["last_total_tokens"] == last["usage"]["totalTokens"]
    # usage totals track the growing context: overhead (system prompt, tools) of a few thousand tokens
    assert 0 < last["usage"]["totalTokens"] - context_tokens(path) < 5000


def test_big_refactor_is_far_beyond_128k():
    _, entries, _ = load(pi_sample("big-refactor"))
    path = active_path(entries)
    last = usable_assistants(path)[-1]
    assert context_tokens(path) >= 200_000
    assert last["usage"]["totalTokens"] > 128_000
    assert (last["provider"], last["model"]) == ("anthropic", "claude-sonnet-4-5")
    switches = [e["modelId"] for e in entries if e["type"] == "model_change"]
    assert switches == ["claude-sonnet-4-5", "claude-opus-4-5", "claude-sonnet-4-5"]
    assert {"label", "session_info"} <= {e["type"] for e in entries}
    tools = {
        b["name"]
        for e in path
        if e["type"] == "message" and e["message"]["role"] == "assistant"
        for b in e["message"]["content"]
        if b["type"] == "toolCall"
    }
    assert {"read", "edit", "bash"} <= tools
    results = [e["message"] for e in path if e["type"] == "message" and e["message"]["role"] == "toolResult"]
    assert any(r["isError"] for r in results) and max(estimate(r) for r in results) > 2000


def test_small_fix_is_well_under_any_threshold():
    _, entries, _ = load(pi_sample("small-fix"))
    path = active_path(entries)
    assert context_tokens(path) < 20_000
    assert usable_assistants(path)[-1]["usage"]["totalTokens"] < 20_000


def test_second_compaction_needs_another():
    _, entries, _ = load(pi_sample("second-compaction"))
    path = active_path(entries)
    compactions = [i for i, e in enumerate(path) if e["type"] == "compaction"]
    assert len(compactions) == 1
    comp = path[compactions[0]]
    assert comp["fromHook"] is False and set(comp["details"]) == {"readFiles", "modifiedFiles"}
    assert "## Goal" in comp["summary"] and "<read-files>" in comp["summary"]
    kept = next(i for i, e in enumerate(path) if e["id"] == comp["firstKeptEntryId"])
    assert path[kept]["message"]["role"] == "user"
    assert (
        sum(
            1
            for e in path[kept : compactions[0]]
            if e["type"] == "message" and e["message"]["role"] == "user"
        )
        >= 2
    )
    assert comp["tokensBefore"] > 0
    assert context_tokens(path) > THRESHOLD


def test_huge_last_turn_exceeds_keep_recent_tokens():
    _, entries, _ = load(pi_sample("huge-last-turn"))
    path = active_path(entries)
    last_user = max(
        i for i, e in enumerate(path) if e["type"] == "message" and e["message"]["role"] == "user"
    )
    turn = [e["message"] for e in path[last_user:] if e["type"] == "message"]
    assert sum(estimate(m) for m in turn) > 20_000
    assert sum(1 for m in turn if m["role"] == "assistant") >= 5
    assert context_tokens(path) > THRESHOLD


def test_branched_has_nested_abandoned_branches():
    _, entries, _ = load(pi_sample("branched"))
    path = active_path(entries)
    index = {e["id"]: i for i, e in enumerate(path)}
    by_id = {e["id"]: e for e in entries}
    leaves = abandoned_leaves(entries)
    assert len(leaves) >= 2
    forks = []
    for leaf in leaves:  # the fork point: the deepest ancestor of the leaf that is on the active path
        current = by_id[leaf]
        while current["id"] not in index:
            current = by_id[current["parentId"]]
        forks.append(index[current["id"]])
    # later branches fork after the first one (inside its replacement continuation)
    assert forks[0] < forks[1]
    assert any(e["type"] == "branch_summary" for e in path)
    # a fork inside an abandoned subtree: an entry off the active path with two children
    children: dict[str, int] = {}
    for entry in entries:
        children[entry["parentId"]] = children.get(entry["parentId"], 0) + 1
    assert any(count >= 2 and parent not in index for parent, count in children.items())
    assert context_tokens(path) > THRESHOLD


def test_legacy_v1_has_no_ids():
    header, entries, bad = load(pi_sample("legacy-v1"))
    assert not bad and "version" not in header
    assert {"provider", "modelId", "thinkingLevel"} <= set(header)
    assert all("id" not in e and "parentId" not in e for e in entries)
    comp = next(e for e in entries if e["type"] == "compaction")
    assert "firstKeptEntryId" not in comp
    kept = entries[comp["firstKeptEntryIndex"] - 1]  # line index, header at 0
    assert kept["type"] == "message" and kept["message"]["role"] == "user"
    assert all(
        "totalTokens" not in e["message"]["usage"]
        for e in entries
        if e["type"] == "message" and e["message"]["role"] == "assistant"
    )


def test_malformed_lines_are_exactly_where_the_manifest_says():
    path = pi_sample("malformed")
    _, entries, bad = load(path)
    assert bad == MALFORMED_LINES
    manifest = json.loads((BROKEN / "manifest.json").read_text())
    assert manifest["files"]["pi/malformed.jsonl"]["malformed_lines"] == MALFORMED_LINES
    lines = path.read_text().split("\n")
    assert isinstance(json.loads(lines[MALFORMED_LINES[1] - 1]), list)
    assert not path.read_bytes().endswith(b"\n")  # the torn last line
    assert lines[-1].startswith('{"type":"message"')


# -- Claude Code and Codex -------------------------------------------------------------------
def _only(pattern: str) -> Path:
    found = sorted(SAMPLES.glob(pattern))
    assert found, f"no sample matches {pattern}"
    return found[0]


def test_claude_sample_shape():
    path = _only("claude/projects/-home-user-projects-webapp/*.jsonl")
    lines = [json.loads(line) for line in path.read_text().splitlines()]
    uuids: set[str] = set()
    responses: dict[str, list[dict]] = {}
    for line in lines:
        if "uuid" in line:
            assert line["parentUuid"] is None or line["parentUuid"] in uuids
            uuids.add(line["uuid"])
            assert line["sessionId"] == path.stem and line["version"].startswith("2.1.")
        if line["type"] == "assistant":
            responses.setdefault(line["message"]["id"], []).append(line)
    assert {"progress", "file-history-snapshot", "user", "assistant"} <= {line["type"] for line in lines}
    split = [r for r in responses.values() if len(r) > 1]
    assert split
    for group in split:
        assert len({g["requestId"] for g in group}) == 1
        outputs = [g["message"]["usage"]["output_tokens"] for g in group]
        assert outputs[-1] == max(outputs) and outputs[0] < outputs[-1]
    last = [r[-1]["message"]["usage"] for r in responses.values()][-1]
    assert (
        last["input_tokens"] + last["cache_read_input_tokens"] + last["cache_creation_input_tokens"] > 184_000
    )
    subagents = list((path.parent / path.stem / "subagents").glob("agent-*.jsonl"))
    assert len(subagents) == 1
    sub = [json.loads(line) for line in subagents[0].read_text().splitlines()]
    assert all(s["isSidechain"] and s["agentId"] and s["sessionId"] == path.stem for s in sub)


def test_codex_sample_shape():
    path = _only("codex/sessions/2026/10/14/rollout-*.jsonl")
    lines = [json.loads(line) for line in path.read_text().splitlines()]
    assert lines[0]["type"] == "session_meta" and lines[0]["payload"]["id"] in path.name
    assert all(set(line) == {"timestamp", "type", "payload"} for line in lines)
    assert {line["payload"]["model"] for line in lines if line["type"] == "turn_context"} == {"gpt-4o"}
    kinds = {line["payload"]["type"] for line in lines if line["type"] == "response_item"}
    assert {"message", "reasoning", "function_call", "function_call_output"} <= kinds
    counts = [
        line["payload"]["info"]
        for line in lines
        if line["type"] == "event_msg"
        and line["payload"]["type"] == "token_count"
        and line["payload"]["info"]
    ]
    totals = [c["total_token_usage"]["total_tokens"] for c in counts]
    assert totals == sorted(totals) and len(set(totals)) < len(totals)  # cumulative, with repeats
    assert counts[-1]["last_token_usage"]["input_tokens"] > 128_000


# -- corpus and CLI --------------------------------------------------------------------------
def test_parse_size():
    assert parse_size("1GB") == 10**9 and parse_size("250MB") == 250 * 10**6 and parse_size("64kb") == 64_000
    assert parse_size("1.5M") == 1_500_000 and parse_size(123) == 123
    with pytest.raises(ValueError, match="KB, MB or GB"):
        parse_size("lots")


def test_corpus_plan_is_long_tailed():
    items = plan_corpus(10**9, seed=1)
    sizes = [i.target_bytes for i in items]
    assert abs(sum(sizes) - 10**9) < 10_000
    assert sum(10_000 <= s <= 10**6 for s in sizes) / len(sizes) > 0.8
    assert 1 <= sum(s >= 20 * 10**6 for s in sizes) and max(sizes) <= 100 * 10**6
    assert plan_corpus(10**9, seed=1) == items and {i.format for i in items} == {"pi", "claude", "codex"}


def test_corpus_layout_and_worker_independence(tmp_path):
    rows_1 = write_corpus(tmp_path / "one", "400KB", seed=5, workers=1)
    rows_2 = write_corpus(tmp_path / "two", "400KB", seed=5, workers=2)
    assert [r["path"] for r in rows_1] == [r["path"] for r in rows_2]
    for row in rows_1:
        assert (tmp_path / "one" / row["path"]).read_bytes() == (tmp_path / "two" / row["path"]).read_bytes()
        first = row["path"].split("/")
        assert first[0] == row["format"]
        if row["format"] == "pi":
            assert first[1].startswith("--home-user-") and first[1].endswith("--")
        elif row["format"] == "claude":
            assert first[1] == "projects" and first[2].startswith("-home-user-")
        else:
            assert first[1] == "sessions" and re.fullmatch(r"rollout-.*\.jsonl", first[-1])
    assert json.loads((tmp_path / "one" / "corpus.json").read_text())["files"] == rows_1
    assert pi_dir_name("/home/user/proj") == "--home-user-proj--"


def test_cli_pi_command(tmp_path, capsys):
    out = tmp_path / "s.jsonl"
    assert synth_main(["pi", str(out), "--turns", "2", "--seed", "4", "--legacy-v1"]) == 0
    header, entries, bad = load(out)
    assert "version" not in header and entries and not bad
    assert "bytes" in capsys.readouterr().out
    assert synth_main(["corpus", "--out", str(tmp_path / "c"), "--total", "50KB", "--formats", "nope"]) == 2
