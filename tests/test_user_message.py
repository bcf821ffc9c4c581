"""What a user message is (summarize/user_message.py; docs/summaries.md, "What a user message is"): one
vocabulary and one classifying function, the harness's prompts recognised by their shape, a long request said
by its outline, a rule a whole sentence. Examples in the shapes the public tuning sessions show."""

from __future__ import annotations

import pytest
from llm_messages import assistant, call, text, tool_call, user

from batchcompact.summarize.builtin import summarize_offline
from batchcompact.summarize.user_message import (
    ACKNOWLEDGEMENT,
    COMMAND,
    GO_AHEAD,
    INJECTED,
    PASTED,
    QUESTION,
    RAN,
    REQUEST,
    RULES,
    outline,
    read_user_message,
    rule_sentences,
    said_once,
)


def section(summary: str, heading: str) -> str:
    return summary.split(heading + "\n", 1)[1].split("\n\n", 1)[0]


FLUSH = ("Pre-compaction memory flush. Store durable memories only in memory/2026-03-24.md (create memory/ if "
         "needed). Treat workspace bootstrap/reference files such as MEMORY.md, SOUL.md, TOOLS.md, and AGENTS.md "
         "as read-only during this flush; never overwrite, replace, or edit them. If memory/2026-03-24.md already "
         "exists, APPEND new content only and do not overwrite existing entries. Do NOT create timestamped variant "
         "files; always use the canonical 2026-03-24.md filename. If nothing to store, reply with NO_REPLY.")


@pytest.mark.parametrize(("words", "kind"), [
    (FLUSH, INJECTED),
    ("Read HEARTBEAT.md if it exists. Follow it strictly. If nothing needs attention, reply HEARTBEAT_OK.", INJECTED),
    ("[PLAN MODE ACTIVE] You are in plan mode - a read-only exploration mode. Do not modify files.", INJECTED),
    ("Plan mode is active. The user indicated that they do not want you to execute yet.", INJECTED),
    ("<collaboration_mode># Collaboration Mode: Default\n\nYou are now in Default mode.</collaboration_mode>",
     INJECTED),
    ("Review the module.\n\nARGUMENTS: src/cli.py", INJECTED),  # what Claude Code appends to a template
    ("<command-name>/model</command-name>\n<command-message>model</command-message>\n"
     "<command-args>claude-opus-4-6-thinking</command-args>", COMMAND),
    ("Ran `npm test`\n```\nok\n```", RAN),
    ("great", ACKNOWLEDGEMENT),
    ("thanks!", ACKNOWLEDGEMENT),
    ("ok", GO_AHEAD),  # the request before it is still the work
    ("yes do it", GO_AHEAD),
    ("ok 開始", GO_AHEAD),  # "ok, start" (the tuning session posthog; a carried rule before)
    ("繼續", GO_AHEAD),
    ("開始實作 login 頁面", REQUEST),  # "start implementing the login page": work asked
    ("wait, do we only limit POST requests?", QUESTION),
    ("diff --git a/x.py b/x.py\n+print(1)", PASTED),
    ("No, don't touch `README.md`.", RULES),
    ("Add a --verbose flag to cli.py.", REQUEST),
])
def test_one_function_says_what_a_user_message_is(words, kind):
    assert read_user_message(user(words)).kind == kind


def test_a_tagged_block_is_cut_and_the_user_s_words_after_it_stay():
    """Claude Code's IDE note before the user's words (the tuning session Solsmile)."""
    said = read_user_message(user(
        "<ide_opened_file>The user opened the file c:\\Users\\y\\app\\page.tsx in the IDE. This may or may not be "
        "related to the current task.</ide_opened_file>continue please and make sure u test deploy eveyrhting"))
    assert said.words == "continue please and make sure u test deploy eveyrhting"
    assert said.kind == RULES  # one sentence with "make sure": Constraints says it


