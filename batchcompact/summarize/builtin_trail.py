"""The artifact trail of the built-in summary: the file paths and code names a span names, and how much
each matters to the work that follows (`Salience`: weighted by kind of mention and lateness); the files a
shell command prints; the folders a tool was pointed at (docs/summaries.md, "Relevant Files and Code Names").

Linear: every text is clipped before it is split; deterministic.
"""

from __future__ import annotations

import re

from batchcompact.core.jsontypes import JsonValue
from batchcompact.summarize.builtin_text import SCAN_CHARS
from batchcompact.summarize.handover import is_noise_file, is_noise_name, strip_diff_prefix

# ASCII: a name glued to other words (`請看indicator.md和feedback.md`) is the name alone
_NAME_TOKEN = re.compile(r"(?:\b[a-z]:(?=/))?[A-Za-z0-9_./~@+\[\]-]+")
# `_NAME_TOKEN.findall` where no ":/" stands (no drive to match) at four times its speed: its characters are
# ASCII, so every other character (a non-ASCII one as "?") becomes a space and the text is split
_NOT_TOKEN = bytes(c if chr(c) in "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789_./~@+[]-"
                   else 32 for c in range(256))


def plain_tokens(text: str) -> list[str]:
    return text.encode("ascii", "replace").translate(_NOT_TOKEN).decode("ascii").split()


# A URL names no file of the project (`http://localhost:8765/chart.html` is no `8765/chart.html`)
_URL = re.compile(r"\b[a-z][a-z0-9+.-]*://[^\s'\"`<>)\]]*")
# A Windows path (`C:\Users\me\app\src\x.ts`, `c:/Users/...`): said with forward slashes and a lower-case
# drive, as the tools' paths are (`normal_path`), so that both spellings are one file
_WINDOWS_PATH = re.compile(r"\b[A-Za-z]:[\\/][^\s'\"`<>|*?]*")
# A relative Windows path (`components\events\card.tsx`): said with forward slashes before escapes are read
_BACKSLASH_PATH = re.compile(r"(?:[\w.@-]+\\)+[\w.@-]+\.[A-Za-z0-9]+\b")
# A regex or string escape before a word (`\bBORDER_WIDTH\b`, `\nimport`): its letter is no part of the name
_ESCAPE = re.compile(r"\\[bBnrtdswDSW](?=\w)")
# A code name: snake_case with an inner underscore, or a word with a camelCase bump after its first letter. Two
# linear patterns: the one pattern they replace backtracked exponentially on a long mixed-case piece that
# ends in a character no name has (`aBaB…aB-`: minutes on a Claude Code session of #55's tuning part)
_SNAKE_NAME = re.compile(r"^_*[A-Za-z][A-Za-z0-9]*(?:_+[A-Za-z0-9]+)+_*$")
_ALNUM_NAME = re.compile(r"^_*[A-Za-z][A-Za-z0-9]*$")
_BUMP = re.compile(r"[a-z0-9][A-Z]")


def is_code_name(piece: str) -> bool:
    if _SNAKE_NAME.match(piece):
        return True
    return bool(_ALNUM_NAME.match(piece)) and bool(_BUMP.search(piece, len(piece) - len(piece.lstrip("_")) + 1))
_TWO_CAPS = re.compile(r"^[A-Z][a-z0-9]+[A-Z][A-Za-z0-9]*$")
_FILE_EXTENSIONS = frozenset(
    "py pyi ipynb ts tsx js jsx mjs cjs json jsonl md mdx rst txt toml yaml yml ini cfg conf lock rs go java kt "
    "scala c h cc cpp hpp rb ex exs erl php cs swift lua sh bash zsh css scss less html vue svelte xml sql "
    "graphql proto gradle csv sqlite patch diff tf nix cmake dart zig".split()
)
# Names the agents' own plumbing writes (to-do states, tool tags), which say nothing about the work.
_PLUMBING = frozenset({"in_progress", "tool_use_error", "system_reminder", "exit_code", "file_path", "old_string",
                       "new_string", "replace_all", "tool_use_id", "tool_result"})
TRAIL_WEIGHTS = {"edited": 6.0, "read": 3.0, "user": 4.0, "call": 2.0, "said": 1.5, "output": 0.5}


def string_values(value: JsonValue, depth: int = 0) -> list[str]:
    """The strings inside a tool call's arguments (commands, paths, patterns, code)."""
    if isinstance(value, str):
        return [value]
    if depth > 8:
        return []
    items = value.values() if isinstance(value, dict) else value if isinstance(value, list) else ()
    return [text for item in items for text in string_values(item, depth + 1)]


