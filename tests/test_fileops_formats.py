"""File operations and previous summaries from Claude Code and Codex sessions: into the plan's file lists,
the summary's tags and the marker each format stores, and carried over to the next compaction."""

from __future__ import annotations

import json

from conftest import fixture_path
from factories import plan_forced, write_appended

from batchcompact.adapters.claude import read as claude
from batchcompact.adapters.codex import read as codex
from batchcompact.agents import file_tools
from batchcompact.core.apply import compose_summary
from batchcompact.core.fileops import FileOps, details_from_summary, patch_paths
from batchcompact.core.filetags import file_tags
from batchcompact.core.planner import CompactionPlan, CompactionSettings
from batchcompact.pipeline.planning import PlanOptions, plan_file

SPOTTER = ("claude", "projects", "-home-USER-projects-spotter")
MAIN = (*SPOTTER, "4d5611e5-241a-462a-8d15-5122611a9569.jsonl")
NOW = "2026-11-22T04:00:00.000Z"
PATCH = """*** Begin Patch
*** Add File: src/new.py
+print("hi")
*** Update File: src/old.py
*** Move to: src/renamed.py
@@
-a
+b
*** Delete File: src/gone.py
*** End Patch"""


def _assistant(*calls):
    return {
        "role": "assistant",
        "content": [{"type": "toolCall", "id": f"c{i}", "name": n, "arguments": a} for i, (n, a) in enumerate(calls)],
    }


def test_claude_tools_fill_read_and_modified():
    ops = FileOps(file_tools())
    ops.add_message(
        _assistant(
            ("Read", {"file_path": "/r/a.py"}),
            ("Read", {"file_path": "/r/b.py"}),
            ("Edit", {"file_path": "/r/b.py", "old_string": "x", "new_string": "y"}),
            ("MultiEdit", {"file_path": "/r/c.py", "edits": []}),
            ("Write", {"file_path": "/r/d.py", "content": ""}),
            ("NotebookEdit", {"notebook_path": "/r/e.ipynb", "new_source": ""}),
            ("Bash", {"command": "cat /r/f.py"}),  # paths of shell commands are not guessed
            ("Read", {"path": "/r/not-claude.py"}),  # Claude's Read takes file_path
        )
    )
    assert ops.lists() == (["/r/a.py"], ["/r/b.py", "/r/c.py", "/r/d.py", "/r/e.ipynb"])


def test_codex_apply_patch_headers_in_every_call_shape():
    assert patch_paths(PATCH) == ["src/new.py", "src/old.py", "src/renamed.py", "src/gone.py"]
    shapes = [
        ("apply_patch", {"input": PATCH}),  # custom tool call (freeform)
        ("apply_patch", {"patch": PATCH}),
        ("shell", {"command": ["apply_patch", PATCH]}),
        ("exec_command", {"cmd": "apply_patch <<'EOF'\n" + PATCH + "\nEOF"}),
        ("shell", {"command": ["bash", "-lc", "apply_patch <<'EOF'\n" + PATCH + "\nEOF"]}),
    ]
    for name, args in shapes:
        ops = FileOps(file_tools())
        ops.add_message(_assistant((name, args)))
        assert ops.lists()[1] == ["src/gone.py", "src/new.py", "src/old.py", "src/renamed.py"], (name, args)
    ops = FileOps(file_tools())
    ops.add_message(_assistant(("exec_command", {"cmd": "grep -n 'Update File' notes.txt"})))
    assert ops.lists() == ([], [])


def test_details_from_summary_tags():
    text = "## Goal\nx\n\n<read-files>\na.py\n</read-files>\n\n<modified-files>\nb.py\nc.py\n</modified-files>"
    assert details_from_summary(text) == {"readFiles": ["a.py"], "modifiedFiles": ["b.py", "c.py"]}
    assert details_from_summary("no tags") is None
    grouped = "s\n\n<read-files>\nweb/: src/a.ts, lib/b.ts\nREADME.md\n… and 3 more files\n</read-files>"
    assert details_from_summary(grouped) == {"readFiles": ["web/src/a.ts", "web/lib/b.ts", "README.md"]}


def _cut_before_boundary(tmp_path):
    source = fixture_path(*MAIN)
    lines = source.read_text(encoding="utf-8").splitlines(keepends=True)
    boundary = next(i for i, line in enumerate(lines) if '"compact_boundary"' in line)
    target = tmp_path / source.name
    target.write_text("".join(lines[:boundary]), encoding="utf-8")
    return target