def test_a_long_message_naming_an_upper_case_constant_is_the_user_s():
    """A build spec of the user's that says "returns PROPOSAL_BOND" is no maintenance prompt."""
    spec = "# Market spec\n\nThe contract returns PROPOSAL_BOND to the proposer. " + "Details follow. " * 250
    assert read_user_message(user(spec)).kind == REQUEST


def test_a_slash_command_s_template_is_no_goal_and_no_rule():
    """Claude Code writes the command's line, then the template it expands into: the goal is the command."""
    messages = [
        user("<command-message>review is running…</command-message>\n<command-name>/review</command-name>\n"
             "<command-args>PR 42</command-args>"),
        user("# Review a pull request\n\nYou must read every changed file. Never approve without running the "
             "tests. Always post the review as one comment."),
        assistant(tool_call("b", "bash", command="gh pr diff 42")),
        {"role": "toolResult", "toolCallId": "b", "toolName": "bash", "content": [text("diff")], "isError": False},
        assistant(text("Reviewed."), stop="stop"),
    ]
    out = summarize_offline(call(messages))
    assert section(out, "## Goal") == "/review PR 42"
    assert "Never approve" not in out and "must read every changed file" not in out


def test_a_maintenance_prompt_does_not_push_the_user_s_rules_out():
    """#55: a pi session compacted again lost its user's rules to a memory-maintenance prompt's lines."""
    rules = [f"Never touch the {name} module." for name in ("billing", "auth", "search", "export", "audit")]
    messages = [user("Refactor the importer. " + " ".join(rules)),
                assistant(text("On it."), stop="stop"), user(FLUSH), assistant(text("NO_REPLY"), stop="stop")]
    out = summarize_offline(call(messages))
    constraints = section(out, "## Constraints & Preferences")
    assert all(rule in constraints for rule in rules)
    assert "NO_REPLY" not in section(out, "## Goal") and "memory" not in constraints


KROSSS = """We need a full product-quality audit and positioning correction.

IMPORTANT:
Raveera is NOT a rave-only platform.
Raveera is a premium event platform for:
- creating events
- promoting events
- selling tickets

--------------------------------------------------
TASK 1  FULL CODE AUDIT
--------------------------------------------------

Analyze every file and fix broken imports, type errors and dead routes across app/, components/ and lib/.

--------------------------------------------------
TASK 2  POSITIONING CLEANUP
--------------------------------------------------

Replace rave-only wording in every page, keeping the brand's tone and the organizer's workflow intact.

CRITICAL:
Never expose the service role key in client code.
"""


def test_a_long_request_is_said_by_its_outline_not_cut_mid_word():
    """The tuning session rave-era: its Goal was the first 300 characters, "… organizer analytics R…"."""
    said = outline(KROSSS)
    assert said.startswith("We need a full product-quality audit and positioning correction. — IMPORTANT: Raveera "
                           "is NOT a rave-only platform; TASK 1 FULL CODE AUDIT; TASK 2 POSITIONING CLEANUP; "
                           "CRITICAL: Never expose the service role key in client code")
    goal = section(summarize_offline(call([user(KROSSS), assistant(text("Starting."), stop="stop")])), "## Goal")
    assert goal == said and len(goal) < len(" ".join(KROSSS.split()))  # shorter than the request


def test_a_rule_is_a_whole_sentence():
    """A sentence wrapped across lines is one rule; a list a rule introduces is part of it (the tuning
    sessions Solsmile and rave-era: "…the contract calls" and "Keep brand name:" were rules of their own)."""
    assert rule_sentences("In PolyDot, every time someone proposes an outcome, the contract must call\n"
                          "the oracle first.") == [
        "In PolyDot, every time someone proposes an outcome, the contract must call the oracle first."]
    assert rule_sentences("Keep brand name:\n- Raveera\n\nImprove:\n- avoid layout shifts\n- cache fewer pages") == [
        "Keep brand name: Raveera", "avoid layout shifts"]
    # the line under it when it is no list (rave-era wrote the brand on the next line: "Keep brand name:" alone)
    assert rule_sentences("Keep brand name:\nRaveera Group  Concerts\n\nBut positioning should be:\n"
                          "Raveera helps organizers sell events.") == [
        "Keep brand name: Raveera Group  Concerts", "But positioning should be: Raveera helps organizers sell events."]


