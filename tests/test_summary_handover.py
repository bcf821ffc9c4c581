"""#47: the summary budget and the handover rules, written to catch last wave's failures (a Goal of 77 raw
"Later request:" lines, stale Next Steps, diff prefixes and built-ins in the names, summaries past their
budget, plan's estimate at 2,000-3,000 tokens whatever the summarizer)."""

from __future__ import annotations

import json
import sys
import types
from pathlib import Path

import pytest
from click.testing import CliRunner
from conftest import fixture_path
from llm_messages import assistant, call, text, tool_call, user

from batchcompact.agents import file_tools
from batchcompact.cli import cli
from batchcompact.cli.options import MIN_SUMMARY_BUDGET
from batchcompact.core.apply import compose_summary
from batchcompact.core.calls import HISTORY, TURN_PREFIX, SummaryCall
from batchcompact.core.planner import CompactionPlan, CompactionSettings, prepare_compaction
from batchcompact.formats.detect import read_session
from batchcompact.summarize.builtin import summarize_offline, summary_tokens
from batchcompact.summarize.handover import Request, goal_requests, request_gist
from batchcompact.summarize.user_message import (
    asked_words,
    go_ahead,
    is_question,
    is_temporary,
    rule_sentences,
    said_once,
    without_rules,
)
from batchcompact.tokenizer import count_tokens

REPO = Path(__file__).resolve().parent.parent


def result(id_, output, error=False, name="bash"):
    return {"role": "toolResult", "toolCallId": id_, "toolName": name, "content": [text(output)],
            "isError": error, "timestamp": 1}


def section(summary: str, heading: str) -> str:
    return summary.split(heading + "\n", 1)[1].split("\n\n", 1)[0]


# -- stale failures -------------------------------------------------------------------------------------
def test_a_failing_test_fixed_later_leaves_no_stale_next_step():
    """The failing file edited and the test run again (another spelling of the command) resolves it."""
    messages = [
        user("The truncated text component breaks lines wrongly: fix it."),
        assistant(tool_call("t1", "bash", command="cd packages/tui && node --test test/truncated-text.test.js")),
        result("t1", "not ok 1 - wraps at newline\n  at truncated-text.js:41\n\nCommand exited with code 1"),
        assistant(tool_call("e1", "edit", path="packages/tui/src/truncated-text.js", oldText="a", newText="b")),
        result("e1", "ok", name="edit"),
        assistant(tool_call("t2", "bash", command="cd packages/tui && node --test")),
        result("t2", "ok 1 - wraps at newline\n# pass 12"),
        assistant(text("Fixed: the loop now stops at the first newline."), stop="stop"),
    ]
    out = summarize_offline(call(messages))
    assert section(out, "### Blocked") == "(none)"
    assert "Fix:" not in out and "not ok" not in out
    assert section(out, "## Next Steps") == "1. Wait for the user's next request"


def test_a_failure_the_user_moved_on_from_is_no_next_step():
    """large-session.jsonl on main: a failed `cp` and a failed test from long before the cut were still
    Next Steps while the session was releasing v0.8.0."""
    messages = [
        user("Copy the dark theme into my themes folder as nord.json"),
        assistant(tool_call("c1", "bash", command="cp dist/theme/dark.json ~/.pi/agent/themes/nord.json")),
        result("c1", "cp: dist/theme/dark.json: No such file or directory\n\nCommand exited with code 1"),
        assistant(text("The file is not there in the installed package."), stop="stop"),
        user("ok, forget it. We are ready to release a new version: bump to 0.8.0 and update the changelog."),
        assistant(tool_call("e1", "edit", path="CHANGELOG.md", oldText="## Unreleased", newText="## 0.8.0")),
        result("e1", "ok", name="edit"),
        assistant(text("Now ready for commit and tag."), stop="stop"),
    ]
    out = summarize_offline(call(messages))
    assert "cp dist/theme" not in out
    assert section(out, "### Blocked") == "(none)"
    # ...while the same failure under the request in progress is still the next step
    out = summarize_offline(call(messages[:3]))
    assert "1. Fix: `cp dist/theme/dark.json ~/.pi/agent/themes/nord.json` failed" in section(out, "## Next Steps") \
        or "Fix: `cp dist/theme/dark.json" in section(out, "## Next Steps")


def test_a_request_that_adds_to_the_work_keeps_its_failure():
    messages = [
        user("Add a --verbose flag to cli.py."),
        assistant(tool_call("t", "bash", command="pytest -q")),
        result("t", "FAILED tests/test_cli.py::test_verbose\n\nCommand exited with code 1"),
        assistant(text("The test fails on the flag's default."), stop="stop"),
        user("Also write docs/cli.md please"),
    ]
    assert "Fix: `pytest -q` failed" in summarize_offline(call(messages))


def test_a_look_that_found_nothing_is_not_blocked():
    messages = [
        user("Where is applyBackgroundToLine defined? Fix its padding."),
        assistant(tool_call("g", "bash", command='grep -A 3 "function applyBackgroundToLine" src/wrap-ansi.ts')),
        result("g", "grep: src/wrap-ansi.ts: No such file or directory\n\nCommand exited with code 2"),
    ]
    out = summarize_offline(call(messages))
    assert section(out, "### Blocked") == "(none)" and "Fix:" not in out


def test_the_same_step_succeeding_later_resolves_a_failure():
    messages = [
        user("Commit the work and push it."),
        assistant(tool_call("c", "bash", command='git commit -m "feat: limits"')),
        result("c", "Pre-commit validation failed: credo\n\nExit code 1"),
        assistant(tool_call("f", "bash", command='mix format && git add -A && git commit -m "feat: limits"')),
        result("f", "[main 1a2b3c4] feat: limits"),
    ]
    out = summarize_offline(call(messages))
    assert section(out, "### Blocked") == "(none)"


# -- the goal -------------------------------------------------------------------------------------------
def _chatty_session(count: int = 80) -> list[dict]:
    """`count` short user messages, each answered, as large-session.jsonl's 77 "Later request:" lines."""
    asks = ["dude sleep 5 seconds via bash", "think then say hello", "delete the file", "ok", "thanks!",
            "what color are the codeblocks using in markdown?", "make muted a little brighter", "yes do it",
            "wrie some code in markdown in chat", "are you sure?"]
    messages = [user("Port user-message-selector.ts to the theme system, following oauth-selector.ts.")]
    messages += [assistant(tool_call("r0", "read", path="src/tui/oauth-selector.ts")),
                 result("r0", "export class OAuthSelector {}", name="read"),
                 assistant(text("Ported."), stop="stop")]
    for index in range(count - 2):
        messages.append(user(asks[index % len(asks)]))
        if index % 3 == 0:
            messages += [assistant(tool_call(f"b{index}", "bash", command="sleep 1")), result(f"b{index}", "")]
        messages.append(assistant(text(f"Done ({index})."), stop="stop"))
    messages.append(user("Now add a light variant of the theme in src/theme/light.json and wire it into theme.ts"))
    return messages


def test_eighty_short_user_messages_give_a_goal_of_open_requests():
    out = summarize_offline(call(_chatty_session()))
    goal = section(out, "## Goal").splitlines()
    assert goal == [
        "Port user-message-selector.ts to the theme system, following oauth-selector.ts.",
        "Later request: Now add a light variant of the theme in src/theme/light.json and wire it into theme.ts",
    ]
    assert out.count("Later request:") == 1