def test_real_claude_session_plans_its_file_lists(tmp_path):
    cut = _cut_before_boundary(tmp_path)
    row = plan_file(str(cut), CompactionSettings(), PlanOptions())
    assert row["status"] == "compact"
    edited = set()
    read = set()
    for line in cut.read_text(encoding="utf-8").splitlines()[: row["first_kept_line"] - 1]:
        obj = json.loads(line)
        if obj.get("type") != "assistant" or obj.get("isSidechain"):
            continue
        for block in obj["message"].get("content") or ():
            if isinstance(block, dict) and block.get("type") == "tool_use":
                path = block["input"].get("file_path")
                (read if block["name"] == "Read" else edited if block["name"] in ("Edit", "Write") else set()).add(path)
    assert edited and read
    assert set(row["modified_files"]) == edited
    assert set(row["read_files"]) == read - edited


def _next_turn(tail: dict) -> list[dict]:
    """A user prompt and an answer appended after our kept tail, as Claude Code would."""
    env = {k: tail[k] for k in ("sessionId", "cwd", "version") if k in tail}
    user = {**env, "parentUuid": tail["uuid"], "type": "user", "uuid": "next-user", "isSidechain": False,
            "timestamp": NOW, "message": {"role": "user", "content": "one more thing " * 50}}
    answer = {**env, "parentUuid": "next-user", "type": "assistant", "uuid": "next-answer", "isSidechain": False,
              "timestamp": NOW, "message": {"id": "msg_next", "role": "assistant", "model": "claude-opus-4-6",
                                            "content": [{"type": "text", "text": "done " * 50}],
                                            "usage": {"input_tokens": 10, "output_tokens": 20}}}
    return [user, answer]


def test_claude_marker_and_tags_carry_files_to_the_next_compaction(tmp_path):
    cut = _cut_before_boundary(tmp_path)
    session = claude.read(cut)
    plan = plan_forced(session, 20_000)
    assert isinstance(plan, CompactionPlan) and plan.modified_files
    summary = compose_summary(plan, {"history": "first summary"})
    assert "<modified-files>\n" + plan.modified_files[0] in summary
    lines = claude.build_compaction(session, plan, summary, usage=None, now_iso=NOW)
    marker = lines[0]["compactMetadata"]["batchcompact"]
    assert (marker["readFiles"], marker["modifiedFiles"]) == (plan.read_files, plan.modified_files)
    written = claude.read(write_appended(cut, [*lines, *_next_turn(lines[-1])], tmp_path / "out.jsonl"))
    compaction = next(e for e in written.path_entries() if e.type == "compaction")
    assert compaction.data["details"] == {"readFiles": plan.read_files, "modifiedFiles": plan.modified_files}
    second = plan_forced(written, 100)
    assert isinstance(second, CompactionPlan)
    assert set(plan.modified_files) <= set(second.modified_files)
    assert second.previous_summary == summary


def test_claude_codes_own_summary_is_the_previous_summary():
    session = claude.read(fixture_path(*MAIN))
    plan = plan_forced(session, 3000)
    assert isinstance(plan, CompactionPlan)
    assert plan.previous_summary.startswith("Analysis:")  # Claude's text without its preamble
    assert "<previous-summary>\nAnalysis:" in plan.calls[0].user_prompt


def test_codex_files_carry_over_through_the_summary_tags(tmp_path):
    folder = fixture_path("codex", "sessions", "2026", "02", "23")
    src = sorted(folder.glob("rollout-*.jsonl"))[0]
    session = codex.read(src)
    plan = plan_forced(session, 2000)
    assert isinstance(plan, CompactionPlan)
    plan = CompactionPlan(**{**plan.__dict__, "read_files": ["a.py"], "modified_files": ["b.py"],
                             "file_tags": file_tags(["a.py"], ["b.py"])})
    summary = compose_summary(plan, {"history": "codex summary"})
    lines = codex.build_compaction(session, plan, summary, usage=None, now_iso=NOW)
    turn = [
        {"timestamp": NOW, "type": "response_item",
         "payload": {"type": "message", "role": role, "content": [{"type": kind, "text": text * 50}]}}
        for role, kind, text in (("user", "input_text", "more "), ("assistant", "output_text", "done "))
    ]
    written = codex.read(write_appended(src, [*lines, *turn], tmp_path / src.name))
    compaction = [e for e in written.path_entries() if e.type == "compaction"][-1]
    cwd = session.cwd.rstrip("/")  # the tags say paths relative to it; the reader resolves them again
    assert compaction.data["details"] == {"readFiles": [f"{cwd}/a.py"], "modifiedFiles": [f"{cwd}/b.py"]}
    assert compaction.data["summary"] == summary
    second = plan_forced(written, 100)
    assert isinstance(second, CompactionPlan)
    assert second.previous_summary == summary
    assert f"{cwd}/a.py" in second.read_files and f"{cwd}/b.py" in second.modified_files
