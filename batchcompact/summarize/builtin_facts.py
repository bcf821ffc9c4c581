"""What the built-in summarizer reads from a conversation, for every agent alike.

Every agent's reader hands the planner pi-shaped LLM messages (`user`, `assistant` with `toolCall` blocks,
`toolResult`), but each agent names its tools differently, e.g. pi `read/write/edit/bash`, Claude Code
`Read/Write/Edit/MultiEdit/NotebookEdit/Bash/TodoWrite/Task`, Codex `exec_command/shell/apply_patch/
update_plan`. Each agent's `tools` table (batchcompact/agents/<name>/) maps its tool names to a shape, and
`classify_call` reads each call by its shape into one `Action`; `extract_facts` walks the messages once,
matches every result to its call, and keeps what a handover note needs.

Invariants: one pass, linear in the size of the messages (every "seen" check is a dict or set lookup,
every text is clipped before it is split); deterministic (no clock, no randomness); a change counts only
when its tool result did not report an error; a failure is "blocked" only while no later run of the same
command (or the same check) succeeded.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass, field
from typing import Any

from batchcompact.agents import tool_table
from batchcompact.summarize.handover import (
    Request,
    asked_words,
    is_acknowledgement,
    is_go_on,
    is_noise_file,
    is_noise_name,
    strip_diff_prefix,
    without_rules,
)

ITEM_CHARS = 200
SCAN_CHARS = 4000  # user text beyond this is pasted material, not instructions

_BULLET = re.compile(r"^(?:[-*•+]\s+|\d+[.)]\s+|\[[ xX]\]\s+)+")
_SENTENCE = re.compile(r"(?<=[.!?])\s+|\n+")
_RULE = re.compile(
    r"\b(?:must|mustn't|never|always|don't|do not|should|shouldn't|prefer|make sure|ensure|avoid|only use|"
    r"please use|use only|without|keep|no need to|instead|from now on|every time|each time|whenever)\b"
    r"|\buse\b[^.!?\n]{1,60}?,?\s+not\b",  # "use X, not Y": which thing to use
    re.IGNORECASE,
)
_QUESTION_START = re.compile(
    r"^(?:wait\b|hmm\b|so\b|and\b|but\b)?[,\s]*(?:do|does|did|can|could|would|will|is|are|was|were|should|"
    r"shall|what|why|how|where|when|which|who|have|has|any idea)\b",
    re.IGNORECASE,
)
_DECISION = re.compile(
    r"\b(?:decided|decision|instead of|switch(?:ed|ing)? to|because|rather than|the fix is|chose|"
    r"going with|the root cause|the cause is)\b",
    re.IGNORECASE,
)
_ACK = re.compile(
    r"^(?:ok(?:ay)?|yes|yep|y|no|nope|sure|thanks?(?: you)?|continue|go on|go ahead|proceed|do it|lgtm|"
    r"sounds good|great|perfect|nice|cool|next)\W*$",
    re.IGNORECASE,
)
_GO_ON = re.compile(
    r"^(?:ok(?:ay)?[,\s]*)?(?:yes|yep|y|sure|continue|go on|go ahead|proceed|do it|next|keep going)?\W*$",
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
_RAN = re.compile(r"^Ran `([^`]*)`")
# The lookahead names the only characters a match can start with (none has another case form), so the
# engine skips every other position at once instead of trying each alternative case-insensitively there.
_EXIT = re.compile(
    r"(?=[CcPpEe\"])"
    r"(?i:Command exited with code|Process exited with code|Exit code:?|exit status|\"exit_code\":)\s*(-?\d+)"
)
# Every match of _EXIT contains "xit" in some case: exactly x/X, i/I/İ/ı and t/T match x, i and t under
# re.IGNORECASE. Lowercased, those are "xit", "xıt" and "xi̇t" (İ lowercases to i + U+0307): text without
# any of them has no exit code. Three substring searches of the lowercased text are ~4x faster than
# one search for the character classes (tool results: 17 ms against 73 ms per 8,673 texts).
_XIT_LOWER = ("xit", "x\u0131t", "xi\u0307t")


def _may_hold_exit(text: str) -> bool:
    low = text.lower()
    return _XIT_LOWER[0] in low or _XIT_LOWER[1] in low or _XIT_LOWER[2] in low


def _exit_codes(text: str) -> list[str]:
    """`_EXIT.findall(text)`, skipping the full search in text that cannot match."""
    return _EXIT.findall(text) if _may_hold_exit(text) else []


def _exit_code(text: str) -> re.Match[str] | None:
    """`_EXIT.search(text)`, skipping the full search in text that cannot match."""
    return _EXIT.search(text) if _may_hold_exit(text) else None
_ERRORISH = re.compile(
    r"error|failed|failure|not found|no such|denied|traceback|exception|cannot|could not", re.I
)
_ABORTED = re.compile(r"^\[?(?:Command aborted|Operation aborted|Request interrupted|Aborted)\b", re.I)
_SELF = re.compile(
    r"^(?:ok(?:ay)?,?\s+|so,?\s+|and\s+)?(?:i|i'm|i've|let me|let's|we|we're|maybe|perhaps)\b", re.I
)
_SELF_RULE = re.compile(
    r"\b(?:want|prefer|need|'d like|would like|never|always|don't want|do not want)\b", re.I
)
_ANNOUNCE = re.compile(
    r"^(?:now\s+)?(?:let me|let's|i'll|i will|next,? i'll|next,? i will|now i'll)\s+(.+?)[:.]?$", re.I
)
# Commands that only look (read, list, search): one that fails looked in the wrong place, nothing to fix.
_LOOKS = frozenset({"cat", "ls", "head", "tail", "less", "wc", "file", "stat", "tree", "du", "grep", "rg", "egrep",
                    "fgrep", "ag", "ack", "find", "fd", "which", "type", "readlink", "realpath", "pwd", "echo"})
_NO_WORK = frozenset({"cd", "pushd", "popd", "export", "set", "source", ".", "true", "false", "sleep", "printf",
                      "exit", "clear", "mkdir", "touch"})
_QUOTED = re.compile(r"\"[^\"]*\"|'[^']*'")
_SEGMENTS = re.compile(r"&&|\|\||;|\|")


def command_steps(command: str) -> set[str]:
    """The `program subcommand` of each step of a shell command (`git commit`, `npm test`, `pytest`), quoted
    text and options left out: a later success of the same step resolves an earlier failure of it."""
    steps = set()
    for segment in _SEGMENTS.split(_QUOTED.sub("", command[:SCAN_CHARS])):
        words = [w for w in segment.split() if "=" not in w and w not in ("sudo", "env", "time", "command")]
        if not words:
            continue
        program = words[0].rsplit("/", 1)[-1]
        subs = [w for w in words[1:4] if w[:1].isalpha()][:2]
        sub = " ".join(subs if subs and subs[0] in ("run", "exec", "x") else subs[:1])
        steps.add(f"{program} {sub}".strip())
    return steps


def work_steps(command: str) -> set[str]:
    """`command_steps` less those that neither look nor do work of their own (`cd`, `tail`, `grep`): the
    steps whose later success says a failure of the command is over."""
    return {step for step in command_steps(command) if step.split(" ", 1)[0] not in _LOOKS | _NO_WORK}


_TEST_AFFIX = re.compile(r"(?:^test_|_test(?=\.)|\.(?:test|spec)(?=\.))")


def failing_sources(text: str) -> frozenset[str]:
    """The file names a failure names, and for a test file the source it tests (`truncated-text.test.js`
    -> `truncated-text.js`, `test_cli.py` -> `cli.py`): editing any of them is working on the failure."""
    names = set()
    for is_file, name in trail_names(text):
        if is_file:
            base = name.rsplit("/", 1)[-1]
            names.add(base)
            names.add(_TEST_AFFIX.sub("", base))
    return frozenset(names)


def only_looks(command: str) -> bool:
    """Whether every step of a command only reads, lists or searches (`grep -n x f.ts`, `ls src | head`)."""
    steps = command_steps(command)
    return bool(steps) and all(step.split(" ", 1)[0] in _LOOKS or step.startswith(("sed ", "git status",
                                                                                        "git log", "git diff",
                                                                                        "git show"))
                               and "-i" not in command.split() for step in steps)


# Commands whose exit code 1 means "no match" or "false", not a failure.
_SEARCHES = {
    "grep",
    "rg",
    "egrep",
    "fgrep",
    "ag",
    "ack",
    "diff",
    "cmp",
    "test",
    "[",
    "find",
    "git-grep",
    "which",
}
_CHECKS = re.compile(
    r"\b(?:pytest|py\.test|tox|nox|unittest|ruff|mypy|pyright|flake8|pylint|black --check|eslint|tsc|jest|vitest|"
    r"mocha|cargo (?:test|build|check|clippy)|go (?:test|build|vet)|mix (?:test|compile|credo|format)|"
    r"npm (?:run )?(?:test|build|lint|check)|pnpm (?:run )?(?:test|build|lint|check)|yarn (?:test|build|lint)|"
    r"bun (?:run )?(?:test|build)|make(?: \w+)?|gradle\w* (?:test|build)|mvn \w+|dotnet (?:test|build)|"
    r"rspec|bundle exec \w+|credo|dialyzer|swift (?:test|build)|ctest|phpunit)\b"
)


def clip(text: Any, limit: int = ITEM_CHARS) -> str:
    """One line, whitespace collapsed, at most `limit` characters (linear: long text is cut first)."""
    text = " ".join(str(text)[: limit * 4].split())
    return text if len(text) <= limit else text[: limit - 1].rstrip() + "…"


def clean_item(text: str, limit: int = ITEM_CHARS) -> str:
    """An item's text without leading bullets, so rendering never doubles them."""
    return _BULLET.sub("", clip(text, limit)).strip()