def test_goal_rules_one_by_one():
    def goal(*requests: tuple[str, bool, bool]) -> list[str]:
        return [t for _, t in goal_requests([Request(t, answered=a, worked=w) for t, a, w in requests], False)]

    first = ("Add rate limiting to the upload endpoint in api/upload.py.", True, True)
    # an answered question is no goal, even the newest
    assert goal(first, ("wait, do we only limit POST requests?", True, False)) == [first[0]]
    # an unanswered one is still open
    assert goal(first, ("does the limit apply to admins?", False, False))[-1] == "does the limit apply to admins?"
    # acknowledgements never are goals
    assert goal(first, ("yes do it", False, False), ("great, thanks!", False, False)) == [first[0]]
    # a pasted repeat or near-duplicate: its newest spelling, once
    assert goal(first, ("please add a retry to the redis client in api/limits.py", True, True),
                ("add a retry to the redis client in api/limits.py please!", False, False)) == [
        first[0], "add a retry to the redis client in api/limits.py please!"]
    # a short one-off done before the user asked something else is closed; a substantive request stays
    assert goal(first, ("delete the file", True, True),
                ("Write a migration for the limits table with an index on user_id", True, True),
                ("run the tests", False, True)) == [
        first[0], "Write a migration for the limits table with an index on user_id", "run the tests"]
    # pasted material (large-session.jsonl pasted a numbered changelog diff) asks for nothing by itself
    assert goal(first, ("8 - **User Message Text Color**: respects `userMessageText` + 9 - **Tool Title**", True, True),
                ("now bump the version in package.json and tag the release", False, False)) == [
        first[0], "now bump the version in package.json and tag the release"]
    assert is_question("wait, do we only limit POST requests?") and not is_question("can you add a test?")


def test_a_request_with_a_pasted_traceback_is_said_in_the_users_words():
    """The Goal line says what the user asked and that a traceback came with it, not the traceback's first
    hundred characters (sample_sessions' second-compaction: "... tell me your plan before editing.
    Traceback (most recent call last): File "/home/user/.venv/lib/python3.12/site-packages/sqlalchemy/e…")."""
    traceback = ('Traceback (most recent call last):\n  File "/home/user/.venv/lib/python3.12/site-packages/'
                 'sqlalchemy/engine.py", line 12, in run\nValueError: bad cursor')
    summary = summarize_offline(call([
        user("Add rate limiting to the upload endpoint in api/upload.py."),
        assistant(text("Done."), stop="stop"),
        user(f"Now make the cursor decoding robust in api/cursor.py, it crashes:\n\n{traceback}"),
    ]))
    goal = section(summary, "## Goal")
    assert ("Later request: Now make the cursor decoding robust in api/cursor.py, it crashes: "
            "(with a traceback: ValueError: bad cursor)") in goal
    assert "Traceback" not in goal and "site-packages" not in goal
    # a JS stack names its error first; "Go ahead." with a stack says which error to go ahead on
    stack = "ZodError: invalid_type at invoices[0].amount\n    at listUsers (/app/src/db/client.ts:217:40)\n    at x"
    assert asked_words(f"Go ahead.\n\n{stack}") == "Go ahead. (with an error: ZodError: invalid_type at invoices[0].amount)"
    # a code block pasted after the words likewise; a message that is only pasted material stays as it is
    assert asked_words("fix this test\n```\nassert x == 1\n```") == "fix this test (with pasted output)"
    assert asked_words(traceback) == traceback


# -- the user's rules and the requests the old rules dropped ---------------------------------------------
def _rules_session():
    """A refactor where the user states rules mid-session (sample_sessions' big-refactor and long-refactor
    say them so), among work that pushes the oldest items out of a small budget."""
    messages = [user("Refactor the retry logic in api/client.py into its own module api/retry.py.")]
    messages += [assistant(tool_call("r1", "read", path="api/client.py")), result("r1", "def fetch(): ...", name="read"),
                 assistant(text("I will write a small backoff loop by hand."), stop="stop"),
                 user("Stop. Use tenacity for this, not a custom implementation."),
                 assistant(tool_call("e1", "edit", path="api/retry.py", oldText="", newText="import tenacity")),
                 result("e1", "ok", name="edit"),
                 assistant(text("Switched to tenacity."), stop="stop"),
                 user("No, don't touch `api/settings.py`, the bug is in `parse_timeout`."),
                 assistant(tool_call("e2", "edit", path="api/client.py", oldText="a", newText="b")),
                 result("e2", "ok", name="edit"),
                 assistant(text("Fixed `parse_timeout`."), stop="stop"),
                 user("From now on run `ruff check .` before every commit."),
                 assistant(text("Understood."), stop="stop")]
    for index in range(30):  # later work: more files and names than the budget holds
        messages += [user(f"Now add a test for case {index} of the retry policy in tests/test_retry_{index}.py please."),
                     assistant(tool_call(f"w{index}", "write", path=f"tests/test_retry_{index}.py",
                                         content=f"def test_case_{index}(): assert retry_policy_{index}()\n")),
                     result(f"w{index}", "ok", name="write"),
                     assistant(text(f"Added tests/test_retry_{index}.py."), stop="stop")]
    return messages


def test_a_mid_session_user_rule_reaches_the_summary():
    """On main "Use tenacity for this, not a custom implementation" was no rule (no `must`/`never` word) and,
    under 6 significant words, a one-off request closed once done: the resumed agent could write the custom
    backoff again. "From now on" was no rule either."""
    out = summarize_offline(call(_rules_session(), max_tokens=1200))
    rules = section(out, "## Constraints & Preferences").splitlines()
    assert rules == ["- Use tenacity for this, not a custom implementation.",
                     "- No, don't touch `api/settings.py`, the bug is in `parse_timeout`.",
                     "- From now on run `ruff check .` before every commit."]
    assert summary_tokens(out) <= 1200
    # a request that is only a rule is said once, by Constraints, not again as a Goal line
    assert "touch" not in section(out, "## Goal") and "From now on" not in section(out, "## Goal")
    assert without_rules("I want the cache to use redis instead of the dict in `a.py`. Go ahead.",
                         ["I want the cache to use redis instead of the dict in `a.py`."]) == ""
    assert without_rules("no console logs! setTheme should return an error", ["setTheme should return an error"]) \
        == "no console logs! setTheme should return an error"  # two words left: the request as said


def test_a_rule_said_again_is_one_rule_at_its_newest_place():
    messages = [user("Add a cache to the user lookup in api/users.py. Never change the public API."),
                assistant(text("Plan: an lru cache."), stop="stop"),
                user("Keep the tests in tests/test_users.py green."),
                assistant(text("Ok."), stop="stop"),
                user("Remember: never change the public API!"),
                assistant(text("Ok."), stop="stop"),
                user("Now add a ttl of 60 seconds to the cache in api/users.py. Don't cache errors.")]
    out = summarize_offline(call(messages))
    assert section(out, "## Constraints & Preferences").splitlines() == [
        "- Keep the tests in tests/test_users.py green.", "- Remember: never change the public API!",
        "- Don't cache errors."]
    # a later request's Goal line leaves out the rule Constraints carries; the first is the goal as asked
    assert section(out, "## Goal").splitlines() == [
        "Add a cache to the user lookup in api/users.py. Never change the public API.",
        "Later request: Now add a ttl of 60 seconds to the cache in api/users.py."]


def test_a_rule_that_opens_with_do_or_have_is_a_rule_not_a_question():
    """"Do not change the public API." and "Have the tests run first always." open with an auxiliary, as a
    question does, and were taken for questions (no rule); without a '?' and with no subject after the
    auxiliary they are imperatives. "Do you always run them?" and "have you always used X" stay questions."""
    messages = [user("Add a cache to the user lookup in api/users.py."),
                assistant(text("Plan: an lru cache."), stop="stop"),
                user("Do not change the public API. Have the tests run first always. Do keep the old name too."),
                assistant(text("Ok."), stop="stop"),
                user("Do you always run the tests first? have you always used pytest for them"),
                assistant(text("Yes."), stop="stop")]
    out = summarize_offline(call(messages))
    assert section(out, "## Constraints & Preferences").splitlines() == [
        "- Do not change the public API.", "- Have the tests run first always.", "- Do keep the old name too."]
    assert rule_sentences("Does it always fail. Did we never run it. Have we always used pytest.") == []


