"""The `<read-files>`/`<modified-files>` tags of a compaction summary (core/filetags.py; docs/summaries.md,
"The file tags"): paths relative to the session's working folder, files of one folder on one line, within
half of the summary's budget; formats without `details` read them back."""

from __future__ import annotations

from pathlib import Path

from conftest import fixture_path

from batchcompact.agents import file_tools
from batchcompact.core.fileops import details_from_summary
from batchcompact.core.filetags import file_tags, tag_path
from batchcompact.core.planner import CompactionPlan, CompactionSettings, prepare_compaction
from batchcompact.formats.detect import read_session


def test_paths_are_said_relative_to_the_working_folder_grouped_by_folder():
    read = ["/home/u/app", "/home/u/app/web/src/ui/a.ts:1-104", "/home/u/app/web/src/ui/a.ts:200-260",
            "/home/u/app/web/src/lib/b.ts", "/home/u/app/package.json:raw", "agent://0-Review", "/etc/hosts"]
    modified = ["/home/u/app/src/c.ts", "/home/u/app/lib/x/y.py"]
    # a file by its last two parts under its folder: a file name alone may be one of several (`index.ts`)
    assert file_tags(read, modified, "/home/u/app") == (
        "\n\n<read-files>\nweb/src/: ui/a.ts, lib/b.ts\npackage.json\n/etc/hosts\n</read-files>"
        "\n\n<modified-files>\nsrc/c.ts\nlib/x/y.py\n</modified-files>")


def test_a_path_beside_the_working_folder_and_a_windows_path():
    assert tag_path("/home/user/raddit/src/x.ts", "/home/user/tmp") == "../raddit/src/x.ts"
    assert tag_path("/opt/tool/x.ts", "/home/user/tmp") == "/opt/tool/x.ts"  # far away: as given
    assert tag_path("C:\\Users\\me\\app\\src\\x.ts", "c:/Users/me/app") == "src/x.ts"


def test_the_tags_keep_within_their_share_the_modified_files_first():
    read = [f"/r/docs/d{i:03}.md" for i in range(200)]
    modified = [f"/r/pkg/src/m{i}.py" for i in range(3)]
    text = file_tags(read, modified, "/r", max_tokens=60)
    assert len(text) <= 60 * 4
    assert "<modified-files>\npkg/: src/m0.py, src/m1.py, src/m2.py\n</modified-files>" in text
    assert text.split("</read-files>")[0].rstrip().endswith("more files")
    assert details_from_summary("x" + text)["modifiedFiles"] == ["pkg/src/m0.py", "pkg/src/m1.py", "pkg/src/m2.py"]
    assert details_from_summary("x" + text, "/r")["modifiedFiles"][0] == "/r/pkg/src/m0.py"


def test_a_planned_compaction_says_its_tags_relative_and_within_half_the_budget():
    """pi's large session at the smallest budget: its tags took 296 tokens of a 200-token summary before (29
    files, one a line); now half of it, the rest counted, while the plan's lists (the entry's `details`) still
    hold every path as pi computes them."""
    session = read_session(fixture_path("pi", "large-session.jsonl"))
    settings = CompactionSettings(force=True, keep_recent_tokens=3000, summary_budget=200)
    plan = prepare_compaction(session.path_entries(), settings, 200_000, file_tools=file_tools(), cwd=session.cwd)
    assert isinstance(plan, CompactionPlan)
    assert -(-len(plan.file_tags) // 4) <= 100
    assert "more files" in plan.file_tags and "packages/coding-agent/src/: " in plan.file_tags
    assert len(plan.read_files) + len(plan.modified_files) == 29


def test_a_split_turn_with_no_history_keeps_the_budget():
    """With nothing before the split turn to summarize, the text standing in for the history (the previous
    summary, or "No prior history.") and the prefix share the room: at 200 tokens a sample session cut at 90%
    stored 539 (the previous summary whole) and one at 60% 212 (the separator not counted)."""
    from batchcompact.core.apply import compose_summary
    from batchcompact.core.planner import estimate_text_tokens, summary_budgets, whole_lines
    from batchcompact.core.prompts import SPLIT_TURN_SEPARATOR
    from batchcompact.eval.run import EvalOptions, cuts_of_file
    from batchcompact.summarize.builtin import summarize_offline

    # the room the tags (60) leave is shared, all of it, and the previous summary cannot crowd out the prefix
    fallback, prefix = summary_budgets(200, 60, True, False, prefix_tokens=400, fallback_tokens=500)
    assert fallback + prefix + estimate_text_tokens(SPLIT_TURN_SEPARATOR) + 60 == 200 and 0 < fallback <= prefix
    assert whole_lines("## Goal\nShip it.\n\n## Next Steps\n1. Tag the release", 6) == "## Goal\nShip it.\n…"
    samples = Path(__file__).resolve().parent.parent / "sample_sessions" / "pi"
    settings = CompactionSettings(keep_recent_tokens=3000, summary_budget=200)
    for name, percent in (("legacy-v1.jsonl", 90), ("small-fix.jsonl", 60)):
        found = cuts_of_file(str(samples / name), settings, EvalOptions(cut_at=(percent,)))
        plan = found["cuts"][0].plan
        stored = compose_summary(plan, {c.kind: summarize_offline(c) for c in plan.calls})
        assert -(-len(stored) // 4) <= 200, (name, len(stored))
