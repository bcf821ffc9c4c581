"""The built-in offline summarizer: golden outputs on small inputs, headings within budget on real files."""

from __future__ import annotations

import asyncio
import json

import pytest
from conftest import fixture_path
from llm_messages import assistant, call, result, text, tool_call, user

from batchcompact.core.calls import BRANCH, HISTORY, TURN_PREFIX
from batchcompact.core.prompts import BRANCH_HEADINGS, HISTORY_HEADINGS, TURN_PREFIX_HEADINGS
from batchcompact.summarize import BuiltinSummarizer, build_summarizer
from batchcompact.summarize.builtin import summarize_offline

HEADINGS = {HISTORY: HISTORY_HEADINGS, TURN_PREFIX: TURN_PREFIX_HEADINGS, BRANCH: BRANCH_HEADINGS}


SMALL = [
    user("Add a --verbose flag to cli.py. Don't change the public API."),
    assistant(text("I'll read the file first."), tool_call("c1", "read", path="src/cli.py")),
    result("c1", "read", "import click\n..."),
    assistant(tool_call("c2", "edit", path="src/cli.py", oldText="a", newText="b")),
    result("c2", "edit", "ok"),
    assistant(tool_call("c3", "bash", command="pytest -q")),
    result("c3", "bash", "FAILED tests/test_cli.py::test_verbose - AssertionError\nmore", error=True),
    assistant(text("Using click.count instead of a bool because -vv should work."), stop="stop"),
    user("Also write docs/cli.md please"),
    assistant(tool_call("c4", "write", path="docs/cli.md", content="# CLI")),
]

GOLDEN_HISTORY = """## Goal
Add a --verbose flag to cli.py. Don't change the public API.
Later request: Also write docs/cli.md please

## Constraints & Preferences
- Don't change the public API.

## Progress

### Done
- [x] Edited `src/cli.py`

### In Progress
- [ ] Also write docs/cli.md please
- [ ] Writing `docs/cli.md` (1 line; no result yet)

### Blocked
- `pytest -q` failed: FAILED tests/test_cli.py::test_verbose - AssertionError

## Key Decisions
- Using click.count instead of a bool because -vv should work.

## Next Steps
1. Finish: Also write docs/cli.md please
2. Fix: `pytest -q` failed: FAILED tests/test_cli.py::test_verbose - AssertionError

## Critical Context
- Last assistant message: Using click.count instead of a bool because -vv should work.

## Relevant Files and Code Names
- Files: `docs/cli.md`, `src/cli.py`, `tests/test_cli.py`
- Code names: test_verbose"""
TRAIL = """## Relevant Files and Code Names
- Files: `docs/cli.md`, `src/cli.py`, `tests/test_cli.py`
- Code names: test_verbose"""

GOLDEN_TURN_PREFIX = """## Original Request
Add a --verbose flag to cli.py. Don't change the public API.

## Early Progress
- Edited `src/cli.py`
- Writing `docs/cli.md` (1 line; no result yet)
- `pytest -q` failed: FAILED tests/test_cli.py::test_verbose - AssertionError

## Context for Suffix
- Files: `docs/cli.md`, `src/cli.py`, `tests/test_cli.py`
- Code names: test_verbose
- Last assistant message: Using click.count instead of a bool because -vv should work."""


def test_golden_history():
    assert summarize_offline(call(SMALL)) == GOLDEN_HISTORY


def test_golden_turn_prefix():
    assert summarize_offline(call(SMALL, kind=TURN_PREFIX)) == GOLDEN_TURN_PREFIX


def test_golden_branch_is_history_without_critical_context():
    branch = GOLDEN_HISTORY.split("\n\n## Critical Context")[0] + "\n\n" + TRAIL
    assert summarize_offline(call(SMALL, kind=BRANCH)) == branch


def test_empty_messages_give_every_heading_with_none():
    out = summarize_offline(call([]))
    for heading in HISTORY_HEADINGS:
        assert heading in out
    assert "(none)" in out


def test_previous_summary_items_are_kept():
    previous = GOLDEN_HISTORY
    new = [user("Now rename the flag to --debug"), assistant(tool_call("d1", "edit", path="src/main.py"))]
    out = summarize_offline(call(new, previous=previous))
    assert "Add a --verbose flag to cli.py" in out  # previous goal kept
    assert "- [x] Edited `src/cli.py`" in out  # previous done kept
    assert "- [x] Also write docs/cli.md please" in out  # previous in-progress moved to done
    assert "Writing `docs/cli.md`" not in out  # in flight last time: these messages would report its result
    assert "- [ ] Editing `src/main.py` (no result yet)" in out  # its result is past these messages
    assert "- [ ] Now rename the flag to --debug" in out
    assert out.count("## Goal") == 1


