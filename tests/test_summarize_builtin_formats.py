"""The built-in summarizer on Claude Code and Codex transcripts, read by the real readers, and its rules.

Golden outputs per format pin what a handover note from each agent's tools looks like; the rule tests
pin what the issue reports called noise: searches that found nothing listed as blocked, questions as
constraints, double bullets, failures repeated in the critical context, a previous summary dropped.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from conftest import fixture_path
from llm_messages import assistant, call, result, text, tool_call, user

from batchcompact.agents import file_tools
from batchcompact.core.calls import HISTORY
from batchcompact.core.planner import CompactionSettings, Skip, prepare_compaction
from batchcompact.formats.detect import read_session
from batchcompact.summarize.builtin import summarize_offline
from batchcompact.summarize.builtin_facts import extract_facts
from batchcompact.summarize.builtin_tools import parse_patch

# -- Claude Code ----------------------------------------------------------------------------------------
CLAUDE_SESSION = "7a1c0de0-0000-4000-8000-000000000001"


def _claude_lines() -> list[dict]:
    lines: list[dict] = []
    parent = None

    def add(kind: str, message: dict, **extra) -> None:
        nonlocal parent
        uuid = f"00000000-0000-4000-8000-{len(lines) + 1:012d}"
        lines.append(
            {
                "parentUuid": parent,
                "isSidechain": False,
                "userType": "external",
                "cwd": "/home/dev/app",
                "sessionId": CLAUDE_SESSION,
                "version": "2.1.30",
                "type": kind,
                "message": message,
                "uuid": uuid,
                "timestamp": f"2026-05-01T10:00:{len(lines):02d}.000Z",
                **extra,
            }
        )
        parent = uuid

    usage = {
        "input_tokens": 10,
        "output_tokens": 5,
        "cache_read_input_tokens": 0,
        "cache_creation_input_tokens": 0,
    }

    def reply(n: int, blocks: list[dict]) -> None:
        message = {
            "id": f"msg_{n}",
            "type": "message",
            "role": "assistant",
            "model": "claude-sonnet-4-5",
            "content": blocks,
            "stop_reason": None,
            "usage": usage,
        }
        add("assistant", message, requestId=f"req_{n}")

    def tool_result(tool_id: str, content: str, error: bool = False) -> None:
        block = {"type": "tool_result", "tool_use_id": tool_id, "content": content, "is_error": error}
        add("user", {"role": "user", "content": [block]})

    add(
        "user",
        {
            "role": "user",
            "content": "Add rate limiting to the upload endpoint in api/upload.py. Always use the existing Redis client.",
        },
    )
    reply(
        1,
        [
            {"type": "text", "text": "Let me look at the endpoint."},
            {
                "type": "tool_use",
                "id": "toolu_1",
                "name": "Read",
                "input": {"file_path": "/home/dev/app/api/upload.py"},
            },
        ],
    )
    tool_result("toolu_1", "     1\tfrom flask import Blueprint\n")
    reply(
        2,
        [
            {
                "type": "tool_use",
                "id": "toolu_2",
                "name": "Grep",
                "input": {"pattern": "RateLimit", "path": "api"},
            }
        ],
    )
    tool_result("toolu_2", "No matches found")
    reply(
        3,
        [
            {
                "type": "tool_use",
                "id": "toolu_3",
                "name": "Edit",
                "input": {
                    "file_path": "/home/dev/app/api/upload.py",
                    "old_string": "from flask import Blueprint",
                    "new_string": "from flask import Blueprint\nfrom api.limits import limit_uploads",
                },
            }
        ],
    )
    tool_result(
        "toolu_3",
        "<tool_use_error>File has not been read yet. Read it first before writing to it.</tool_use_error>",
        error=True,
    )
    reply(
        4,
        [
            {
                "type": "tool_use",
                "id": "toolu_4",
                "name": "MultiEdit",
                "input": {
                    "file_path": "/home/dev/app/api/upload.py",
                    "edits": [
                        {
                            "old_string": "from flask import Blueprint",
                            "new_string": "from flask import Blueprint\nfrom api.limits import limit_uploads",
                        }
                    ],
                },
            }
        ],
    )
    tool_result("toolu_4", "Applied 1 edit to /home/dev/app/api/upload.py")
    reply(
        5,
        [
            {
                "type": "tool_use",
                "id": "toolu_5",
                "name": "Write",
                "input": {
                    "file_path": "/home/dev/app/api/limits.py",
                    "content": "import redis\n\n\ndef limit_uploads():\n    ...\n",
                },
            }
        ],
    )
    tool_result("toolu_5", "File created successfully at: /home/dev/app/api/limits.py")
    reply(
        6,
        [
            {
                "type": "tool_use",
                "id": "toolu_6",
                "name": "TodoWrite",
                "input": {
                    "todos": [
                        {"content": "Add the limiter module", "status": "completed", "activeForm": "Adding"},
                        {
                            "content": "Wire it into the endpoint",
                            "status": "in_progress",
                            "activeForm": "Wiring",
                        },
                        {
                            "content": "Document the limit in README",
                            "status": "pending",
                            "activeForm": "Documenting",
                        },
                    ]
                },
            }
        ],
    )
    tool_result("toolu_6", "Todos have been modified successfully.")
    reply(
        7,
        [
            {"type": "text", "text": "Now let me run the tests:"},
            {
                "type": "tool_use",
                "id": "toolu_7",
                "name": "Bash",
                "input": {"command": "pytest -q tests/test_upload.py", "description": "Run upload tests"},
            },
        ],
    )
    tool_result(
        "toolu_7", "Exit code 1\nFAILED tests/test_upload.py::test_limit - assert 200 == 429", error=True
    )
    reply(
        8,
        [
            {
                "type": "text",
                "text": "I'm keeping the limit per user rather than per IP because uploads are authenticated.",
            },
            {
                "type": "tool_use",
                "id": "toolu_8",
                "name": "Bash",
                "input": {"command": "pytest -q", "description": "Run all tests"},
            },
        ],
    )
    tool_result("toolu_8", "42 passed in 1.20s")
    add("user", {"role": "user", "content": "wait, do we only limit POST requests?"})
    reply(9, [{"type": "text", "text": "Yes: only POST /upload is limited."}])
    add("user", {"role": "user", "content": "ok. Now add a note to the README."})
    reply(10, [{"type": "text", "text": "Adding the note."}])
    return lines


# Corrected by hand (#47): "wait, do we only limit POST requests?" is a question the agent answered ("Yes:
# only POST /upload is limited."), so it is no goal; "Ran 2 commands" says nothing the Done lines do not;
# the two changed files are in the summary's <modified-files> tag (added when it is stored), so the trail
# names only the test file beside the code names; limits.py has 5 lines (its final newline ends the fifth,
# it was counted as a sixth).
GOLDEN_CLAUDE = """## Goal
Add rate limiting to the upload endpoint in api/upload.py. Always use the existing Redis client.

