"""Summary prompts, in this project's own words, asking for the exact headings pi uses (reference 5).

The user text layout (`<conversation>` block, `<previous-summary>` block, "Additional focus") and the
headings are what pi-compatible agents expect to find in a checkpoint; the instructions around them
are ours.
"""

from __future__ import annotations

SUMMARIZATION_SYSTEM_PROMPT = (
    "You are a context summarization assistant: you read a conversation between a user and an AI coding "
    "assistant and write a structured summary of it in exactly the format you are given. "
    "Do not continue the conversation, do not answer any question in it, and output nothing but the summary."
)

_SECTIONS = """## Goal
[What the user is trying to achieve. Several goals may be listed.]

## Constraints & Preferences
- [Requirements, conventions and preferences the user stated, or "(none)"]

## Progress
### Done
- [x] [Finished work, with file paths]

### In Progress
- [ ] [Work that was under way]

### Blocked
- [Problems that stop progress, if any]

## Key Decisions
- **[Decision]**: [Why it was made]

## Next Steps
1. [What should happen next, in order]

## Critical Context
- [Data, values, error messages and references needed to go on, or "(none)"]"""

SUMMARY_PROMPT = f"""The messages above are a conversation that has to be condensed into a context checkpoint. Another model will continue the work from this checkpoint alone, so it must hold everything needed to go on.

Write the checkpoint in exactly this format:

{_SECTIONS}

Be concise. Keep exact file paths, function names, commands and error messages."""

UPDATE_SUMMARY_PROMPT = f"""The messages above are new conversation that follows an earlier checkpoint, given in <previous-summary>. Update that checkpoint with them.

Rules:
- Keep every piece of information from the previous summary unless it has clearly stopped mattering.
- Add the new progress, decisions and context from the new messages.
- Move items from "In Progress" to "Done" when they were finished.
- Rewrite "Next Steps" to match where the work stands now.
- Keep exact file paths, function names, commands and error messages.

Write the updated checkpoint in exactly this format (keep what was there and add to it):

{_SECTIONS}

Be concise."""

TURN_PREFIX_PROMPT = """The messages above are the PREFIX of a single turn that was too large to keep whole. The SUFFIX of that turn (the most recent work) is kept verbatim and follows this summary. Summarize the prefix so that the suffix makes sense on its own.

Write exactly this format:

## Original Request
[What the user asked for in this turn]

## Early Progress
- [What was done and learned in the prefix: files, commands, results]

## Context for Suffix
- [What the kept suffix needs to be understood: state, values, open questions]

Be brief."""

BRANCH_SUMMARY_PROMPT = """The messages above are a branch of a conversation that the user left to go back to an earlier point. Summarize that branch so its lessons are not lost when the user continues elsewhere.

Write exactly this format:

## Goal
[What the user was trying to achieve on this branch]

## Constraints & Preferences
- [Requirements and preferences stated, or "(none)"]

## Progress
### Done
- [x] [Finished work, with file paths]

### In Progress
- [ ] [Work that was under way]

### Blocked
- [Problems that stopped progress, if any]

## Key Decisions
- **[Decision]**: [Why it was made]

## Next Steps
1. [What would have come next]

Be concise. Keep exact file paths, function names and error messages."""

BRANCH_SUMMARY_PREAMBLE = (
    "The user explored a different conversation branch before returning here.\nSummary of that exploration:\n\n"
)

# The headings of oh-my-pi's handoff document (pi-agent-core compaction/prompts/handoff-document.md); the
# instructions are ours.
_HANDOFF_SECTIONS = """## Goal
[What the user is trying to accomplish]

## Constraints & Preferences
- [Constraints, preferences and requirements the user stated, or "(none)"]

## Progress
### Done
- [x] [Finished work, with file paths and specifics]

### In Progress
- [ ] [Work under way, if any]

### Pending
- [ ] [Tasks mentioned but not started]

## Key Decisions
- **[Decision]**: [Why it was made]

## Critical Context
- [Code, file paths, function and type names, commands, error messages and data needed to go on]

## Next Steps
1. [What the next agent should do first, then after]"""

