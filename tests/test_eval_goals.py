"""The goals on the held-out set (docs/eval.md, "Goals"; bench/eval_table.py computes them): 14 real sessions
of 11 repositories (two fixtures and twelve public sessions, split by repository), cut at 30-90% at the
default budget. #55: overall >= the list baseline + 0.05 and >= the list for each agent; file recall >= 0.7;
no summary over the budget at 2,000 and at the least budget the CLI allows; carry-over >= 0.8 on the sessions
with recorded compactions; at pi's two recorded compactions, at pi's own length, at least as many probes kept
as pi's LLM summary (a tie passes). #47: files + names >= the first N tokens + 0.2. A list of user messages
and names, and the built-in without its handover sections, must each fail a goal that is not a length;
docs/eval.md's goals and held-out tables must be what the bench prints.

A goal the built-in does not meet on this commit is an `xfail(strict=True)` with its figures: meeting it
makes the test fail until the mark goes. Cost: one eval of the held-out set with three summarizers, one at
the least budget, one `--existing` and two at pi's lengths, each once per module (about a minute of CPU
more than the two-session set: docs/eval.md)."""

from __future__ import annotations

import importlib.util
import json

import pytest
from click.testing import CliRunner
from conftest import REPO, public_sessions, shared_fixtures
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


@pytest.fixture(scope="module")
def bench():
    shared_fixtures()
    public_sessions()
    return _bench()


@pytest.fixture(scope="module")
def rows(bench):
    """`eval ARGS` in this process: its rows; files today's readers refuse (exit 1) are noted for the tables."""
    def run(*args: str) -> list[dict]:
        result = CliRunner().invoke(cli, ["eval", *args, "--format", "json", "-q"], catch_exceptions=False)
        assert result.exit_code in (0, 1), result.output
        output = json.loads(result.stdout)
        assert result.exit_code == 0 or output["problems"], result.output  # 1 only for an unreadable file
        return bench.note_problems(output)
    return run


@pytest.fixture(scope="module")
def heldout(bench, rows):
    """The held-out set cut inside, scored for the built-in, the list and the built-in without handover."""
    paths = [bench.path_of(name) for name in bench.SETS["heldout"]]
    return rows(*paths, "--cut-at", bench.PERCENTS, "--keep-recent-tokens", bench.KEEP_RECENT,
                "--summarizer", "builtin", "--summarizer", "eval_goal_hooks:as_list",
                "--summarizer", "eval_goal_hooks:without_handover")


@pytest.fixture(scope="module")
def at_minimum(bench, rows):
    """The held-out set cut inside, the built-in at the least `--summary-budget` the CLI allows."""
    paths = [bench.path_of(name) for name in bench.SETS["heldout"]]
    return rows(*paths, "--cut-at", bench.PERCENTS, "--keep-recent-tokens", bench.KEEP_RECENT,
                "--summary-budget", str(bench.min_budget()))


@pytest.fixture(scope="module")
def recorded(bench, rows):
    return rows("--existing", *map(bench.path_of, bench.EXISTING), "--summarizer", "builtin")


@pytest.fixture(scope="module")
def at_pis_length(bench, recorded):
    return bench.recorded_at_pis_length(recorded)


@pytest.fixture(scope="module")
def results(bench, heldout, recorded, at_minimum, at_pis_length):
    """Every goal for the built-in: name -> (met, figures)."""
    least = bench.min_budget()
    return {**bench.goals(bench.only(heldout, "builtin"), "builtin", BUDGET),
            f"least budget {least}": bench.over_budget(at_minimum, "builtin", least),
            **bench.carryover_goal(heldout, recorded), **bench.recorded_goal(at_pis_length[0])}


def _failed(results: dict) -> list[str]:
    return [name for name, (met, _) in results.items() if not met]


def _goal(results: dict, start: str) -> tuple[bool, str]:
    (found,) = [value for name, value in results.items() if name.startswith(start)]
    return found


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
    asked, said = " ".join(messages[0]["content"].split()), first.removeprefix("- ")
    assert said.endswith("…") and asked.startswith(said.removesuffix("…")) and len(said) < len(asked)  # cut, its start
    assert second == "- now the tests"
    assert names == "src/parse.py, load_config, sessiontree"  # 2, 2 (src/parse.py named first), 1
    assert message_list(messages, 50) == text[:50]


def test_strip_sections_drops_a_section_with_its_subsections():
    text = "## Goal\ng\n## Progress\n### Done\nd\n## Key Decisions\nk\n## Relevant Files\nf"
    assert strip_sections(text) == "## Goal\ng\n## Relevant Files\nf"


