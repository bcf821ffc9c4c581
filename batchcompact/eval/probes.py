"""Probes: what an agent resuming after a compaction needs from the span the compaction replaced.

Two families, both written for eval alone (nothing here imports `batchcompact/summarize/`, so the
summarizers measured cannot share the rules; tests/test_architecture.py checks it):
- **hindsight** (`hindsight.py`, primary): what the agent's following turns used that only the replaced
  history held: files, code names, commands, values;
- **lexical** (this module): every rule the user stated (`rule`) and every substantive request (`task`),
  from the user's own words in the span; filler ("continue", "ok", pasted repetition) is no request.

Invariants: deterministic (the order of appearance in the span); linear in the span's size.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any

from batchcompact.eval.text import GO_ON, MAX_CHARS, significant_words, stem

RULE, TASK = "rule", "task"
MAX_TERMS = 12  # a probe's key terms: the first this many distinct stems (a long request states its ask first)
PROBE_CHARS = 300  # a probe's text as shown in `missed`

_SENTENCE = re.compile(r"(?<=[.!?])\s+|\n+")
_BULLET = re.compile(r"^(?:[-*•+]\s+|\d+[.)]\s+)+")
_RULE_WORDS = re.compile(
    r"\b(?:must(?:n't)?|never|always|don't|do not|should(?:n't)?|prefer|make sure|avoid|only use|use only|"
    r"keep|instead of|no need to)\b", re.IGNORECASE)
_ASKS = re.compile(
    r"^(?:wait\b|hmm\b|so\b|and\b|but\b)?[,\s]*(?:do|does|did|can|could|would|will|is|are|was|were|shall|what|why|"
    r"how|where|when|which|who|have|has)\b", re.IGNORECASE)
_FIRST_PERSON = re.compile(r"^(?:ok(?:ay)?,?\s+|so,?\s+)?(?:i|i'm|i've|let me|let's|we|maybe|perhaps)\b", re.I)
_WANTS = re.compile(r"\b(?:want|prefer|need|'d like|would like|never|always)\b", re.I)
# What an agent puts in the user's turn that the user did not write: tags, its own notes, tool output.
_INJECTED = re.compile(
    r"^\s*(?:<[a-z][\w-]*[\s>]|#\s*AGENTS\.md|Caveat: |\[Request interrupted|This session is being continued|"
    r"The conversation history before this point|The following is a summary|Ran `|\[REDACTED_)", re.IGNORECASE)
_REMINDER = re.compile(r"<system-reminder>.*?</system-reminder>", re.DOTALL)


@dataclass(frozen=True)
class Probe:
    """One thing the compacted context should still hold, with what counts as holding it."""

    kind: str
    text: str  # as a person reads it: the path, the name, the command, the rule, the request
    terms: tuple[str, ...] = ()  # key stems (rule, task)
    spellings: tuple[str, ...] = ()  # how a context may name it (file: path, last two parts, file name)

    @property
    def label(self) -> str:
        return f"{self.kind}: {self.text}"


def key_terms(text: str) -> tuple[str, ...]:
    """The first `MAX_TERMS` distinct stems of the significant words of `text`."""
    return tuple(dict.fromkeys(stem(w) for w in significant_words(text)))[:MAX_TERMS]


def user_words(message: dict[str, Any]) -> str | None:
    """The user's own words in a message; None for what the agent injected (context, notes, tool output)."""
    if message.get("role") != "user" or message.get("agentRole"):
        return None
    content = message.get("content")
    if isinstance(content, str):
        text = content
    else:
        text = "\n".join(str(b.get("text") or "") for b in content or () if isinstance(b, dict)
                         and b.get("type") == "text")
    text = _REMINDER.sub("", text[:MAX_CHARS]).strip()
    if not text or _INJECTED.match(text) or re.fullmatch(r"/\S+", text):
        return None
    return text


def is_filler(text: str) -> bool:
    """A reply that asks for nothing new: fewer than 3 distinct significant words after its acknowledgement
    ("ok", "continue", "thanks"), or pasted repetition (a quarter or fewer of its words distinct). "Good,
    now add retries to the client" asks for something."""
    words = significant_words(text)
    first = re.match(r"\W*([a-z]+)\W*(.*)", text.lower(), re.DOTALL)
    rest = significant_words(first.group(2)) if first and first.group(1) in GO_ON else words
    if len(set(rest)) < 3:
        return True
    return len(words) >= 20 and len(set(words)) <= len(words) // 4


def rule_sentences(text: str) -> list[str]:
    """Statements of a rule or preference in the user's words; questions never are."""
    out = []
    for sentence in _SENTENCE.split(text[:4000]):
        sentence = _BULLET.sub("", sentence.strip())
        if not 10 <= len(sentence) <= PROBE_CHARS or sentence.endswith("?") or _ASKS.match(sentence):
            continue
        if not _RULE_WORDS.search(sentence):
            continue
        if _FIRST_PERSON.match(sentence) and not _WANTS.search(sentence):  # "I don't think…", "let me try…"
            continue
        out.append(sentence)
    return out


def lexical_probes(messages: list[dict[str, Any]]) -> list[Probe]:
    """Every rule the user stated and every substantive request in the span, in order (rules first)."""
    rules: dict[tuple[str, ...], Probe] = {}
    tasks: dict[tuple[str, ...], Probe] = {}
    for message in messages:
        text = user_words(message)
        if text is None:
            continue
        stated = rule_sentences(text)  # a short rule ("Keep the tests green.") is a rule, never filler
        for sentence in stated:
            _add(rules, RULE, sentence)
        if is_filler(text):
            continue
        rest = text
        for sentence in stated:
            rest = rest.replace(sentence, " ")
        if len(set(significant_words(rest))) >= 3:
            _add(tasks, TASK, rest)
    return list(rules.values()) + list(tasks.values())


def _add(probes: dict[tuple[str, ...], Probe], kind: str, text: str) -> None:
    text = " ".join(text[: PROBE_CHARS * 4].split())
    shown = text if len(text) <= PROBE_CHARS else text[: PROBE_CHARS - 1].rstrip() + "…"
    terms = key_terms(text)
    if terms and terms not in probes:
        probes[terms] = Probe(kind, shown, terms=terms)