def test_a_question_followed_by_what_to_do_is_an_open_request():
    """'Why did you change the import order in X? Undo that part.' was an answered question on main, so
    the Goal dropped it although it asks the agent to undo a change (sample_sessions' big-refactor)."""
    messages = [user("Add pagination to the invoices route in src/routes/invoices.ts."),
                assistant(tool_call("e1", "edit", path="src/routes/invoices.ts", oldText="a", newText="b")),
                result("e1", "ok", name="edit"),
                assistant(text("Added a cursor parameter."), stop="stop"),
                user("Why did you change the import order in `src/routes/users.ts`? Undo that part."),
                assistant(text("It was the formatter; I will restore it."), stop="stop"),
                user("Also document the cursor parameter in docs/api.md.")]
    goal = section(summarize_offline(call(messages)), "## Goal").splitlines()
    assert "Later request: Why did you change the import order in `src/routes/users.ts`? Undo that part." in goal
    assert not is_question("Why did you change the import order in `src/routes/users.ts`? Undo that part.")
    assert is_question("Why did you change the import order in `src/routes/users.ts`?")
    assert is_question("what color are the codeblocks? they look grey to me.")


def test_a_split_turn_carries_the_rules_its_request_stated():
    """pi's turn-prefix layout has no Constraints heading: on main a rule the turn's request stated (Claude
    Code's sample-project: a slash command's "Each subtask should take 5-15 minutes") was in no section."""
    process = "## Process\n" + "".join(f"{n}. Step {n} of the plan: read the schema of table {n}.\n" for n in range(8))
    asked = (f"Split the migration into independent subtasks.\n{process}- Each subtask should take 5-15 minutes.\n"
             "- Never run two migrations at once.")
    messages = [user(asked), assistant(tool_call("r1", "read", path="db/migrate.py")), result("r1", "x = 1", name="read")]
    out = summarize_offline(call(messages, kind=TURN_PREFIX))
    request = section(out, "## Original Request").splitlines()
    # the request is too long to show whole: its start as asked (on one line), shorter, ended at a word's end
    # (#55: it was cut inside a word), whatever the width it is clipped to
    asked_line, shown = " ".join(asked.split()), request[0].removesuffix("…")
    assert request[0].endswith("…") and len(request[0]) < len(asked_line)
    assert asked_line.startswith(shown) and shown[-1].isalnum() and not asked_line[len(shown)].isalnum()
    assert request[1:] == ["Rule: Each subtask should take 5-15 minutes.", "Rule: Never run two migrations at once."]
    # a rule the request's shown start already says is not repeated
    out = summarize_offline(call([user("Split the migration into subtasks. Never run two migrations at once."),
                                  *messages[1:]], kind=TURN_PREFIX))
    assert section(out, "## Original Request") == "Split the migration into subtasks. Never run two migrations at once."


def test_a_tight_budget_gives_a_split_turn_s_request_and_rules_the_room():
    """The split turn's sections kept their shares at every budget (Original Request 2, Early Progress 3,
    Context for Suffix 4): at pi's own length a slash command's rules past the request's shown start lost
    to the trail (Claude Code's sample-project: one of four). Below the default budget they move as the
    history's do (Original Request 4, Early Progress 2, Context for Suffix 3). (Five steps: with eight the
    request passes 600 characters and is said by its outline, which leaves the rules room at every budget.)"""
    process = "## Process\n" + "".join(f"{n}. Step {n} of the plan: read the schema of table {n}.\n" for n in range(5))
    rules = ["Each subtask should take 5-15 minutes.", "Never run two migrations at once.",
             "Always keep a rollback script beside each migration.", "Make sure every table keeps its primary key.",
             "Don't rename columns the reporting jobs read."]
    messages = [user(f"Split the migration into independent subtasks.\n{process}" + "".join(f"- {r}\n" for r in rules))]
    for n in range(12):
        messages += [assistant(tool_call(f"r{n}", "read", path=f"db/tables/table_{n}_schema.py")),
                     result(f"r{n}", f"class Table{n}Schema: migrate_table_{n} = 1", name="read")]

    def prefix(summary_budget: int) -> str:
        out = summarize_offline(SummaryCall(kind=TURN_PREFIX, system_prompt="", user_prompt="", max_tokens=300,
                                            messages=tuple(messages), meta={"summary_budget": summary_budget}))
        assert summary_tokens(out) <= 300
        return out

    tight, roomy = prefix(1000), prefix(2000)
    assert section(tight, "## Original Request").splitlines()[1:] == [f"Rule: {r}" for r in rules]
    # at the default budget the layout is the one it had: the trail's share first
    assert section(roomy, "## Original Request").count("Rule:") == 1
    assert roomy.count("table_") > tight.count("table_") > 0


def _tight_session():
    """A first request, six later requests the agent worked on (each still open: none answered, none short),
    two rules, and edits to twelve files: more than a 1,000-token summary holds."""
    asks = ["Looks right. Now run `ruff check src tests` too, and fix every warning it reports in the api package.",
            "Can you review `api/jobs.py` for error handling? Two jobs fire in the same second and the scheduler "
            "drops one of them, which we only noticed in production last week when the nightly report was empty.",
            "Please refactor `parse_window` in `api/windows.py`: it has grown too long and nobody can follow it.",
            "Good, but please also handle the case where the page size is zero in `api/pagination.py`.",
            "Tests are failing on CI after my last change to `api/settings.py`. Run the suite and fix what broke.",
            "Rename `load_cfg` to `load_settings` across the codebase and update every call site and the docs."]
    messages = [user("Add rate limiting to the upload endpoint in api/upload.py, per user, with a Redis counter. "
                     "Never change the public API. Always run the tests before you say it is done.")]
    for n, ask in enumerate(asks):
        for m in range(2):
            path = f"api/module_{n}_{m}.py"
            messages += [assistant(tool_call(f"e{n}{m}", "edit", path=path, oldText="a", newText=f"value_{n}_{m} = 1")),
                         result(f"e{n}{m}", "ok", name="edit")]
        messages += [assistant(text(f"Done with step {n}: the change is in and the tests pass. The module now "
                                    "reads its settings once at import time, and every caller gets the cached copy "
                                    "unless it passes reload=True, which only the admin command does."), stop="stop"),
                     user(ask)]
    return messages, asks


def test_a_tight_budget_gives_the_goal_the_open_requests_each_by_its_gist():
    """At pi's own summary length (~1,000 tokens, half of it the file tags) the Goal stopped at the first open
    request that did not fit whole, and the room went to Done's oldest lines (what the `<modified-files>` tag
    says). Now the shares move to Goal and Constraints below the default budget, and a request that does
    not fit whole is said by its gist: the newest ones first."""
    messages, asks = _tight_session()
    tight = SummaryCall(kind=HISTORY, system_prompt="", user_prompt="", max_tokens=560, messages=tuple(messages),
                        meta={"summary_budget": 1000})
    out = summarize_offline(tight)
    assert summary_tokens(out) <= 560
    goal = section(out, "## Goal").splitlines()
    assert goal[0].startswith("Add rate limiting to the upload endpoint in api/upload.py")
    later = [line.removeprefix("Later request: ") for line in goal[1:]]
    # the five newest, oldest first; "Can you review…? Two jobs fire…" did not fit whole: its gist
    assert later == ["Review `api/jobs.py` for error handling.", *asks[2:]], goal
    assert section(out, "## Constraints & Preferences").splitlines() == [
        "- Never change the public API.", "- Always run the tests before you say it is done."]
    # the last assistant message by its first sentences rather than cut mid-word
    assert section(out, "## Critical Context") == \
        "- Last assistant message: Done with step 5: the change is in and the tests pass."
    # at the default budget the same share of text keeps the layout it had: no gist, the Goal ends where a
    # request does not fit, the room goes to the rest
    roomy = summarize_offline(SummaryCall(kind=HISTORY, system_prompt="", user_prompt="", max_tokens=560,
                                          messages=tuple(messages), meta={"summary_budget": 2000}))
    assert "Review `api/jobs.py`" not in roomy and len(section(roomy, "## Goal").splitlines()) < len(goal)