def message_text(content: Any) -> str:
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        return "".join(b.get("text", "") for b in content if isinstance(b, dict) and b.get("type") == "text")
    return ""


def first_line(text: str) -> str:
    for line in text[:SCAN_CHARS].splitlines():
        if line.strip():
            return line.strip()
    return ""


class Items:
    """An ordered list without duplicates; `add` is O(1)."""

    def __init__(self) -> None:
        self._seen: dict[str, None] = {}

    def add(self, item: str) -> None:
        if item:
            self._seen.setdefault(item, None)

    def discard(self, item: str) -> None:
        self._seen.pop(item, None)

    def __contains__(self, item: str) -> bool:
        return item in self._seen

    def __len__(self) -> int:
        return len(self._seen)

    def list(self) -> list[str]:
        return list(self._seen)


# -- the artifact trail ---------------------------------------------------------------------------------
_NAME_TOKEN = re.compile(r"[\w./~@+-]+")
_CODE_NAME = re.compile(r"^_*[A-Za-z][A-Za-z0-9]*(?:(?:_+[A-Za-z0-9]+)+_*|(?:[a-z0-9][A-Z][A-Za-z0-9]*)+)$")
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


def _string_values(value: Any, depth: int = 0) -> list[str]:
    """The strings inside a tool call's arguments (commands, paths, patterns, code)."""
    if isinstance(value, str):
        return [value]
    if depth > 8:
        return []
    items = value.values() if isinstance(value, dict) else value if isinstance(value, list) else ()
    return [text for item in items for text in _string_values(item, depth + 1)]