def test_bash_execution_text_failure_is_blocked():
    messages = [user("Ran `make build`\n```\nerror: missing header\n```\n\nCommand exited with code 2")]
    out = summarize_offline(call(messages))
    assert "- `make build` failed: exit 2" in out


def test_deterministic():
    assert summarize_offline(call(SMALL)) == summarize_offline(call(list(SMALL)))


def _empty_headings(text: str) -> set[str]:
    """The headings a summary says "(none)" under."""
    lines = text.splitlines()
    return {lines[i] for i in range(len(lines) - 1) if lines[i].startswith("#") and lines[i + 1] == "(none)"}


@pytest.mark.parametrize("max_tokens", [40, 120, 400])
def test_tiny_budget_keeps_the_goal_and_says_none_only_for_nothing(max_tokens):
    """At a budget too small for every heading the compact layout keeps the Goal and leaves out what does not
    fit; "(none)" never stands for content (it did at 40 and 120 tokens: every heading, each "(none)")."""
    out = summarize_offline(call(SMALL * 20, max_tokens=max_tokens))
    assert out.startswith("## Goal\nAdd a --verbose flag to cli.py.")
    assert "(none)" not in out  # every section of SMALL has something to say
    assert len(out) <= max_tokens * 4


def _fixture_messages(name: str) -> list[dict]:
    path = fixture_path("pi", name)
    messages = []
    for line in path.read_text(encoding="utf-8").splitlines():
        entry = json.loads(line)
        message = entry.get("message") if entry.get("type") == "message" else None
        if message and message.get("role") in ("user", "assistant", "toolResult"):
            messages.append(message)
    return messages


@pytest.mark.parametrize("name", ["large-session.jsonl", "before-compaction.jsonl"])
@pytest.mark.parametrize("kind", [HISTORY, TURN_PREFIX, BRANCH])
@pytest.mark.parametrize("max_tokens", [300, 2048, 13107])
def test_fixture_headings_within_budget(name, kind, max_tokens):
    messages = _fixture_messages(name)
    assert messages
    out = summarize_offline(call(messages, kind=kind, max_tokens=max_tokens))
    roomy = summarize_offline(call(messages, kind=kind, max_tokens=10**6))
    for heading in HEADINGS[kind]:  # a heading is left out only when its section's items did not fit
        assert heading in out or heading in roomy and heading not in _empty_headings(roomy), heading
    assert _empty_headings(out) <= _empty_headings(roomy)  # "(none)" only where there is nothing to say
    if kind == BRANCH:
        assert "## Critical Context" not in out
    assert len(out) <= max_tokens * 4


def test_fixture_content_is_real():
    out = summarize_offline(call(_fixture_messages("large-session.jsonl"), max_tokens=13107))
    assert "packages/coding-agent/src/theme/theme.ts" in out  # an edited file
    assert "- [x] Edited `" in out


def test_builtin_result_and_factory():
    summarizer = build_summarizer(None)
    assert isinstance(summarizer, BuiltinSummarizer)
    assert isinstance(build_summarizer("builtin"), BuiltinSummarizer)
    result = asyncio.run(summarizer.summarize(call(SMALL)))
    assert result.cost_usd == 0.0 and result.model == "builtin" and result.text == GOLDEN_HISTORY
    assert getattr(summarizer, "remote", True) is False


def _sample_files():
    from conftest import SAMPLES

    return sorted((SAMPLES / "pi").glob("*.jsonl")) if (SAMPLES / "pi").is_dir() else []


@pytest.mark.parametrize("path", _sample_files(), ids=lambda p: p.name)
@pytest.mark.parametrize("kind", [HISTORY, TURN_PREFIX, BRANCH])
def test_samples_headings_within_budget(path, kind):
    messages = []
    for line in path.read_text(encoding="utf-8", errors="replace").splitlines():
        try:
            entry = json.loads(line)
        except ValueError:
            continue  # malformed.jsonl has broken lines on purpose
        message = entry.get("message") if isinstance(entry, dict) else None
        if isinstance(message, dict) and message.get("role") in ("user", "assistant", "toolResult"):
            messages.append(message)
    out = summarize_offline(call(messages, kind=kind, max_tokens=1024))
    for heading in HEADINGS[kind]:
        assert heading in out, heading
    assert len(out) <= 1024 * 4


