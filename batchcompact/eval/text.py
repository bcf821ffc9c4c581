"""The words and names eval reads in text: stemmed words, file paths, code names, commands and values.

Written for eval alone: nothing here (nor anything it imports) comes from `batchcompact/summarize/`, so
a summarizer cannot share the rules it is measured by (docs/eval.md). Every function is deterministic and
linear in the length of its text (texts are cut at `MAX_CHARS` first).
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterable, Iterator
from typing import Any

MAX_CHARS = 200_000  # one text block read at most (a pasted log beyond this names nothing new to a probe)

# Words that say nothing about which rule or request it was.
STOPWORDS = frozenset(
    """
    the and for are but not you your yours all any can had has have her his him its our out was were will
    with this that these those then than there their them they what when where which who whom why how
    into onto from about above after again against before below between both during each few more most
    other some such only own same too very just now also here over under until while because would could
    should shall might must may did does doing done don didn doesn isn aren wasn weren won wouldn shouldn
    couldn mustn let lets please thanks thank okay yes sure one two via use used using make made get got
    want need like well way things thing something anything everything nothing still even much many
    able instead rather always never keep avoid prefer without file files code first last new old see look
    try every can't don't won't i'm i've it's that's there's let's
    """.split()
)
# Replies that ask for nothing new: "ok", "continue", "go on", "thanks".
GO_ON = frozenset("ok okay yes yep y sure continue go proceed next thanks thank great perfect nice cool lgtm "
                  "good fine done right".split())

_WORD = re.compile(r"[a-z0-9_']+")
_SUFFIXES = ("ational", "ization", "fulness", "iveness", "ations", "ation", "ments", "ment", "ingly", "ings", "ing",
             "edly", "ies", "ied", "ers", "er", "ed", "es", "ly", "s")
_VOWEL = re.compile(r"[aeiouy]")


def stem(word: str) -> str:
    """A light suffix stripper: `committing`, `commits`, `committed` -> `commit`; `changes`, `change` ->
    `chang`; `parser`, `parsing`, `parse` -> `pars`. Never leaves fewer than 3 letters or a stem without
    a vowel."""
    for suffix in _SUFFIXES:
        if word.endswith(suffix):
            base = word[: -len(suffix)]
            if len(base) >= 3 and _VOWEL.search(base):
                if suffix in ("ies", "ied"):
                    base += "y"
                word = base
                break
    if len(word) > 4 and word[-1] == word[-2] and word[-1] not in "lsz":  # committ -> commit
        word = word[:-1]
    if len(word) > 3 and word.endswith("e"):
        word = word[:-1]
    return word


def significant_words(text: str) -> list[str]:
    """Lower-case words of 3+ characters that are not numbers or stop words, in order (repeats kept)."""
    return [w.strip("'") for w in _WORD.findall(text[:MAX_CHARS].lower())
            if len(w.strip("'")) >= 3 and not w.strip("'").isdigit() and w not in STOPWORDS
            and w.strip("'") not in STOPWORDS]


def stems(text: str) -> list[str]:
    """The stems of `significant_words(text)`, in order."""
    return [stem(w) for w in significant_words(text)]


# -- names ------------------------------------------------------------------------------------------------
FILE, SYMBOL, COMMAND, VALUE = "file", "symbol", "command", "value"

EXTENSIONS = frozenset(
    """
    py pyi ipynb ts tsx js jsx mjs cjs json jsonl md mdx rst txt toml yaml yml ini cfg conf env lock rs go java
    kt kts scala c h cc cpp cxx hpp hh m mm swift rb ex exs erl hrl php cs fs vb lua pl pm r jl dart zig nim
    sh bash zsh fish ps1 bat css scss sass less html htm vue svelte astro xml svg sql graphql gql proto
    gradle csv tsv parquet db sqlite log patch diff tf hcl nix cmake mk dockerfile gitignore editorconfig
    """.split()
)
_TOKEN = re.compile(r"[\w./~@+:-]+")
_URL = re.compile(r"^[a-z][a-z0-9+.-]*://\S+$")
_HOST_PORT = re.compile(r"^(?:localhost|\d{1,3}(?:\.\d{1,3}){3}|[a-z][\w-]*(?:\.[\w-]+)+):\d{2,5}$")
_VERSION = re.compile(r"^v?\d+\.\d+\.\d+(?:[-.][\w.]+)?$")
_HASH = re.compile(r"^(?=[0-9a-f]*[a-f])(?=[0-9a-f]*\d)[0-9a-f]{7,40}$")
_IDENT = re.compile(r"^[A-Za-z_][A-Za-z0-9_]{3,}$")
_CAMEL = re.compile(r"[a-z0-9][A-Z]")
_PASCAL = re.compile(r"^[A-Z][a-z0-9]+[A-Z]")
_LINE_SUFFIX = re.compile(r"(?::\d+)+:?$")
_EDGE = "\"'`.,;:()[]{}<>!?*#=|&"
_LEFT_EDGE = _EDGE.replace(".", "")  # a leading dot is part of the name (`.env`, `./src`, `../x`)


def _is_symbol(word: str) -> bool:
    """A code name: 4+ characters with an inner underscore, a camelCase bump or two capitals
    (`extract_facts`, `summarizeOffline`, `SessionTree`, `MAX_TERMS`), not an English word."""
    if not _IDENT.match(word) or word.strip("_").isdigit():
        return False
    inner = word.strip("_")
    return "_" in inner or bool(_CAMEL.search(word)) or bool(_PASCAL.match(word)) or word.startswith("__")


# Extensions that, on a name without a folder, are more often code (`console.log`, `process.env`).
BARE_AMBIGUOUS = frozenset("log env lock db r m c h cs fs pl mk hh mm vb conf cfg".split())


def _is_path(token: str) -> bool:
    """A file: a name with a known extension (`cli.py`, `src/cli.py`); folders and slash commands are not."""
    name = token.rsplit("/", 1)[-1]
    extension = name.rsplit(".", 1)[-1].lower() if "." in name.strip(".") else ""
    if extension not in EXTENSIONS or not name[: -len(extension) - 1].strip("."):
        return False
    return "/" in token or extension not in BARE_AMBIGUOUS


def names(text: str) -> Iterator[tuple[str, str]]:
    """(kind, name) for every file path, code name and value named in `text`, in order, lower-cased:
    paths without a leading `./` or a `:LINE` suffix; a dotted name's parts as code names."""
    for raw in _TOKEN.findall(text[:MAX_CHARS]):
        token = raw.lstrip(_LEFT_EDGE).rstrip(_EDGE)
        if len(token) < 3:
            continue
        low = token.lower()
        if "://" in token:
            if _URL.match(low):
                yield VALUE, low.rstrip("/")
            continue
        if _HOST_PORT.match(low):
            yield VALUE, low
            continue
        token = _LINE_SUFFIX.sub("", token)
        for part in token.split(":"):
            part = part.lstrip(_LEFT_EDGE).rstrip(_EDGE)
            if len(part) < 3:
                continue
            if _is_path(part):
                yield FILE, part.lower().removeprefix("./")
            elif _VERSION.match(part.lower()) or _HASH.match(part):
                yield VALUE, part.lower()
            else:
                for piece in part.split("."):
                    if _is_symbol(piece):
                        yield SYMBOL, piece.lower()