def _file_like(token: str) -> bool:
    name = token.rsplit("/", 1)[-1]
    base, dot, extension = name.rpartition(".")
    return bool(dot and base.strip(".") and extension.lower() in _FILE_EXTENSIONS) and (
        "/" in token or extension.lower() not in ("log", "env", "lock", "c", "h", "cs", "conf", "cfg"))


# The argument names under which agents' tools take a path (a file, or the folder a search runs in).
PATH_ARGUMENTS = ("path", "file_path", "filePath", "notebook_path", "absolute_path", "target_file", "directory",
                  "dir_path")


def _tool_path(value: str) -> bool:
    """A path argument that names one place: not empty, no glob, no space, no variable, not `.`."""
    value = value.strip()
    return bool(value) and value not in (".", "./", "..") and len(value) <= 200 and not any(
        c in value for c in "*?{} $\n")


# A shell command that prints a file (how Codex and many agents read): its file arguments are reads.
_READ_PROGRAMS = frozenset("cat sed head tail nl less more bat wc".split())
_SEGMENTS = re.compile(r"&&|\|\||[;|\n]")


def shell_reads(command: str) -> list[str]:
    """The files a shell command prints (`cat a.py`, `sed -n '1,80p' src/x.py`, `nl -ba x.ts | sed -n 1,40p`):
    each segment's program among `_READ_PROGRAMS` and its arguments that are files of a known type."""
    out = []
    for segment in _SEGMENTS.split(command[:2000]):
        words = segment.split()
        if words and words[0] == "cd":
            continue
        if not words or words[0].rsplit("/", 1)[-1] not in _READ_PROGRAMS:
            continue
        for word in words[1:]:
            word = word.strip("'\"")
            if not word.startswith("-") and _file_like(word) and not any(c in word for c in "*?$"):
                out.append(word.removeprefix("./"))
    return out


