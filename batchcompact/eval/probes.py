"""Probes: what an agent resuming after a compaction needs from the span the compaction replaced.

Two families, both written for eval alone (nothing here imports `batchcompact/summarize/`, so the
summarizers measured cannot share the rules; tests/test_architecture.py checks it):
- **hindsight** (`hindsight.py`, primary): what the agent's following turns used that only the replaced
  history held: files, code names, commands, values;
- **lexical** (this module), from the user's own words in the span: every rule the user stated (`rule`),
  and the requests a reader needs after the cut (`task`): the span's first, the one open at the cut, and
  those the next turns continue; filler ("continue", "ok", pasted repetition) is no request, and what the
  kept context already holds is no probe.
Each rule is written out in docs/eval.md ("Probes"), and this code is written from that text.

Invariants: deterministic (the order of appearance in the span); linear in the span's size.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass
from typing import TypeAlias

from batchcompact.core.jsontypes import JsonObject
from batchcompact.eval.text import GO_ON, MAX_CHARS, significant_words, stem

RULE, TASK = "rule", "task"
MAX_TERMS = 12  # a probe's key terms: the first this many distinct stems (a long request states its ask first)
PROBE_CHARS = 300  # a probe's text as shown in `missed`

_SENTENCE = re.compile(r"(?<=[.!?])\s+|\n+")
_BULLET = re.compile(r"^(?:[-*•+>]\s+|\d+[.)]\s+)+")
# docs/eval.md, "a rule": a word that binds how the work is done from then on.
_CONSTRAINT = re.compile(
    r"\b(?:never|always|don'?t|do not|must(?:n'?t| not)?|should(?:n'?t| not)?|make sure|ensure|avoid|prefer|"
    r"instead of|no need to|from now on|every time|each time|whenever|only (?:use|ever|touch|change|edit)|"
    r"use only|stop \w+ing)\b", re.IGNORECASE)
_QUESTION = re.compile(
    r"^(?:\W*(?:ok(?:ay)?|so|and|but|wait|hmm|also|then)\b)?[\s,]*(?:what|why|how|where|when|which|who|whose|"
    r"do|does|did|can|could|would|will|is|are|was|were|shall|have|has|should|may|might)\b", re.IGNORECASE)
_MUSING = re.compile(r"^(?:\W*(?:ok(?:ay)?|so|hmm|well)\b)?[\s,]*(?:i|i'm|i've|i'll|let me|let's|we|we're|maybe|"
                     r"perhaps|probably|it seems|seems)\b", re.IGNORECASE)
_WANT = re.compile(r"\b(?:want|prefer|need|'d like|would like|never|always|from now on)\b", re.IGNORECASE)
# docs/eval.md, "the user's own words": what an agent puts in the user's turn is not.
_INJECTED = re.compile(
    r"^\s*(?:<[a-z][\w-]*[\s>/]|#\s*(?:AGENTS|CLAUDE)\.md|Caveat: |\[Request interrupted|"
    r"This session is being continued|The conversation history before this point|The following is a summary|"
    r"Ran `|\[REDACTED_|Base directory for this skill)", re.IGNORECASE)
_TAGGED = re.compile(r"<(system-reminder|command-[\w-]+|local-command-[\w-]+|ide_[\w-]+)>.*?</\1>", re.DOTALL)
CONTINUED_AT = 0.6  # a request the next turns continue: this share of its key stems in their own words


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


Keeps: TypeAlias = Callable[[Probe], bool]  # whether the kept context alone holds a probe (scoring.ContextIndex)


def key_terms(text: str) -> tuple[str, ...]:
    """The first `MAX_TERMS` distinct stems of the significant words of `text`."""
    return tuple(dict.fromkeys(stem(w) for w in significant_words(text)))[:MAX_TERMS]


def user_words(message: JsonObject) -> str | None:
    """What the person typed in a message (docs/eval.md, "the user's own words"); None for a message the
    agent wrote or injected (context files, reminders, command output, summaries, a lone slash command)."""
    if message.get("role") != "user" or message.get("agentRole"):
        return None
    content = message.get("content")
    if isinstance(content, str):
        blocks = [content]
    else:
        blocks = [str(b.get("text") or "") for b in content or () if isinstance(b, dict) and b.get("type") == "text"]
    texts = []
    for block in blocks:
        block = _TAGGED.sub("", block[:MAX_CHARS]).strip()
        if block and not _INJECTED.match(block):
            texts.append(block)
    text = "\n".join(texts).strip()
    if not text or re.fullmatch(r"/\S+(?:\s+\S+)?", text):
        return None
    return text


def is_filler(text: str) -> bool:
    """Asks for nothing (docs/eval.md): an acknowledgement ("ok", "continue", "thanks") with fewer than 3
    distinct significant words besides it, fewer than 3 in all, or a pasted repeat (20+ words, a quarter or
    fewer distinct)."""
    words = significant_words(text)
    first = re.match(r"\W*([a-z]+)\W*(.*)", text.lower(), re.DOTALL)
    rest = significant_words(first.group(2)) if first and first.group(1) in GO_ON else words
    if len(set(rest)) < 3:
        return True
    return len(words) >= 20 and len(set(words)) <= len(words) // 4


def rule_sentences(text: str) -> list[str]:
    """The sentences of `text` that state a rule (docs/eval.md, "a rule"): a statement, not a question or the
    user thinking aloud, with a word that binds the work from then on, and 3+ significant words."""
    out = []
    for sentence in _SENTENCE.split(text[:4000]):
        sentence = _BULLET.sub("", sentence.strip())
        if not 10 <= len(sentence) <= PROBE_CHARS or sentence.rstrip().endswith("?") or _QUESTION.match(sentence):
            continue
        if not _CONSTRAINT.search(sentence) or len(set(significant_words(sentence))) < 2:
            continue
        if _MUSING.match(sentence) and not _WANT.search(sentence):
            continue
        out.append(sentence)
    return out


def requests(messages: list[JsonObject]) -> tuple[list[str], list[str]]:
    """The span's rules and its requests (each a user message less its rule sentences, not filler), in order."""
    rules: list[str] = []
    asks: list[str] = []
    for message in messages:
        text = user_words(message)
        if text is None:
            continue
        stated = rule_sentences(text)
        rules += stated
        if is_filler(text):
            continue
        rest = text
        for sentence in stated:
            rest = rest.replace(sentence, " ")
        if len(set(significant_words(rest))) >= 3:
            asks.append(rest)
    return rules, asks


