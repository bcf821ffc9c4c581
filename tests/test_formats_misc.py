"""Sub-agent transcripts, what `show` says of each format (version, branches), and the writers importable
on their own."""

from __future__ import annotations

import json
import subprocess
import sys

from conftest import SAMPLES, fixture_path, shared_fixtures

from batchcompact.core.planner import CompactionSettings
from batchcompact.pipeline.planning import PlanOptions, plan_file, read_session
from batchcompact.pipeline.session_info import describe_session

SPOTTER = ("claude", "projects", "-home-USER-projects-spotter")
ACOMPACT = (*SPOTTER, "4d5611e5-241a-462a-8d15-5122611a9569", "subagents", "agent-acompact-e1f845.jsonl")
SUBAGENT = SAMPLES / "claude/projects/-home-user-projects-webapp/bd6e388f-417b-444a-b6e3-88a50c28ea27/subagents"


def test_claude_subagent_files_skip_with_their_reason():
    paths = [fixture_path(*ACOMPACT), *sorted(SAMPLES.glob("claude/**/subagents/agent-*.jsonl"))]
    assert len(paths) >= 2
    for path in paths:
        row = plan_file(str(path), CompactionSettings(), PlanOptions())
        assert (row["status"], row["reason"]) == ("skip", "sub-agent transcript"), path
    main = plan_file(str(fixture_path(*SPOTTER, "short.jsonl")), CompactionSettings(), PlanOptions())
    assert main["reason"] != "sub-agent transcript"


def test_codex_subagent_thread_skips(tmp_path):
    meta = {"id": "t-1", "cwd": "/r", "cli_version": "0.146.0", "source": {"subagent": {"thread_spawn": {}}}}
    lines = [
        {"timestamp": "2026-08-03T10:48:56.000Z", "type": "session_meta", "payload": meta},
        {"timestamp": "2026-08-03T10:48:57.000Z", "type": "response_item",
         "payload": {"type": "message", "role": "user", "content": [{"type": "input_text", "text": "hi"}]}},
    ]
    path = tmp_path / "rollout-2026-08-03T10-48-56-t-1.jsonl"
    path.write_text("".join(json.dumps(x) + "\n" for x in lines))
    row = plan_file(str(path), CompactionSettings(), PlanOptions())
    assert (row["status"], row["reason"]) == ("skip", "sub-agent transcript")
    meta["source"] = "cli"
    path.write_text("".join(json.dumps(x) + "\n" for x in lines))
    assert plan_file(str(path), CompactionSettings(), PlanOptions())["reason"] != "sub-agent transcript"


def test_a_claude_subagent_file_is_read_as_its_conversation_by_show_plan_and_run(bc, tmp_path):
    """Its lines are all sidechain lines: they are its conversation (it showed 0 entries, and `plan --force`
    skipped it as an empty session). Compacted, our lines are sidechain lines too and it stays a sub-agent
    transcript."""
    source = SUBAGENT / "agent-565dc48.jsonl"
    code, out, _ = bc("show", source)
    assert code == 0
    assert "entries: 6  message 6" in out
    assert "model: anthropic/claude-haiku-4-5-20251001" in out
    assert "active leaf: 00ed78c0-22f6-4d27-b859-c8c064071b68 (line 8), path of 6 entries" in out
    assert "None" not in out and "abandoned branch" not in out
    code, out, _ = bc("plan", source, "--format", "jsonl")
    assert (json.loads(out)["status"], json.loads(out)["reason"]) == ("skip", "sub-agent transcript")
    code, out, _ = bc("plan", source, "--force", "--keep-recent-tokens", "100", "--format", "jsonl")
    assert code == 0 and json.loads(out)["status"] == "compact"

    copy = tmp_path / "agent-565dc48.jsonl"
    copy.write_bytes(source.read_bytes())
    code, out, err = bc("run", copy, "--in-place", "--force", "--min-age", "0", "--keep-recent-tokens", "100",
                        "--state", tmp_path / "s.sqlite", "--report-dir", tmp_path / "reports")
    assert code == 0 and "1 compacted" in out + err
    written = [json.loads(line) for line in copy.read_text().splitlines()[8:]]
    assert written and all(o["isSidechain"] is True and o["agentId"] == "565dc48" for o in written)
    code, out, _ = bc("show", copy)
    assert code == 0
    assert "compaction " in out and "abandoned branch" not in out  # the summarized history is no branch
    code, out, _ = bc("plan", copy, "--force", "--keep-recent-tokens", "100", "--format", "jsonl")
    assert (json.loads(out)["status"], json.loads(out)["reason"]) == ("skip", "already compacted")
    assert bc("validate", copy)[0] == 0


def test_show_lists_no_compacted_history_as_an_abandoned_branch(bc):
    """A Claude Code boundary starts a new root; the history before it is no branch the user left. A
    branch the user did leave before the compaction is still listed, from where it left that history."""
    claude = shared_fixtures() / "claude"
    code, out, _ = bc("show", claude / "projects" / "-home-USER-projects-spotter" /
                      "4d5611e5-241a-462a-8d15-5122611a9569.jsonl")  # compacted by Claude Code
    assert code == 0 and "compaction " in out
    assert "abandoned branch" not in out
    code, out, _ = bc("show", claude / "coverage" / "claude-code-log_dag_compact_after_rewind.jsonl",
                      "--format", "json")
    branches = json.loads(out)["rows"][0]["branches"]
    assert [(b["leaf_id"], b["common_ancestor_id"], b["entries"]) for b in branches] == [("b1a", "a1", 2)]


def test_show_leaves_out_what_a_format_does_not_record(bc):
    """A Gemini CLI chat records no version (it said `version None`)."""
    chat = shared_fixtures() / "agents" / "gemini" / "tmp" / "project-a" / "chats" / "session-a.jsonl"
    code, out, _ = bc("show", chat)
    assert code == 0
    assert out.splitlines()[0] == f"{chat}  (gemini)"
    assert "None" not in out


def test_show_names_the_agent_version():
    claude = describe_session(read_session(fixture_path(*SPOTTER, "4d5611e5-241a-462a-8d15-5122611a9569.jsonl")))
    assert claude["version"] == "2.1.39"
    rollout = sorted(fixture_path("codex", "sessions", "2026", "02", "23").glob("rollout-*.jsonl"))[0]
    assert describe_session(read_session(rollout))["version"] == "0.104.0-alpha.1"


def test_writers_import_without_their_readers():
    code = (
        "import sys, batchcompact.adapters.codex.write, batchcompact.adapters.claude.write;"
        "print('batchcompact.adapters.codex.read' in sys.modules, 'batchcompact.adapters.claude.read' in sys.modules)"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    assert out.split() == ["False", "False"]
