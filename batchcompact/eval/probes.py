"""Probes: what an agent resuming after a compaction needs from the span the compaction replaced.

Derived from the replaced messages alone, never from a summary, so every summarizer is asked the same
questions (Factory's probe-based evaluation of context compression, Dec 2025). Four kinds:
- `artifact`: each file created, modified, moved or deleted by a tool call that did not fail (each
  agent's file tools and Codex `apply_patch`: the agents' `tools` tables in `batchcompact/agents/`, read
  through `summarize/builtin_facts.py` as the built-in summarizer reads them); a moved file is probed by
  its new name;
- `error`: each failure not resolved later in the span (a command or check that failed and was not run
  successfully again, a file tool that failed on a path and did not succeed on it later, a model error
  the agent did not get past);
- `instruction`: each rule or preference the user stated (sentences with must/never/always/don't/
  prefer/...; questions never are);
- `task`: the standing request (the user's first substantive request) and the latest one before the cut.

Invariants: deterministic (the order of appearance in the span); linear in the span's size.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from batchcompact.summarize.builtin_facts import clip, extract_facts

ARTIFACT, ERROR, INSTRUCTION, TASK = "artifact", "error", "instruction", "task"
KINDS = (ARTIFACT, ERROR, INSTRUCTION, TASK)
MAX_TERMS = 12  # a probe's key terms: the first this many significant words (a long request states its ask first)

_WORD = re.compile(r"[a-z0-9_]+")
# Words that say nothing about which rule, task or error it was.
STOPWORDS = frozenset(
    """
    the and for are but not you your yours all any can had has have her his him its our out was were will
    with this that these those then than there their them they what when where which who whom why how
    into onto from about above after again against before below between both during each few more most
    other some such only own same too very just now also here over under until while because would could
    should shall might must may did does doing done don didn doesn isn aren wasn weren won wouldn shouldn
    couldn mustn let lets please thanks thank okay yes sure one two via use used using make made get got
    want need like well way things thing something anything everything nothing still even much many
    able instead rather always never keep avoid prefer sure without file files code error errors failed
    fails failure exit run ran running command line lines first last new old see look let try
    """.split()
)


@dataclass(frozen=True)
class Probe:
    """One thing the compacted context should still hold, with what counts as holding it."""

    kind: str
    text: str  # the probe as a person reads it: the path, the failure, the rule, the request
    terms: tuple[str, ...] = ()  # key terms (error, instruction, task)
    paths: tuple[str, ...] = ()  # path spellings, most specific first (artifact)

    @property
    def label(self) -> str:
        return f"{self.kind}: {self.text}"


def significant_words(text: str) -> list[str]:
    """Lower-case words of 3+ characters that are not numbers or stop words, in order (repeats kept)."""
    return [w for w in _WORD.findall(text.lower()) if len(w) >= 3 and not w.isdigit() and w not in STOPWORDS]


def key_terms(text: str) -> tuple[str, ...]:
    """The first `MAX_TERMS` distinct significant words of `text`."""
    return tuple(dict.fromkeys(significant_words(text)))[:MAX_TERMS]


def path_spellings(path: str, cwd: str | None) -> tuple[str, ...]:
    """A path as a context may name it: as written, relative to the session's cwd, its last two parts,
    its file name (lower case, no leading `./`, longest first, no repeats)."""
    path = path.strip().lower().removeprefix("./")
    out = [path]
    if cwd:
        base = cwd.lower().rstrip("/") + "/"
        if path.startswith(base):
            out.append(path[len(base) :])
    parts = [p for p in path.split("/") if p]
    if len(parts) >= 2:
        out.append("/".join(parts[-2:]))
    if parts:
        out.append(parts[-1])
    return tuple(dict.fromkeys(p for p in out if p))


def derive_probes(messages: list[dict], cwd: str | None = None) -> list[Probe]:
    """The probes of a replaced span (pi-shaped LLM messages), artifacts first, then errors, rules, tasks."""
    facts = extract_facts(messages)
    probes: list[Probe] = []
    for path, change in facts.changes.items():
        target = path.split(" → ")[-1].strip()
        spellings = path_spellings(target, cwd)
        if spellings:
            probes.append(Probe(ARTIFACT, f"{change.op} {clip(target, 160)}", paths=spellings))
    for description in facts.blocked.values():
        _add(probes, ERROR, description)
    for rule in facts.constraints.list():
        _add(probes, INSTRUCTION, rule)
    requests = facts.requests
    if requests:
        _add(probes, TASK, requests[0])
        if requests[-1] != requests[0]:
            _add(probes, TASK, requests[-1])
    return probes


def _add(probes: list[Probe], kind: str, text: str) -> None:
    text = clip(text, 300)
    terms = key_terms(text)
    if terms:  # nothing specific to look for: not a probe
        probes.append(Probe(kind, text, terms=terms))