def relative(path: str, cwd: str | None) -> str:
    """A path relative to the session's cwd when it lies inside it (lower case, as `names` gives it)."""
    if cwd:
        base = cwd.lower().rstrip("/") + "/"
        if path.startswith(base) and len(path) > len(base):
            return path[len(base) :]
    return path


def path_spellings(path: str) -> tuple[str, ...]:
    """The ways a text may name a file: the path, its last two parts, its file name (most specific first)."""
    parts = [p for p in path.split("/") if p and p != "~"]
    out = [path]
    if len(parts) >= 2:
        out.append("/".join(parts[-2:]))
    if parts:
        out.append(parts[-1])
    return tuple(dict.fromkeys(out))


# -- commands ---------------------------------------------------------------------------------------------
# Programs whose name says nothing about how this project is built, tested or run.
TRIVIAL_PROGRAMS = frozenset(
    """
    cd ls cat head tail grep rg egrep fgrep sed awk echo printf find wc pwd mkdir rm rmdir cp mv touch sort uniq
    true false sleep which whoami date env export set unset source test chmod chown ln tee xargs cut tr diff
    less more file stat du df ps kill clear history type command exit read nl od xxd jq tree realpath
    dirname basename git
    """.split()
)
_SEGMENT_SPLIT = re.compile(r"&&|\|\||[;|\n]")
_ASSIGNMENT = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*=")
_SUBCOMMAND = re.compile(r"^[a-z][\w:.-]*$")
_PROGRAM = re.compile(r"^(?:\.{0,2}/)?[\w.-]*[A-Za-z][\w./-]*$")