def trail_names(text: str) -> list[tuple[bool, str]]:
    """(is a file, name) for the file paths and code names in `text` (`src/cli.py`, `extract_facts`,
    `SessionTree`), in order; a path's `:LINE` suffix and leading `./` dropped."""
    out = []
    for raw in _NAME_TOKEN.findall(text[: SCAN_CHARS * 4]):
        if raw.islower() and "." not in raw and "_" not in raw:  # a plain word: neither a file nor a code name
            continue
        token = raw.lstrip(",;:()[]{}<>'\"`!?*#=|&-").rstrip(".,;:()[]{}<>'\"`!?*#=|&-")
        while token.startswith(("./", "../")):  # relative to a folder the summary does not know
            token = token.split("/", 1)[1]
        token = strip_diff_prefix(token)
        if len(token) < 4 or token.startswith("//"):  # a URL's remainder (`:` splits tokens)
            continue
        if _file_like(token):
            if not is_noise_file(token):
                out.append((True, token))
            continue
        for piece in token.split("."):
            if len(piece) >= 4 and (_CODE_NAME.match(piece) or _TWO_CAPS.match(piece)) and piece not in _PLUMBING \
                    and not is_noise_name(piece):
                out.append((False, piece))
    return out


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
        path = strip_diff_prefix(path.removeprefix("./"))
        self.files[path] = self.files.get(path, 0.0) + weight

    def add_path(self, path: str) -> None:
        """A folder (or a file of no known type: `Makefile`) a tool call was pointed at: where the agent
        searched, listed or ran; it passes the same path again."""
        weight = TRAIL_WEIGHTS["call"] * (0.25 + 0.75 * self.position / self.total)
        path = strip_diff_prefix(path.removeprefix("./")).rstrip("/") or "/"
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


# -- tool calls -----------------------------------------------------------------------------------------
@dataclass
class Action:
    """One tool call as the summary sees it."""

    kind: str  # read | write | edit | patch | command | todo | delegate | other
    paths: list[tuple[str, str]] = field(
        default_factory=list
    )  # (path, op): read/added/wrote/edited/deleted/moved
    command: str | None = None
    detail: str = ""  # what changed: the first line of the edit, the tool's description
    details: dict[str, str] = field(default_factory=dict)  # per path, for a patch of several files
    todos: list[tuple[str, str]] | None = None  # (text, status) of a full to-do list


def _args(block: dict[str, Any]) -> dict[str, Any]:
    args = block.get("arguments")
    if isinstance(args, dict) and set(args) == {"input"} and isinstance(args["input"], str):
        text = args["input"].strip()
        if text.startswith("{"):
            try:
                parsed = json.loads(text)
            except ValueError:
                return args
            return parsed if isinstance(parsed, dict) else args
    return args if isinstance(args, dict) else {}


_WORDISH = re.compile(r"[A-Za-z_]{3,}")


def telling(line: str) -> bool:
    """Whether a changed line says something on its own: a word of 3+ letters and 6+ characters
    (never a fragment such as `b` or `});`)."""
    line = line.strip()
    return len(line) >= 6 and bool(_WORDISH.search(line))


def _changed_line(old: Any, new: Any) -> str:
    """The first telling line of `new` that is not in `old`: what an edit changed, in one line."""
    old_lines = set(str(old or "")[:SCAN_CHARS].splitlines())
    for line in str(new or "")[:SCAN_CHARS].splitlines():
        if telling(line) and line not in old_lines:
            return clip(line.strip(), 100)
    return ""


def _command_text(value: Any) -> str | None:
    if isinstance(value, str):
        return value
    if isinstance(value, list) and value and all(isinstance(v, str) for v in value):
        # ["bash", "-lc", "pytest -q"] runs its last element
        if len(value) >= 3 and value[1] in ("-c", "-lc"):
            return value[-1]
        return " ".join(value)
    return None


def parse_patch(text: str) -> list[tuple[str, str, str]]:
    """(path, op, first added line) for each file of an `apply_patch` envelope."""
    out: list[list[str]] = []
    removed: set[str] = set()
    for line in text.splitlines():
        if line.startswith("*** ") and ": " in line:
            head, _, path = line[4:].partition(": ")
            op = {
                "Add File": "added",
                "Update File": "edited",
                "Delete File": "deleted",
                "Move to": "moved",
            }.get(head)
            if op == "moved" and out:
                out[-1][0], out[-1][1] = f"{out[-1][0]} → {path.strip()}", "moved"
            elif op:
                out.append([path.strip(), op, ""])
                removed = set()
        elif out and line.startswith("-"):
            removed.add(line[1:].strip())
        elif (
            out
            and not out[-1][2]
            and line.startswith("+")
            and telling(line[1:])
            and line[1:].strip() not in removed
        ):
            out[-1][2] = clip(line[1:].strip(), 100)
    return [(path, op, detail) for path, op, detail in out]


def _read(args: dict[str, Any], path: str | None) -> Action | None:
    return Action("read", [(path, "read")]) if path else None


def _write(args: dict[str, Any], path: str | None) -> Action | None:
    if not path:
        return None
    lines = len(str(args.get("content") or "")[: SCAN_CHARS * 64].splitlines())  # a final newline ends a line
    return Action("write", [(path, "wrote")], detail=f"{lines} line" + ("" if lines == 1 else "s"))