## Constraints & Preferences
- Always use the existing Redis client.

## Progress

### Done
- [x] Edited `/home/dev/app/api/upload.py`: from api.limits import limit_uploads
- [x] Wrote `/home/dev/app/api/limits.py` (5 lines)
- [x] Completed: Add the limiter module
- [x] Checks passed: `pytest -q`

### In Progress
- [ ] Wire it into the endpoint

### Blocked
(none)

## Key Decisions
- I'm keeping the limit per user rather than per IP because uploads are authenticated.

## Next Steps
1. Document the limit in README

## Critical Context
- Last assistant message: Yes: only POST /upload is limited.

## Relevant Files and Code Names
- Files: `tests/test_upload.py`
- Code names: limit_uploads, RateLimit, test_limit
- Folders used: `api`"""


def _write_jsonl(path: Path, lines: list[dict]) -> Path:
    path.write_text("".join(json.dumps(line) + "\n" for line in lines), encoding="utf-8")
    return path


def _history_call(path: Path, keep: int = 1):
    session = read_session(path)
    assert not session.errors, session.errors
    plan = prepare_compaction(
        session.path_entries(), CompactionSettings(force=True, keep_recent_tokens=keep), 200_000
    , file_tools=file_tools())
    assert not isinstance(plan, Skip), plan
    return next(c for c in plan.calls if c.kind == HISTORY)


def test_golden_claude(tmp_path):
    path = _write_jsonl(tmp_path / f"{CLAUDE_SESSION}.jsonl", _claude_lines())
    history = _history_call(path)
    assert summarize_offline(history) == GOLDEN_CLAUDE


# -- Codex ----------------------------------------------------------------------------------------------
PATCH = """*** Begin Patch
*** Add File: src/retry.rs
+pub fn backoff(attempt: u32) -> u64 {
+    100 << attempt
+}
*** Update File: src/lib.rs
@@
-mod client;
+mod client;
+mod retry;
*** Update File: src/old_name.rs
*** Move to: src/new_name.rs
*** Delete File: src/unused.rs
*** End Patch"""


def _codex_lines() -> list[dict]:
    ts = "2026-05-01T10:00:00.000Z"
    items = [
        {
            "type": "session_meta",
            "payload": {
                "id": "019c0000-0000-7000-8000-000000000001",
                "timestamp": ts,
                "cwd": "/home/dev/crate",
                "originator": "codex_cli_rs",
                "cli_version": "0.169.0",
            },
        },
        {"type": "turn_context", "payload": {"cwd": "/home/dev/crate", "model": "gpt-5-codex"}},
        {
            "type": "response_item",
            "payload": {
                "type": "message",
                "role": "user",
                "content": [
                    {
                        "type": "input_text",
                        "text": "<environment_context>\n  <cwd>/home/dev/crate</cwd>\n</environment_context>",
                    }
                ],
            },
        },
        {
            "type": "response_item",
            "payload": {
                "type": "message",
                "role": "user",
                "content": [
                    {
                        "type": "input_text",
                        "text": "Add exponential backoff to the HTTP client. Never retry POST requests.",
                    }
                ],
            },
        },
        {
            "type": "response_item",
            "payload": {
                "type": "function_call",
                "name": "exec_command",
                "call_id": "c1",
                "arguments": json.dumps({"cmd": "rg -n retry src"}),
            },
        },
        {
            "type": "response_item",
            "payload": {
                "type": "function_call_output",
                "call_id": "c1",
                "output": "Process exited with code 1\nOutput:\n",
            },
        },
        {
            "type": "response_item",
            "payload": {
                "type": "custom_tool_call",
                "name": "apply_patch",
                "call_id": "c2",
                "status": "completed",
                "input": PATCH,
            },
        },
        {
            "type": "response_item",
            "payload": {
                "type": "custom_tool_call_output",
                "call_id": "c2",
                "output": "Success. Updated the following files:\nA src/retry.rs",
            },
        },
        {
            "type": "response_item",
            "payload": {
                "type": "function_call",
                "name": "exec_command",
                "call_id": "c3",
                "arguments": json.dumps({"cmd": "cargo test"}),
            },
        },
        {
            "type": "response_item",
            "payload": {
                "type": "function_call_output",
                "call_id": "c3",
                "output": "Process exited with code 101\nOutput:\nerror[E0425]: cannot find function `backof`",
            },
        },
        {
            "type": "response_item",
            "payload": {
                "type": "function_call",
                "name": "update_plan",
                "call_id": "c4",
                "arguments": json.dumps(
                    {
                        "plan": [
                            {"step": "Add backoff helper", "status": "completed"},
                            {"step": "Fix the build", "status": "in_progress"},
                        ]
                    }
                ),
            },
        },
        {
            "type": "response_item",
            "payload": {"type": "function_call_output", "call_id": "c4", "output": "Plan updated"},
        },
        {
            "type": "response_item",
            "payload": {
                "type": "message",
                "role": "assistant",
                "content": [{"type": "output_text", "text": "The build fails on a typo; fixing it next."}],
            },
        },
        {
            "type": "response_item",
            "payload": {
                "type": "message",
                "role": "user",
                "content": [{"type": "input_text", "text": "go ahead"}],
            },
        },
        {
            "type": "response_item",
            "payload": {
                "type": "message",
                "role": "assistant",
                "content": [{"type": "output_text", "text": "Fixing."}],
            },
        },
    ]
    return [{"timestamp": ts, **item} for item in items]


# Reviewed by hand (#47): no "Ran 2 commands" line; the cargo failure is the newest thing that happened
# under the only request, so it stays blocked and the next step; the changed files are in the stored
# summary's <modified-files> tag, so the trail has nothing left to add (its heading says "(none)").
GOLDEN_CODEX = """## Goal
Add exponential backoff to the HTTP client. Never retry POST requests.