def test_a_request_s_gist_is_its_own_words_without_acknowledgement_or_politeness():
    assert request_gist("Looks right. Now run `ruff check .` too.") == "Now run `ruff check .` too."
    assert request_gist("Good, but please also handle the case where the cursor is empty.") == \
        "Also handle the case where the cursor is empty."
    assert request_gist("Can you review `src/models.py` for error handling? Two jobs fire in the same second and "
                        "the scheduler drops one of them without a log line, which is bad.") == \
        "Review `src/models.py` for error handling."
    assert request_gist("Go ahead. (with a traceback: KeyError: 'cursor')") == "Go ahead. (with a traceback: KeyError: 'cursor')"
    assert request_gist("Tests fail on CI after my change to `src/index.ts`. Run the suite and fix what broke. "
                        "Then tell me what it was and why the tests did not catch it before.") == "Tests fail on CI after my change to `src/index.ts`. Run the suite and fix what broke."
    asked = "Make " + "the colours less intense " * 20
    long = request_gist(asked)
    shown = long.removesuffix("…")
    assert long.endswith("…") and len(long) < len(asked)  # too long for a gist: its start, shorter,
    assert len(long) <= 160  # docs/summaries.md: a gist is at most 160 characters
    assert asked.startswith(shown) and asked[len(shown)] == " "  # ended at a word's end


# -- what the last rounds left: pasted screens, "without", temporary rules, a rule said twice --------------
_SCREEN = ("\n\n ⠇ Working... (esc to interrupt)                                        \n\n"
           "──────────────────────────────────────────────────\n  dark       (current)\n→ light\n"
           "──────────────────────────────────────────────────\n~/workspaces/app\n"
           "↑880 ↓68k R29394k W3499k 22.966 73.5%           claude-sonnet-4-5\n"
           "/home/dev/app/src/theme/theme.ts:213\n        throw new Error(`Variable reference not found: ${value}`);\n\n"
           "Error: Variable reference not found: dimGray\n    at resolveVarRefs (/home/dev/app/src/theme/theme.ts:213:9)\n"
           "    at setTheme (/home/dev/app/src/theme/theme.ts:433:10)\n")


def test_a_pasted_terminal_screen_is_pasted_material():
    """pi's large-session.jsonl: "hm, i selected the theme while you were working and got a crash, that
    should never happen." and the pi TUI's screen pasted under it. The sentence went to Constraints as a
    rule and the Goal line left was the screen: "Later request: ⠇ Working..."."""
    messages = [user("Add a theme selector to src/tui/selector.ts."),
                assistant(text("Added it."), stop="stop"),
                user("hm, i selected the theme while you were working and got a crash, that should never happen."
                     + _SCREEN + "You must restart the app to pick up the theme\n")]
    out = summarize_offline(call(messages))
    goal = section(out, "## Goal").splitlines()
    assert goal[1] == ("Later request: hm, i selected the theme while you were working and got a crash, that should "
                       "never happen. (with a pasted terminal screen: Error: Variable reference not found: dimGray)")
    assert "Working" not in out and "───" not in out
    # said once: the sentence is the complaint about what was pasted, not a rule; the screen's words are none
    assert "## Constraints & Preferences\n(none)" in out
    # prompts, a Python prompt and progress bars open a screen too; a quote or a dash in the words does not
    assert asked_words("why does it differ?\n\nghostty:\n➜  app git:(main) ✗ echo $TERM\nxterm-ghostty") == \
        "why does it differ?\n\nghostty: (with a pasted terminal screen)"
    assert asked_words("it hangs here\ndev@box:~/app$ make\n  45%|████▌     | 9/20") == \
        "it hangs here (with a pasted terminal screen)"
    assert asked_words("stuck at\n[=====>      ] 50% downloading") == "stuck at (with a pasted terminal screen)"
    assert asked_words("see\n>>> import app\nok") == "see (with a pasted terminal screen)"
    assert asked_words("> a quote\nuse a ─ dash here") == "> a quote\nuse a ─ dash here"
    # a screen pasted alone asks for nothing by itself (unless it is the newest request)
    assert goal_requests([Request("Add a theme selector."), Request("───────\n│ > hello │\n───────", True, True),
                          Request("Now add a light theme to src/theme/light.json please.")], False)[1:] == [
        (False, "Now add a light theme to src/theme/light.json please.")]


def test_without_is_no_rule_word():
    """"Two jobs fire in the same second and the scheduler drops one of them without a log line" is a bug
    report, but `without` made it a rule: Constraints carried it and the request lost the sentence."""
    assert rule_sentences("Two jobs fire in the same second and the scheduler drops one of them without a log "
                          "line. Find the cause in src/jobs.py.") == []
    assert rule_sentences("Never merge without a review. Do it without asking me.") == ["Never merge without a review."]


def test_a_temporary_rule_is_lifted_by_a_later_go_ahead():
    """"Don't change anything yet." (sample_sessions' big-refactor: "Run `npm test` and summarize the
    failures. Don't change anything yet.", then "Go ahead.") still read as standing after the go-ahead."""
    messages = [user("Add pagination to the invoices route in src/routes/invoices.ts."),
                assistant(text("Added a cursor."), stop="stop"),
                user("Run `npm test` and summarize the failures. Don't change anything yet."),
                assistant(text("Two failures in tests/invoices.test.ts."), stop="stop"),
                user("Leave the docs alone for now, and never push to main. Don't touch the CI config until I say so."),
                assistant(text("Ok."), stop="stop"),
                user("Looks right. Go ahead and fix them."),
                assistant(text("Fixed both."), stop="stop"),
                user("Don't touch the CI config until I say so."),
                assistant(text("Understood."), stop="stop")]
    out = summarize_offline(call(messages))
    assert section(out, "## Constraints & Preferences").splitlines() == [
        "- Don't change anything yet. (lifted later)",
        "- Leave the docs alone for now, and never push to main.",  # a standing "never": not lifted
        "- Don't touch the CI config until I say so.",  # said again after the go-ahead: it binds again
    ]
    # without a go-ahead the same rule stands
    still = summarize_offline(call(messages[:4]))
    assert "- Don't change anything yet.\n" in still + "\n" and "lifted" not in still
    assert is_temporary("Leave the docs alone for now.") and not is_temporary("Never push to main.")
    assert go_ahead("ok, now do it") == "now do it" and go_ahead("you can fix them now") == "you can fix"
    assert go_ahead("Why did it fail?") is None and go_ahead("see\n```\ngo ahead\n```") is None
    # a request for a change is a go-ahead too; one that mentions a change is not
    assert go_ahead("Tests fail on CI after my last change to `a.ts`. Run the suite and fix what broke.") == \
        "fix what broke"
    assert go_ahead("Write docs for the loader in `docs/x.md`.") == "Write docs"
    assert go_ahead("Why did you change the import order in `a.ts`?") is None
    assert go_ahead("Run `npm test` and summarize the failures.") is None


