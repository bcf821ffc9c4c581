"""Hindsight probes: what the agent's following turns used that only the replaced history held.

For a compaction with turns after it (one the agent recorded, or a cut `eval --cut-at` places inside an
archived session), the agent's next `FUTURE_TURNS` model turns are read in order. Each file path, code
name, command and value in the arguments of their tool calls is a probe when
- the replaced span names it (anywhere: the user's words, the agent's, tool calls, tool results),
- the kept context does not (the messages kept after the summary, and the texts the agent re-adds),
- and those turns had not shown it yet (the user's words and tool results since the cut, read in order):
  the agent used it from memory, which after the compaction is the summary.
A summarizer sees only the span, never these turns, so it cannot aim at the probes; it can only keep what
matters. Rules: docs/eval.md. Written for eval alone: nothing here imports `batchcompact/summarize/`.
"""

from __future__ import annotations

from collections.abc import Iterable

from batchcompact.core.jsontypes import JsonObject
from batchcompact.eval.probes import Probe
from batchcompact.eval.text import (
    COMMAND,
    FILE,
    PATH_KEYS,
    SYMBOL,
    VALUE,
    WELL_KNOWN,
    block_texts,
    call_strings,
    command_heads,
    file_name,
    is_command_key,
    names,
    normalize_phrase,
    path_argument,
    path_spellings,
    relative,
)

KINDS = (FILE, SYMBOL, COMMAND, VALUE)
FUTURE_TURNS = 20  # the agent's model turns after the cut that are read for what they used


class NameIndex:
    """The names a text holds: files by every spelling, code names, values, and its words (for commands, and
    for files whose name has no extension)."""

    def __init__(self, cwd: str | None = None, *, phrases: bool = True) -> None:
        self.cwd = cwd
        self.keep_phrases = phrases  # False: a command is named only when run (the replaced span's rule)
        self.files: set[str] = set()
        self.file_paths: dict[str, set[str]] = {}  # file name -> the paths it names (is a name distinctive?)
        self.symbols: set[str] = set()
        self.values: set[str] = set()
        self.commands: set[str] = set()
        self._phrases: list[str] = []

    @classmethod
    def of_messages(cls, messages: Iterable[JsonObject], cwd: str | None = None, *,
                    phrases: bool = True) -> NameIndex:
        index = cls(cwd, phrases=phrases)
        for message in messages:
            index.add_message(message)
        return index

    def add_message(self, message: JsonObject) -> None:
        for text in block_texts(message):
            self.add_text(text)
        if message.get("role") == "assistant":
            for key, text in call_strings(message):
                if is_command_key(key):
                    self.commands.update(command_heads(text))
                elif key in PATH_KEYS:
                    path = path_argument(text)
                    if path is not None:
                        self.add_file(path)

    def add_file(self, path: str) -> None:
        path = relative(path, self.cwd)
        spellings = path_spellings(path)
        self.files.update(spellings)
        self.file_paths.setdefault(spellings[-1], set()).add(path)

    def add_text(self, text: str) -> None:
        for kind, name in names(text):
            if kind == FILE:
                self.add_file(name)
            elif kind == SYMBOL:
                self.symbols.add(name)
            else:
                self.values.add(name)
        self._phrases.append(normalize_phrase(text))

    def spellings(self, path: str) -> tuple[str, ...]:
        """How a context may name `path`: the path, its last two parts, and its file name when this index
        (the replaced span) names no other file of that name (`index.ts` alone names none of three)."""
        out = path_spellings(path)
        if len(out) > 1 and len(self.file_paths.get(out[-1], ())) > 1:
            out = out[:-1]
        return out

    def has_file(self, spellings: tuple[str, ...]) -> bool:
        if any(s in self.files for s in spellings):
            return True
        # a name `names` does not read as a file in text (`Makefile`, `x.unlisted`): looked for as a word
        words = [f" {s} " for s in spellings if file_name(s) is None]
        return bool(words) and any(word in text for word in words for text in self._phrases)

    def has(self, kind: str, name: str) -> bool:
        if kind == FILE:
            return self.has_file(path_spellings(name))
        if kind == SYMBOL:
            return name in self.symbols
        if kind == VALUE:
            return name in self.values
        phrase = f" {name} "
        return name in self.commands or (self.keep_phrases and any(phrase in text for text in self._phrases))


def future_messages(messages: Iterable[JsonObject], turns: int = FUTURE_TURNS) -> list[JsonObject]:
    """The messages after a cut up to (and with the results of) the agent's `turns`-th model turn."""
    out: list[JsonObject] = []
    seen = 0
    for message in messages:
        if message.get("role") == "assistant":
            if seen == turns:
                break
            seen += 1
        out.append(message)
    return out


def hindsight_probes(replaced: list[JsonObject], kept: list[JsonObject], future: list[JsonObject],
                     cwd: str | None = None) -> list[Probe]:
    """The hindsight probes of one cut, in the order the future turns used them."""
    span = NameIndex.of_messages(replaced, cwd, phrases=False)
    known = NameIndex.of_messages(kept, cwd)
    shown = NameIndex(cwd)  # what the turns after the cut showed the agent before it used a name
    probes: dict[tuple[str, str], Probe] = {}

    def consider(kind: str, name: str) -> None:
        if (kind, name) in probes or (kind == SYMBOL and name in WELL_KNOWN):
            return
        if kind == FILE:
            spellings = span.spellings(name)
            if not span.has_file(spellings) or known.has_file(spellings) or shown.has_file(spellings):
                return
            probes[(kind, name)] = Probe(kind, name, spellings=spellings)
        elif span.has(kind, name) and not known.has(kind, name) and not shown.has(kind, name):
            probes[(kind, name)] = Probe(kind, name)

    for message in future:
        if message.get("role") != "assistant":
            for text in block_texts(message):  # the user's words and tool results: seen from here on
                shown.add_text(text)
            continue
        for key, text in call_strings(message):
            if key in PATH_KEYS:
                path = path_argument(text)
                if path is not None:
                    consider(FILE, relative(path, cwd))
                continue
            for kind, name in names(text):
                consider(kind, relative(name, cwd) if kind == FILE else name)
            if is_command_key(key):
                for head in command_heads(text):
                    consider(COMMAND, head)
    return list(probes.values())