def lexical_probes(replaced: list[JsonObject], kept: list[JsonObject] | None = None,
                   future: list[JsonObject] | None = None, keeps: Keeps | None = None) -> list[Probe]:
    """The rules and requests a reader needs after the cut (docs/eval.md): every rule the user stated in the
    span; of the requests, the span's first (the goal), its last when the kept messages hold no later one
    (open at the cut), and every one the next turns continue (`future`: at least `CONTINUED_AT` of its key
    stems in those turns' own words). `keeps(probe)`: whether the kept context alone holds a probe (then it
    is no probe)."""
    rules, asks = requests(replaced)
    chosen: list[int] = []
    if asks:
        chosen.append(0)
        later = requests(kept or [])[1]
        if not later:
            chosen.append(len(asks) - 1)
    if future:
        words: set[str] = set()
        for message in future:
            if message.get("role") == "assistant":
                for block in message.get("content") or ():
                    if isinstance(block, dict) and block.get("type") == "text":
                        words.update(stem(w) for w in significant_words(str(block.get("text") or "")))
                    elif isinstance(block, dict) and block.get("type") == "toolCall":
                        words.update(stem(w) for w in significant_words(str(block.get("arguments") or "")))
            else:
                said = user_words(message)
                if said:
                    words.update(stem(w) for w in significant_words(said))
        for index, ask in enumerate(asks):
            terms = key_terms(ask)
            if len(terms) >= 3 and sum(t in words for t in terms) >= CONTINUED_AT * len(terms):
                chosen.append(index)
    found: dict[tuple[str, ...], Probe] = {}
    for sentence in rules:
        _add(found, RULE, sentence, keeps)
    for index in sorted(set(chosen)):
        _add(found, TASK, asks[index], keeps)
    return list(found.values())


def _add(probes: dict[tuple[str, ...], Probe], kind: str, text: str, keeps: Keeps | None) -> None:
    text = " ".join(text[: PROBE_CHARS * 4].split())
    shown = text if len(text) <= PROBE_CHARS else text[: PROBE_CHARS - 1].rstrip() + "…"
    terms = key_terms(text)
    if not terms or terms in probes:
        return
    probe = Probe(kind, shown, terms=terms)
    if keeps is None or not keeps(probe):
        probes[terms] = probe
