"""#47's goals, on the held-out set (docs/eval.md, "The two sets"; bench/eval_table.py computes them):
at the default budget, on the fixtures' real pi and Claude Code sessions cut at 30-90%, a summary keeps
>= 0.6 of the files the next turns needed, files + names >= the first N tokens + 0.2, overall >= the
list baseline + 0.1, and no summary over the budget; at pi's recorded compactions, at pi's own summary
length, at least what pi's LLM summaries keep. A list of user messages and names, and the built-in without
its handover sections, must fail them; docs/eval.md's goals and held-out tables must be what the bench
prints."""

from __future__ import annotations

import importlib.util
import json

import pytest
from click.testing import CliRunner
from conftest import REPO, shared_fixtures
from eval_goal_hooks import BUDGET, strip_sections

from batchcompact.cli import cli
from batchcompact.eval.baselines import message_list
from batchcompact.eval.scoring import Score

SUBSTANCE = ("hindsight file recall", "files + names", "overall")  # the goals that are not the length


def _bench():
    spec = importlib.util.spec_from_file_location("eval_table", REPO / "bench" / "eval_table.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def _rows(*args: str) -> list[dict]:
    result = CliRunner().invoke(cli, ["eval", *args, "--format", "json", "-q"], catch_exceptions=False)
    assert result.exit_code == 0, result.output
    return json.loads(result.stdout)["rows"]


@pytest.fixture(scope="module")
def bench():
    shared_fixtures()
    return _bench()


@pytest.fixture(scope="module")
def heldout(bench):
    """The held-out set cut inside, scored for the built-in, the list and the built-in without handover."""
    paths = [bench.path_of(name) for name in bench.SETS["heldout"]]
    return _rows(*paths, "--cut-at", bench.PERCENTS, "--keep-recent-tokens", bench.KEEP_RECENT,
                 "--summarizer", "builtin", "--summarizer", "eval_goal_hooks:as_list",
                 "--summarizer", "eval_goal_hooks:without_handover")


@pytest.fixture(scope="module")
def recorded(bench):
    return _rows("--existing", *map(bench.path_of, bench.EXISTING), "--summarizer", "builtin")


def _failed(results: dict) -> list[str]:
    return [name for name, (met, _) in results.items() if not met]


def test_overall_is_the_mean_over_the_kinds_present_not_pooled():
    score = Score(recall={"file": 1.0, "symbol": None, "task": 0.0}, probes={"file": 1, "symbol": 0, "task": 9},
                  kept={"file": 1, "symbol": 0, "task": 0})
    assert score.overall == 0.5  # pooled by count it would be 0.1: nine requests would outvote one file


def test_the_list_baseline_is_the_user_messages_then_the_names_by_frequency():
    messages = [{"role": "user", "content": "Fix the parser in src/parse.py " + "x" * 300},
                {"role": "assistant", "content": [{"type": "text", "text": "load_config and src/parse.py, "
                                                   "load_config again, then SessionTree"}]},
                {"role": "user", "content": "<system-reminder>injected</system-reminder>"},
                {"role": "user", "content": "now the tests"}]
    text = message_list(messages, 10_000)
    first, second, names = text.split("\n")[1], text.split("\n")[2], text.rsplit("Names: ", 1)[1]
    assert first.startswith("- Fix the parser") and len(first) == 2 + 240 and second == "- now the tests"
    assert names == "src/parse.py, load_config, sessiontree"  # 2, 2 (src/parse.py named first), 1
    assert message_list(messages, 50) == text[:50]


def test_strip_sections_drops_a_section_with_its_subsections():
    text = "## Goal\ng\n## Progress\n### Done\nd\n## Key Decisions\nk\n## Relevant Files\nf"
    assert strip_sections(text) == "## Goal\ng\n## Relevant Files\nf"


def test_a_list_of_user_messages_and_names_fails_the_goals(bench, heldout):
    failed = _failed(bench.goals(heldout, "eval_goal_hooks:as_list"))
    assert any(name.startswith(SUBSTANCE) for name in failed), failed  # not only by its length


def test_the_builtin_without_its_handover_sections_fails_the_goals(bench, heldout):
    failed = _failed(bench.goals(heldout, "eval_goal_hooks:without_handover"))
    assert any(name.startswith(SUBSTANCE) for name in failed), failed


def test_the_builtin_meets_the_goals_on_the_heldout_set(bench, heldout):
    results = bench.goals(heldout, "builtin", BUDGET)
    assert _failed(results) == [], results


@pytest.mark.xfail(strict=True, reason="pi's second compaction: the built-in at 874 of pi's 913 tokens keeps overall "
                   "0.17 against pi's 0.25 (docs/eval.md), after the tight-budget round as before it and after "
                   "the round on a reader's defects; the first is met (0.67 against 0.50)")
def test_at_pis_recorded_compactions_the_builtin_keeps_what_pis_llm_summaries_keep_at_their_length(recorded):
    """The built-in re-summarizes each of pi's two compacted spans with pi's own summary length as its
    budget (`--summary-budget`), and keeps at least what pi's LLM summary kept."""
    pi = [r for r in recorded if r["path"].endswith("before-compaction.jsonl") and r["summarizer"] == "recorded"]
    assert [r["summary_tokens"] for r in pi] == [1073, 913]
    for theirs in pi:
        rows = _rows("--existing", theirs["path"], "--summarizer", "builtin", "--summary-budget",
                     str(theirs["summary_tokens"]))
        mine = next(r for r in rows if r["compaction"] == theirs["compaction"] and r["summarizer"] == "builtin")
        assert mine["summary_tokens"] <= theirs["summary_tokens"]
        assert (mine["hindsight_recall"] or 0) >= (theirs["hindsight_recall"] or 0)
        assert mine["overall"] >= theirs["overall"]


def test_docs_eval_md_holds_the_goals_and_heldout_tables_the_bench_prints(bench, heldout, recorded):
    """`python bench/eval_table.py --write docs/eval.md` regenerates them; a summarizer that changes the
    figures changes the doc in the same commit."""
    at_length, budgeted = bench.recorded_at_pis_length(recorded)
    expected = bench.heldout_part(heldout, recorded, at_length, budgeted)
    doc = (REPO / "docs" / "eval.md").read_text()
    assert expected in doc, "docs/eval.md is stale: run `python bench/eval_table.py --write docs/eval.md`"
