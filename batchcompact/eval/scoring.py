"""How a probe counts as kept in a compacted context (summary + kept messages, as the agent rebuilds it).

Deterministic and documented (docs/eval.md):
- the context's text is every text block, tool call (name and arguments) and tool result of its
  messages, lower-cased; thinking is left out (providers drop it);
- an `artifact` probe is kept when one of its path spellings (as written, relative to the session's cwd,
  its last two parts, its file name) occurs in that text as a whole name: not inside a longer name;
- any other probe is kept when its key terms are there: the mean of the share of its key terms found
  among the context's words and the share of its consecutive key-term pairs found as consecutive words of
  the context is at least `KEPT_AT` (pairs reward a summary that keeps "public API" together, and keep a
  long kept tail that merely uses the same words apart from counting);
- a kind's recall is kept probes / probes of that kind (None without probes); `overall` is the mean of
  the recalls that are not None.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass, field
from typing import Any

from batchcompact.eval.probes import ARTIFACT, KINDS, MAX_TERMS, Probe, significant_words

KEPT_AT = 0.5


def context_text(messages: list[dict[str, Any]]) -> str:
    """The words a model reads in `messages` (LLM messages in pi's shape), lower-cased."""
    parts: list[str] = []
    for message in messages:
        content = message.get("content")
        if isinstance(content, str):
            parts.append(content)
            continue
        for block in content or ():
            if not isinstance(block, dict):
                continue
            kind = block.get("type")
            if kind == "text":
                parts.append(str(block.get("text") or ""))
            elif kind == "toolCall":
                arguments = block.get("arguments")
                parts.append(f"{block.get('name')} {json.dumps(arguments, ensure_ascii=False, sort_keys=True)}")
    return "\n".join(parts).lower()


class ContextIndex:
    """A compacted context's text, its words and its consecutive word pairs, built once per context."""

    def __init__(self, messages: list[dict[str, Any]]) -> None:
        self.text = context_text(messages)
        words = significant_words(self.text)
        self.words = set(words)
        self.pairs = set(zip(words, words[1:], strict=False))

    def has_path(self, spellings: tuple[str, ...]) -> bool:
        return any(
            re.search(r"(?<![\w.-])" + re.escape(spelling) + r"(?![\w-])", self.text) for spelling in spellings
        )

    def term_score(self, probe: Probe) -> float:
        """Mean of key-term recall and key-pair recall (0..1)."""
        terms = probe.terms
        if not terms:
            return 0.0
        words = _head(significant_words(probe.text))
        pairs = list(dict.fromkeys(zip(words, words[1:], strict=False)))
        found = sum(1 for t in terms if t in self.words) / len(terms)
        paired = sum(1 for p in pairs if p in self.pairs) / len(pairs) if pairs else found
        return (found + paired) / 2


def _head(words: list[str]) -> list[str]:
    """The words of a probe up to its `MAX_TERMS`-th distinct one (the span its key terms come from)."""
    seen: set[str] = set()
    for index, word in enumerate(words):
        seen.add(word)
        if len(seen) > MAX_TERMS:
            return words[:index]
    return words


def is_kept(probe: Probe, index: ContextIndex) -> bool:
    if probe.kind == ARTIFACT:
        return index.has_path(probe.paths)
    return index.term_score(probe) >= KEPT_AT


@dataclass
class Score:
    """Recall per probe kind (None: the span had no probe of that kind), their mean, and what was missed."""

    recall: dict[str, float | None]
    probes: dict[str, int]
    missed: list[str] = field(default_factory=list)

    @property
    def overall(self) -> float | None:
        values = [v for v in self.recall.values() if v is not None]
        return sum(values) / len(values) if values else None


def score_context(probes: list[Probe], messages: list[dict[str, Any]]) -> Score:
    """Score `probes` against a compacted context's messages."""
    index = ContextIndex(messages)
    kept = dict.fromkeys(KINDS, 0)
    total = dict.fromkeys(KINDS, 0)
    missed = []
    for probe in probes:
        total[probe.kind] += 1
        if is_kept(probe, index):
            kept[probe.kind] += 1
        else:
            missed.append(probe.label)
    recall = {kind: (round(kept[kind] / total[kind], 4) if total[kind] else None) for kind in KINDS}
    return Score(recall, total, missed)