def test_continue_keeps_the_last_request_in_flight_and_thanks_asks_nothing():
    messages = [user("Migrate the settings loader to tomllib"), assistant(text("Started."), stop="stop"),
                user("continue")]
    out = summarize_offline(call(messages))
    assert "1. Finish: Migrate the settings loader to tomllib" in out
    assert "continue" not in out.split("## Next Steps")[1]
    done = [user("Migrate the settings loader to tomllib"), assistant(text("Done: migrated."), stop="stop"),
            user("thanks")]
    assert "Finish:" not in summarize_offline(call(done))


def test_previous_summary_sections_not_in_our_layout_are_kept_as_written():
    # pi's own checkpoints mix our headings with their own (before-compaction.jsonl's first compaction)
    previous = ("# Context Checkpoint: Refactoring\n\n## Goal\nShare one AgentSession between the modes.\n\n"
                "## Files Created/Modified\n- `src/core/bash-executor.ts` (177 lines)\n- `src/modes/rpc-mode.ts`\n\n"
                "## Next Steps (WP14-WP20)\n### WP14: Create main-new.ts (NEXT)\n- Copy `main.ts`\n"
                "```ts\nconst x = 1;\n```\n")
    out = summarize_offline(call([user("Now do WP14")], previous=previous))
    assert out.startswith("## Goal\nShare one AgentSession between the modes.")
    critical = out.split("## Critical Context")[1]
    assert "- Earlier summary, its other sections:\n  # Context Checkpoint: Refactoring\n  ## Files Created/Modified\n" \
           "  - `src/core/bash-executor.ts` (177 lines)\n  - `src/modes/rpc-mode.ts`\n  ## Next Steps (WP14-WP20)\n" \
           "  ### WP14: Create main-new.ts (NEXT)\n  - Copy `main.ts`\n  (code omitted)" in critical


def test_exit_code_search_finds_what_the_plain_case_insensitive_pattern_finds():
    """The exit-code search skips text without "xit" and impossible start characters (for speed); it must
    find exactly what the plain pattern finds, other case forms of i (İ, ı) included."""
    import re

    from batchcompact.summarize import builtin_tools

    plain = re.compile(
        r"(?:Command exited with code|Process exited with code|Exit code:?|exit status|\"exit_code\":)\s*(-?\d+)",
        re.IGNORECASE,
    )
    texts = [
        "Command exited with code 1", "PROCESS EXITED WITH CODE 2", "Exit code: 3", "exit status -4",
        '{"EXIT_CODE": 5}', "EXİT status 6", "exıt code 7", "ExIt StAtUs 8 then exit code 9",
        "no code here", "exited", "Command exited with code\n  10", "x" * 50 + "exit status 11",
        "succeeded", "", "exit code: none",
    ]
    for sample in texts:
        assert builtin_tools.exit_codes(sample) == plain.findall(sample), sample
        found, expected = builtin_tools.exit_code(sample), plain.search(sample)
        assert (found and found.group(0)) == (expected and expected.group(0)), sample
    assert builtin_tools.exit_codes("EXİT status 6") == ["6"]  # the skip must not miss other case forms


def test_the_exit_prefilter_is_the_case_insensitive_xit_search():
    """`may_hold_exit` (lowercase, then substring searches) says yes wherever "xit" matches under
    re.IGNORECASE (it only lets the full search be skipped, so a yes without a match costs a search, and
    only text holding "xi" + U+0307 + "t" gets one), on random text over the letters that matter."""
    import random
    import re

    from batchcompact.summarize.builtin_tools import may_hold_exit

    pattern = re.compile("xit", re.IGNORECASE)
    alphabet = "xXiItTİıéK\u212a\u0307 e"
    rng = random.Random(28)
    texts = ["".join(rng.choice(alphabet) for _ in range(rng.randint(0, 12))) for _ in range(20000)]
    texts += ["xİt", "XıT", "xi\u0307t", "EXİT", "exıt", "x\u0130t", "xI\u0307t", "x i t", "xt"]
    for sample in texts:
        if pattern.search(sample):
            assert may_hold_exit(sample), ascii(sample)
        elif may_hold_exit(sample):
            assert "xi\u0307t" in sample.lower(), ascii(sample)