def test_a_rule_after_a_reaction_is_said_once():
    """"That's not what I meant. Keep the public signature of `paginate` unchanged." was a Goal line (two
    significant words left without the rule: the line was kept whole) and the rule under Constraints."""
    messages = [user("Refactor the pagination helpers in src/api/pagination.py."),
                assistant(text("I changed `paginate` to take a cursor object."), stop="stop"),
                user("That's not what I meant. Keep the public signature of `paginate` unchanged."),
                assistant(text("Reverted the signature."), stop="stop"),
                user("Stop. Use vitest fixtures for this, not a custom implementation."),
                assistant(text("Ok."), stop="stop"),
                user("Now add a test for an empty page in tests/test_pagination.py.")]
    out = summarize_offline(call(messages))
    assert out.count("public signature") == 1 and out.count("vitest fixtures") == 1
    assert section(out, "## Constraints & Preferences").splitlines() == [
        "- Keep the public signature of `paginate` unchanged.",
        "- Use vitest fixtures for this, not a custom implementation."]
    assert section(out, "## Goal").splitlines()[1:] == [
        "Later request: Now add a test for an empty page in tests/test_pagination.py."]
    assert said_once("no console logs! setTheme should return an error", ["setTheme should return an error"]) == \
        ("no console logs! setTheme should return an error", ["setTheme should return an error"])


# -- names ----------------------------------------------------------------------------------------------
def test_names_drop_diff_prefixes_builtins_and_placeholders():
    diff = ("diff --git a/src/limits/window.ts b/src/limits/window.ts\n--- a/src/limits/window.ts\n"
            "+++ b/src/limits/window.ts\n@@\n-  setTimeout(flush, 10)\n+  scheduleFlush(windowState)\n")
    messages = [
        user("Review my change to the rate window and keep formatRetryAfter as it is."),
        assistant(tool_call("d", "bash", command="git diff")),
        result("d", diff),
        assistant(text("Like Node.js, the browser's setTimeout returns early; toFixed(2) rounds; a .test.ts "
                       "file such as file.txt would not be compiled. scheduleFlush replaces it."), stop="stop"),
    ]
    trail = section(summarize_offline(call(messages)), "## Relevant Files and Code Names")
    assert "`src/limits/window.ts`" in trail
    for noise in ("a/src", "b/src", "setTimeout", "toFixed", "Node.js", ".test.ts", "file.txt"):
        assert noise not in trail, noise
    for name in ("scheduleFlush", "windowState", "formatRetryAfter"):
        assert name in trail


def test_names_are_whole_project_paths_and_identifiers():
    """#55, read on tuning sessions: pieces of paths (`/page.tsx` of `app/[slug]/page.tsx`, `+supabase/…` of a
    diff, `c.JSON` of a Go call, `_test.go` of a glob, `8765/chart.html` of a URL, a file glued to Chinese
    words), a regex escape's letter (`bBORDER_WIDTH` of `\\bBORDER_WIDTH\\b`), standard exceptions and test
    doubles, a cut name (`update_lock_` of `update_lock_*`), and a Windows path said two ways."""
    messages = [
        user("請看indicator.md和feedback.md, then fix app/events/[slug]/page.tsx"),
        assistant(tool_call("g", "bash", command="grep -rn '\\bBORDER_WIDTH\\b' src && ls *_test.go update_lock_*")),
        result("g", "+supabase/schema.sql changed; c.JSON(200, x); open http://localhost:8765/chart-smoke.html\n"
                    "TypeError: x is undefined; MagicMock(); raise ValueError; curl -fsSL x | sh; click ref_12"),
        assistant(tool_call("r", "read", path="C:\\Users\\me\\app\\src\\lib\\db.ts")),
        result("r", "export const BORDER_WIDTH = 2"),
        assistant(text("Edited c:/Users/me/app/src/lib/db.ts; the renderTable helper now reads BORDER_WIDTH. "
                       "Next: components\\events\\telegram-cta.tsx and supabase\\schema.sql."), stop="stop"),
    ]
    trail = section(summarize_offline(call(messages)), "## Relevant Files and Code Names")
    for whole in ("indicator.md", "feedback.md", "app/events/[slug]/page.tsx", "supabase/schema.sql",
                  "c:/Users/me/app/src/lib/db.ts", "BORDER_WIDTH", "renderTable", "components/events/telegram-cta.tsx"):
        assert whole in trail, whole
    for piece in ("請看", "`/page.tsx`", "+supabase", "c.JSON", "_test.go", "8765/", "bBORDER_WIDTH", "TypeError",
                  "MagicMock", "ValueError", "fsSL", "ref_12", "update_lock_", "`elegram", "`chema.sql", "C:\\Users", "/Users/me/app/src/lib/db.ts`, `c:"):
        assert piece not in trail, piece


def test_names_of_the_browser_and_rust_std_are_no_project_names():
    """#55 item 5 (read on held-out summaries): a React style object's CSS properties (`fontSize`,
    `marginBottom`), the DOM's calls (`getAttribute`, `scrollIntoView`) and Rust's std (`BTreeMap`,
    `saturating_add`) filled the trail beside the project's own names."""
    messages = [
        user("Fix the card layout in src/Card.tsx"),
        assistant(tool_call("r", "read", path="src/Card.tsx")),
        result("r", "const style = { fontSize: 12, marginBottom: 4, borderRadius: 8, alignItems: 'center' };\n"
                    "el.getAttribute('x'); node.scrollIntoView(); renderCardHeader(cardTitle);\n"
                    "let m: BTreeMap<u32, OrderBook> = x.saturating_add(1);"),
        assistant(text("Edited src/Card.tsx: renderCardHeader now takes cardTitle and the OrderBook."), stop="stop"),
    ]
    trail = section(summarize_offline(call(messages)), "## Relevant Files and Code Names")
    for name in ("renderCardHeader", "cardTitle", "OrderBook"):
        assert name in trail, name
    for name in ("fontSize", "marginBottom", "borderRadius", "alignItems", "getAttribute", "scrollIntoView",
                 "BTreeMap", "saturating_add"):
        assert name not in trail, name


def test_a_long_mixed_case_piece_is_read_in_linear_time():
    """The code-name pattern backtracked exponentially on a long mixed-case piece ending in a character no
    name has (`aBaB…aB-`, ×4 each two bumps): a Claude Code session of #55's tuning part took minutes in
    `trail_names`. Same answers as before on every short piece."""
    import random
    import re

    from batchcompact.summarize.builtin_trail import is_code_name, trail_names

    before = re.compile(r"^_*[A-Za-z][A-Za-z0-9]*(?:(?:_+[A-Za-z0-9]+)+_*|(?:[a-z0-9][A-Z][A-Za-z0-9]*)+)$")
    rng = random.Random(7)
    for _ in range(20_000):
        piece = "".join(rng.choice("aBz1_-Q") for _ in range(rng.randint(1, 10)))
        assert bool(before.match(piece)) == is_code_name(piece), piece
    assert trail_names("see " + "aB" * 2000 + "-x and loadSettings") == [(False, "loadSettings")]


def test_the_trail_does_not_repeat_the_files_the_tags_list():
    messages = [user("Fix the window in src/limits/window.ts"),
                assistant(tool_call("e", "edit", path="src/limits/window.ts", oldText="a", newText="b")),
                result("e", "ok", name="edit"), assistant(text("Read src/limits/README.md next."), stop="stop")]
    plain = summarize_offline(call(messages))
    listed = SummaryCall(kind=HISTORY, system_prompt="", user_prompt="", max_tokens=2000, messages=tuple(messages),
                         meta={"listed_files": ("src/limits/window.ts",)})
    trail = section(summarize_offline(listed), "## Relevant Files and Code Names")
    assert "window.ts" in section(plain, "## Relevant Files and Code Names")
    assert "window.ts" not in trail and "src/limits/README.md" in trail