def _edit(args: dict[str, Any], path: str | None) -> Action | None:
    if not path:
        return None
    edits = args.get("edits")
    if isinstance(edits, list) and edits:  # pi's multi-edit shape
        first = edits[0] if isinstance(edits[0], dict) else {}
        return Action("edit", [(path, "edited")], detail=_changed_line(first.get("oldText"), first.get("newText")))
    old = args.get("old_string", args.get("oldText", args.get("oldString")))  # OpenCode: oldString/newString
    new = args.get("new_string", args.get("newText", args.get("newString")))
    return Action("edit", [(path, "edited")], detail=_changed_line(old, new))


def _multiedit(args: dict[str, Any], path: str | None) -> Action | None:
    if not path:
        return None
    edits = [e for e in args.get("edits") or [] if isinstance(e, dict)]
    detail = next((d for d in (_changed_line(e.get("old_string"), e.get("new_string")) for e in edits) if d), "")
    return Action("edit", [(path, "edited")], detail=detail)


def _notebookedit(args: dict[str, Any], path: str | None) -> Action | None:
    return Action("edit", [(path, "edited")], detail=_changed_line("", args.get("new_source"))) if path else None


def _patch(args: dict[str, Any], path: str | None) -> Action:
    patch = args.get("input") or args.get("patch") or _patch_from_command(args) or ""
    files = parse_patch(patch) if isinstance(patch, str) else []
    return Action("patch", [(p, op) for p, op, _ in files], details={p: d for p, _, d in files if d})


def _command(args: dict[str, Any], path: str | None) -> Action:
    command = _command_text(args.get("command") if "command" in args else args.get("cmd"))
    return Action("command", command=command, detail=clip(args.get("description") or "", 120))


def _shell(args: dict[str, Any], path: str | None) -> Action:
    return _patch(args, path) if _is_patch(args) else _command(args, path)


def _todos(args: dict[str, Any], path: str | None) -> Action | None:
    if not isinstance(args.get("todos"), list):
        return None
    todos = [(str(t.get("content") or t.get("description") or ""), str(t.get("status") or ""))  # Gemini: description
             for t in args["todos"] if isinstance(t, dict)]
    return Action("todo", todos=todos)


def _plan(args: dict[str, Any], path: str | None) -> Action | None:
    if not isinstance(args.get("plan"), list):
        return None
    todos = [(str(t.get("step") or ""), str(t.get("status") or "")) for t in args["plan"] if isinstance(t, dict)]
    return Action("todo", todos=todos)


def _delegate(args: dict[str, Any], path: str | None) -> Action | None:
    return Action("delegate", detail=clip(args["description"], 120)) if isinstance(args.get("description"), str) else None


# One reader per tool shape (batchcompact/agents/spec.py TOOL_SHAPES); None: the call is not that shape after all.
SHAPES = {
    "read": _read,
    "write": _write,
    "edit": _edit,
    "multiedit": _multiedit,
    "notebookedit": _notebookedit,
    "patch": _patch,
    "shell": _shell,
    "command": _command,
    "todos": _todos,
    "plan": _plan,
    "delegate": _delegate,
}


def classify_call(block: dict[str, Any]) -> Action:
    """Map one tool call of any registered agent to an `Action` (the agents' `tools` tables)."""
    shape = tool_table().get(str(block.get("name") or "").lower())
    if shape is None:
        return Action("other")
    args = _args(block)
    path = args.get("path") or args.get("file_path") or args.get("notebook_path") or args.get("absolute_path") \
        or args.get("filePath")  # OpenCode's
    path = path if isinstance(path, str) and path else None
    return SHAPES[shape](args, path) or Action("other")


def _is_patch(args: dict[str, Any]) -> bool:
    command = args.get("command")
    return isinstance(command, list) and bool(command) and command[0] in ("apply_patch", "applypatch")


def _patch_from_command(args: dict[str, Any]) -> str | None:
    command = args.get("command")
    return command[-1] if isinstance(command, list) and len(command) > 1 else None


def check_family(command: str) -> str | None:
    """'pytest', 'npm test', 'mix test'…: the kind of check a command runs, if it runs one."""
    match = _CHECKS.search(_QUOTED.sub("", command))  # a commit message naming `pytest` runs no check
    return match.group(0) if match else None


def _program(command: str) -> str:
    for word in command.split():
        if "=" not in word and word not in ("sudo", "env", "time", "command"):
            return word.rsplit("/", 1)[-1]
    return ""


def result_failed(result: dict[str, Any], command: str | None) -> tuple[bool, str]:
    """(failed, one-line reason) for a tool result; a search that found nothing is not a failure."""
    text = message_text(result.get("content"))[-SCAN_CHARS * 4 :] if result.get("content") else ""
    exits = _exit_codes(text[-2000:])
    code = int(exits[-1]) if exits else None
    failed = bool(result.get("isError")) or (code is not None and code != 0)
    if failed and command and code in (1, None) and _program(command) in _SEARCHES:
        return False, ""
    if failed and _ABORTED.match(text.strip()):  # the user interrupted it: not a failure to fix
        return False, ""
    if failed and command and " | grep" in command and code == 1:
        return False, ""
    if not failed:
        return False, ""
    return True, _reason(text, code)


