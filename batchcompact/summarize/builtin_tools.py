"""Tool calls and their results as the built-in summarizer sees them, for every agent alike.

Each agent's `tools` table (batchcompact/agents/<name>/) maps its tool names to a shape (pi
`read/write/edit/bash`, Claude Code `Read/Write/Edit/MultiEdit/NotebookEdit/Bash/TodoWrite/Task`, Codex
`exec_command/shell/apply_patch/update_plan`); `classify_call` reads a call by its shape into one `Action`.
A result is a failure by its error flag or exit code, unless a search found nothing or the user interrupted
it (`result_failed`); a shell command's steps (`command_steps`) say when a later run resolves a failure.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass, field

from batchcompact.agents import tool_table
from batchcompact.core.filetags import tag_path
from batchcompact.core.jsontypes import JsonObject, JsonValue
from batchcompact.summarize.builtin_text import SCAN_CHARS, clip, clip_whole, message_text
from batchcompact.summarize.builtin_trail import SHELL_SEGMENTS, normal_path, trail_names

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


def may_hold_exit(text: str) -> bool:
    low = text.lower()
    return _XIT_LOWER[0] in low or _XIT_LOWER[1] in low or _XIT_LOWER[2] in low


def exit_codes(text: str) -> list[str]:
    """`_EXIT.findall(text)`, skipping the full search in text that cannot match."""
    return _EXIT.findall(text) if may_hold_exit(text) else []


def exit_code(text: str) -> re.Match[str] | None:
    """`_EXIT.search(text)`, skipping the full search in text that cannot match."""
    return _EXIT.search(text) if may_hold_exit(text) else None


_ERRORISH = re.compile(
    r"error|failed|failure|not found|no such|denied|traceback|exception|cannot|could not", re.I
)
_ABORTED = re.compile(r"^\[?(?:Command aborted|Operation aborted|Request interrupted|Aborted)\b", re.I)
# Commands that only look (read, list, search): one that fails looked in the wrong place, nothing to fix.
_LOOKS = frozenset({"cat", "ls", "head", "tail", "less", "wc", "file", "stat", "tree", "du", "grep", "rg", "egrep",
                    "fgrep", "ag", "ack", "find", "fd", "which", "type", "readlink", "realpath", "pwd", "echo"})
_NO_WORK = frozenset({"cd", "pushd", "popd", "export", "set", "source", ".", "true", "false", "sleep", "printf",
                      "exit", "clear", "mkdir", "touch"})
_QUOTED = re.compile(r"\"[^\"]*\"|'[^']*'")


def command_steps(command: str) -> set[str]:
    """The `program subcommand` of each step of a shell command (`git commit`, `npm test`, `pytest`), quoted
    text and options left out: a later success of the same step resolves an earlier failure of it."""
    steps = set()
    for segment in SHELL_SEGMENTS.split(_QUOTED.sub("", command[:SCAN_CHARS])):
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


def tool_args(block: JsonObject) -> JsonObject:
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


def _changed_line(old: object, new: object) -> str:
    """The first telling line of `new` that is not in `old`: what an edit changed, in one line."""
    old_lines = set(str(old or "")[:SCAN_CHARS].splitlines())
    for line in str(new or "")[:SCAN_CHARS].splitlines():
        if telling(line) and line not in old_lines:
            return clip(line.strip(), 100)
    return ""


def _command_text(value: JsonValue) -> str | None:
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


def _read(args: JsonObject, path: str | None) -> Action | None:
    return Action("read", [(path, "read")]) if path else None


def _write(args: JsonObject, path: str | None) -> Action | None:
    if not path:
        return None
    lines = len(str(args.get("content") or "")[: SCAN_CHARS * 64].splitlines())  # a final newline ends a line
    return Action("write", [(path, "wrote")], detail=f"{lines} line" + ("" if lines == 1 else "s"))


def _edit(args: JsonObject, path: str | None) -> Action | None:
    if not path:
        return None
    edits = args.get("edits")
    if isinstance(edits, list) and edits:  # pi's multi-edit shape
        first = edits[0] if isinstance(edits[0], dict) else {}
        return Action("edit", [(path, "edited")], detail=_changed_line(first.get("oldText"), first.get("newText")))
    old = args.get("old_string", args.get("oldText", args.get("oldString")))  # OpenCode: oldString/newString
    new = args.get("new_string", args.get("newText", args.get("newString")))
    return Action("edit", [(path, "edited")], detail=_changed_line(old, new))


def _multiedit(args: JsonObject, path: str | None) -> Action | None:
    if not path:
        return None
    edits = [e for e in args.get("edits") or [] if isinstance(e, dict)]
    detail = next((d for d in (_changed_line(e.get("old_string"), e.get("new_string")) for e in edits) if d), "")
    return Action("edit", [(path, "edited")], detail=detail)


def _notebookedit(args: JsonObject, path: str | None) -> Action | None:
    return Action("edit", [(path, "edited")], detail=_changed_line("", args.get("new_source"))) if path else None


def _patch(args: JsonObject, path: str | None) -> Action:
    patch = args.get("input") or args.get("patch") or _patch_from_command(args) or ""
    files = parse_patch(patch) if isinstance(patch, str) else []
    return Action("patch", [(p, op) for p, op, _ in files], details={p: d for p, _, d in files if d})


def _command(args: JsonObject, path: str | None) -> Action:
    command = _command_text(args.get("command") if "command" in args else args.get("cmd"))
    return Action("command", command=command, detail=clip(args.get("description") or "", 120))


def _shell(args: JsonObject, path: str | None) -> Action:
    return _patch(args, path) if _is_patch(args) else _command(args, path)


def _todos(args: JsonObject, path: str | None) -> Action | None:
    if not isinstance(args.get("todos"), list):
        return None
    todos = [(str(t.get("content") or t.get("description") or ""), str(t.get("status") or ""))  # Gemini: description
             for t in args["todos"] if isinstance(t, dict)]
    return Action("todo", todos=todos)


def _plan(args: JsonObject, path: str | None) -> Action | None:
    if not isinstance(args.get("plan"), list):
        return None
    todos = [(str(t.get("step") or ""), str(t.get("status") or "")) for t in args["plan"] if isinstance(t, dict)]
    return Action("todo", todos=todos)


def _delegate(args: JsonObject, path: str | None) -> Action | None:
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


def classify_call(block: JsonObject) -> Action:
    """Map one tool call of any registered agent to an `Action` (the agents' `tools` tables)."""
    shape = tool_table().get(str(block.get("name") or "").lower())
    if shape is None:
        return Action("other")
    args = tool_args(block)
    path = args.get("path") or args.get("file_path") or args.get("notebook_path") or args.get("absolute_path") \
        or args.get("filePath")  # OpenCode's
    path = normal_path(path) if isinstance(path, str) and path else None
    return SHAPES[shape](args, path) or Action("other")


def _is_patch(args: JsonObject) -> bool:
    command = args.get("command")
    return isinstance(command, list) and bool(command) and command[0] in ("apply_patch", "applypatch")


def _patch_from_command(args: JsonObject) -> str | None:
    command = args.get("command")
    return command[-1] if isinstance(command, list) and len(command) > 1 else None


def check_family(command: str) -> str | None:
    """'pytest', 'npm test', 'mix test'…: the kind of check a command runs, if it runs one: a step of it that
    opens with the check (after `sudo`, `env X=1`, `npx`, `uv run`, `python -m`…; `npx create-next-app
    --eslint` runs no eslint, a commit message naming `pytest` no pytest)."""
    for segment in SHELL_SEGMENTS.split(_QUOTED.sub("", command[:SCAN_CHARS])):
        match = _CHECKS.match(_RUNNER.sub("", segment.strip()))
        if match:
            return match.group(0)
    return None


# What runs a program without being the step (`npx eslint .` is eslint, `uv run pytest` pytest)
_RUNNER = re.compile(r"^(?:(?:sudo|time|nohup|command|env|exec)\s+|\w+=\S*\s+|(?:npx|bunx|pnpm dlx|pnpm exec|"
                     r"yarn dlx|uv run|uvx|poetry run|pipenv run|hatch run|pdm run|python3? -m|py -m)\s+)*")
# After a pipe, what only filters the output a step prints (`| tail -3`, `| grep -v x`)
_FILTERS = frozenset("tail head grep egrep fgrep rg less more cat tee sort uniq wc cut sed awk jq column tr nl "
                     "cat".split())
_REDIRECT = re.compile(r"\s*(?:\d?>>?|&>>?|<)\s*(?:&\d|[^\s&|;]+)")
_CD = re.compile(r"^(?:cd|pushd)\s+(\S+)$")
_NO_STEP = frozenset({"echo", "sleep", "printf", "true", "false", "clear", "set", "export", "source", ".", "exit",
                      "wait"})
COMMAND_WORDS = 80  # a step said within this many characters, at a whole argument ("…" for the rest)


def say_command(command: str, cwd: str | None = None) -> str:
    """A shell command as a reader needs it: what it ran and where, "`npm test` in `frontend/`" (not "cd
    /home/…/frontend && node…"): the steps that do work (not `cd`, `echo`, `sleep`), without the filters
    piped after them (`| tail -3`), redirections (`2>&1`, `>/tmp/log`) and wrappers (`nohup`, `&`), each at
    most `COMMAND_WORDS` characters cut at a whole argument; the folder a leading `cd` went to, relative to
    the session's folder `cwd`. Never cut inside a path or a word."""
    quoted: list[str] = []

    def mask(m: re.Match[str]) -> str:  # a quoted argument, kept aside: its separators split nothing
        quoted.append(m.group(0))
        return f"\x00{len(quoted) - 1}\x00"

    masked = _QUOTED.sub(mask, command[:SCAN_CHARS])
    where = None
    steps: list[str] = []
    for segment in re.split(r"\s*(?:&&|\|\||;|\n)\s*", masked):
        segment = segment.strip()
        if not segment:
            continue
        cd = _CD.match(segment)
        if cd and not steps:
            where = cd.group(1)
            continue
        pieces = [p.strip() for p in segment.split("|")]
        step = " ".join([pieces[0]] + [p for p in pieces[1:] if p.split(" ", 1)[0] not in _FILTERS]
                        ).replace("  ", " ")
        step = _REDIRECT.sub("", step).strip().rstrip("&").strip()
        step = re.sub(r"^(?:nohup|time)\s+", "", step)
        if step and step.split(" ", 1)[0] not in _NO_STEP:
            steps.append(step)
    if not steps:
        steps = [masked.strip()]
    restore = lambda text: re.sub(r"\x00(\d+)\x00", lambda m: quoted[int(m.group(1))], text)  # noqa: E731
    said = ", ".join(f"`{_whole_words(restore(step), COMMAND_WORDS)}`" for step in steps[:2])
    if len(steps) > 2:
        said += f" and {len(steps) - 2} more"
    folder = _folder(where.strip("'\"") if where else None, cwd)
    return said + (f" in `{folder}`" if folder else "")


def _whole_words(text: str, limit: int) -> str:
    text = " ".join(text.split())
    if len(text) <= limit:
        return text
    cut = text[:limit].rsplit(" ", 1)[0]
    return (cut if cut.strip() else text[:limit]) + " …"


def _folder(where: str | None, cwd: str | None) -> str | None:
    """A `cd` target as the summary says it: relative to the session's folder, ending in "/"; None for the
    session's folder itself."""
    if not where:
        return None
    said = tag_path(normal_path(where), cwd)  # as the file tags say paths: `frontend`, `../raddit/app`
    return said.rstrip("/") + "/" if said and said != "." else None


def _program(command: str) -> str:
    for word in command.split():
        if "=" not in word and word not in ("sudo", "env", "time", "command"):
            return word.rsplit("/", 1)[-1]
    return ""


def result_failed(result: JsonObject, command: str | None) -> tuple[bool, str]:
    """(failed, one-line reason) for a tool result; a search that found nothing is not a failure."""
    text = message_text(result.get("content"))[-SCAN_CHARS * 4 :] if result.get("content") else ""
    exits = exit_codes(text[-2000:])
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
    lines = (  # lazily: the lines after the first errorish one are never looked at
        line.strip() for line in text[:SCAN_CHARS].splitlines() if line.strip() and not exit_code(line)
    )
    first = next(lines, "")
    line = first if _ERRORISH.search(first) else next((ln for ln in lines if _ERRORISH.search(ln)), first)
    line = re.sub(r"</?tool_use_error>", "", line)
    reason = clip_whole(line, 160)  # at a whole word: never inside a path
    if code not in (None, 0):
        reason = f"exit {code}" + (f": {reason}" if reason else "")
    return reason or "error"
