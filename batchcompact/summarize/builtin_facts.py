"""What the built-in summarizer reads from a conversation, for every agent alike.

Every agent's reader hands the planner pi-shaped LLM messages (`user`, `assistant` with `toolCall` blocks,
`toolResult`); `builtin_tools.classify_call` reads each call by its agent's tool table into one `Action`;
`extract_facts` walks the messages once, matches every result to its call, and keeps what a handover note
needs: requests and rules (`user_message.read_user_message`), changes, checks, failures, to-dos, work in flight and the
artifact trail (`builtin_trail.Salience`).

Invariants: one pass, linear in the size of the messages (every "seen" check is a dict or set lookup,
every text is clipped before it is split); deterministic (no clock, no randomness); a change counts only
when its tool result did not report an error; a failure is "blocked" only while no later run of the same
command (or the same check) succeeded.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from batchcompact.core.filetags import tag_path
from batchcompact.core.jsontypes import JsonObject
from batchcompact.summarize.builtin_text import SCAN_CHARS, Items, clip, message_text
from batchcompact.summarize.builtin_tools import (
    Action,
    check_family,
    classify_call,
    exit_code,
    failing_sources,
    only_looks,
    result_failed,
    say_command,
    tool_args,
    work_steps,
)
from batchcompact.summarize.builtin_trail import (
    PATH_ARGUMENTS,
    Salience,
    file_like,
    shell_reads,
    string_values,
    tool_path,
)
from batchcompact.summarize.builtin_words import ANNOUNCE, decisions
from batchcompact.summarize.handover import Request
from batchcompact.summarize.user_message import (
    ACKNOWLEDGEMENT,
    COMMAND,
    GO_AHEAD,
    INJECTED,
    RAN,
    is_temporary,
    read_user_message,
)

REQUEST_CHARS = 700  # a request as the Goal may say it: its outline (600) and what it pasted, named


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
    # a temporary rule ("Don't change anything yet.") -> the go-ahead that lifted it ("Go ahead")
    lifted: dict[str, str] = field(default_factory=dict)
    go_ahead: str | None = None  # the span's last go-ahead: it lifts an earlier checkpoint's temporary rules
    salience: Salience = field(default_factory=lambda: Salience(1))  # the artifact trail
    cwd: str | None = None  # the session's working folder (the call's meta), which paths are said relative to




class _Walker:
    """The single pass of `extract_facts`."""

    def __init__(self, total: int = 1) -> None:
        self.facts = Facts(salience=Salience(total))
        self.calls: dict[str, tuple[Action, str]] = {}  # tool call id -> (action, tool name)
        self.answered = True
        self.last_request: str | None = None
        self.after_command = False  # the last message was a custom slash command's line: its template may follow
        self.failing_checks: dict[str, dict[str, None]] = {}  # check family -> failure keys
        self.model_errors: dict[str, None] = {}
        # a failed command's key -> (its steps, the files its command and output name, edited since): the
        # file edited and a step of the same program run again without failing resolves it
        self.failing_files: dict[str, tuple[set[str], frozenset[str], bool]] = {}
        self.failing_steps: dict[str, set[str]] = {}  # a failed command's key -> its steps (`command_steps`)

    def user(self, message: JsonObject) -> None:
        """A user message, as `read_user_message` says it is: a harness's prompt or command is nothing, pi's
        `!command` a command, an acknowledgement nothing asked, a go-ahead the request before still the work,
        a request or a question a Goal line, its rules Constraints'."""
        said = read_user_message(message, after_command=self.after_command)
        self.after_command = bool(said and said.command and said.kind != RAN)  # its template may follow
        if said is None or said.kind in (INJECTED, COMMAND):
            return
        if said.kind == RAN:  # pi's `!command` bash execution, converted to user text
            command = said.command or ""
            code = exit_code(said.words[-500:])
            self.facts.commands += 1
            self.facts.last_command = clip(command, 120)
            failed = code is not None and code.group(1) != "0"
            self._command_done(command, failed, f"exit {code.group(1)}" if code is not None and failed else "")
            return
        self.facts.salience.add("user", said.words)
        if said.go_ahead:  # "Go ahead": the rules bounded by "yet", "for now" no longer bind (is_temporary)
            self.facts.go_ahead = said.go_ahead
            for rule in self.facts.constraints.list():
                if is_temporary(rule):
                    self.facts.lifted.setdefault(rule, said.go_ahead)
        if said.kind == ACKNOWLEDGEMENT:
            return  # "thanks", "great": nothing asked
        # "continue", "ok, go on": the work asked for last is still the work (never "Finish: continue")
        self.answered = False
        self.facts.announced = None
        if said.kind != GO_AHEAD:
            self.last_request = clip(said.asked, REQUEST_CHARS)
        if self.facts.first_words is None:
            self.facts.first_words = clip(said.asked, REQUEST_CHARS)
        if said.substantive and said.kind != GO_AHEAD:
            assert self.last_request is not None  # set just above for every kind but GO_AHEAD
            self.facts.requests.append(self.last_request)
            # the Goal line leaves out the rules Constraints carries, each said once (user_message.said_once);
            # the first request is the session's goal, said whole, its rules carried too
            carried = said.rules if len(self.facts.asked) == 0 else said.carried
            line = clip(said.line, REQUEST_CHARS)
            self.facts.asked.append(Request(self.last_request, line=None if line == self.last_request else line,
                                            kind=said.kind))
            for sentence in carried:
                self.facts.constraints.discard(clip(sentence))  # said again: the newest statement's place
                self.facts.constraints.add(clip(sentence))
                self.facts.lifted.pop(clip(sentence), None)  # said again after the go-ahead: it binds again

    def assistant(self, message: JsonObject) -> None:
        self.after_command = False
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
                for sentence in decisions(text):
                    self.facts.decisions.add(sentence)
        if not has_calls:  # the turn ended: nothing in flight
            self.facts.announced = None
        elif own_text.strip():  # "Now let me X:" names the work in flight until the turn ends
            announce = ANNOUNCE.match(own_text.strip()[-SCAN_CHARS:].rsplit("\n", 1)[-1].strip())
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

    def _trail_call(self, block: JsonObject, action: Action) -> None:
        salience = self.facts.salience
        for path, op in action.paths:
            salience.add_file("read" if op == "read" else "edited", path.split(" → ")[-1].strip())
        args = tool_args(block)
        for text in string_values(args):
            salience.add("call", text)
        if action.kind == "command" and action.command:  # `sed -n '1,80p' src/x.py`: a read, by the shell
            for path in shell_reads(action.command):
                salience.add_file("read", path)
                self.facts.read.add(path)
        for key in PATH_ARGUMENTS:  # a folder a search or listing was pointed at, a `Makefile`
            value = args.get(key)
            if isinstance(value, str) and tool_path(value) and not file_like(value):
                salience.add_path(value)

    def result(self, message: JsonObject) -> None:
        self.facts.salience.add("output", message_text(message.get("content")))
        ids = message.get("toolCallIds") or [message.get("toolCallId", "")]
        for call_id in ids:
            action, name = self.calls.pop(
                str(call_id), (Action("other"), str(message.get("toolName") or "tool"))
            )
            self._finish(action, name, message)

    def _finish(self, action: Action, name: str, result: JsonObject) -> None:
        failed, reason = result_failed(result, action.command)
        if action.kind == "command":
            self._command_done(action.command, failed, reason, label=name)
            return
        group = (
            "change" if action.kind in ("write", "edit", "patch") else name
        )  # Edit then MultiEdit: same file
        key = f"{group}:{','.join(p for p, _ in action.paths)}"
        if failed:
            target = ", ".join(f"`{tag_path(p, self.facts.cwd) or p}`" for p, _ in action.paths)
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
        shown = say_command(command, self.facts.cwd)  # "`npm test` in `frontend/`": what it ran and where
        family = check_family(command)
        if family:
            self.facts.checks_run.pop(family, None)  # re-inserted: the newest last
            self.facts.checks_run[family] = shown
        key = f"cmd:{' '.join(command.split())}"
        steps = work_steps(command)
        if failed and only_looks(command):
            failed = False  # it looked in the wrong place: nothing to fix
        elif failed:
            self._block(key, f"{shown} failed" + (f": {reason}" if reason else ""))
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


def extract_facts(messages: list[JsonObject] | tuple[JsonObject, ...], cwd: str | None = None) -> Facts:
    """One pass over the messages; tool results are matched to their calls by id. `cwd`: the session's
    working folder, which paths and commands are said relative to."""
    walker = _Walker(len(messages))
    walker.facts.cwd = cwd
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