def test_the_trail_names_the_folders_the_tools_searched():
    messages = [user("Find where the upload limit is enforced."),
                assistant(tool_call("g", "grep", pattern="limit_uploads", path="services/api/")),
                result("g", "services/api/limits.py:3:def limit_uploads():", name="grep"),
                assistant(tool_call("l", "ls", path="deploy")), result("l", "Makefile\nchart.yaml", name="ls"),
                assistant(tool_call("f", "find", pattern="*.py", path="*")), result("f", "", name="find"),
                assistant(text("It is in services/api/limits.py."), stop="stop")]
    trail = section(summarize_offline(call(messages)), "## Relevant Files and Code Names")
    # the newest first (the same recency weights as files); a glob names no place
    assert "- Folders used: `deploy`, `services/api`" in trail.splitlines()
    assert "`services/api/limits.py`" in trail


def test_paths_under_one_project_folder_are_written_relative_to_it():
    root = "/home/dev/projects/shop"
    messages = [user("Move the cart totals into their own module.")]
    for index, path in enumerate(("src/cart/totals.ts", "src/cart/index.ts", "test/cart.test.ts")):
        messages += [assistant(tool_call(f"e{index}", "edit", path=f"{root}/{path}", oldText="a", newText="b")),
                     result(f"e{index}", "ok", name="edit")]
    messages.append(assistant(text("Moved."), stop="stop"))
    summary = summarize_offline(call(messages))
    assert section(summary, "### Done").splitlines() == [
        "- [x] Edited `src/cart/totals.ts`", "- [x] Edited `src/cart/index.ts`", "- [x] Edited `test/cart.test.ts`"]
    trail = section(summary, "## Relevant Files and Code Names").splitlines()
    assert trail[0] == f"- Project folder: `{root}` (paths relative to it)"
    assert f"{root}/src" not in summary.replace(f"`{root}`", "")
    two = summarize_offline(call(messages[:3] + [messages[-1]]))  # one path: nothing to gain, written whole
    assert f"`{root}/src/cart/totals.ts`" in two and "Project folder" not in two


def test_a_traceback_s_library_frames_are_no_project_files():
    trace = ('Traceback (most recent call last):\n  File "/home/dev/.venv/lib/python3.12/site-packages/click/core.py",'
             ' line 1244, in invoke\n  File "/home/dev/app/src/app/sync.py", line 88, in sync_feeds\n'
             'KeyError: feed_id')
    messages = [user("The sync crashes:\n" + trace), assistant(text("The feed id is missing."), stop="stop")]
    trail = section(summarize_offline(call(messages)), "## Relevant Files and Code Names")
    assert "sync.py" in trail and "sync_feeds" in trail
    assert "site-packages" not in trail and "core.py" not in trail


def test_files_a_shell_command_prints_are_reads():
    messages = [user("Look at how the scheduler retries.")]
    for index, command in enumerate(("sed -n '1,200p' src/jobs/scheduler.py", "cd src && nl -ba jobs/retry.py | head -50",
                                     "rg -n backoff src/jobs/queue.py")):
        messages += [assistant(tool_call(f"c{index}", "bash", command=command)), result(f"c{index}", "def run(): ...")]
    messages.append(assistant(text("Both retry paths share one backoff."), stop="stop"))
    call_ = call(messages)
    from batchcompact.summarize.builtin_facts import extract_facts
    from batchcompact.summarize.builtin_trail import shell_reads

    assert shell_reads("cat a.py b.md | head -n 5 && wc -l *.py") == ["a.py", "b.md"]
    facts = extract_facts(call_.messages)
    assert {"src/jobs/scheduler.py", "jobs/retry.py"} <= set(facts.read.list())
    assert "src/jobs/queue.py" not in facts.read  # rg searches it: named, not read
    ranked = facts.salience.ranked_files()
    assert ranked.index("src/jobs/scheduler.py") < ranked.index("src/jobs/queue.py")


def test_a_short_split_turn_prefix_leaves_its_share_to_the_history():
    """A split turn's prefix summary gets what its text can use, a share under the history's however long
    the prefix; the history takes the rest, and the two with the separator are the whole budget. A prefix
    too short for a share of its own still gets room to say its request (docs/summaries.md, "The budget")."""
    from batchcompact.core.planner import estimate_text_tokens, summary_budgets
    from batchcompact.core.prompts import SPLIT_TURN_SEPARATOR
    from batchcompact.core.serialize import serialize_conversation

    tiny = [user("Fix the typo in README.md."), assistant(tool_call("r1", "read", path="README.md"))]
    sizes = {"tiny": estimate_text_tokens(serialize_conversation(tiny)), "short": 200, "long": 20_000}
    budgets = {name: summary_budgets(2000, 0, True, True, prefix_tokens=tokens) for name, tokens in sizes.items()}
    for history, prefix in budgets.values():
        assert history + prefix + estimate_text_tokens(SPLIT_TURN_SEPARATOR) == 2000
    (short_history, short), (long_history, long) = budgets["short"], budgets["long"]
    assert short <= sizes["short"] // 2  # docs/summaries.md: at most half its own text's tokens
    assert short < long < long_history  # a long prefix: a share, under the history's
    assert long <= (2000 - estimate_text_tokens(SPLIT_TURN_SEPARATOR)) // 3  # docs/summaries.md: a third of the rest
    assert short_history > long_history  # what a short prefix cannot use goes to the history
    said = summarize_offline(call(tiny, kind=TURN_PREFIX, max_tokens=budgets["tiny"][1]))
    assert "Fix the typo in README.md." in said


def test_progress_says_what_changed_file_by_file_not_how_many_commands():
    messages = [user("Rename the limiter and document it.")]
    for index in range(12):
        messages += [assistant(tool_call(f"c{index}", "bash", command=f"ls src/{index}")), result(f"c{index}", "")]
    messages += [assistant(tool_call("w", "write", path="docs/limits.md", content="# Limits\nPer user.\n")),
                 result("w", "ok", name="write"),
                 assistant(tool_call("m", "edit", path="src/limits.py", oldText="class Limiter:",
                                     newText="class UploadLimiter:")), result("m", "ok", name="edit"),
                 assistant(tool_call("e", "edit", path="docs/limits.md", oldText="Per user.",
                                     newText="Per user, per hour.")), result("e", "ok", name="edit"),
                 assistant(text("Renamed."), stop="stop")]
    done = section(summarize_offline(call(messages)), "### Done").splitlines()
    assert done == ["- [x] Wrote `docs/limits.md` (2 lines), then edited (1 edit): Per user, per hour.",
                    "- [x] Edited `src/limits.py`: class UploadLimiter:"]


# -- the budget -----------------------------------------------------------------------------------------
def _sessions() -> list[Path]:
    shared = [fixture_path("pi", "large-session.jsonl"), fixture_path("pi", "before-compaction.jsonl"),
              fixture_path("claude", "projects", "-home-USER-projects-spotter", "tool_heavy.jsonl"),
              fixture_path("claude", "projects", "sample-project", "5c0375b4-57a5-4f26-b12d-d022ee4e51b7.jsonl"),
              fixture_path("codex", "coverage", "agent-sessions_codex_small.jsonl")]
    return shared + sorted(p for p in (REPO / "sample_sessions").rglob("*.jsonl") if "subagents" not in p.parts)


