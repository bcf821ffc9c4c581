"""The agent registry: one `Agent` per format, and a new agent reaches detection, reading, discovery,
the report, presets and the built-in summarizer's tool table through one registration."""

from __future__ import annotations

import json
from contextlib import contextmanager

import pytest

import batchcompact.agents as registry
from batchcompact.agents import AGENTS, Agent, Place, get, presets, tool_table
from batchcompact.core.session import Session
from batchcompact.discover import discover_sources
from batchcompact.formats.detect import detect_session_agent, read_session
from batchcompact.summarize.builtin_tools import classify_call


def toy_line(obj: dict, first: bool) -> bool:
    return first and obj.get("kind") == "toy-session"


def toy_read(path) -> Session:
    return Session(str(path), "toy", {"id": "toy-1"}, [])


def toy_usage(path, rows, stats) -> None:
    stats.warn(None, "toy usage read")


TOY = Agent(
    name="toy",
    display_name="Toy",
    places=(Place(defaults=("~/.toy",), env="TOY_HOME", sessions=("chats",)),),
    detect_line="test_agents:toy_line",
    reader="test_agents:toy_read",
    usage="test_agents:toy_usage",
    tools={"frobnicate_file": "read"},
    presets={"toy": {"reserve_tokens": 1234}},
)


@contextmanager
def registered(agent: Agent):
    """`agent` registered for the block; the registry as it was afterwards."""
    saved = list(AGENTS), dict(registry._BY_NAME)
    registry.register(agent)
    try:
        yield agent
    finally:
        AGENTS[:] = saved[0]
        registry._BY_NAME.clear()
        registry._BY_NAME.update(saved[1])
        registry._TOOLS.clear()
        registry._SUFFIXES.clear()


@pytest.fixture
def toy():
    with registered(TOY):
        yield TOY


def test_the_compactable_formats_are_registered_in_order():
    assert [a.name for a in AGENTS if a.compactable] == ["pi", "qwen", "claude", "codex", "gemini", "opencode",
                                                          "kilo", "copilot", "openclaw"]
    # report-only agents (Copilot CLI and OpenClaw in their order) come after them; Qwen Code's line rule is
    # asked before Claude Code's
    assert [a.name for a in AGENTS[:5]] == ["pi", "qwen", "claude", "codex", "gemini"]
    assert get("claude").display_name == "Claude Code" and get("pi").compactable
    assert set(presets()) == {"pi", "oh-my-pi", "flue", "claude-code", "codex", "gemini-cli", "qwen-code",
                              "copilot-cli", "openclaw", "opencode"}
    assert tool_table()["apply_patch"] == "patch" and tool_table()["todowrite"] == "todos"
    with pytest.raises(KeyError, match="unknown agent 'nope'"):
        get("nope")


def test_a_name_or_preset_taken_twice_is_refused(toy):
    with pytest.raises(ValueError, match="already registered"):
        registry.register(TOY)
    with pytest.raises(ValueError, match="presets"):
        registry.register(Agent(name="other", display_name="Other", presets={"pi": {}}))
    with pytest.raises(ValueError, match="unknown tool shapes"):
        Agent(name="bad", display_name="Bad", tools={"x": "teleport"})


def test_a_registered_agent_is_detected_read_discovered_and_summarized(toy, tmp_path):
    path = tmp_path / "s.jsonl"
    path.write_text(json.dumps({"kind": "toy-session"}) + "\n")
    assert detect_session_agent(path) == "toy"
    assert read_session(path).agent == "toy"
    home = tmp_path / "home"
    (home / ".toy" / "chats").mkdir(parents=True)
    found = [(s.agent, s.path) for s in discover_sources(env={}, home=home)]
    assert found == [("toy", home / ".toy" / "chats")]
    other = tmp_path / "elsewhere"
    (other / "chats").mkdir(parents=True)
    assert [s.origin for s in discover_sources(env={"TOY_HOME": str(other)}, home=home)] == ["TOY_HOME"]
    action = classify_call({"name": "Frobnicate_File", "arguments": {"path": "a.py"}})
    assert action.kind == "read" and action.paths == [("a.py", "read")]
    assert presets()["toy"] == {"reserve_tokens": 1234}


def test_a_report_only_agent_is_planned_as_a_skip(toy, tmp_path):
    from batchcompact.core.planner import CompactionSettings
    from batchcompact.pipeline.planning import PlanOptions, plan_session

    path = tmp_path / "s.jsonl"
    path.write_text(json.dumps({"kind": "toy-session"}) + "\n")
    plan, row = plan_session(read_session(path), CompactionSettings(), PlanOptions())
    assert row["status"] == "skip" and row["reason"] == "a Toy transcript: reported, not compacted"


