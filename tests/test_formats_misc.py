"""Sub-agent transcripts, the agent version in `show`, and the writers importable on their own."""

from __future__ import annotations

import json
import subprocess
import sys

from conftest import SAMPLES, fixture_path

from batchcompact.core.planner import CompactionSettings
from batchcompact.pipeline.inspect import describe_session
from batchcompact.pipeline.planning import PlanOptions, plan_file, read_session

SPOTTER = ("claude", "projects", "-home-USER-projects-spotter")
ACOMPACT = (*SPOTTER, "4d5611e5-241a-462a-8d15-5122611a9569", "subagents", "agent-acompact-e1f845.jsonl")


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


def test_show_names_the_agent_version():
    claude = describe_session(read_session(fixture_path(*SPOTTER, "4d5611e5-241a-462a-8d15-5122611a9569.jsonl")))
    assert claude["version"] == "2.1.39"
    rollout = sorted(fixture_path("codex", "sessions", "2026", "02", "23").glob("rollout-*.jsonl"))[0]
    assert describe_session(read_session(rollout))["version"] == "0.104.0-alpha.1"


def test_writers_import_without_their_readers():
    code = (
        "import sys, batchcompact.formats.codex_write, batchcompact.formats.claude_write;"
        "print('batchcompact.formats.codex' in sys.modules, 'batchcompact.formats.claude' in sys.modules)"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    assert out.split() == ["False", "False"]
