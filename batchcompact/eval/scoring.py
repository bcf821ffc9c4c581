"""How a probe counts as kept in a compacted context (summary + kept messages, as the agent rebuilds it).

Deterministic and documented (docs/eval.md):
- the context's text is every text block, tool call (name and arguments) and tool result of its
  messages, lower-cased; thinking is left out (providers drop it);
- a `file` probe is kept when the context names the file: its path, its last two parts or its file name
  as a whole name (`cli.py` is not named by `mycli.py`); a `symbol` or `value` when the context holds
  that name; a `command` when the context holds its words in order (`npm run test`);
- a `rule` or `task` is kept when the mean of two shares is at least `KEPT_AT`: its key stems found among
  the context's stems, and its consecutive key-stem pairs found within `NEAR` words of each other
  (`commit` keeps `committing`; "the public API must not change" keeps "never change the public API";
  a long kept tail that merely uses the same words apart does not);
- a kind's recall is kept / probes of that kind (None without probes); `overall` is the mean of the
  recalls of the kinds that have probes (each kind weighs the same, however many probes it has: requests
  do not outvote files).
"""

from __future__ import annotations

from bisect import bisect_left
from dataclasses import dataclass, field

from batchcompact.core.jsontypes import JsonObject
from batchcompact.eval.hindsight import KINDS as HINDSIGHT_KINDS
from batchcompact.eval.hindsight import NameIndex
from batchcompact.eval.probes import RULE, TASK, Probe
from batchcompact.eval.text import FILE, SYMBOL, block_texts, stems

KINDS = HINDSIGHT_KINDS + (RULE, TASK)
NAME_KINDS = (FILE, SYMBOL)  # "names": files and code names together
KEPT_AT = 0.6
NEAR = 5  # a key-stem pair counts when its stems stand at most this many significant words apart


class ContextIndex:
    """A compacted context's names and stems, built once per context."""

    def __init__(self, messages: list[JsonObject], cwd: str | None = None) -> None:
        self.names = NameIndex.of_messages(messages, cwd)
        positions: dict[str, list[int]] = {}
        offset = 0
        for message in messages:
            for text in block_texts(message):
                words = stems(text)
                for index, word in enumerate(words):
                    positions.setdefault(word, []).append(offset + index)
                offset += len(words) + NEAR + 1  # blocks never make a pair across their border
        self.positions = positions

    def near(self, a: str, b: str) -> bool:
        """Whether stems `a` and `b` stand within `NEAR` words of each other somewhere."""
        first, second = self.positions.get(a), self.positions.get(b)
        if not first or not second:
            return False
        if len(first) > len(second):
            first, second = second, first
        for position in first:
            at = bisect_left(second, position - NEAR)
            if at < len(second) and second[at] <= position + NEAR:
                return True
        return False

    def term_score(self, probe: Probe) -> float:
        """Mean of key-stem recall and near-pair recall (0..1)."""
        terms = probe.terms
        if not terms:
            return 0.0
        found = sum(1 for t in terms if t in self.positions) / len(terms)
        pairs = list(zip(terms, terms[1:], strict=False))
        paired = sum(1 for a, b in pairs if self.near(a, b)) / len(pairs) if pairs else found
        return (found + paired) / 2

    def keeps(self, probe: Probe) -> bool:
        if probe.kind in (RULE, TASK):
            return self.term_score(probe) >= KEPT_AT
        if probe.kind == FILE:
            return self.names.has_file(probe.spellings or (probe.text,))
        return self.names.has(probe.kind, probe.text)


@dataclass
class Score:
    """Recall per probe kind (None: no probe of that kind), pooled recalls, and what was missed."""

    recall: dict[str, float | None]
    probes: dict[str, int]
    kept: dict[str, int]
    missed: list[str] = field(default_factory=list)

    def pooled(self, kinds: tuple[str, ...] = KINDS) -> float | None:
        total = sum(self.probes[k] for k in kinds)
        return round(sum(self.kept[k] for k in kinds) / total, 4) if total else None

    @property
    def overall(self) -> float | None:
        return mean_recall(self.recall)


def mean_recall(recall: dict[str, float | None]) -> float | None:
    """The mean of the recalls that exist (kinds with a probe); None when no kind has one."""
    present = [value for value in recall.values() if value is not None]
    return round(sum(present) / len(present), 4) if present else None


def score_context(probes: list[Probe], messages: list[JsonObject], cwd: str | None = None) -> Score:
    """Score `probes` against a compacted context's messages."""
    index = ContextIndex(messages, cwd)
    kept = dict.fromkeys(KINDS, 0)
    total = dict.fromkeys(KINDS, 0)
    missed = []
    for probe in probes:
        total[probe.kind] += 1
        if index.keeps(probe):
            kept[probe.kind] += 1
        else:
            missed.append(probe.label)
    recall = {kind: (round(kept[kind] / total[kind], 4) if total[kind] else None) for kind in KINDS}
    return Score(recall, total, kept, missed)