def test_a_goal_line_keeps_a_rule_sentence_that_is_no_whole_sentence_of_it():
    """#55: a Goal read "…the current section is ." and the ask after it was gone (to Constraints)."""
    request = ("Good job. Now add the test coverage for the current section `auth`\n"
               "Make sure to add extensive unit, api and e2e tests.")
    assert said_once(request, rule_sentences(request)) == (request, [])
    request = "Run `npm test` and summarize the failures. Don't change anything yet."
    assert said_once(request, rule_sentences(request)) == (
        "Run `npm test` and summarize the failures.", ["Don't change anything yet."])


def test_requests_in_korean_and_chinese_have_words():
    """A request's significant words in any script: before #55 every Korean or Chinese request had none, so
    each was a short one-off that left the Goal once the agent worked on it."""
    from batchcompact.summarize.user_message import words

    assert len(words("이것들을 예쁘게 리드미로 만들어서 awsome-agent-ide 라는 이름으로 깃허브 올려줘")) >= 6
    assert len(words("請先分析並且拋出一些 idea 我們先討論後再開始實作")) >= 6


# -- carried from the earlier summary -------------------------------------------------------------------
PI_PREVIOUS = """## Goal
- Migrate the chart to lightweight-charts v5 (issue #37)

## Constraints & Preferences
- **CONTRIBUTING.md workflow**: NEVER push directly to `main`/`dev`. Always topic branch → PR → merge-commit.
- Commit style: Conventional Commits + Korean
- Respond in Korean, concise
- Commit/push/merge only with explicit user instruction

## Progress

### Done
- [x] **PR #47** (`feat/lightweight-charts` → dev): migrated `drawChart()`.
  - architect review found P1 + P3; fixed in `5fd8279`.

### In Progress
- Nothing actively in-flight

### Blocked
- None

## Key Decisions
- **`autoscaleInfoProvider: () => null` on overlays** (PR #50): candles define the Y-range.

## Next Steps
1. Add the pre/after-market session bands (#48) via a custom Primitive.
2. Add a Yahoo spark -> v8/chart fallback (architect's P2 follow-up for PR #51).

## Critical Context
- **Current branch**: `dev` (synced, all PRs merged).

---

**Turn Context (split turn):**

## Original Request
Add the bid/ask order ratio column to the main dashboard table view.

## Early Progress
- Created branch `feat/dashboard-bidask-column` from `dev`.

## Context for Suffix
- **Remaining work**: `Dashboard.tsx` changes needed.

<read-files>
/home/user/raddit/README.md
</read-files>"""


def test_an_earlier_summary_s_rules_and_next_steps_are_carried():
    """#55: a pi session compacted again kept 0.49 of its earlier summary's Constraints and Next Steps (five
    next steps became "Wait for the user's next request"), and its Critical Context read "- ---" and
    "- **Turn Context (split turn):**" (the split turn's part read as bullets)."""
    span = [user("프론트 디자인 개선 이슈도 등록해줘"), assistant(text("등록했다."), stop="stop"), user(FLUSH),
            assistant(text("NO_REPLY"), stop="stop")]
    out = summarize_offline(call(span, previous=PI_PREVIOUS))
    constraints = section(out, "## Constraints & Preferences")
    for rule in ("NEVER push directly to `main`/`dev`", "Commit style: Conventional Commits + Korean",
                 "Respond in Korean, concise", "Commit/push/merge only with explicit user instruction"):
        assert rule in constraints, rule
    steps = section(out, "## Next Steps")
    assert "session bands (#48)" in steps and "Yahoo spark -> v8/chart fallback" in steps
    assert "Wait for the user's next request" not in steps
    assert "---" not in out.replace("\n---\n", "") and "Turn Context" not in out and "None" not in out
    assert "Later request: Add the bid/ask order ratio column to the main dashboard table view." in out
    assert "- [x] **PR #47** (`feat/lightweight-charts` → dev): migrated `drawChart()`.; architect review" in out
    assert "- [x] Created branch `feat/dashboard-bidask-column` from `dev`." in out
    assert "Nothing actively in-flight" not in out