## Constraints & Preferences
- Never retry POST requests.

## Progress

### Done
- [x] Added `src/retry.rs`: pub fn backoff(attempt: u32) -> u64 {
- [x] Edited `src/lib.rs`: mod retry;
- [x] Moved `src/old_name.rs → src/new_name.rs`
- [x] Deleted `src/unused.rs`
- [x] Completed: Add backoff helper

### In Progress
- [ ] Fix the build

### Blocked
- `cargo test` failed: exit 101: error[E0425]: cannot find function `backof`

## Key Decisions
(none)

## Next Steps
1. Fix: `cargo test` failed: exit 101: error[E0425]: cannot find function `backof`

## Critical Context
- Last assistant message: The build fails on a typo; fixing it next.

## Relevant Files and Code Names
(none)"""


def test_golden_codex(tmp_path):
    path = _write_jsonl(
        tmp_path / "rollout-2026-05-01T10-00-00-019c0000-0000-7000-8000-000000000001.jsonl", _codex_lines()
    )
    history = _history_call(path)
    assert summarize_offline(history) == GOLDEN_CODEX


def test_patch_headers():
    assert parse_patch(PATCH) == [
        ("src/retry.rs", "added", "pub fn backoff(attempt: u32) -> u64 {"),
        ("src/lib.rs", "edited", "mod retry;"),
        ("src/old_name.rs → src/new_name.rs", "moved", ""),
        ("src/unused.rs", "deleted", ""),
    ]


# -- rules ----------------------------------------------------------------------------------------------
def test_search_that_finds_nothing_is_not_blocked():
    messages = [
        user("Find where the cache is flushed and fix the leak."),
        assistant(tool_call("g", "bash", command="grep -rn flush src/")),
        result("g", "bash", "\n\nCommand exited with code 1", error=True),
    ]
    out = summarize_offline(call(messages))
    assert "### Blocked\n(none)" in out


def test_a_failure_fixed_later_is_not_blocked():
    messages = [
        user("Make the tests pass."),
        assistant(tool_call("a", "bash", command="pytest -q tests/test_a.py")),
        result("a", "bash", "1 failed\n\nCommand exited with code 1", error=True),
        assistant(tool_call("b", "edit", path="src/a.py", oldText="x = 1", newText="x = 2")),
        result("b", "edit", "ok"),
        assistant(tool_call("c", "bash", command="pytest -q")),
        result("c", "bash", "12 passed"),
        assistant(text("All green."), stop="stop"),
    ]
    out = summarize_offline(call(messages))
    assert "### Blocked\n(none)" in out
    assert "- [x] Checks passed: `pytest -q`" in out
    assert "Fix:" not in out


def test_questions_are_never_constraints_and_bullets_never_double():
    messages = [
        user(
            "- wait, do we only have a single link color?\n- keep the old colors for links\n* should we ship it?"
        ),
        assistant(text("One color."), stop="stop"),
    ]
    out = summarize_offline(call(messages))
    constraints = out.split("## Constraints & Preferences\n")[1].split("\n\n")[0]
    assert constraints == "- keep the old colors for links"
    assert "- - " not in out and "- [x] - " not in out


def test_critical_context_does_not_repeat_blocked():
    messages = [
        user("Deploy the site."),
        assistant(tool_call("d", "bash", command="make deploy")),
        result("d", "bash", "error: no credentials\n\nCommand exited with code 2", error=True),
    ]
    out = summarize_offline(call(messages))
    critical = out.split("## Critical Context")[1]
    assert "no credentials" not in critical
    assert "- `make deploy` failed: exit 2: error: no credentials" in out


def test_a_failed_edit_is_not_done():
    messages = [
        user("Rename the helper."),
        assistant(tool_call("e", "edit", path="src/h.py", oldText="def a", newText="def b")),
        result("e", "edit", "Could not find the exact text in src/h.py", error=True),
    ]
    facts = extract_facts(messages)
    assert facts.changes == {}
    assert list(facts.blocked.values()) == [
        "`edit` on `src/h.py` failed: Could not find the exact text in src/h.py"
    ]


CLAUDE_PREVIOUS = """This session is being continued from a previous conversation that ran out of context. The summary below covers the earlier portion of the conversation.

Analysis:
Let me look at it chronologically.

Summary:
1. Primary Request and Intent:
   The user asked to migrate the billing service to the new API.
2. Key Technical Concepts:
   - Stripe webhooks
3. Files and Code Sections:
   - `billing/api.py`
     ```python
     def charge(): ...
     ```
"""


def test_previous_claude_summary_gives_the_goal_and_is_kept():
    out = summarize_offline(call([user("Now add retries to the webhook handler.")], previous=CLAUDE_PREVIOUS))
    goal = out.split("## Goal\n")[1].split("\n\n")[0]
    assert goal.splitlines() == [
        "The user asked to migrate the billing service to the new API.",
        "Later request: Now add retries to the webhook handler.",
    ]
    critical = out.split("## Critical Context\n")[1]
    assert critical.startswith(
        "- Earlier summary (from the agent's own compaction):\n  1. Primary Request and Intent:"
    )
    assert "Stripe webhooks" in critical and "(code omitted)" in critical and "def charge" not in critical
    assert "Analysis:" not in out and "continued from a previous conversation" not in out


def test_work_in_flight_is_in_progress():
    messages = [
        user("Upgrade the dependencies."),
        assistant(text("Now let me run the build:"), tool_call("b", "bash", command="npm run build")),
        result("b", "bash", "built in 3s"),
        assistant(tool_call("c", "bash", command="npm outdated")),
    ]
    out = summarize_offline(call(messages))
    assert "- [ ] Working on: run the build" in out


def test_sections_share_the_budget():
    """A long Done list cannot push the goal and the next steps out."""
    messages = [user("Refactor every module to the new logger.")]
    for i in range(400):
        messages += [
            assistant(
                tool_call(f"e{i}", "edit", path=f"src/m{i}.py", oldText="log", newText=f"logger.info({i})")
            ),
            result(f"e{i}", "edit", "ok"),
        ]
    messages.append(user("Then update the changelog."))
    out = summarize_offline(call(messages, max_tokens=600))
    assert len(out) <= 2400
    assert "Refactor every module to the new logger." in out
    assert "1. Finish: Then update the changelog." in out
    assert "src/m399.py" in out  # the newest changes survive, the oldest go


def test_linear_in_the_number_of_messages():
    """Work grows with the input, not with its square: counted in function calls, not seconds."""
    import cProfile
    import pstats

    def calls_for(n: int) -> int:
        messages = []
        for i in range(n):
            messages += [
                user(f"request {i}: please keep going with step {i}"),
                assistant(tool_call(f"c{i}", "bash", command=f"make step{i}")),
                result(f"c{i}", "bash", f"error {i}\n\nCommand exited with code 2", error=True),
                assistant(tool_call(f"w{i}", "write", path=f"f{i}.txt", content="x")),
                result(f"w{i}", "write", "ok"),
            ]
        profile = cProfile.Profile()
        profile.enable()
        summarize_offline(call(messages))
        profile.disable()
        return pstats.Stats(profile).total_calls  # type: ignore[attr-defined]

    small, large = calls_for(500), calls_for(5000)
    assert large < small * 10 * 1.3


@pytest.mark.parametrize(
    "parts",
    [
        ("claude", "projects", "-home-USER-projects-spotter", "4d5611e5-241a-462a-8d15-5122611a9569.jsonl"),
        ("pi", "large-session.jsonl"),
    ],
)
def test_fixture_summaries_read_like_a_handover(parts):
    path = fixture_path(*parts)
    session = read_session(path)
    plan = prepare_compaction(session.path_entries(), CompactionSettings(force=True), 200_000, file_tools=file_tools())
    out = summarize_offline(next(c for c in plan.calls if c.kind == HISTORY))
    goal = out.split("## Goal\n")[1].split("\n\n")[0]
    done = out.split("### Done\n")[1].split("\n\n")[0]
    assert goal != "(none)" and done != "(none)"
    assert "- [x] Edited `" in done and "- [x] Checks passed: " in done
    assert "- - " not in out
    for line in out.split("## Constraints & Preferences\n")[1].split("\n\n")[0].splitlines():
        assert not line.rstrip().endswith("?")


CLAUDE_WITH_USER_MESSAGES = CLAUDE_PREVIOUS + """4. Errors and fixes:
   - none
5. Problem Solving:
   Moved the retry loop out of the handler.
6. All user messages:
   - "Please migrate the billing service to the new API, keep the old endpoints until Friday."
   - "ok"
   - "Use the sandbox keys only, never the live ones, and log every webhook payload to a file."
   - "/model opus"
7. Pending Tasks:
   - Remove the old endpoints after Friday
"""


def test_previous_claude_summary_carries_the_users_messages_as_rules():
    """#55 item 3: Claude Code's "All user messages" are the user's own words: a later compaction carries each
    that says something (not "ok", not a harness command) beside its pending tasks, even when the span adds
    rules and the budget binds (they were lost with the block of Critical Context)."""
    span = [user(f"Always check the invoice number {n} twice before you send the reminder email.") for n in range(10)]
    span += [user("Now add retries to the webhook handler.")]
    for budget in (2000, 700):
        out = summarize_offline(call(span, max_tokens=budget, previous=CLAUDE_WITH_USER_MESSAGES))
        rules = out.split("## Constraints & Preferences\n")[1].split("\n## ")[0]
        assert "Use the sandbox keys only, never the live ones" in rules, budget
        assert "keep the old endpoints until Friday" in rules, budget
        assert "- ok" not in rules and "/model" not in rules
        assert "Remove the old endpoints after Friday" in out.split("## Next Steps\n")[1], budget
