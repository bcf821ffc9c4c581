"""Carry-over (docs/eval.md, "Carry-over"): the share of the previous summary's rules and next steps that the
new summary still carries or marks done. Hand-written summaries; each expected value is worked out from the
definition in the comments, not read from the code's output."""

from __future__ import annotations

import json

from click.testing import CliRunner
from conftest import REPO

from batchcompact.cli import cli
from batchcompact.eval.carryover import RULES, STEPS, carried_items, measure_carryover
from batchcompact.eval.pooling import mean_rows

PI_PREVIOUS = """## Goal
Ship the price dashboard.

## Constraints & Preferences
- Never push directly to main; always open a pull request.
- Respond in Korean, concisely.
- (none)

## Progress
### Done
- [x] Migrated the chart to lightweight-charts.

## Next Steps
1. Deploy the site to Streamlit Cloud.
2. Update SUBMISSION.md with the final URL.

## Critical Context
- The current branch is dev.
"""

CLAUDE_PREVIOUS = """This session is being continued from a previous conversation that ran out of context.

Summary:
1. Primary Request and Intent:
   The user wants an impact dashboard for the PostHog repository.

6. All user messages:
   - "Please analyse doc.md and propose ideas before implementing anything"
   - "ok start"

7. Pending Tasks:
   - Task #9 (pending): Deploy to Streamlit Cloud and smoke test
   - After fetch completes:
     - Run the final analysis script src/analyze.py

8. Current Work:
   The background fetcher is running chunk 7 of 13.

9. Optional Next Step:
   Monitor the fetcher and rerun analyze.py once every chunk completes.

If you need specific details from before compaction (like exact code snippets), read the full transcript.
Continue the conversation from where it left off without asking the user any further questions.
"""


def test_the_items_are_the_lines_of_the_rules_and_next_steps_sections_only():
    # Goal, Done and Critical Context give no item; "(none)" has no key term.
    assert carried_items(PI_PREVIOUS) == [
        (RULES, "Never push directly to main; always open a pull request."),
        (RULES, "Respond in Korean, concisely."),
        (STEPS, "Deploy the site to Streamlit Cloud."),
        (STEPS, "Update SUBMISSION.md with the final URL."),
    ]


def test_claude_codes_numbered_headings_map_to_rules_and_next_steps():
    # "All user messages" holds the rules; "Pending Tasks" and "Optional Next Step" the next steps; "ok start"
    # has one key term (no item), "After fetch completes:" is a bare sub-heading (no item); Primary Request
    # and Current Work are not carried by this measure; the harness's two closing lines are no items.
    assert carried_items(CLAUDE_PREVIOUS) == [
        (RULES, '"Please analyse doc.md and propose ideas before implementing anything"'),
        (STEPS, "Task #9 (pending): Deploy to Streamlit Cloud and smoke test"),
        (STEPS, "Run the final analysis script src/analyze.py"),
        (STEPS, "Monitor the fetcher and rerun analyze.py once every chunk completes."),
    ]


def test_a_sub_heading_stays_inside_its_section_and_a_bold_line_ends_it():
    text = ("## Next Steps\n### Immediately\n- Rename the cache module\n**Turn Context (split turn):**\n"
            "- Original request about caching layers\n")
    assert carried_items(text) == [(STEPS, "Rename the cache module")]


def test_carried_said_under_done_or_dropped():
    new = """## Goal
Ship the price dashboard.

## Constraints & Preferences
- Never push directly to main: always open a pull request.

## Progress
### Done
- Deployed the site to Streamlit Cloud.

## Next Steps
- Wait for the user's next request.
"""
    # 4 items: the pull-request rule is carried (the same stems in order), the deploy step is marked done
    # ("Deployed" stems to "deploy", every pair near), the Korean rule and the SUBMISSION.md step are
    # dropped: 2 of 4.
    result = measure_carryover(PI_PREVIOUS, new)
    assert (result.items, result.carried, result.share) == (4, 2, 0.5)
    assert result.missed == ("rules: Respond in Korean, concisely.",
                             "next steps: Update SUBMISSION.md with the final URL.")


def test_a_summary_that_keeps_the_previous_one_whole_carries_everything_and_none_carries_nothing():
    assert measure_carryover(PI_PREVIOUS, PI_PREVIOUS).share == 1.0
    assert measure_carryover(PI_PREVIOUS, "## Goal\nSomething else entirely.").share == 0.0
    assert measure_carryover(None, PI_PREVIOUS) is None  # no previous summary: null
    assert measure_carryover(PI_PREVIOUS, None) is None  # no new summary (the kept tail alone): null
    assert measure_carryover("## Goal\nOnly a goal.", PI_PREVIOUS).share is None  # no item: null


def test_pooled_over_rows_carried_and_items_are_summed():
    base = {"summarizer": "builtin", "baseline_for": None, "status": "ok", "overall": 0.5, "summary_tokens": 10,
            **{f"{k}_{w}": None for k in ("file", "symbol", "command", "value", "rule", "task")
               for w in ("probes", "recall")}}
    rows = [dict(base, carryover=0.5, carryover_items=4), dict(base, carryover=1.0, carryover_items=1),
            dict(base, carryover=None, carryover_items=None)]
    (mean,) = mean_rows(rows)
    assert (mean["carryover"], mean["carryover_items"]) == (0.6, 5)  # (2 + 1) / (4 + 1), not (0.5 + 1) / 2


def test_eval_rows_carry_it_beside_the_baselines_and_null_without_a_summary():
    """`eval` on a pi sample whose session holds one compaction: the planned compaction at its end starts from
    that summary (2 rules, 2 next steps), so every summary and baseline row has 4 items; the kept tail has no
    summary; a session without an earlier compaction has none at all."""
    result = CliRunner().invoke(cli, ["eval", str(REPO / "sample_sessions/pi/second-compaction.jsonl"),
                                      str(REPO / "sample_sessions/pi/small-fix.jsonl"), "--format", "json", "-q"],
                                catch_exceptions=False)
    assert result.exit_code == 0, result.output
    rows = json.loads(result.stdout)["rows"]
    second = [r for r in rows if r["path"].endswith("second-compaction.jsonl")]
    assert {r["summarizer"]: r["carryover_items"] for r in second} == {
        "builtin": 4, "baseline:first": 4, "baseline:last": 4, "baseline:words": 4, "baseline:list": 4,
        "baseline:tail": None}
    assert all(0 <= r["carryover"] <= 1 for r in second if r["carryover_items"])
    assert all(r["carryover"] is None for r in rows if r["path"].endswith("small-fix.jsonl"))


def test_the_eval_table_shows_it():
    result = CliRunner().invoke(cli, ["eval", str(REPO / "sample_sessions/pi/second-compaction.jsonl"), "-q"],
                                catch_exceptions=False)
    assert result.exit_code == 0, result.output
    header, *_ = result.stdout.splitlines()
    assert "carry-over" in header.split("vs list", 1)[1]  # beside the lifts, in the rows and the pooled table
    assert result.stdout.count("carry-over") == 2