def test_a_step_the_span_did_is_marked_done():
    previous = "## Goal\nShip it.\n\n## Next Steps\n1. Write `docs/bands.md` describing the session bands\n"
    span = [user("go on"), assistant(tool_call("w", "write", path="docs/bands.md", content="# Session bands\n")),
            {"role": "toolResult", "toolCallId": "w", "toolName": "write", "content": [text("ok")], "isError": False},
            assistant(text("Wrote docs/bands.md describing the session bands."), stop="stop")]
    out = summarize_offline(call(span, previous=previous))
    assert "Write `docs/bands.md` describing the session bands" not in section(out, "## Next Steps")
    assert "- [x] Write `docs/bands.md` describing the session bands (next step of the earlier summary)" in \
        section(out, "### Done")


CLAUDE_PREVIOUS = """Summary:
1. Primary Request and Intent:
   Build a dashboard of the top 5 engineers.

7. Pending Tasks:
   - Task #2 (in_progress): Wait for the data fetch to complete
   - Task #9 (pending): Deploy to Streamlit Cloud + smoke test
   - After fetch completes:
     - Run final `python src/analyze.py`
     - Verify deployed URL loads

8. Current Work:
   The fetcher is running.

9. Optional Next Step:
   Continue waiting for the background fetcher to finish. Then run the analysis and push.

If you need specific details from before compaction (like exact code snippets), read the full transcript at: /x.jsonl
Continue the conversation from where it left off without asking the user any further questions."""


def test_claude_code_s_pending_tasks_and_next_step_are_next_steps():
    out = summarize_offline(call([user("所以現在還差什麼？"), assistant(text("還差部署。"), stop="stop")],
                                 previous=CLAUDE_PREVIOUS))
    steps = section(out, "## Next Steps").splitlines()
    assert steps == ["1. Task #2 (in_progress): Wait for the data fetch to complete",
                     "2. Task #9 (pending): Deploy to Streamlit Cloud + smoke test",
                     "3. After fetch completes: Run final `python src/analyze.py`; Verify deployed URL loads",
                     "4. Continue waiting for the background fetcher to finish. Then run the analysis and push."]
    assert "Continue the conversation from where it left off" not in out and "read the full transcript" not in out


@pytest.mark.parametrize(("message", "kind", "words"), [
    ("[WhatsApp +810000000000 +2m 2026-01-31 16:48 GMT+9] Please add the dentist visit to my calendar "
     "[message_id: 3A793D1F3F8F9A351073]", REQUEST, "Please add the dentist visit to my calendar"),
    ("[Queued messages while agent was busy] --- Queued #1 [Telegram +10000 +19s 2026-01-31 17:34 GMT+9] "
     "Keep the plan in English. [message_id: 3A1B652DA846B43C0871]", RULES, "Keep the plan in English."),
    ("System: [2026-02-01 10:51:58 GMT+9] WhatsApp gateway connected. Search for my name on the internet "
     "[message_id: f72923b7-9f6f-4b41-9436-43b98ba66087]", REQUEST, "Search for my name on the internet"),
    ("[1, 2, 3] is the list I want sorted", REQUEST, "[1, 2, 3] is the list I want sorted"),
    ("1", GO_AHEAD, "1"),
    ("b)", GO_AHEAD, "b)"),
    ("Base directory for this skill: /home/u/.claude/skills/build\n\n## Preamble (run first)", INJECTED, ""),
])
def test_a_gateway_s_envelope_is_cut_and_a_choice_is_a_go_ahead(message, kind, words):
    """#55 item 4 (read on held-out summaries): a chat gateway's envelope (a bracket with a date and time, a
    queue's label, a gateway's notice line, a trailing message id) is no part of the user's words; "1" (a
    choice answered by its number) is no request ("Finish: 1"); a skill's loaded instructions are injected."""
    said = read_user_message({"role": "user", "content": message})
    assert (said.kind, said.words) == (kind, words)