def _reason(text: str, code: int | None) -> str:
    lines = [
        line.strip() for line in text[:SCAN_CHARS].splitlines() if line.strip() and not _exit_code(line)
    ]
    line = next((ln for ln in lines if _ERRORISH.search(ln)), lines[0] if lines else "")
    line = re.sub(r"</?tool_use_error>", "", line)
    reason = clip(line, 160)
    if code not in (None, 0):
        reason = f"exit {code}" + (f": {reason}" if reason else "")
    return reason or "error"


# -- the facts ------------------------------------------------------------------------------------------
@dataclass
class Change:
    """The changes of one file, in order of first change."""

    op: str
    count: int = 0
    detail: str = ""
    pending: bool = False  # only a call whose result is past the messages: in flight, not done
    size: str = ""  # a written file's "N lines" (its detail is then what a later edit changed)
    edits_after: int = 0  # edits after the last write


@dataclass
class Facts:
    """What a handover note needs, in order of appearance."""

    requests: list[str] = field(default_factory=list)  # substantive user requests
    asked: list[Request] = field(default_factory=list)  # the same, with what became of each (handover.py)
    first_words: str | None = None  # the user's first words, even "yes, do it": a turn's request at worst
    constraints: Items = field(default_factory=Items)
    changes: dict[str, Change] = field(default_factory=dict)  # path -> what happened to it
    read: Items = field(default_factory=Items)
    commands: int = 0
    last_command: str | None = None
    patches_without_files: int = 0
    checks_passed: dict[str, str] = field(default_factory=dict)  # check family -> last passing command
    checks_run: dict[str, str] = field(default_factory=dict)  # check family -> last command, passing or not
    blocked: dict[str, str] = field(default_factory=dict)  # failure key -> description (unresolved only)
    # failure key -> the number of requests asked when it failed: a failure from before the user moved on
    # to other work is stale (`current_blocked`)
    blocked_epoch: dict[str, int] = field(default_factory=dict)
    delegated: Items = field(default_factory=Items)
    decisions: Items = field(default_factory=Items)
    todos: list[tuple[str, str]] | None = None
    last_assistant_text: str = ""
    announced: str | None = None  # "Now let me X:" at the end: what the agent was about to do
    unfinished: str | None = None
    salience: Salience = field(default_factory=lambda: Salience(1))  # the artifact trail


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


def _is_substantive(text: str) -> bool:
    return not _ACK.match(text) and len(text) >= 8


def rule_sentences(text: str) -> list[str]:
    """Statements of a rule or preference in a user's text, as written; questions never are."""
    out = []
    for sentence in _SENTENCE.split(text[:SCAN_CHARS]):
        sentence = _BULLET.sub("", sentence.strip())
        if not (10 <= len(sentence) <= 300) or sentence.endswith("?") or "?" in sentence[-3:]:
            continue
        if _QUESTION_START.match(sentence) or not _RULE.search(sentence):
            continue
        if _SELF.match(sentence) and not _SELF_RULE.search(sentence):  # "i don't think…", "let me try…"
            continue
        out.append(sentence)
    return out


def _decisions(text: str) -> list[str]:
    out = []
    for sentence in _SENTENCE.split(text[:SCAN_CHARS]):
        sentence = sentence.strip()
        if 20 < len(sentence) < 300 and not sentence.endswith((":", "?")) and _DECISION.search(sentence):
            out.append(clean_item(sentence))
    return out