@pytest.mark.parametrize("budget", [200, MIN_SUMMARY_BUDGET, 900, 2000])
def test_the_summary_never_exceeds_the_budget(budget):
    """Over the fixtures and sample_sessions: each built-in text within its call's share, counted by the
    tokenizer and by chars/4, and the stored summary (split-turn part and file tags) within the budget, by
    both counts (at 200, below the CLI's least of 500, by chars/4), the tags within half of it, however many
    files the span touched (the stored summary had 485 tokens at 200, the tags uncapped, before #55)."""
    planned = 0
    for path in _sessions():
        session = read_session(path)
        for keep in (200, 3000):
            settings = CompactionSettings(force=True, keep_recent_tokens=keep, summary_budget=budget)
            plan = prepare_compaction(session.path_entries(), settings, 200_000, file_tools=file_tools(),
                                      cwd=session.cwd)
            if not isinstance(plan, CompactionPlan):
                continue
            planned += 1
            texts = {c.kind: summarize_offline(c) for c in plan.calls}
            for c in plan.calls:
                assert count_tokens(texts[c.kind]) <= c.max_tokens, (path, keep, c.kind)
                assert len(texts[c.kind]) <= c.max_tokens * 4, (path, keep, c.kind)
            stored = compose_summary(plan, texts)
            assert -(-len(plan.file_tags) // 4) <= budget // 2, (path, keep)
            assert -(-len(stored) // 4) <= budget, (path, keep, len(stored))
            if budget >= MIN_SUMMARY_BUDGET:  # below the CLI's least, chars/4 holds (202 tokens at 200 once)
                assert summary_tokens(stored) <= budget, (path, keep, len(stored))
    assert planned >= 10


def test_large_session_summary_is_within_the_budget_and_reads_as_a_handover():
    path = fixture_path("pi", "large-session.jsonl")
    session = read_session(path)
    settings = CompactionSettings(force=True, keep_recent_tokens=3000)
    plan = prepare_compaction(session.path_entries(), settings, 200_000, file_tools=file_tools())
    texts = {c.kind: summarize_offline(c) for c in plan.calls}
    stored = compose_summary(plan, texts)
    assert -(-len(stored) // 4) <= settings.summary_budget  # main: 23,058 characters
    goal = section(stored, "## Goal").splitlines()
    assert len(goal) <= 7  # main: 78 lines; 6 before the file tags were said relative and grouped
    for noise in ("dude sleep 5 seconds", "think then say hello", "Node.js", "file.txt", "setTimeout", "Ran "):
        assert noise not in stored, noise
    assert "Error in the js-debug bootloader" not in stored and "cp: /opt/homebrew" not in stored


def _run(*args: str):
    return CliRunner().invoke(cli, [*args], catch_exceptions=False)


def test_summary_budget_option_config_and_estimate(tmp_path):
    path = str(fixture_path("pi", "large-session.jsonl"))
    rows = {}
    for budget in ("800", "1600"):
        done = _run("plan", path, "--force", "--summary-budget", budget, "--jobs", "1", "--format", "json")
        assert done.exit_code == 0, done.output
        rows[budget] = json.loads(done.output[done.output.index("["): done.output.rindex("]") + 1])[0]
    assert rows["1600"]["est_output_tokens"] - rows["800"]["est_output_tokens"] == 800
    config = tmp_path / "config.toml"
    config.write_text("[plan]\nsummary-budget = 800\n")
    done = _run("--config", str(config), "plan", path, "--force", "--jobs", "1", "--format", "json")
    row = json.loads(done.output[done.output.index("["): done.output.rindex("]") + 1])[0]
    assert row["est_output_tokens"] == rows["800"]["est_output_tokens"]
    done = _run("plan", path, "--summary-budget", "50")
    assert done.exit_code == 2 and "--summary-budget" in done.output


def test_run_writes_a_summary_within_the_budget_and_reports_it(tmp_path):
    source = fixture_path("pi", "large-session.jsonl")
    out = tmp_path / "out"
    done = _run("run", str(source), "--force", "--keep-recent-tokens", "3000", "--summary-budget", "1200",
                "--min-age", "0", "--output-dir", str(out), "--jobs", "1")
    assert done.exit_code == 0, done.output
    written = next(out.rglob("large-session.jsonl"))
    compactions = [json.loads(line) for line in written.read_text().splitlines() if '"compaction"' in line]
    summary = [c for c in compactions if c.get("type") == "compaction"][-1]["summary"]
    assert -(-len(summary) // 4) <= 1200 and count_tokens(summary) <= 1200
    # run's "tokens (compacted sessions): A -> ~B" counts the summary at its budget, not 2,000-3,000
    line = next(ln for ln in done.output.splitlines() if ln.startswith("tokens (compacted sessions)"))
    after = int(line.split("~")[1].replace(",", ""))
    plan = _run("plan", str(source), "--force", "--keep-recent-tokens", "3000", "--summary-budget", "1200",
                "--jobs", "1", "--format", "json")
    row = json.loads(plan.output[plan.output.index("["): plan.output.rindex("]") + 1])[0]
    assert after == row["tokens_after_est"]


def test_a_model_and_a_hook_are_told_the_budget(monkeypatch, tmp_path):
    from batchcompact.summarize.litellm_summarizer import LiteLLMSummarizer

    session = read_session(fixture_path("pi", "large-session.jsonl"))
    plan = prepare_compaction(session.path_entries(), CompactionSettings(force=True, summary_budget=900), 200_000,
                              file_tools=file_tools())
    history = next(c for c in plan.calls if c.kind == HISTORY)
    request = LiteLLMSummarizer("openai/gpt-4o-mini").build_request(history)
    assert request["max_tokens"] == history.max_tokens < 900
    assert f"must fit in {history.max_tokens:,} tokens" in request["messages"][1]["content"]

    # a reasoning model counts its thinking in max_tokens: it gets room beyond the budget its prompt states
    from batchcompact.summarize.batch_api import BatchTarget, client_for

    reasoning = LiteLLMSummarizer("openai/gpt-5-mini").build_request(history)
    assert reasoning["max_tokens"] > history.max_tokens
    assert f"must fit in {history.max_tokens:,} tokens" in reasoning["messages"][1]["content"]
    # the Batch API's request line gives each model what the direct call gives it
    for model, field, sent in (("gpt-4o-mini", "max_tokens", request["max_tokens"]),
                               ("gpt-5-mini", "max_completion_tokens", reasoning["max_tokens"])):
        line = client_for(BatchTarget("openai", f"openai/{model}", model, "http://127.0.0.1:9")).request_line(
            "id-1", history)
        assert json.loads(line)["body"][field] == sent

    seen = []
    module = types.ModuleType("budget_hooks")

    def hook(call):
        seen.append(call.max_tokens)
        return f"## Goal\nwithin {call.max_tokens} tokens"

    module.hook = hook
    monkeypatch.setitem(sys.modules, "budget_hooks", module)
    done = _run("run", str(fixture_path("pi", "large-session.jsonl")), "--force", "--summarizer", "budget_hooks:hook",
                "--summary-budget", "900", "--min-age", "0", "--output-dir", str(tmp_path / "o"), "--jobs", "1")
    assert done.exit_code == 0, done.output
    assert seen and all(0 < tokens < 900 for tokens in seen)


# -- show: an encrypted Codex compaction ----------------------------------------------------------------
def test_show_says_a_codex_summary_is_encrypted(tmp_path):
    ts = "2026-05-01T10:00:00.000Z"
    blob = "gAAAAB" + "x" * 1994
    items = [
        {"type": "session_meta", "payload": {"id": "019c0000-0000-7000-8000-0000000000e1", "timestamp": ts,
                                             "cwd": "/w", "originator": "codex_cli_rs", "cli_version": "0.169.0"}},
        {"type": "response_item", "payload": {"type": "message", "role": "user",
                                              "content": [{"type": "input_text", "text": "Fix the parser."}]}},
        {"type": "response_item", "payload": {"type": "message", "role": "assistant",
                                              "content": [{"type": "output_text", "text": "Looking."}]}},
        # Remote compaction (docs: /work/shared/reference/transcripts.md 2.3): an empty message, the new
        # history holding the user's message and one opaque compaction item
        {"type": "compacted", "payload": {"message": "", "replacement_history": [
            {"type": "message", "role": "user", "content": [{"type": "input_text", "text": "Fix the parser."}]},
            {"type": "compaction", "encrypted_content": blob}]}},
        {"type": "event_msg", "payload": {"type": "context_compacted"}},
        {"type": "response_item", "payload": {"type": "message", "role": "user",
                                              "content": [{"type": "input_text", "text": "go on"}]}},
    ]
    path = tmp_path / "rollout-2026-05-01T10-00-00-019c0000-0000-7000-8000-0000000000e1.jsonl"
    path.write_text("".join(json.dumps({"timestamp": ts, **item}) + "\n" for item in items))
    done = _run("show", str(path), "--context")
    assert "summary encrypted by the provider, 2,000 characters" in done.output
    assert "<summary>\n(summary encrypted by the provider, 2,000 characters)\n</summary>" in done.output
    assert "<summary>\n\n</summary>" not in done.output


def test_summary_tokens_is_the_larger_count():
    assert summary_tokens("x" * 400) >= 100
    assert summary_tokens("`/Users/a/b/c-d-e.ts`, " * 20) >= count_tokens("`/Users/a/b/c-d-e.ts`, " * 20)


def test_the_newest_failing_run_of_a_check_stands_for_it():
    messages = [
        user("Run npm test and summarize the failures. Don't change anything yet."),
        assistant(tool_call("a", "bash", command="npm test 2>&1 | tail -n 80")),
        result("a", "AssertionError: expected 3 to be 5\n\nCommand exited with code 1"),
        assistant(tool_call("b", "bash", command="npm test")),
        result("b", "AssertionError: expected 3 to be 5\n\nCommand exited with code 1"),
    ]
    assert section(summarize_offline(call(messages)), "### Blocked").splitlines() == [
        "- `npm test` failed: exit 1: AssertionError: expected 3 to be 5"]


# -- an item cut to fit its share ends where a reader can stop ------------------------------------------
def test_a_shortened_item_ends_at_a_sentence_or_a_word():
    from batchcompact.summarize.builtin_sections import _shorten

    last = "Now ready for commit and tag. The steps are listed in the README and in the changelog."
    assert _shorten(last, 40) == "Now ready for commit and tag."  # was "Now ready for commit and tag. The ste…"
    assert _shorten('Wrap the heading text in `theme.fg("mdHeading", text)` so it shows', 36) == \
        "Wrap the heading text in…"  # was "Wrap the heading text in `theme…"
    assert _shorten("abcdefghij" * 10, 30) == "abcdefghij" * 2 + "abcdefghi…"  # one long word: cut as it must be
    assert _shorten("line one is here\nline two is also here\nline three", 45) == \
        "line one is here\nline two is also here…"
    assert _shorten(last, 200) == last


def test_at_a_tight_budget_the_last_message_is_said_by_whole_sentences(tmp_path):
    """pi's large-session at 1,000 tokens: Critical Context had "Last assistant message: Now ready for commit
    and tag. The ste…" (the fixture's last assistant message opens with that sentence; checked by hand)."""
    out = tmp_path / "out"
    done = _run("run", str(fixture_path("pi", "large-session.jsonl")), "--force", "--keep-recent-tokens", "3000",
                "--summary-budget", "1000", "--min-age", "0", "--output-dir", str(out), "--jobs", "1")
    assert done.exit_code == 0, done.output
    written = next(out.rglob("large-session.jsonl"))
    summary = [json.loads(line) for line in written.read_text().splitlines() if '"compaction"' in line][-1]["summary"]
    assert "- Last assistant message: Now ready for commit and tag.\n" in summary
    assert count_tokens(summary) <= 1000


# -- commands -------------------------------------------------------------------------------------------
def test_a_shell_step_is_said_as_what_it_ran_and_where():
    """#55: Done, Blocked and Next Steps held 40-character pieces of shell commands ("Checks passed: cd
    /home/…/frontend && node…"); a step is what it ran and where, never cut inside a path or a word."""
    from batchcompact.summarize.builtin_tools import check_family, say_command

    assert say_command("cd /home/u/app/frontend && npm test 2>&1 | tail -20", "/home/u/app") == "`npm test` in `frontend/`"
    assert say_command("cd /home/user/raddit/app && npm run build 2>&1 | tail -3 && echo \"=== E2E ===\" && "
                       "nohup npm run dev >/tmp/dev.log 2>&1 &", "/home/user/tmp") == \
        "`npm run build`, `npm run dev` in `../raddit/app/`"
    long = say_command("uv run pytest tests/test_cli.py -k \"verbose and not slow\" -x --maxfail=1 --tb=short -q "
                       "tests/test_a_module_with_a_long_name.py")
    assert long == "`uv run pytest tests/test_cli.py -k \"verbose and not slow\" -x --maxfail=1 …`"
    assert check_family("printf 'N\\n' | npx create-next-app@latest web --typescript --eslint") is None
    assert check_family("cd web && npx eslint .") == "eslint"
    messages = [
        user("Make the frontend tests pass."),
        assistant(tool_call("t", "bash", command="cd /home/u/app/frontend && npm test 2>&1 | tail -20")),
        result("t", "Tests: 12 passed\n\nCommand exited with code 0"),
        assistant(tool_call("b", "bash", command="cd /home/u/app/frontend && npm run build 2>&1 | tail -5")),
        result("b", "error TS2322: Type 'string' is not assignable\n\nCommand exited with code 2", error=True),
    ]
    out = summarize_offline(SummaryCall(kind=HISTORY, system_prompt="", user_prompt="", max_tokens=2000,
                                        messages=tuple(messages), meta={"cwd": "/home/u/app"}))
    assert "- [x] Checks passed: `npm test` in `frontend/`" in out
    assert "- `npm run build` in `frontend/` failed: exit 2: error TS2322: Type 'string' is not assignable" in out
    assert "/home/u/app" not in out and "tail" not in out


def test_trail_names_are_the_same_from_the_token_cache(monkeypatch):
    """Each token's names are worked out once per process (for speed): a text gives the same names first,
    again from the cache, and with the cache cleared at every token."""
    from batchcompact.summarize import builtin_trail

    text = ("Edited src/cli.py and ./pkg/x_test.go; see `extract_facts`, SessionTree.build, a/src/cli.py, "
            "Node.js, -fsSL, update_lock_, req_011CY4p6wvSLjiJyWSJ2VXzB, app/[id]/page.tsx, C:\\Users\\me\\a.ts")
    first = builtin_trail.trail_names(text)
    assert first == builtin_trail.trail_names(text)
    assert (True, "src/cli.py") in first and (False, "extract_facts") in first
    monkeypatch.setattr(builtin_trail, "TOKEN_CACHE_SIZE", 1)
    builtin_trail._TOKEN_NAMES.clear()
    assert builtin_trail.trail_names(text) == first
    assert len(builtin_trail._TOKEN_NAMES) == 1


def test_the_plain_tokens_are_the_name_pattern_s_where_no_drive_stands():
    """trail_names splits a text into tokens without a pattern where no ":/" stands (four times as fast), and
    skips the Windows-path rewrite where neither ":/" nor ":\\" stands: both give what the patterns give there,
    non-ASCII letters, digits, spaces and lone surrogates included."""
    import random

    from batchcompact.summarize import builtin_trail

    rng = random.Random(7)
    pieces = ["a", "Z", "c:", ":", "/", "\\", "x.py", " ", "_", "-", "[", "]", "~", "@", "é", "\n", "C:", "1", "١",
              "\u00a0", "\x1c", "\ud800", "請", "?", "+", ".", "\t", "'", "`", "$", "\x00", "\x7f"]
    for _ in range(5000):
        text = "".join(rng.choice(pieces) for _ in range(rng.randint(0, 20)))
        if ":/" not in text:
            assert builtin_trail.plain_tokens(text) == builtin_trail._NAME_TOKEN.findall(text), text
        if ":/" not in text and ":\\" not in text:
            assert builtin_trail._WINDOWS_PATH.search(text) is None, text