def file_like(token: str) -> bool:
    name = token.rsplit("/", 1)[-1]
    base, dot, extension = name.rpartition(".")
    if extension.isupper() and len(extension) > 1:  # `c.JSON`, `w.WriteHeader`: a call, not a file
        return False
    return bool(dot and base.strip(".") and extension.lower() in _FILE_EXTENSIONS) and (
        "/" in token or extension.lower() not in ("log", "env", "lock", "c", "h", "cs", "conf", "cfg"))


# The argument names under which agents' tools take a path (a file, or the folder a search runs in).
PATH_ARGUMENTS = ("path", "file_path", "filePath", "notebook_path", "absolute_path", "target_file", "directory",
                  "dir_path")


def tool_path(value: str) -> bool:
    """A path argument that names one place: not empty, no glob, no space, no variable, not `.`."""
    value = value.strip()
    return bool(value) and value not in (".", "./", "..") and len(value) <= 200 and not any(
        c in value for c in "*?{} $\n") and "://" not in value  # a web tool's URL is no folder


# A shell command that prints a file (how Codex and many agents read): its file arguments are reads.
_READ_PROGRAMS = frozenset("cat sed head tail nl less more bat wc".split())
# The steps of a shell command (`a && b | c; d`), line ends too: here and in `builtin_tools.command_steps`.
SHELL_SEGMENTS = re.compile(r"&&|\|\||[;|\n]")


def shell_reads(command: str) -> list[str]:
    """The files a shell command prints (`cat a.py`, `sed -n '1,80p' src/x.py`, `nl -ba x.ts | sed -n 1,40p`):
    each segment's program among `_READ_PROGRAMS` and its arguments that are files of a known type."""
    out = []
    for segment in SHELL_SEGMENTS.split(command[:2000]):
        words = segment.split()
        if words and words[0] == "cd":
            continue
        if not words or words[0].rsplit("/", 1)[-1] not in _READ_PROGRAMS:
            continue
        for word in words[1:]:
            word = word.strip("'\"")
            if not word.startswith("-") and file_like(word) and not any(c in word for c in "*?$"):
                out.append(word.removeprefix("./"))
    return out


def normal_path(path: str) -> str:
    """A Windows path with forward slashes and a lower-case drive (`C:\\x\\y.ts` -> `c:/x/y.ts`); others as given."""
    if len(path) > 2 and path[1] == ":" and path[0].isalpha() and path[2] in "\\/":
        return path[0].lower() + ":" + path[2:].replace("\\", "/")
    return path


def trail_names(text: str) -> list[tuple[bool, str]]:
    """(is a file, name) for the file paths and code names in `text` (`src/cli.py`, `extract_facts`,
    `SessionTree`), in order; a path's `:LINE` suffix and leading `./` dropped; a token the scan limit cut
    (the last one of a longer text) is left out: it may be a piece (`update_lock_`)."""
    out: list[tuple[bool, str]] = []
    scanned = text[: SCAN_CHARS * 4]
    if ":/" in scanned or ":\\" in scanned:  # where `_WINDOWS_PATH` can match (a scan of its own per text)
        scanned = _WINDOWS_PATH.sub(lambda m: normal_path(m.group(0)), scanned)
    if "\\" in scanned:
        scanned = _ESCAPE.sub(" ", _BACKSLASH_PATH.sub(lambda m: m.group(0).replace("\\", "/"), scanned))
    if "://" in scanned:
        scanned = _URL.sub(" ", scanned)
    tokens = _NAME_TOKEN.findall(scanned) if ":/" in scanned else plain_tokens(scanned)
    if len(text) > SCAN_CHARS * 4 and tokens:
        tokens.pop()
    known = _TOKEN_NAMES.get
    for raw in tokens:
        names = known(raw)
        if names is None:
            if len(_TOKEN_NAMES) >= TOKEN_CACHE_SIZE:
                _TOKEN_NAMES.clear()
            # a plain word: neither a file nor a code name
            plain = raw.islower() and "." not in raw and "_" not in raw
            names = _TOKEN_NAMES[raw] = () if plain else _token_names(raw)
        if names:
            out.extend(names)
    return out


# What each token of a text gives (`_token_names` is a function of the token alone; a plain word none): a
# text repeats its words, and tool outputs repeat each other's, so each is worked out once per process (at
# most TOKEN_CACHE_SIZE tokens: ~10 MB).
_TOKEN_NAMES: dict[str, tuple[tuple[bool, str], ...]] = {}
TOKEN_CACHE_SIZE = 100_000