class _Walker:
    """The single pass of `extract_facts`."""

    def __init__(self, total: int = 1) -> None:
        self.facts = Facts(salience=Salience(total))
        self.calls: dict[str, tuple[Action, str]] = {}  # tool call id -> (action, tool name)
        self.answered = True
        self.last_request: str | None = None
        self.failing_checks: dict[str, dict[str, None]] = {}  # check family -> failure keys
        self.model_errors: dict[str, None] = {}
        # a failed command's key -> (its steps, the files its command and output name, edited since): the
        # file edited and a step of the same program run again without failing resolves it
        self.failing_files: dict[str, tuple[set[str], frozenset[str], bool]] = {}
        self.failing_steps: dict[str, set[str]] = {}  # a failed command's key -> its steps (`command_steps`)

    def user(self, message: dict[str, Any]) -> None:
        text = message_text(message.get("content"))
        ran = _RAN.match(text)
        if ran:  # pi's `!command` bash execution, converted to user text
            command = ran.group(1)
            code = _exit_code(text[-500:])
            self.facts.commands += 1
            self.facts.last_command = clip(command, 120)
            failed = bool(code and code.group(1) != "0")
            self._command_done(command, failed, f"exit {code.group(1)}" if failed else "")
            return
        request = user_request(message)
        if request is None:
            return
        self.facts.salience.add("user", request)
        acknowledgement = bool(_ACK.match(request)) or is_acknowledgement(request)
        if acknowledgement and not (_GO_ON.match(request) or is_go_on(request)):
            return  # "thanks", "great": nothing asked
        # "continue", "ok, go on": the work asked for last is still the work (never "Finish: continue")
        self.answered = False
        self.facts.announced = None
        if not acknowledgement:
            self.last_request = clip(asked_words(request), 300)
        if self.facts.first_words is None:
            self.facts.first_words = clip(asked_words(request), 300)
        if _is_substantive(request) and not acknowledgement:
            self.facts.requests.append(self.last_request)
            rules = rule_sentences(request)
            # the Goal line leaves out the rules Constraints carries (handover.without_rules)
            line = clip(without_rules(asked_words(request), rules), 300)
            self.facts.asked.append(Request(self.last_request, line=None if line == self.last_request else line))
            for sentence in rules:
                self.facts.constraints.discard(clip(sentence))  # said again: the newest statement's place
                self.facts.constraints.add(clip(sentence))

    def assistant(self, message: dict[str, Any]) -> None:
        has_calls = False
        own_text = ""
        for block in message.get("content") or ():
            kind = block.get("type") if isinstance(block, dict) else None
            if kind == "toolCall":
                if not has_calls and self.facts.asked:
                    self.facts.asked[-1].worked = True
                has_calls = True
                action = classify_call(block)
                self._trail_call(block, action)
                self.calls[str(block.get("id", ""))] = (action, str(block.get("name") or "tool"))
                self._call(action)
            elif kind == "text" and block.get("text", "").strip():
                text = block["text"]
                self.facts.last_assistant_text = own_text = text
                self.facts.salience.add("said", text)
                for sentence in _decisions(text):
                    self.facts.decisions.add(sentence)
        if not has_calls:  # the turn ended: nothing in flight
            self.facts.announced = None
        elif own_text.strip():  # "Now let me X:" names the work in flight until the turn ends
            announce = _ANNOUNCE.match(own_text.strip()[-SCAN_CHARS:].rsplit("\n", 1)[-1].strip())
            self.facts.announced = clip(announce.group(1), 160) if announce else None
        if message.get("stopReason") not in ("error", "aborted"):
            for key in [k for k in self.model_errors]:  # work went on after the error
                self.facts.blocked.pop(key, None)
            self.model_errors.clear()
        if message.get("stopReason") == "error" and message.get("errorMessage"):
            self.model_errors[f"model:{clip(message['errorMessage'], 60)}"] = None
            self._block(f"model:{clip(message['errorMessage'], 60)}",
                        f"model error: {clip(message['errorMessage'], 160)}")
        self.answered = not has_calls and message.get("stopReason") not in ("error", "aborted", "length")
        if self.answered and own_text.strip() and self.facts.asked:
            self.facts.asked[-1].answered = True

    def _call(self, action: Action) -> None:
        if action.kind == "read":
            for path, _ in action.paths:
                self.facts.read.add(path)
        elif action.kind == "command":
            self.facts.commands += 1
            if action.command:
                self.facts.last_command = clip(action.command, 120)
        elif action.kind == "todo" and action.todos is not None:
            self.facts.todos = action.todos

    def _trail_call(self, block: dict[str, Any], action: Action) -> None:
        salience = self.facts.salience
        for path, op in action.paths:
            salience.add_file("read" if op == "read" else "edited", path.split(" → ")[-1].strip())
        args = _args(block)
        for text in _string_values(args):
            salience.add("call", text)
        if action.kind == "command" and action.command:  # `sed -n '1,80p' src/x.py`: a read, by the shell
            for path in shell_reads(action.command):
                salience.add_file("read", path)
                self.facts.read.add(path)
        for key in PATH_ARGUMENTS:  # a folder a search or listing was pointed at, a `Makefile`
            value = args.get(key)
            if isinstance(value, str) and _tool_path(value) and not _file_like(value):
                salience.add_path(value)

    def result(self, message: dict[str, Any]) -> None:
        self.facts.salience.add("output", message_text(message.get("content")))
        ids = message.get("toolCallIds") or [message.get("toolCallId", "")]
        for call_id in ids:
            action, name = self.calls.pop(
                str(call_id), (Action("other"), str(message.get("toolName") or "tool"))
            )
            self._finish(action, name, message)

    def _finish(self, action: Action, name: str, result: dict[str, Any]) -> None:
        failed, reason = result_failed(result, action.command)
        if action.kind == "command":
            self._command_done(action.command, failed, reason, label=name)
            return
        group = (
            "change" if action.kind in ("write", "edit", "patch") else name
        )  # Edit then MultiEdit: same file
        key = f"{group}:{','.join(p for p, _ in action.paths)}"
        if failed:
            target = ", ".join(f"`{clip(p, 120)}`" for p, _ in action.paths)
            self._block(key, f"`{name}`" + (f" on {target}" if target else "") + f" failed: {reason}")
            return
        self.facts.blocked.pop(key, None)
        if action.kind in ("write", "edit", "patch"):
            self._edited([path for path, _ in action.paths])
            if action.kind == "patch" and not action.paths:
                self.facts.patches_without_files += 1
            for path, op in action.paths:
                change = self.facts.changes.get(path)
                if change is None:
                    change = self.facts.changes[path] = Change(op)
                elif op in ("deleted", "wrote"):
                    change.op = op
                change.count += 1
                detail = action.details.get(path) or action.detail
                if op == "wrote":
                    change.size, change.detail, change.edits_after = detail, "", 0
                elif change.op == "wrote":
                    change.edits_after += 1
                    change.detail = detail or change.detail
                elif detail:
                    change.detail = detail
        elif action.kind == "delegate" and action.detail:
            self.facts.delegated.add(action.detail)

    def _block(self, key: str, description: str) -> None:
        """Record a failure; re-inserted, so Blocked lists the newest failures last."""
        self.facts.blocked.pop(key, None)
        self.facts.blocked[key] = description
        self.facts.blocked_epoch[key] = len(self.facts.requests)

    def _edited(self, paths: list[str]) -> None:
        """A successful change of these files: failures that named them wait for a run of their program."""
        names = {path.split(" → ")[-1].strip().rsplit("/", 1)[-1] for path in paths}
        for key, (program, files, edited) in list(self.failing_files.items()):
            if not edited and files & names:
                self.failing_files[key] = (program, files, True)

    def _command_done(self, command: str | None, failed: bool, reason: str, label: str = "bash") -> None:
        if not command:
            return
        shown = clip(command, 120)
        family = check_family(command)
        if family:
            self.facts.checks_run.pop(family, None)  # re-inserted: the newest last
            self.facts.checks_run[family] = shown
        key = f"cmd:{' '.join(command.split())}"
        steps = work_steps(command)
        if failed and only_looks(command):
            failed = False  # it looked in the wrong place: nothing to fix
        elif failed:
            self._block(key, f"`{shown}` failed" + (f": {reason}" if reason else ""))
            self.failing_steps[key] = steps
            self.failing_files[key] = (steps, failing_sources(f"{command}\n{reason}"), False)
            if family:
                self.facts.checks_passed.pop(family, None)
                for older in self.failing_checks.get(family, {}):  # the newest failing run of a check says it
                    if older != key:
                        self.facts.blocked.pop(older, None)
                self.failing_checks.setdefault(family, {})[key] = None
            return
        self.facts.blocked.pop(key, None)
        for stale in [k for k, failed_steps in self.failing_steps.items() if failed_steps & steps]:
            self.facts.blocked.pop(stale, None)  # the same step (`git commit`, `npm test`) succeeded later
            del self.failing_steps[stale]
        programs = {step.split(" ", 1)[0] for step in steps}
        for stale in [k for k, (failed_steps, _, edited) in self.failing_files.items()
                      if edited and programs & {step.split(" ", 1)[0] for step in failed_steps}]:
            self.facts.blocked.pop(stale, None)  # the failing file was edited and the same program ran again
            del self.failing_files[stale]
        if family:
            self.facts.checks_passed[family] = shown
            for stale in self.failing_checks.pop(family, {}):  # a later passing run of the same check
                self.facts.blocked.pop(stale, None)


def extract_facts(messages: list[dict[str, Any]] | tuple[dict[str, Any], ...]) -> Facts:
    """One pass over the messages; tool results are matched to their calls by id."""
    walker = _Walker(len(messages))
    for position, message in enumerate(messages):
        walker.facts.salience.position = position
        role = message.get("role")
        if role == "user":
            walker.user(message)
        elif role == "assistant":
            walker.assistant(message)
        elif role == "toolResult":
            walker.result(message)
    for action, name in walker.calls.values():  # calls whose result is past the summarized range
        if action.kind in ("write", "edit", "patch"):
            new = [path for path, _ in action.paths if path not in walker.facts.changes]
            walker._finish(action, name, {"isError": False})
            for path in new:
                walker.facts.changes[path].pending = True
    if walker.last_request and not walker.answered:
        walker.facts.unfinished = walker.last_request
    return walker.facts
