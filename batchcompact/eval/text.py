"""The words and names eval reads in text: stemmed words, file paths, code names, commands and values.

Written for eval alone: nothing here (nor anything it imports) comes from `batchcompact/summarize/`, so
a summarizer cannot share the rules it is measured by; the rules (what counts as a file, a code name, a
command, a value) are docs/eval.md's, written from that text. Every function is deterministic and
linear in the length of its text (texts are cut at `MAX_CHARS` first).
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterator

from batchcompact.core.jsontypes import JsonObject, JsonValue

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
# The rules are docs/eval.md's ("What counts as a file, a code name, ..."), written from that text.
FILE, SYMBOL, COMMAND, VALUE = "file", "symbol", "command", "value"

# File types a bare file name (no folder) may have: source, docs, configuration, data, scripts. A name in a
# folder (`src/x.abc`) needs no list: the folder says it is a path.
FILE_TYPES = frozenset(
    """
    py pyi pyx ipynb ts tsx mts cts js jsx mjs cjs json jsonc json5 jsonl ndjson md mdx markdown rst adoc txt toml
    yaml yml ini cfg conf properties lock rs go mod java kt kts scala groovy c h cc cpp cxx hpp hxx swift rb gemspec
    ex exs erl php cs fs fsx lua pl jl dart zig nim sh bash zsh fish ps1 bat cmd css scss sass less html htm vue
    svelte astro xml xsd svg sql graphql gql proto gradle csv tsv parquet sqlite patch diff tf tfvars hcl nix cmake
    mk dockerfile tmpl
    template j2 jinja hbs ejs pug plist pem crt csr pdf png jpg jpeg gif webp ico wasm zip tgz gz tar whl
    """.split()
)
# Dot files a bare name may be (`.env`); `.ts` alone is an extension, not a file.
DOT_FILES = frozenset("env envrc gitignore gitattributes gitmodules dockerignore editorconfig prettierrc eslintrc npmrc "
                      "nvmrc python-version tool-versions bashrc zshrc profile".split())
# A bare `Name.js` with a capital is a runtime or a framework (`Node.js`, `Vue.js`), not a file.
_PRODUCT = re.compile(r"^[A-Z][A-Za-z]*\.js$")
# Where a later tool call names a file by its argument's name, whatever the file's shape (`Makefile`).
PATH_KEYS = frozenset("path file_path filePath notebook_path file filename target_file absolute_path".split())
_URL = re.compile(r"^[a-z][a-z0-9+.-]*://\S+$")
_HOST_PORT = re.compile(r"^(?:localhost|\d{1,3}(?:\.\d{1,3}){3}|[a-z][\w-]*(?:\.[\w-]+)+):\d{2,5}$")
_VERSION = re.compile(r"^v?\d+\.\d+\.\d+(?:[-.+][\w.]+)?$")
_HASH = re.compile(r"^(?=[0-9a-f]*[a-f])(?=[0-9a-f]*\d)[0-9a-f]{7,40}$")
_WORDS = re.compile(r"[^\s\"'`()\[\]{}<>,;|=]+")
_LINE_SUFFIX = re.compile(r"(?::\d+)+:?$")
_FILE_NAME = re.compile(r"^(?P<stem>[^./][^/]*?)\.(?P<ext>[A-Za-z0-9]{0,9}[A-Za-z][A-Za-z0-9]{0,9})$")
_DOT_FILE = re.compile(r"^\.[A-Za-z][\w-]+$")
_NOT_IN_PATH = re.compile(r"[*?$%\\]|\.\.\.")
_TRIM = ".,:!?*#"
_LEFT_TRIM = ",:!?*#"  # a leading dot belongs to the name (`.env`, `./src`, `../x`)
_IDENT = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")
_SNAKE = re.compile(r"^_*[A-Za-z0-9]+(?:_+[A-Za-z0-9]+)+_*$")
_CAMEL = re.compile(r"[a-z0-9][A-Z]")
_TWO_CAPITALS = re.compile(r"^[A-Z][a-z0-9]*[A-Z]")

# Names every coding agent knows without being told: a language's built-ins and its standard library's
# most used calls. They never make a probe (a reader does not need a summary to know `setTimeout`).
WELL_KNOWN = frozenset(
    """
    settimeout setinterval cleartimeout clearinterval tofixed tostring tolowercase touppercase tojson
    parseint parsefloat isnan isarray foreach indexof lastindexof startswith endswith padstart padend
    trimstart trimend getelementbyid queryselector queryselectorall addeventlistener removeeventlistener
    preventdefault stoppropagation innerhtml textcontent classlist appendchild createelement getitem setitem
    localstorage sessionstorage usestate useeffect useref usememo usecallback usecontext readfile readfilesync
    writefile writefilesync existssync mkdirsync readdirsync joinpath dirname basename hasownproperty
    defineproperty getownpropertynames objectkeys promiseall uint8array arraybuffer textencoder textdecoder
    urlsearchparams abortcontroller eventemitter nodejs typescript javascript github gitlab macos ios
    node_modules site_packages __pycache__ dist_packages
    __init__ __name__ __main__ __file__ __dict__ __repr__ __str__ __eq__ __hash__ __len__ __call__ __enter__
    __exit__ __iter__ __next__ __getattr__ __setattr__ __getitem__ __setitem__ __post_init__ __future__
    __all__ __version__ isinstance issubclass getattr setattr hasattr staticmethod classmethod
    """.split()
)


def file_name(word: str) -> str | None:
    """The file a word names, lower-cased, or None (docs/eval.md, "a file"): a path in a folder whose last
    part has an extension, or a bare file name of a known file type; `:LINE`, `./` and git's `a/`/`b/`
    diff prefixes dropped."""
    word = _LINE_SUFFIX.sub("", word.lstrip(_LEFT_TRIM).rstrip(_TRIM)).rstrip(_TRIM)
    if len(word) < 3 or "://" in word or word.startswith("-") or _NOT_IN_PATH.search(word) or word.endswith("/"):
        return None
    if word.startswith("@") and "/" not in word:
        return None
    parts = word.split("/")
    last = parts[-1]
    named = _FILE_NAME.match(last)
    if "/" in word:
        if not named and not _DOT_FILE.match(last):
            return None
        if len(parts) > 2 and parts[0] in ("a", "b") and parts[1]:  # git diff's two sides of one path
            parts = parts[1:]
    elif _DOT_FILE.match(last):
        return last.lower() if last[1:].lower() in DOT_FILES else None
    else:
        if not named or named["ext"].lower() not in FILE_TYPES or _PRODUCT.match(last):
            return None
        if not re.search(r"[A-Za-z0-9]", named["stem"]):
            return None
    if named and "." in named["stem"] and named["stem"].startswith("."):  # `.test.ts`: a pattern, not a file
        return None
    path = "/".join(parts).lower()
    return path[2:] if path.startswith("./") else path


def path_argument(value: str) -> str | None:
    """The file a tool call's path argument (`PATH_KEYS`) names, lower-cased, whatever its shape
    (`Makefile`, `.env`, `src/x.py`); None for a folder, a glob or more than one word."""
    value = value.strip()
    if not value or len(value) > 500 or any(c.isspace() for c in value) or value.endswith("/"):
        return None
    if _NOT_IN_PATH.search(value) or "://" in value or value in (".", ".."):
        return None
    path = value.lower()
    return path[2:] if path.startswith("./") else path


def code_names(word: str) -> Iterator[str]:
    """The code names in one word (docs/eval.md, "a code name"), lower-cased: identifiers of 4+ characters
    in snake_case with an inner underscore, camelCase, or PascalCase with two capitals (an all-capital
    acronym, `JSON`, is none); each part of a dotted or `::` name. Hashes, numbers and file names are not
    code names."""
    for piece in _IDENT.findall(word):
        if len(piece) < 4 or piece.strip("_").isdigit() or _HASH.match(piece):
            continue
        if _SNAKE.match(piece) or _CAMEL.search(piece) or (_TWO_CAPITALS.match(piece) and not piece.isupper()):
            yield piece.lower()


def names(text: str) -> Iterator[tuple[str, str]]:
    """(kind, name) for every file, code name and value named in `text`, in order, lower-cased."""
    for raw in _WORDS.findall(text[:MAX_CHARS]):
        word = raw.lstrip(_LEFT_TRIM).rstrip(_TRIM)
        if len(word) < 3 or word.isdigit() or (word.isalpha() and (word.islower() or word.isupper() or word[1:].islower())):
            continue  # a plain word, number or acronym names nothing (most words: the fast path)
        low = word.lower()
        if "://" in word:
            if _URL.match(low):
                yield VALUE, low.rstrip("/")
            continue
        if _HOST_PORT.match(low):
            yield VALUE, low
            continue
        if "::" in word:  # a test id or a qualified name: `tests/test_x.py::test_y`, `Foo::bar_baz`
            yield from names(" ".join(word.split("::")))
            continue
        bare = _LINE_SUFFIX.sub("", word)
        if _VERSION.match(bare.lower()) or _HASH.match(bare):
            yield VALUE, bare.lower()
            continue
        path = file_name(word)
        if path is not None:
            yield FILE, path
            continue
        if "/" in word:  # a folder or another path-like word: its parts are not code names
            continue
        for name in code_names(word):
            yield SYMBOL, name


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
            if not _SUBCOMMAND.match(word) or file_name(word) is not None:
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
def block_texts(message: JsonObject) -> Iterator[str]:
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


def message_text(message: JsonObject) -> str:
    return "\n".join(block_texts(message))


def call_strings(message: JsonObject) -> Iterator[tuple[str, str]]:
    """(argument key, string) for every string inside the tool calls of an assistant message."""
    for block in message.get("content") or ():
        if isinstance(block, dict) and block.get("type") == "toolCall":
            yield from _strings(block.get("arguments"), "")


def _strings(value: JsonValue, key: str) -> Iterator[tuple[str, str]]:
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