def test_the_heldout_set_is_the_leads_split_by_repository(bench):
    """14 real sessions of 27 (11 repositories); the two held-out fixtures stay held out; no repository is in
    both sets (docs/eval.md, "The two sets")."""
    def repository(name: str) -> str:
        return name.split("/", 1)[1].split("__")[0] if name.startswith("public:") else name

    heldout, tuning = bench.SETS["heldout"], bench.SETS["tuning"]
    assert len(heldout) == 14 and len({repository(n) for n in heldout}) == 11
    assert "pi/before-compaction.jsonl" in heldout and bench.SPOTTER in heldout
    assert not {repository(n) for n in heldout} & {repository(n) for n in tuning}
    assert set(bench.EXISTING) <= set(heldout)


def test_a_list_of_user_messages_and_names_fails_the_goals(bench, heldout):
    failed = _failed(bench.goals(heldout, "eval_goal_hooks:as_list"))
    assert any(name.startswith(SUBSTANCE) for name in failed), failed  # not only by its length


def test_the_measure_sees_the_handover_sections(bench, heldout, results):
    """The built-in without its handover sections (Progress, Key Decisions, Next Steps, Critical Context) scores
    lower overall than the whole built-in: the measure is not blind to them. (Until #55's last round it failed
    the goals outright; since the Goal, Constraints and the trail carry the user's words whole and the earlier
    summary's rules, they meet the goals alone, 0.39 vs the list's 0.33, and the handover adds 0.04.)"""
    stripped = bench.goals(heldout, "eval_goal_hooks:without_handover")
    (without,) = [figures for name, (_, figures) in stripped.items() if name.startswith("overall ≥ baseline:list +")]
    _, whole = _goal(results, "overall ≥ baseline:list +")
    assert float(without.split()[0]) < float(whole.split()[0]), (without, whole)


def test_overall_beats_the_list_by_the_margin(results):
    met, figures = _goal(results, "overall ≥ baseline:list +")
    assert met, figures


@pytest.mark.parametrize("agent", ["pi", "claude", "codex"])
def test_overall_beats_the_list_for_each_agent(results, agent):
    met, figures = _goal(results, f"overall ≥ baseline:list, {agent} sessions")
    assert met, figures


def test_file_recall(results):
    met, figures = _goal(results, "hindsight file recall")
    assert met, figures


def test_files_and_names_beat_the_first_n_tokens(results):
    met, figures = _goal(results, "files + names")
    assert met, figures


def test_no_summary_over_the_default_budget(results):
    met, figures = _goal(results, f"summary tokens ≤ {BUDGET:,}")
    assert met, figures


def test_no_summary_over_the_least_budget(results):
    met, figures = _goal(results, "least budget")
    assert met, figures


@pytest.mark.xfail(strict=True, reason="carry-over 0.73 of 184 items (goal 0.8; the list 0.17, the agents' own "
                   "summaries 0.25) on the held-out sessions with recorded compactions (docs/eval.md)")
def test_carryover_on_the_sessions_with_recorded_compactions(results):
    met, figures = _goal(results, "carry-over")
    assert met, figures


def test_at_pis_recorded_compactions_the_builtin_keeps_as_many_probes_at_their_length(at_pis_length, results):
    """The built-in re-summarizes each of pi's two compacted spans with pi's own summary length as its
    budget (`--summary-budget`) and keeps at least as many probes as pi's LLM summary; a tie passes (#55's
    decision on #47's goal 5; the mean over kinds it replaces read 0.17 vs 0.25 at the second)."""
    rows, budgeted = at_pis_length
    assert budgeted
    pi = [r for r in rows if r["path"].endswith("before-compaction.jsonl") and r["summarizer"] == "recorded"]
    assert [r["summary_tokens"] for r in pi] == [1073, 913]
    for number in (1, 2):
        met, figures = _goal(results, f"pi's compaction {number}:")
        assert met, figures


def test_docs_eval_md_holds_the_goals_and_heldout_tables_the_bench_prints(bench, heldout, recorded, at_pis_length,
                                                                        at_minimum):
    """`python bench/eval_table.py --write docs/eval.md` regenerates them; a summarizer that changes the
    figures changes the doc in the same commit."""
    expected = bench.heldout_part(heldout, recorded, *at_pis_length, at_minimum)
    doc = (REPO / "docs" / "eval.md").read_text()
    assert expected in doc, "docs/eval.md is stale: run `python bench/eval_table.py --write docs/eval.md`"