PI_PREVIOUS = (
    "## Goal\n- Migrate the chart to lightweight-charts v5\n\n## Constraints & Preferences\n"
    "- Never push directly to `main`; always a topic branch and a PR\n- Respond in Korean, concise\n\n"
    "## Progress\n\n### Done\n- [x] **PR #47**: migrated `Dashboard.tsx`\n\n### In Progress\n- Nothing\n\n"
    "### Blocked\n- None\n\n## Key Decisions\n- **Overlays**: `autoscaleInfoProvider` returns null\n\n"
    "## Next Steps\n1. Add the pre/after-market session bands (issue #48)\n"
    "2. Add the Yahoo spark fallback to v8 chart\n\n## Critical Context\n- **Current branch**: `dev`\n\n"
    "---\n\n**Turn Context (split turn):**\n\n## Original Request\nAdd the bid/ask column to the table.\n\n"
    "## Early Progress\n- Created branch `feat/bidask`\n\n## Context for Suffix\n- Remaining: `Dashboard.tsx`\n\n"
    "<read-files>\n/home/user/raddit/README.md\n</read-files>\n"
)


def test_previous_pi_summary_carries_its_rules_and_next_steps_and_is_never_reparsed_as_bullets():
    """#55: a span that starts from pi's own summary keeps its Constraints and Next Steps items (even when
    the span has its own steps and rules and the budget is tight), and its "---" and split-turn text are
    not bullets of Critical Context."""
    rules = [user(f"Always run the linter number {n} before every commit of the widget module.")
             for n in range(12)]
    new = rules + [user("Now fix the squish when switching ranges"),
                   assistant(tool_call("e1", "edit", path="src/Dashboard.tsx"))]
    for budget in (2000, 600):
        out = summarize_offline(call(new, max_tokens=budget, previous=PI_PREVIOUS))
        steps = out.split("## Next Steps")[1].split("##")[0]
        rules_text = out.split("## Constraints & Preferences")[1].split("##")[0]
        assert "Never push directly to `main`" in rules_text, budget
        assert "Respond in Korean" in rules_text, budget
        assert "pre/after-market session bands" in steps, budget
        assert "Wait for the user's next request" not in steps
        assert "- ---" not in out and "- **Turn Context" not in out
        assert "- ## " not in out


def test_previous_items_lines_beyond_an_items_room_are_items_of_their_own():
    """#55 item 3: an earlier checkpoint's rule with many lines under it keeps every line: the lines join
    their item while it holds them (400 characters), then stand as items of their own (the last ones were
    cut off with the item's end before)."""
    lines = [f"  - the module number {n} keeps its public name `handler_{n}` for the plugins" for n in range(10)]
    previous = ("## Goal\nKeep the plugin API stable.\n\n## Constraints & Preferences\n- Never rename these:\n"
                + "\n".join(lines) + "\n\n## Progress\n### Done\n- [x] Listed the modules\n")
    out = summarize_offline(call([user("Now add the release notes.")], previous=previous))
    rules = out.split("## Constraints & Preferences\n")[1].split("\n## ")[0]
    for n in range(10):
        assert f"handler_{n}" in rules, n


def test_a_tight_constraints_section_keeps_the_first_rules_and_the_newest():
    """#55 item 8 (the tuning session rave-era read before and after): when Constraints cannot hold every
    rule, the oldest (the brief's: "Do not overuse words like rave") and the newest are kept, dropping from
    the middle; newest-first lost the brief's rules."""
    said = ["Do not overuse the word rave anywhere in the landing copy.", "Keep every price in euros with two decimals.",
            "Never push directly to the main branch.", "Use tabs for indentation in the Go services.",
            "Write commit messages in the imperative mood.", "Avoid adding heavy charting libraries to the bundle.",
            "Always run the linter before you open a pull request.", "Prefer server components for static pages.",
            "Do not touch the legacy payments adapter this week.", "Keep the API responses under fifty kilobytes.",
            "Never log customer email addresses in plain text.", "Use the sandbox Stripe keys for every local test.",
            "Keep the dark theme as the default for new users.", "Do not rename exported functions of the SDK.",
            "Always add a changelog entry for user-facing fixes.", "Prefer date-fns over moment for date handling."]
    out = summarize_offline(call([user("Add the invoice export."), *map(user, said)], max_tokens=160))
    constraints = out.split("## Constraints & Preferences\n")[1].split("\n## ")[0]
    assert "overuse the word rave" in constraints and "date-fns over moment" in constraints, constraints
    assert "sandbox Stripe keys" not in constraints