def test_a_choice_keeps_the_request_before_as_the_work():
    out = summarize_offline(call([user("Add a dark mode toggle to the settings page."),
                                  assistant(text("Two ways: 1. a CSS variable theme, 2. a second stylesheet. Which?")),
                                  user("1")]))
    assert "Finish: Add a dark mode toggle to the settings page." in section(out, "## Next Steps")
    assert "Finish: 1" not in out


def test_the_loose_sentence_matcher_finds_what_the_compiled_pattern_finds():
    """`_loose` matches a sentence without compiling a pattern per user message (for speed); its matches are
    exactly the regex's: separators, bullets and numbered items between the words, greedy with backtracking
    (a word that a separator could also take: "-", "1."), non-ASCII spaces and digits, no overlaps."""
    import random
    import re

    from batchcompact.summarize import user_message

    def compiled(sentence: str) -> re.Pattern[str]:
        tokens = [t for t in re.split(r"[\s,]+", sentence.strip()) if t]
        return re.compile(user_message._SEPARATOR.join(re.escape(t) for t in tokens))

    def spans(pattern, text):
        return [(m.start(), m.end()) for m in pattern.finditer(text)]

    alphabet = ["a", "b", "a.", "1", "2", "١", ".", ")", "-", "*", "•", "+", " ", "\n", "\u00a0", ",", "\t", "x y"]
    rng = random.Random(55)
    cases = [("run the tests", "First: run the\n  tests. Then run   the tests"),
             ("a - b", "a - b, a -b, a - - b"), ("x 1. y", "x 1. 1. y and x\n1. y"),
             ("Never use mocks, keep it small.", "- Never use\n- mocks,\n  keep it small.")]
    words, separators = ["a", "b", "-", "1.", "2)", "+", "•", "١.", "a.b"], [" ", " - ", "1. ", "\n* ", ", ", "\u00a0"]
    for _ in range(3000):
        sentence = "".join(rng.choice(alphabet) for _ in range(rng.randint(1, 6)))
        text = "".join(rng.choice(alphabet) for _ in range(rng.randint(0, 30)))
        cases.append((sentence, text))
        sentence = " ".join(rng.choice(words) for _ in range(rng.randint(2, 4)))  # the text made of its words
        text = "".join(rng.choice(words + separators * 2) for _ in range(rng.randint(0, 25)))
        cases.append((sentence, text))
    for sentence, text in cases:
        if not re.split(r"[\s,]+", sentence.strip()) or not sentence.strip(" ,\t\n\u00a0"):
            continue
        expected = compiled(sentence)
        assert spans(user_message._loose(sentence), text) == spans(expected, text), (sentence, text)
        found, want = user_message._loose(sentence).search(text), expected.search(text)
        assert (found and (found.start(), found.end())) == (want and want.span()), (sentence, text)


@pytest.mark.parametrize(("words", "kind"), [("/model opus", COMMAND), ("/clear", COMMAND), ("/fix-issue 42", REQUEST),
                                             # one word after a slash stays what it was before arguments were read
                                             ("/help!", COMMAND), ("/tmp/notes.txt", COMMAND)])
def test_a_typed_harness_command_with_its_argument_is_a_command(words, kind):
    """"/model opus" typed as text configures the agent (a carried "All user messages" item was a rule); a
    custom command with its argument asks for work."""
    assert read_user_message(user(words)).kind == kind