def command_heads(command: str) -> list[str]:
    """How a shell command line runs the project: each segment's program and its subcommand
    (`npm run test`, `cargo test`, `uv run pytest`, `./scripts/check.sh`), trivial programs left out."""
    out = []
    for segment in _SEGMENT_SPLIT.split(command[:MAX_CHARS]):
        words = [w.strip("\"'") for w in segment.split()]
        while words and (_ASSIGNMENT.match(words[0]) or words[0] in ("sudo", "time", "exec", "nohup", "env")):
            words.pop(0)
        if not words:
            continue
        program = words[0]
        name = program.rsplit("/", 1)[-1].lower()
        if name in TRIVIAL_PROGRAMS or not _PROGRAM.match(program):
            continue
        head = [program.lower()]
        for word in words[1:3]:
            if not _SUBCOMMAND.match(word) or _is_path(word):
                break
            head.append(word.lower())
        out.append(" ".join(head))
    return out


_NOT_IN_COMMAND = re.compile(r"[^\w./:@+~-]+")


def normalize_phrase(text: str) -> str:
    """Lower case, quotes, backticks and other punctuation as spaces, whitespace collapsed, padded with
    spaces: `" " + head + " "` can be searched in it."""
    words = (word.rstrip(".:") for word in _NOT_IN_COMMAND.sub(" ", text[:MAX_CHARS].lower()).split())
    return " " + " ".join(w for w in words if w) + " "


# -- messages ---------------------------------------------------------------------------------------------
def block_texts(message: dict[str, Any]) -> Iterator[str]:
    """The texts a model reads in one message (pi's LLM shape): text blocks, tool calls (name and
    arguments), tool results; thinking left out (providers drop it)."""
    content = message.get("content")
    if isinstance(content, str):
        yield content
        return
    for block in content or ():
        if not isinstance(block, dict):
            continue
        kind = block.get("type")
        if kind == "text":
            yield str(block.get("text") or "")
        elif kind == "toolCall":
            yield f"{block.get('name')} {json.dumps(block.get('arguments'), ensure_ascii=False, sort_keys=True)}"


def message_text(message: dict[str, Any]) -> str:
    return "\n".join(block_texts(message))


def call_strings(message: dict[str, Any]) -> Iterator[tuple[str, str]]:
    """(argument key, string) for every string inside the tool calls of an assistant message."""
    for block in message.get("content") or ():
        if isinstance(block, dict) and block.get("type") == "toolCall":
            yield from _strings(block.get("arguments"), "")


def _strings(value: Any, key: str) -> Iterator[tuple[str, str]]:
    if isinstance(value, str):
        text = value.strip()
        if key == "input" and text.startswith("{"):  # arguments a provider sent as one JSON string
            try:
                yield from _strings(json.loads(text), key)
                return
            except ValueError:
                pass
        yield key, value
    elif isinstance(value, dict):
        for name, item in value.items():
            yield from _strings(item, str(name))
    elif isinstance(value, list):
        if value and all(isinstance(v, str) for v in value) and key in ("command", "cmd", "argv"):
            yield key, " ".join(value[2:] if len(value) >= 3 and value[1] in ("-c", "-lc") else value)
            return
        for item in value:
            yield from _strings(item, key)


def is_command_key(key: str) -> bool:
    return key in ("command", "cmd", "argv", "script")


def flatten(texts: Iterable[str]) -> str:
    return "\n".join(texts)
