"""`run --branch-summaries` and `run --prune-tool-outputs`, end to end on real files."""

from __future__ import annotations

import json
import shutil

import polars as pl
from click.testing import CliRunner
from conftest import SAMPLES
from factories import Builder

from batchcompact.adapters.pi.read import read_pi_session
from batchcompact.cli import cli


def invoke(*args: str):
    return CliRunner().invoke(cli, list(args), catch_exceptions=False)


def test_branch_summaries_then_compaction_on_the_branched_sample(tmp_path):
    src = tmp_path / "in"
    src.mkdir()
    shutil.copy(SAMPLES / "pi" / "branched.jsonl", src / "branched.jsonl")
    before = read_pi_session(src / "branched.jsonl")
    out = tmp_path / "out"
    result = invoke("run", str(src), "--output-dir", str(out), "--min-age", "0", "--branch-summaries", "--jobs", "1")
    assert result.exit_code == 0, result.output
    after = read_pi_session(out / "branched.jsonl")
    new = after.entries[len(before.entries):]
    assert [e.type for e in new] == ["branch_summary", "branch_summary", "compaction"]
    # Chained on the active path: old leaf -> summary -> summary -> compaction.
    assert new[0].parent_id == before.tree.leaf.id
    assert new[1].parent_id == new[0].id and new[2].parent_id == new[1].id
    # fromId is the abandoned leaf; the branch pi already summarized is not summarized again.
    abandoned = {e.id for e in before.tree.abandoned_leaves()}
    assert {e.data["fromId"] for e in new[:2]} < abandoned
    assert all(e.data["summary"].startswith("The user explored a different conversation branch") for e in new[:2])
    assert invoke("validate", str(out / "branched.jsonl")).exit_code == 0
    info = json.loads(invoke("show", str(out / "branched.jsonl"), "--format", "json", "--context").output)["rows"][0]
    texts = [m["message"]["content"][0]["text"] for m in info["context_messages"] if m["source_role"] == "branchSummary"]
    assert len(texts) >= 2 and all(t.startswith("The following is a summary of a branch") for t in texts)
    report = pl.read_parquet(str(out / ".batchcompact" / "reports" / "*.parquet"))
    assert report["branch_summaries"].to_list() == [2]

    # Idempotent: the compacted output, run again, has nothing left to do.
    again = invoke("run", str(out / "branched.jsonl"), "--output-dir", str(tmp_path / "out2"), "--min-age", "0",
                   "--branch-summaries", "--jobs", "1", "--force")
    assert again.exit_code == 0 and "1 skipped" in again.output
    assert not (tmp_path / "out2" / "branched.jsonl").exists()


def test_branch_summaries_alone_when_no_compaction_is_needed(tmp_path):
    b = Builder()
    root = b.user("start " * 50)
    b.assistant("plan " * 50)
    b.user("try approach A " * 80)
    b.assistant("A failed with ImportError in src/a.py " * 40, calls=[("edit", {"path": "src/a.py"})])
    b.user("go back and try B", parent=root)
    b.assistant("B works " * 30)
    path = b.write(tmp_path / "s.jsonl")
    out = tmp_path / "out"
    result = invoke("run", str(path), "--output-dir", str(out), "--min-age", "0", "--branch-summaries",
                    "--context-window", "200000", "--jobs", "1")
    assert result.exit_code == 0, result.output
    written = read_pi_session(out / "s.jsonl")
    assert [e.type for e in written.entries[6:]] == ["branch_summary"]
    summary = written.entries[-1].data
    assert summary["details"]["modifiedFiles"] == ["src/a.py"]
    assert "<modified-files>\nsrc/a.py\n</modified-files>" in summary["summary"]
    assert written.tree.leaf.type == "branch_summary"


def _tool_heavy(tmp_path):
    b = Builder()
    b.user("investigate the flaky tests")
    for index in range(40):
        name = "read" if index % 10 == 0 else "bash"
        b.assistant(f"step {index}", calls=[(name, {"command": f"pytest -k t{index}"})])
        b.tool_result(f"log line {index} " * 1500, name=name)  # ~4300 tokens each
    b.user("summarize what you found")
    b.assistant("done", usage=120_000)
    return b.write(tmp_path / "tools.jsonl")


def test_prune_tool_outputs_rewrites_only_old_large_results(tmp_path):
    path = _tool_heavy(tmp_path)
    original = read_pi_session(path)
    plan = json.loads(invoke("plan", str(path), "--force", "--keep-recent-tokens", "100000",
                             "--prune-tool-outputs", "--format", "json", "--jobs", "1",
                             "--context-window", "400000").stdout)["rows"][0]
    assert plan["prune_results"] > 0 and plan["prune_tokens"] >= 20_000
    # Keep 100k tokens: most tool output stays in context, and the old part of it is pruned.
    out = tmp_path / "out"
    result = invoke("run", str(path), "--output-dir", str(out), "--min-age", "0", "--force", "--keep-recent-tokens", "100000",
                    "--prune-tool-outputs", "--context-window", "400000", "--jobs", "1")
    assert result.exit_code == 0, result.output
    written = read_pi_session(out / "tools.jsonl")
    pruned = [e for e in written.entries if e.message and e.message.get("prunedAt") is not None]
    assert pruned, plan
    for entry in pruned:
        text = entry.message["content"][0]["text"]
        assert text.startswith("[Output truncated - ") and text.endswith(" tokens]")
        assert entry.message["toolName"] != "read"
        assert entry.line == next(e.line for e in original.entries if e.id == entry.id)  # same line, same place
    saved = sum(int(e.message["content"][0]["text"].split(" - ")[1].split()[0]) for e in pruned)
    assert saved >= 20_000
    untouched = [e for e in written.entries[: len(original.entries)] if e.id not in {p.id for p in pruned}]
    assert [e.data for e in untouched] == [e.data for e in original.entries if e.id not in {p.id for p in pruned}]
    assert invoke("validate", str(out / "tools.jsonl")).exit_code == 0
    # The newest 40k tokens of tool output are protected.
    results = [e for e in written.entries if e.role == "toolResult"]
    assert all(e.message.get("prunedAt") is None for e in results[-9:])