HANDOFF_PROMPT = f"""The messages above are a whole working session between a user and an AI coding assistant. The session is closed: another instance of the assistant will carry the work on in a new session that holds nothing but the document you write now, with no access to this conversation.

Write that handoff document. Record the exact technical state, not abstractions: file paths, symbol names, commands that were run, test results and failures observed, decisions taken, and partial work the next step depends on. Address the successor directly, in the imperative ("Run X", "Fix Y"). Do not mention the handoff itself as progress or as a next step.

Output only the document, in exactly this structure:

{_HANDOFF_SECTIONS}"""
HANDOFF_HEADINGS = ("## Goal", "## Constraints & Preferences", "## Progress", "### Done", "### In Progress",
                    "### Pending", "## Key Decisions", "## Critical Context", "## Next Steps")


def build_handoff_prompt(conversation: str, previous_summary: str | None = None,
                         instructions: str | None = None, budget: int | None = None) -> str:
    """The handoff prompt: the whole conversation (after an earlier summary, when there is one)."""
    earlier = f"<previous-summary>\n{previous_summary}\n</previous-summary>\n\n" if previous_summary else ""
    return _conversation(conversation) + earlier + HANDOFF_PROMPT + budget_line(budget) + _focus(instructions)


SPLIT_TURN_SEPARATOR = "\n\n---\n\n**Turn Context (split turn):**\n\n"
NO_PRIOR_HISTORY = "No prior history."

HISTORY_HEADINGS = (
    "## Goal",
    "## Constraints & Preferences",
    "## Progress",
    "### Done",
    "### In Progress",
    "### Blocked",
    "## Key Decisions",
    "## Next Steps",
    "## Critical Context",
)
TURN_PREFIX_HEADINGS = ("## Original Request", "## Early Progress", "## Context for Suffix")
BRANCH_HEADINGS = HISTORY_HEADINGS[:-1]


def _conversation(conversation: str) -> str:
    return f"<conversation>\n{conversation}\n</conversation>\n\n"


def _focus(instructions: str | None) -> str:
    return f"\n\nAdditional focus: {instructions}" if instructions else ""


def budget_line(budget: int | None) -> str:
    """What a model is told of the summary budget (its max_tokens is the same number)."""
    if not budget:
        return ""
    return (f"\n\nThe whole summary must fit in {budget:,} tokens (about {budget * 3 // 4:,} words). When it cannot "
            "hold everything, keep the open requests, what is unfinished, the next steps and exact names first.")


def build_summary_prompt(
    conversation: str, previous_summary: str | None = None, instructions: str | None = None,
    budget: int | None = None,
) -> str:
    """The initial prompt, or the update prompt when a previous summary exists; `budget`: the summary's
    tokens (--summary-budget), said to the model."""
    if previous_summary:
        return (
            _conversation(conversation)
            + f"<previous-summary>\n{previous_summary}\n</previous-summary>\n\n"
            + UPDATE_SUMMARY_PROMPT
            + budget_line(budget)
            + _focus(instructions)
        )
    return _conversation(conversation) + SUMMARY_PROMPT + budget_line(budget) + _focus(instructions)


def build_turn_prefix_prompt(conversation: str, instructions: str | None = None, budget: int | None = None) -> str:
    """The turn-prefix prompt. Unlike pi (issue #9348) custom instructions reach it too."""
    return _conversation(conversation) + TURN_PREFIX_PROMPT + budget_line(budget) + _focus(instructions)


def build_branch_summary_prompt(
    conversation: str, instructions: str | None = None, replace_instructions: bool = False,
    budget: int | None = None,
) -> str:
    if instructions and replace_instructions:
        return _conversation(conversation) + instructions
    return _conversation(conversation) + BRANCH_SUMMARY_PROMPT + budget_line(budget) + _focus(instructions)


def format_file_operations(read_files: list[str], modified_files: list[str]) -> str:
    """The `<read-files>` / `<modified-files>` tags appended to a summary, as pi writes them ("" when both are
    empty). A planned compaction's tags are `core/filetags.file_tags` (relative, grouped, bounded)."""
    sections = []
    if read_files:
        sections.append("<read-files>\n" + "\n".join(read_files) + "\n</read-files>")
    if modified_files:
        sections.append("<modified-files>\n" + "\n".join(modified_files) + "\n</modified-files>")
    return "\n\n" + "\n\n".join(sections) if sections else ""