def test_report_extraction_goes_through_the_agent(toy, tmp_path):
    from batchcompact.report.part_cache import extract_file

    path = tmp_path / "s.jsonl"
    path.write_text(json.dumps({"kind": "toy-session"}) + "\n")
    _, stats = extract_file(path, "toy")
    assert stats.format == "toy" and any("toy usage read" in str(w) for w in stats.warnings)


def toy_document(path, head: bytes) -> bool:
    return path.name.endswith(".toy.json") and head.lstrip().startswith(b"{")


def test_an_agent_with_json_documents_is_walked_and_detected(tmp_path):
    doc = Agent(name="doc", display_name="Doc", suffixes=(".toy.json",), detect_file="test_agents:toy_document",
                usage="test_agents:toy_usage")
    with registered(doc):
        from code_helpers import source_files

        from batchcompact.formats.scan import iter_session_files
        from batchcompact.report.detect import detect_usage_source as report_detect

        path = tmp_path / "a" / "chat.toy.json"
        path.parent.mkdir()
        path.write_text('{\n  "messages": []\n}\n')
        (tmp_path / "a" / "other.json").write_text("{}")
        assert [i.path for i in iter_session_files([tmp_path])] == [path]
        assert source_files([tmp_path]) == [path]
        assert detect_session_agent(path) == "doc" and report_detect(path) == "doc"


def test_a_report_only_agent_is_discovered_for_report_alone(tmp_path):
    usage_only = Agent(name="meter", display_name="Meter", places=(Place(defaults=("~/.meter",), sessions=("",)),),
                       usage="test_agents:toy_usage")
    home = tmp_path / "home"
    (home / ".meter").mkdir(parents=True)
    with registered(usage_only):
        assert discover_sources(env={}, home=home) == []
        assert [s.agent for s in discover_sources(env={}, home=home, report=True)] == ["meter"]


def _claim_probes() -> list[str]:
    """Paths every agent's `files` and `homes` rules claim, the same names elsewhere, and files no one claims."""
    paths = ["/h/.claude/projects/-p/a.jsonl", "/h/.codex/sessions/2026/01/01/rollout-x.jsonl",
             "/h/.qwen/projects/-p/chats/s.jsonl", "/h/.pi/agent/sessions/-p/s.jsonl", "/h/notes.txt"]
    for agent in AGENTS:
        for rule in agent.files:
            for pattern in rule.names:
                name = pattern.replace("*", "x1")
                paths += [f"/h/{under}/deeper/{name}" for under in rule.under] + [f"/h/{under}/{name}" for under in rule.under]
                paths += [f"/h/elsewhere/{name}", f"/{name}"]
        for home in agent.homes:
            paths += [f"/h/{home}/sub/a{suffix}" for suffix in agent.suffixes] + [f"/h/{home}/a.txt"]
    return paths


def test_a_file_is_claimed_by_the_same_rule_with_the_index_as_by_trying_every_agent(toy):
    """`claim` first asks one expression of every agent's name patterns and the set of their home folders;
    it answers as trying every agent's rules (`claim_by_rules`) does, for every rule's files, the same names elsewhere and
    files no agent claims, and sees an agent registered after it was built (`toy` below)."""
    from batchcompact.agents import Files
    from batchcompact.report.readers import _split_folders, claim, claim_by_rules

    def by_rules(path: str, loose: bool):
        folder, _, name = path.rpartition("/")
        return claim_by_rules(name, _split_folders(folder), loose=loose)

    assert claim("/h/.toy/chats/a.toyfile") is None
    extra = Agent(name="claimer", display_name="Claimer", files=(Files(names=("*.toyfile",), under=("chats",)),),
                  homes=(".claimer",), usage="test_agents:toy_usage")
    with registered(extra):
        probes = _claim_probes() + ["/h/.toy/chats/a.toyfile", "/h/.claimer/x/a.jsonl"]
        assert claim("/h/.toy/chats/a.toyfile")[0].name == "claimer"
        assert claim("/h/.claimer/x/a.jsonl")[0].name == "claimer"
        for loose in (False, True):
            assert [claim(p, loose=loose) for p in probes] == [by_rules(p, loose) for p in probes]
    assert claim("/h/.toy/chats/a.toyfile") is None
    claimed = [p for p in _claim_probes() if claim(p, loose=True) is not None]
    assert len(claimed) > 20 and claim("/h/notes.txt", loose=True) is None
