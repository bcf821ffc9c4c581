"""What the built-in summarizer reads in the user's and the agent's own words: the user's requests (not
injected context, tool output or a bare slash command), the rules they state (docs/summaries.md, "Rules: the
user's, once, the newest standing"), acknowledgements, the agent's decisions and the work it announces.

Pure functions over one message's text, clipped before it is split.
"""

from __future__ import annotations

import re
from typing import Any

from batchcompact.summarize.builtin_text import (
    BULLET,
    SCAN_CHARS,
    SENTENCE,
    clean_item,
    message_text,
)
from batchcompact.summarize.handover import ONE_WORD_REPLY, QUESTION_WORDS

_RULE = re.compile(
    r"\b(?:must|mustn't|never|always|don't|do not|should|shouldn't|prefer|make sure|ensure|avoid|only use|"
    r"please use|use only|keep|no need to|instead|from now on|every time|each time|whenever)\b"
    r"|\buse\b[^.!?\n]{1,60}?,?\s+not\b",  # "use X, not Y": which thing to use
    re.IGNORECASE,
)
_QUESTION_START = re.compile(rf"^(?:wait\b|hmm\b|so\b|and\b|but\b)?[,\s]*(?:{QUESTION_WORDS})\b", re.IGNORECASE)
# An auxiliary that opens an imperative, not a question: "Do not change the public API.", "Do keep the old
# name.", "Have the tests run first always." (no subject after it: a question asks "do you…", "have we…").
# Only for a sentence without a '?' (rule_sentences skips those first).
_SUBJECT = r"(?:you|we|i|it|they|he|she|this|that|these|those|there|anyone|anybody|someone|everything)\b"
_IMPERATIVE_AUX = re.compile(rf"^(?:do|have)\s+(?!{_SUBJECT})[a-z]", re.IGNORECASE)
_DECISION = re.compile(
    r"\b(?:decided|decision|instead of|switch(?:ed|ing)? to|because|rather than|the fix is|chose|"
    r"going with|the root cause|the cause is)\b",
    re.IGNORECASE,
)
_INJECTED_PREFIXES = (
    "<environment_context",
    "<user_instructions",
    "<permissions instructions",
    "<local-command-",
    "<command-message",
    "<system-reminder",
    "<user-prompt-submit-hook",
    "<turn_aborted",
    "<task-notification",
    "<subagent_notification",
    "# AGENTS.md instructions",
    "Caveat: The messages below were generated",
    "[Request interrupted by user",
    "This session is being continued from a previous conversation",
    "The conversation history before this point",
    "The following is a summary of a branch",
)
_SYSTEM_REMINDER = re.compile(r"<system-reminder>.*?</system-reminder>", re.DOTALL)
_COMMAND_TAGS = re.compile(
    r"<command-name>\s*(\S+)\s*</command-name>.*?(?:<command-args>(.*?)</command-args>)?", re.DOTALL
)
RAN = re.compile(r"^Ran `([^`]*)`")  # pi's `!command`, converted to user text
_SELF = re.compile(
    r"^(?:ok(?:ay)?,?\s+|so,?\s+|and\s+)?(?:i|i'm|i've|let me|let's|we|we're|maybe|perhaps)\b", re.I
)
_SELF_RULE = re.compile(
    r"\b(?:want|prefer|need|'d like|would like|never|always|don't want|do not want)\b", re.I
)
ANNOUNCE = re.compile(
    r"^(?:now\s+)?(?:let me|let's|i'll|i will|next,? i'll|next,? i will|now i'll)\s+(.+?)[:.]?$", re.I
)


def user_request(message: dict[str, Any]) -> str | None:
    """The user's own words in a user message; None for injected context, tool output and commands."""
    if message.get("agentRole") or message.get("role") != "user":
        return None
    text = message_text(message.get("content"))[: SCAN_CHARS * 4]
    if "<system-reminder>" in text:
        text = _SYSTEM_REMINDER.sub("", text)
    command = _COMMAND_TAGS.search(text)
    if command and text.lstrip().startswith("<command-"):
        args = (command.group(2) or "").strip()
        return f"{command.group(1)} {args}".strip() if args else None
    stripped = text.strip()
    if not stripped or stripped.startswith(_INJECTED_PREFIXES):
        return None
    if re.fullmatch(r"/\S+", stripped):  # a bare slash command such as /mode
        return None
    return stripped


def is_substantive(text: str) -> bool:
    return not ONE_WORD_REPLY.match(text) and len(text) >= 8


def rule_sentences(text: str) -> list[str]:
    """Statements of a rule or preference in a user's text, as written; questions never are."""
    out = []
    for sentence in SENTENCE.split(text[:SCAN_CHARS]):
        sentence = BULLET.sub("", sentence.strip())
        if not (10 <= len(sentence) <= 300) or sentence.endswith("?") or "?" in sentence[-3:]:
            continue
        if (_QUESTION_START.match(sentence) and not _IMPERATIVE_AUX.match(sentence)) or not _RULE.search(sentence):
            continue
        if _SELF.match(sentence) and not _SELF_RULE.search(sentence):  # "i don't think…", "let me try…"
            continue
        out.append(sentence)
    return out


def decisions(text: str) -> list[str]:
    out = []
    for sentence in SENTENCE.split(text[:SCAN_CHARS]):
        sentence = sentence.strip()
        if 20 < len(sentence) < 300 and not sentence.endswith((":", "?")) and _DECISION.search(sentence):
            out.append(clean_item(sentence))
    return out