def _token_names(raw: str) -> tuple[tuple[bool, str], ...]:
    """(is a file, name) for one token of `trail_names`: a file, the code names of its dotted pieces, or none."""
    option = raw.startswith("-")  # `-fsSL`, `--maxWorkers`: an option, no code name
    token = raw.lstrip(",;:(){}<>'\"`!?*#=|&+-").rstrip(".,;:(){}<>'\"`!?*#=|&-")
    if token.count("[") != token.count("]"):  # a bracket of the text, not of a path (`app/[id]/page.tsx`)
        token = token.strip("[]")
    while token.startswith(("./", "../")):  # relative to a folder the summary does not know
        token = token.split("/", 1)[1]
    token = strip_diff_prefix(token)
    if len(token) < 4 or token.startswith("//"):  # a URL's remainder (`:` splits tokens)
        return ()
    if file_like(token):
        return () if is_noise_file(token) or _piece(token) else ((True, token),)
    if option:
        return ()
    return tuple((False, piece) for piece in token.split(".")
                 if len(piece) >= 4 and (is_code_name(piece) or _TWO_CAPS.match(piece)) and piece not in _PLUMBING
                 and not is_noise_name(piece))


# What only looks like a file: a piece of a longer path or pattern (`/page.tsx` of `app/[id]/page.tsx`,
# `_test.go` of `*_test.go`, `Object..js`), not a whole path of the project
_AFFIX = re.compile(r"^[_.-]?(?:test|spec|tests|specs)\.[a-z0-9]+$")


def _piece(token: str) -> bool:
    name = token.rsplit("/", 1)[-1]
    return (token.startswith("/") and token.count("/") == 1) or ".." in token or bool(_AFFIX.match(name)) \
        or name.startswith(("_", "-")) and not name.startswith("__") and not _NEXT_SPECIAL.match(name)


_NEXT_SPECIAL = re.compile(r"^_(?:app|document|layout|error|middleware|index)\.")


class Salience:
    """How much each file and code name matters to the work that follows: every mention adds its kind's
    weight (an edit most, a name in a tool's output least), times how late it came (the latest mention
    counts up to four times the first), so the most used and most recent names rank first."""

    def __init__(self, total: int) -> None:
        self.total = max(total, 1)
        self.position = 0
        self.files: dict[str, float] = {}
        self.names: dict[str, float] = {}
        self.paths: dict[str, float] = {}  # tool calls' path arguments that are no file of a known type

    def add(self, kind: str, text: str) -> None:
        weight = TRAIL_WEIGHTS[kind] * (0.25 + 0.75 * self.position / self.total)
        for is_file, name in trail_names(text):
            table = self.files if is_file else self.names
            table[name] = table.get(name, 0.0) + weight

    def add_file(self, kind: str, path: str) -> None:
        weight = TRAIL_WEIGHTS[kind] * (0.25 + 0.75 * self.position / self.total)
        path = strip_diff_prefix(normal_path(path).removeprefix("./"))
        self.files[path] = self.files.get(path, 0.0) + weight

    def add_path(self, path: str) -> None:
        """A folder (or a file of no known type: `Makefile`) a tool call was pointed at: where the agent
        searched, listed or ran; it passes the same path again."""
        weight = TRAIL_WEIGHTS["call"] * (0.25 + 0.75 * self.position / self.total)
        path = strip_diff_prefix(normal_path(path).removeprefix("./")).rstrip("/") or "/"
        self.paths[path] = self.paths.get(path, 0.0) + weight

    def ranked(self, table: dict[str, float]) -> list[str]:
        """Names by salience, highest first; ties by name."""
        return [name for name, _ in sorted(table.items(), key=lambda item: (-item[1], item[0]))]

    def ranked_files(self) -> list[str]:
        """Files by salience, a shorter spelling of a listed path (`cli.py`, `src/cli.py` beside
        `/repo/src/cli.py`) counted for the longest one that ends with it rather than listed twice."""
        by_name: dict[str, list[str]] = {}
        for path in self.files:
            by_name.setdefault(path.rsplit("/", 1)[-1], []).append(path)
        merged: dict[str, float] = {}
        for paths in by_name.values():  # a group is the spellings of one file name: small
            paths.sort(key=lambda p: (-len(p), p))
            kept: list[str] = []
            for path in paths:
                into = next((longer for longer in kept if longer.endswith("/" + path)), None)
                if into is None:
                    kept.append(into := path)
                merged[into] = merged.get(into, 0.0) + self.files[path]
        return self.ranked(merged)
