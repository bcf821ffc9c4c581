"""What a user message is, in one place (docs/summaries.md, "What a user message is").

One vocabulary: a user message is `injected` (a harness's prompt where the user's words go: tagged context, an
instruction file, a maintenance prompt, a mode's instructions, a slash command's template), a `command` (a
harness command the user typed: `/model x`), `ran` (pi's `!command`), an `acknowledgement` ("ok", "thanks"),
a `go-ahead` ("yes do it", "continue"), a `question`, `pasted` material alone, `rules` alone, or a `request`;
and of each message its own words, what it pasted (said by what it is: `asked_words`), its rule sentences
(`rule_sentences`), and the words by which it lets the agent go on (`go_ahead`). `read_user_message` is the
one classifying function: the walker (builtin_facts), every section and the handover rules (handover.py) read
its answer. The words each kind is recognised by are the tuples below; the patterns are built from them.

Pure functions over one message's text, clipped before it is split; no clock, no randomness.
"""

from __future__ import annotations

import dataclasses
import re
from collections.abc import Iterator
from dataclasses import dataclass

from batchcompact.core.jsontypes import JsonObject
from batchcompact.summarize.builtin_text import BULLET, SCAN_CHARS, SENTENCE, clip, message_text

# -- the vocabulary -------------------------------------------------------------------------------------
INJECTED, COMMAND, RAN = "injected", "command", "ran"
ACKNOWLEDGEMENT, GO_AHEAD, QUESTION, PASTED, RULES, REQUEST = (
    "acknowledgement", "go-ahead", "question", "pasted", "rules", "request")

OK = r"ok(?:ay)?"
# Heard you, nothing asked ("ok", "thanks!", "looks good")
ACKNOWLEDGEMENTS = (OK, "yes", "yep", "yeah", "sure", "great", "perfect", "nice", "cool", "good", "awesome",
                    "alright", "all right", r"thanks?", "thank you", "ty", "lgtm", "looks good", "sounds good",
                    "works", "it works", "that works", "done", "fine", "right", "exactly", "correct", "got it",
                    "makes sense", "yes please")
# Go on with the work asked ("do it", "go ahead", "continue")
GO_AHEADS = ("do it", "go", "go ahead", "go for it", "proceed", "continue", "next", "ship it", "commit",
             # the same in Chinese and Korean ("ok 開始": ok, start), as the users of the public sessions write
             "開始", "开始", "繼續", "继续", "請繼續", "请继续", "好的", "계속", "진행", "시작")
# What may follow an acknowledgement or a go-ahead and still ask nothing new ("yeah, do it all")
AS_ASKED = ("it all", "all", "everything", "both", "that", "please")
# One word of reply, whatever follows it ("ok?", "no", "nope", "y", "thank you")
ONE_WORD = (OK, "yes", "yep", "y", "no", "nope", "sure", r"thanks?(?: you)?", "continue", "go on", "go ahead",
            "proceed", "do it", "lgtm", "sounds good", "great", "perfect", "nice", "cool", "next")
# A go-ahead's words inside an acknowledgement ("great, go ahead", "yeah, do it all")
GO_WORDS = ("yes", "yep", "yeah", "sure", *GO_AHEADS, "please", "all", "everything", "both")
# A go-on alone ("ok, continue", "yes", "keep going")
GO_ON = ("yes", "yep", "y", "sure", "continue", "go on", "go ahead", "proceed", "do it", "next", "keep going",
         "開始", "开始", "繼續", "继续", "請繼續", "请继续", "계속", "진행", "시작")
# What opens a request without asking anything ("Looks right.", "Good, but", "Ok, now"; request_gist)
OPENINGS = (OK, "great", "good", "nice", "cool", "perfect", "alright", "thanks", "thank you", "yes", "yeah",
            "sure", "right", "looks (?:good|right|great|fine)", "that works", "lgtm")
# The words a question opens with, here and for the rule sentences. A request may also open with
# "isn't/doesn't/don't" ("don't you think…?"); a rule sentence never does ("Don't push to main.").
QUESTION_WORDS = (r"do|does|did|can|could|would|will|is|are|was|were|should|shall|what|why|how|where|when|which|"
                  r"who|have|has|any idea")
# A harness's own commands: they set the agent up, they ask for no work (a custom command does)
HARNESS_COMMANDS = frozenset(
    "model clear compact config cost help login logout status resume exit quit mcp permissions memory doctor "
    "vim theme terminal-setup ide agents hooks add-dir export release-notes upgrade settings tree fork session "
    "hotkeys reload changelog copy share name new context usage output-style statusline privacy-settings "
    "fast effort rewind plugin skills approvals diff mention init-model".split())


def _any(words: tuple[str, ...]) -> str:
    return "|".join(words)


_THANKS = re.compile(rf"^(?:(?:{_any(ACKNOWLEDGEMENTS + GO_AHEADS + AS_ASKED)})[\s,.!:;-]*)+$", re.IGNORECASE)
ONE_WORD_REPLY = re.compile(rf"^(?:{_any(ONE_WORD)})\W*$", re.IGNORECASE)
_GO = re.compile(rf"\b(?:{_any(GO_WORDS)})\b", re.IGNORECASE)
_GO_ON = re.compile(rf"^(?:{OK}[,\s]*)?(?:{_any(GO_ON)})?\W*$", re.IGNORECASE)
OPENING = re.compile(rf"^(?:(?:{_any(OPENINGS)})\b[\s,.!]*(?:but\s+|and\s+|so\s+)?)*"
                     r"(?:(?:please|can you|could you|would you)\b[\s,]*)?", re.IGNORECASE)
_QUESTION = re.compile(rf"^(?:wait\b|hmm+\b|so\b|and\b|but\b|{OK}\b|also\b)?[,\s]*(?:{QUESTION_WORDS}|isn't|doesn't|"
                       r"don't)\b", re.IGNORECASE)
_ASKS_WORK = re.compile(
    r"\b(?:can you|could you|would you|will you|please|make|add|fix|write|create|implement|change|update|"
    r"remove|delete|rename|refactor|move|port|build|run|test|commit|push|release)\b",
    re.IGNORECASE,
)


# -- injected prompts, by shape -------------------------------------------------------------------------
# A tagged block a harness writes (`<environment_context>`, `<ide_opened_file>`, `<permissions instructions>`,
# `<system-reminder>`): a name with `_`, `-` or a space, which HTML's names never have
_TAG_BLOCK = re.compile(r"\A\s*<([a-z][a-z0-9]*(?:[ _-][a-z0-9]+)+)(?:\s[^>\n]*)?>.*?</\1>\s*", re.DOTALL)
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
    "Base directory for this skill:",  # Claude Code loading a skill's instructions
)
# A chat gateway's envelope around the user's words (OpenClaw relays WhatsApp or Telegram so): a leading
# bracket holding a date and time ("[WhatsApp +81… +2m 2026-01-31 16:48 GMT+9] "), a queue's label before it
# ("[Queued messages while agent was busy] --- Queued #1 "), a gateway's notice line ("System: [2026-02-01
# 10:51:58 GMT+9] WhatsApp gateway connected."), and a trailing id ("[message_id: 3A79…]"): the user's words
# are what is inside
_STAMP = r"\[[^\]\n]{0,80}\d{4}-\d{2}-\d{2}[ T]\d{1,2}:\d{2}[^\]\n]{0,40}\]"
_ENVELOPE_HEAD = re.compile(
    rf"\A\s*(?:\[[^\]\n]{{1,80}}\]\s*-{{3,}}\s*Queued #\d+\s*|System:\s*{_STAMP}[^\n]*?(?:[.!](?=\s)|\n|$)\s*|{_STAMP}\s*)+"
)
_ENVELOPE_ID = re.compile(r"\s*\[[a-z]+_id:\s*[\w.:-]+\]")
# A command typed as text: "/mode", "/model opus" (a harness's with one argument; "/fix-issue 42" asks work)
_TYPED_COMMAND = re.compile(r"^/(\S+)(\s+\S+)?$")
# A choice answered by its number or letter ("1", "b)", "2."): the request before stays the work
_CHOICE = re.compile(r"^\(?(?:\d{1,2}|[a-dA-D])[.)]?$")
_SYSTEM_REMINDER = re.compile(r"<system-reminder>.*?</system-reminder>", re.DOTALL)
_COMMAND_NAME = re.compile(r"<command-name>\s*(\S+)\s*</command-name>")
_COMMAND_ARGS = re.compile(r"<command-args>(.*?)</command-args>", re.DOTALL)
# A maintenance prompt tells the agent what to answer when there is nothing to do: "If nothing to store,
# reply with NO_REPLY." (a memory flush), "reply HEARTBEAT_OK" (a heartbeat)
_MAINTENANCE = re.compile(r"\b(?i:reply|respond|answer)(?: only)?(?: (?i:with))?:?\s+[\"'`]?[A-Z][A-Z0-9]*_[A-Z0-9_]+\b")
MAINTENANCE_CHARS = 3000  # a maintenance prompt is short; a long message naming `NO_REPLY` is the user's
# A mode's instructions open by naming the agent's mode: "[PLAN MODE ACTIVE] …", "Plan mode is active",
# "You are now in Default mode", "# Plan Mode"
_MODE = re.compile(r"\A\s*(?:\[[A-Z][A-Z0-9 _-]{2,}\]|(?i:#+\s*(?:[\w-]+\s+)?mode\b|(?:[\w-]+ )?mode is (?:now )?"
                   r"(?:active|on|enabled|engaged)\b|you are (?:now )?in (?:[\w-]+ )?mode\b))")
# What Claude Code appends to a custom command's template when it has arguments
_ARGUMENTS = re.compile(r"\n\s*ARGUMENTS: [^\n]*\s*\Z")
RAN_COMMAND = re.compile(r"^Ran `([^`]*)`")  # pi's `!command`, converted to user text


# -- pasted material ------------------------------------------------------------------------------------
# A line of a pasted terminal screen: one that opens with a box-drawing character (`─────`, `│ > `, `╭─`) or a
# spinner glyph and a word (`⠇ Working...`), a prompt (`❯ `, `➜ `, `>>> `, `dev@host:~/app$ `), or a line with a
# progress bar (`███░░░ 60%`, `[=====>   ]`). A user's own words never open a line so.
SCREEN_LINE = (r"[ \t]*(?:[\u2500-\u257f]|[\u2800-\u28ff][ \t]+\S|(?:[❯➜]|>>>)[ \t]|"
               r"[\w.-]+@[\w.-]+:[^\n]{0,80}?[$#][ \t]|"
               r"(?=[^\n]*(?:[\u2580-\u259f]{3}|\[[=#]{3,}[=#>]*[ .-]*\])))")
_SCREEN = re.compile(SCREEN_LINE)
PASTED_START = re.compile(rf"^\s*(?:\+\s|\d+\s+[-+]\s|```|diff --git|@@|\||<[a-z])|^{SCREEN_LINE}")
# Where pasted material starts inside a request: a traceback, a fenced block, a diff, a log (a line of its own),
# a terminal screen
_PASTE_START = re.compile(rf"^(?:\s*(?:Traceback \(most recent call last\)|```|diff --git|@@ |\$ |"
                          rf"(?:[A-Z]\w*)?(?:Error|Exception): [^\n]*\n\s+at )|{SCREEN_LINE})",
                          re.MULTILINE)  # `Error: …` then `at`: a JS stack
# The line of a pasted traceback or stack that says what went wrong: `KeyError: 'cursor'`
_ERROR_LINE = re.compile(r"^\s*((?:[A-Za-z_][\w.]*)?(?:Error|Exception|Exit|Interrupt)\b.*)$", re.MULTILINE)
SCAN_PASTE = 2000  # of a pasted traceback, the end (Python) or the start (a JS stack) holds the error line
ERROR_CHARS = 100
# A request longer than this is said by its outline (its opening, headings and marked lines)
LONG_REQUEST = 600
OUTLINE_CHARS = 600
OPENING_CHARS = 300
_HEADING = re.compile(r"^\s{0,3}(?:#{1,6}\s+(\S.{0,100}?)\s*#*|([A-Z][A-Z0-9 /&()'-]{3,80}[A-Z0-9):]))\s*$")
_MARKED = re.compile(r"\*\*[^*\n]{2,}\*\*|\b(?:CRITICAL|Critical|IMPORTANT|Important|MUST|NEVER|WARNING)\b|⚠|🔴|❗")
_RULE_LINE = re.compile(r"^[-=_*#~\s]{3,}$")  # a ruler: `-----`, `=====`
_NUMBERED = re.compile(r"^\d+[.)]\s+\S")


# -- rules ----------------------------------------------------------------------------------------------
_RULE = re.compile(
    r"\b(?:must|mustn't|never|always|don't|do not|should|shouldn't|prefer|make sure|ensure|avoid|only use|"
    r"please use|use only|keep|no need to|instead|from now on|every time|each time|whenever)\b"
    r"|\buse\b[^.!?\n]{1,60}?,?\s+not\b",  # "use X, not Y": which thing to use
    re.IGNORECASE,
)
_QUESTION_START = re.compile(rf"^(?:wait\b|hmm\b|so\b|and\b|but\b)?[,\s]*(?:{QUESTION_WORDS})\b", re.IGNORECASE)
# An auxiliary that opens an imperative, not a question: "Do not change the public API.", "Do keep the old
# name.", "Have the tests run first always." (no subject after it: a question asks "do you…", "have we…").
# Only for a sentence without a '?' (rule_sentences skips those first).
_SUBJECT = r"(?:you|we|i|it|they|he|she|this|that|these|those|there|anyone|anybody|someone|everything)\b"
_IMPERATIVE_AUX = re.compile(rf"^(?:do|have)\s+(?!{_SUBJECT})[a-z]", re.IGNORECASE)
_SELF = re.compile(rf"^(?:{OK},?\s+|so,?\s+|and\s+)?(?:i|i'm|i've|let me|let's|we|we're|maybe|perhaps)\b", re.I)
_SELF_RULE = re.compile(r"\b(?:want|prefer|need|'d like|would like|never|always|don't want|do not want)\b", re.I)
_LIST_ITEM = re.compile(r"^\s*(?:[-*•+]|\d+[.)])\s+\S")
LIST_RULE_CHARS = 200  # a rule that introduces a list ("Keep brand name:") with its items, at most this long
# A rule for one step: it binds until the user says to go on ("Don't change anything yet.", "Leave the tests
# alone for now.", "Do not push until I say so.")
_TEMPORARY = re.compile(
    r"\b(?:yet|for now|for the moment|for the time being|until (?:i|we) (?:say|tell|confirm|approve|review|"
    r"give|look|check)|until further notice|before (?:i|we) (?:say|confirm|approve|review|look|check))\b",
    re.IGNORECASE)
_STANDING = re.compile(r"\b(?:never|always|from now on|every time|each time|whenever)\b", re.IGNORECASE)
# A go-ahead: the user lifts such a rule ("Go ahead.", "ok, now do it", "you can fix them now", "proceed")
_GO_AHEAD = re.compile(
    r"\b(?:go ahead|go for it|(?:now )?do it|proceed|you can (?:now )?(?:start|go|change|edit|fix|proceed|make|"
    r"apply|implement|commit|push)|now (?:fix|change|apply|implement|make|edit|commit|push)|"
    r"(?:fix|change|apply) (?:it|them|those|these|that|all)(?: now)?)\b", re.IGNORECASE)
# A request for a change lifts it too: a sentence, or its "and"/"then" part, that opens with a verb of
# change ("Run the suite and fix what broke.", "Write docs for X.", "Now rename `x`."), not one that
# mentions a change ("Why did you change X?", "after my last change to X").
_ASKS_CHANGE = re.compile(
    rf"(?:^|[.!?;]\s+|\band\s+|\bthen\s+)(?:(?:{OK}|now|please|just|so|then|also|can you|could you|would you)"
    r"[,\s]+)*((?:fix|add|remove|delete|change|rename|write|update|create|implement|refactor|revert|undo|apply|"
    r"commit|push|move|split|port|edit|roll back)\b(?:\s+[\w`'./-]+){0,2})", re.IGNORECASE)
# A request less its rules keeps its line only when this many significant words remain.
REQUEST_WORDS = 3
# What a user says before a rule to correct the agent, asking nothing by itself: "That's not what I meant.
# Keep the public signature of `paginate` unchanged." is its rule.
_REACTION = re.compile(
    r"^\W*(?:(?:no+|nope|wrong|stop|wait|hm+|ugh|sorry|not quite|not like that|not that|"
    r"that(?:'s| is) (?:not (?:it|right|what i (?:meant|asked for|asked|wanted))|wrong)|you misunderstood)"
    r"\b[\s,.!;:-]*)+$", re.IGNORECASE)
_EMPTY_ITEM = re.compile(r"^\s*(?:[-*•+]|\d+[.)])?\s*$")
# What `asked_words` says came with a request: " (with a traceback: KeyError: 'cursor')"
WITH = re.compile(r" \(with (?:a traceback|an error|a pasted terminal screen|pasted output)\b[^\n]*\)$")

# A word in any script (Korean `리드미`, `작업`); a run of Chinese or Japanese characters, written without
# spaces, counts by its character pairs (`一次性外部` -> 一次, 次性, 性外, 外部)
_WORD = re.compile(r"[^\W_][\w'-]*")
_CJK = re.compile(r"[\u3040-\u30ff\u3400-\u4dbf\u4e00-\u9fff\uf900-\ufaff]+")
_STOP = frozenset(
    "a an the and or but so to of in on at for with from by is are was were be been it its this that these "
    "those i you we he she they me my your our us them do does did can could would will should shall may "
    "might must have has had not no yes ok okay please just then than now also too very really there here "
    "what why how where when which who let lets i'm it's don't can't".split()
)


@dataclass(frozen=True)
class UserMessage:
    """One user message as the summary reads it."""

    kind: str
    words: str = ""  # the user's words: the message less the blocks a harness put around them
    asked: str = ""  # as a Goal line says it (`asked_words`): pasted material named, a long request outlined
    rules: tuple[str, ...] = ()  # the rule sentences of its own words (not of what it pasted)
    # a later Goal line without the rule sentences Constraints carries ("": its rules say it all) and those
    # rules (`said_once`)
    line: str = ""
    carried: tuple[str, ...] = ()
    go_ahead: str | None = None  # the words by which it lifts a temporary rule ("go ahead", "fix what broke")
    substantive: bool = False  # long enough to be a request (not "hm?", "fix it")
    command: str | None = None  # a slash command it runs (`/review`): its template may follow


def read_user_message(message: JsonObject, after_command: bool = False) -> UserMessage | None:
    """What a user message is (the module's vocabulary); None for a message that is no user's (another
    role). `after_command`: the message follows a custom slash command's line with no reply between (Claude
    Code's expanded template)."""
    if message.get("role") != "user":
        return None
    if message.get("agentRole"):
        return UserMessage(INJECTED)
    text = message_text(message.get("content"))[: SCAN_CHARS * 4]
    if "<system-reminder>" in text:
        text = _SYSTEM_REMINDER.sub("", text)
    command = _COMMAND_NAME.search(text)
    if command and text.lstrip().startswith("<command-"):
        found = _COMMAND_ARGS.search(text)  # before or after the name: Claude Code wrote both orders
        name, args = command.group(1), (found.group(1) if found else "").strip()
        if name.lstrip("/").lower() in HARNESS_COMMANDS:
            return UserMessage(COMMAND)
        # a custom command: the user's ask is the command and its arguments, its template follows
        said = classify(f"{name} {args}".strip(), command=name)
        return dataclasses.replace(said, kind=REQUEST if said.kind in (ACKNOWLEDGEMENT, GO_AHEAD) else said.kind,
                                   asked=said.asked or said.words, line=said.line or said.words, substantive=True)
    while (block := _TAG_BLOCK.match(text)) is not None:
        text = text[block.end():]
    if "[" in text:
        text = _ENVELOPE_ID.sub("", _ENVELOPE_HEAD.sub("", text, count=1))
    stripped = text.strip()
    if not stripped or stripped.startswith(_INJECTED_PREFIXES) or is_injected(stripped, after_command):
        return UserMessage(INJECTED)
    typed = _TYPED_COMMAND.match(stripped)  # a bare slash command (/mode), or a harness's with its argument
    if typed and (typed.group(2) is None or typed.group(1).lower() in HARNESS_COMMANDS):
        return UserMessage(COMMAND)
    ran = RAN_COMMAND.match(stripped)
    if ran:
        return UserMessage(RAN, words=stripped, command=ran.group(1))
    return classify(stripped)


def is_injected(text: str, after_command: bool = False) -> bool:
    """A prompt a harness wrote in the user's place, by its shape: a maintenance prompt (it names the token
    that ends it silently, `NO_REPLY`), a mode's instructions, a slash command's template."""
    if after_command or _ARGUMENTS.search(text[-400:]):
        return True
    if _MODE.match(text):
        return True
    return len(text) <= MAINTENANCE_CHARS and bool(_MAINTENANCE.search(text))


def classify(text: str, command: str | None = None) -> UserMessage:
    """The kind of a message of the user's own words (`read_user_message` less the harness's shapes)."""
    go = go_ahead(text)
    if _CHOICE.match(text.strip()):
        return UserMessage(GO_AHEAD, words=text, asked=text, go_ahead=text.strip())
    if is_acknowledgement(text):
        return UserMessage(GO_AHEAD if is_go_on(text) else ACKNOWLEDGEMENT, words=text, asked=text, go_ahead=go)
    asked = asked_words(text)
    rules = rule_sentences(own_words(text))
    line, carried = said_once(asked, rules)
    if not line:
        kind = RULES
    elif is_pasted(text):
        kind = PASTED
    elif is_question(clip(asked, 300)):
        kind = QUESTION
    else:
        kind = REQUEST
    return UserMessage(kind, words=text, asked=asked, rules=tuple(rules), line=line, carried=tuple(carried),
                       go_ahead=go, substantive=is_substantive(text), command=command)


# -- acknowledgements, go-aheads, questions -------------------------------------------------------------
def is_acknowledgement(text: str) -> bool:
    """"ok", "thanks!", "yes do it", "great, go ahead", "nope": nothing new asked."""
    text = text.strip()
    return bool(_THANKS.match(text) or ONE_WORD_REPLY.match(text))


def is_go_on(text: str) -> bool:
    """An acknowledgement that tells the agent to go on ("ok", "yes do it", "yeah, do it all"): the request
    before it is still the work."""
    return bool(_GO_ON.match(text.strip())) or is_acknowledgement(text) and bool(_GO.search(text))


def is_substantive(text: str) -> bool:
    return not ONE_WORD_REPLY.match(text) and len(text) >= 8


# A sentence that tells the agent to do something: after a question ("Why did you change X? Undo that
# part."), it makes the message a request.
_IMPERATIVE = re.compile(
    r"^(?:please\s+|now\s+|then\s+|just\s+|and\s+)?(?:undo|revert|fix|add|remove|delete|drop|change|make|use|"
    r"keep|run|try|put|move|rename|write|update|create|implement|split|refactor|commit|push|stop|do|don'?t|"
    r"never|always|go ahead|roll back)\b", re.IGNORECASE)


def is_question(text: str) -> bool:
    """A question rather than a request for work: "wait, do we only limit POST requests?" is one,
    "can you add a test?" and "Why did you change the import order? Undo that part." are requests."""
    text = text.strip().replace("？", "?")  # a full-width question mark (Chinese, Japanese) too
    sentences = re.split(r"(?<=[.!?])\s+", text[:400])
    first = sentences[0]
    if _ASKS_WORK.search(first) and not first.lower().startswith(("what", "why", "how", "where", "which", "who")):
        return False
    if any(not s.endswith("?") and _IMPERATIVE.match(s) for s in sentences[1:]):
        return False  # a question, then what to do about it
    return text.endswith("?") and len(text) < 400 or bool(_QUESTION.match(text)) and "?" in text[:400]


def is_pasted(text: str) -> bool:
    """Pasted material that asks nothing by itself: a diff, a numbered listing, a table, a code block, a
    terminal screen, a link alone."""
    return bool(PASTED_START.match(text) or _LINK_ALONE.match(text))


_LINK_ALONE = re.compile(r"^\s*\S+://\S+\s*$")


# -- the user's words and what they pasted --------------------------------------------------------------
def asked_words(text: str) -> str:
    """A request as its Goal line says it: the user's words before the material they pasted after them (a
    traceback, a code block, a diff, a shell log), which the line names instead of quoting its start; a long
    request (`LONG_REQUEST`) by its outline (`outline`)."""
    start = _PASTE_START.search(text)
    if start is not None and start.start() > LONG_REQUEST and _SCREEN.match(text, start.start()):
        start = None  # a box or a prompt far into a long document is its diagram, not a terminal screen
    if start is None or not text[: start.start()].strip():
        return outline(text) if len(text) > LONG_REQUEST else text
    paste = text[start.start():].lstrip()
    own = text[: start.start()].rstrip()
    own = outline(own) if len(own) > LONG_REQUEST else own
    if paste.startswith("Traceback"):
        raised = _raised(paste)
        return f"{own} (with a traceback" + (f": {raised})" if raised else ")")
    errors = _ERROR_LINE.findall(paste[:SCAN_PASTE])  # a JS stack names it first
    if _SCREEN.match(text, start.start()):  # what the screen shows went wrong, when it shows an error
        pasted = "a pasted terminal screen" + (f": {_one_line(errors[0])}" if errors else "")
    elif errors and not paste.startswith(("```", "diff", "@@", "$")):
        pasted = f"an error: {_one_line(errors[0])}"
    else:
        pasted = "pasted output"
    return f"{own} (with {pasted})"


def outline(text: str) -> str:
    """A long request or pasted report as a reader needs it: its opening (its first lines up to a heading,
    a list, a ruler or a numbered paragraph, at most `OPENING_CHARS`, ended at a sentence end), then its
    headings, numbered paragraphs' titles and the lines the user marked (`**bold**`, "CRITICAL:",
    "IMPORTANT"), after " — ", "; "-separated, within `OUTLINE_CHARS`, ending at a whole item."""
    lines = text[: SCAN_CHARS * 4].splitlines()
    opening: list[str] = []
    index, size, blank = 0, 0, False
    for index, line in enumerate(lines):  # noqa: B007 (the index is where the body starts)
        stripped = line.strip()
        if not stripped:
            blank = True
            continue
        if opening and (_HEADING.match(line) or _LIST_ITEM.match(line) or _RULE_LINE.match(stripped)
                        or blank and _NUMBERED.match(stripped) or size >= OPENING_CHARS):
            break
        blank = False
        if _RULE_LINE.match(stripped):
            continue
        opening.append(stripped)
        size += len(stripped) + 1
    else:
        index = len(lines)
    head = _sentence_start(_plain(" ".join(opening)), OPENING_CHARS)
    items: list[str] = []
    seen = {head}
    body: list[tuple[str, bool]] = []  # (line, opens a paragraph)
    blank = True
    for line in lines[index:]:
        if not line.strip() or _RULE_LINE.match(line.strip()):
            blank = True
            continue
        body.append((line, blank))
        blank = False
    for at, (line, opens) in enumerate(body):
        stripped = line.strip()
        heading = _HEADING.match(line)
        following = body[at + 1][0] if at + 1 < len(body) else ""
        if heading and heading.group(2) and (after := _HEADING.match(following)) and after.group(2):
            continue  # a block of upper-case lines (a slogan: "WE BUILD / EVENTS / THAT SELL"): its last line
        if heading:
            item = (heading.group(1) or heading.group(2)).strip()
        elif opens and _NUMBERED.match(stripped) and not _LIST_ITEM.match(following):
            item = BULLET.sub("", stripped)  # a numbered paragraph's title ("2. Ensure fetch is not cached:")
        else:
            item = BULLET.sub("", stripped) if _MARKED.search(stripped) else ""
        if item.endswith(":") and following and not _HEADING.match(following):
            item = f"{item} {BULLET.sub('', following.strip())}"  # "IMPORTANT: Raveera is NOT a rave-only…"
        item = _sentence_start(_plain(item), 160).rstrip(".;")
        if item and item not in seen:
            seen.add(item)
            items.append(item)
    out = head
    for item in items:
        joined = f"{out} — {item}" if out is head else f"{out}; {item}"
        if len(joined) > OUTLINE_CHARS:
            return out + "; …"
        out = joined
    return out


def _plain(text: str) -> str:
    """Markdown's marks left out: `## Research Plan **Question**: …` is `Research Plan Question: …`."""
    return " ".join(re.sub(r"\*\*|__|^#+\s*|(?<=\s)#+\s+", "", text).split())


def _sentence_start(text: str, limit: int) -> str:
    """`text` within `limit` characters, ended at its last sentence end (else a word's end and "…")."""
    text = " ".join(text.split())
    if len(text) <= limit:
        return text
    cut = text[:limit]
    ends = [m.end() for m in re.finditer(r"[.!?](?=\s|$)|[。！？]", cut)]
    if ends and ends[-1] >= limit // 3:
        return cut[: ends[-1]]
    if " " in cut[limit // 2:]:  # a word's end; text without spaces (Chinese) is cut where it is
        cut = cut.rsplit(" ", 1)[0]
    return cut.rstrip(",;:") + "…"


def _raised(traceback: str) -> str:
    """The exception a Python traceback ends with (`httpx.ReadTimeout: timed out`): the first unindented line
    after its last `File` frame."""
    lines = traceback[-SCAN_PASTE:].splitlines()
    frames = [i for i, line in enumerate(lines) if line.lstrip().startswith('File "')]
    after = lines[frames[-1] + 1:] if frames else []
    return next((_one_line(line) for line in after if line.strip() and not line[0].isspace()), "")


def _one_line(text: str) -> str:
    text = " ".join(text.split())
    return text if len(text) <= ERROR_CHARS else text[: ERROR_CHARS - 1].rstrip() + "…"


def own_words(text: str) -> str:
    """A user message less the material pasted after its words (a traceback, a terminal screen…)."""
    start = _PASTE_START.search(text)
    return text if start is None or not text[: start.start()].strip() else text[: start.start()]


def word_count(text: str) -> int:
    """How many distinct significant words a text has, a word of Chinese or Japanese being two characters."""
    plain: set[str] = set()
    cjk = 0
    for word in _WORD.findall(text.lower()[:2000]):
        cjk += sum((len(run) + 1) // 2 for run in _CJK.findall(word))
        plain.update(w for w in _CJK.sub(" ", word).split() if w not in _STOP and len(w) > 1)
    return len(plain) + cjk


def words(text: str) -> frozenset[str]:
    """The significant words of a text, lower-cased (how requests and rules are compared), in any script: a
    request in Korean or Chinese has words too (before #55 it had none, so every one was a short one-off)."""
    out: set[str] = set()
    for word in _WORD.findall(text.lower()[:2000]):
        if _CJK.search(word):
            for run in _CJK.findall(word):
                out.update(run[i:i + 2] for i in range(max(len(run) - 1, 1)))
            rest = _CJK.sub(" ", word).split()
            out.update(w for w in rest if w not in _STOP and len(w) > 1)
        elif word not in _STOP and len(word) > 1:
            out.add(word)
    return frozenset(out)


# -- rules ----------------------------------------------------------------------------------------------
def rule_sentences(text: str) -> list[str]:
    """Statements of a rule or preference in a user's text, as written, each a whole sentence (a sentence
    wrapped across lines is one; a line ending with ":" and the list under it are one rule); questions never
    are."""
    out = []
    for sentence in _sentences(text[:SCAN_CHARS]):
        if not (10 <= len(sentence) <= 300) or sentence.endswith("?") or "?" in sentence[-3:]:
            continue
        if (_QUESTION_START.match(sentence) and not _IMPERATIVE_AUX.match(sentence)) or not _RULE.search(sentence):
            continue
        if _SELF.match(sentence) and not _SELF_RULE.search(sentence):  # "i don't think…", "let me try…"
            continue
        out.append(sentence)
    return out


def _sentences(text: str) -> list[str]:
    """The sentences of a text: split at sentence ends and line ends, then a line that ends no sentence joined
    to the next when that starts in lower case (one sentence wrapped, while it stays a sentence's length), and
    a rule that introduces a list ("Ensure:") joined to the items under it, in pieces of at most
    `LIST_RULE_CHARS` ("Ensure: all routes work, role guards are safe, …"), or to the one line under it
    ("Keep brand name:" and "Raveera Group")."""
    pieces: list[tuple[str, bool]] = []  # (text, a list item)
    for raw in SENTENCE.split(text):
        piece = raw.strip()
        if piece:
            pieces.append((BULLET.sub("", piece), bool(_LIST_ITEM.match(raw)) or piece.startswith(("- ", "* "))))
    out: list[str] = []
    index = 0
    while index < len(pieces):
        sentence, _ = pieces[index]
        index += 1
        while index < len(pieces) and not pieces[index][1] and sentence[-1:] not in ".!?:;。！？" \
                and pieces[index][0][:1].islower() and len(sentence) + len(pieces[index][0]) < 300:
            sentence += " " + pieces[index][0]
            index += 1
        if sentence.endswith(":") and _RULE.search(sentence) and index < len(pieces) and pieces[index][1]:
            line = sentence
            while index < len(pieces) and pieces[index][1]:
                item = pieces[index][0].rstrip(".;,")
                index += 1
                if line != sentence and len(line) + len(item) + 2 > LIST_RULE_CHARS:
                    out.append(line)
                    line = sentence
                line = f"{line} {item}" if line == sentence else f"{line}, {item}"
            sentence = line
        elif sentence.endswith(":") and _RULE.search(sentence) and index < len(pieces) \
                and len(pieces[index][0]) <= LIST_RULE_CHARS // 2:
            sentence = f"{sentence} {pieces[index][0]}"  # "Keep brand name:" and the line it introduces
            index += 1
        out.append(sentence)
    return out


def said_once(request: str, sentences: list[str]) -> tuple[str, list[str]]:
    """A later request's Goal line and the rules Constraints carries for it, so that each is said once:
    - the request less its rule sentences ("Run `npm test` and summarize the failures. Don't change anything
      yet." -> "Run `npm test` and summarize the failures."), its rules to Constraints; a rule sentence
      stays in the line (and is not carried) unless it is a whole sentence of the request: the line never
      reads "…the current section is ." with its ask gone;
    - "" when nothing but an acknowledgement or a reaction remains: the request is its rules ("No, don't
      touch `README.md`.", "That's not what I meant. Keep the signature of X unchanged."); with pasted
      material after them the acknowledgement stays ("Go ahead. (with a traceback: …)");
    - when one or two significant words would remain ("no console logs! setTheme should return an
      error"), no Goal line and the whole request as one rule: the rest is part of it; unless the rest asks
      for work ("The test passes for the wrong reason: it never reaches `x`. Fix the test."): then the
      whole request as the Goal line and no rule;
    - when only pasted material would remain ("…got a crash, that should never happen. (with a pasted
      terminal screen: Error: …)"), the whole request as the Goal line and no rule: the sentence is the
      user's complaint about what they pasted."""
    tail = WITH.search(request)
    pasted = tail.group(0) if tail else ""
    whole = request[: tail.start()] if tail else request
    rest = whole
    carried = []  # the whole sentences taken out, and those the line does not hold (an outline left them out)
    for sentence in sentences:
        span = _whole_sentence_at(rest, sentence)
        if span is not None:
            rest = rest[: span[0]] + rest[span[1]:]
            carried.append(sentence)
        elif _loose(sentence).search(whole) is None:
            carried.append(sentence)
    if rest == whole:
        return request, carried
    sentences = carried
    rest = " ".join(line for line in rest.splitlines() if not _EMPTY_ITEM.match(line)).strip()  # a bullet it emptied
    if not words(rest):
        return (request, []) if pasted else ("", sentences)
    if is_acknowledgement(rest) or _REACTION.match(rest):
        return (rest + pasted, sentences) if pasted else ("", sentences)
    if len(words(rest)) < REQUEST_WORDS:
        return request, [] if pasted else sentences
    return rest + pasted, sentences


_SEPARATOR = r"(?:[\s,]|[-*•+](?=\s)|\d+[.)](?=\s))+"


def _loose(sentence: str) -> _Loose | re.Pattern[str]:
    """`sentence` as it may stand in its text: wrapped across lines, its list items under bullets. The
    pattern `_SEPARATOR.join(re.escape(token) ...)`, matched without compiling it (a compile per user message
    took seconds on long sessions: tests/test_user_message.py checks both give the same matches)."""
    tokens = [token for token in re.split(r"[\s,]+", sentence.strip()) if token]
    return _Loose(tokens) if tokens else re.compile("")


def _separator_ends(text: str, pos: int) -> list[int]:
    """Where `_SEPARATOR` can end when it starts at `pos`, in the order the regex tries them (the longest
    first): its three alternatives start with different characters, so each repetition matches one way."""
    ends = []
    size = len(text)
    while pos < size:
        char = text[pos]
        if char.isspace() or char == ",":
            pos += 1
        elif char in "-*•+" and pos + 1 < size and text[pos + 1].isspace():
            pos += 1
        elif char.isdecimal():  # \d+[.)](?=\s): the whole run of digits (a shorter one is no match either)
            end = pos + 1
            while end < size and text[end].isdecimal():
                end += 1
            if not (end + 1 < size and text[end] in ".)" and text[end + 1].isspace()):
                break
            pos = end + 1
        else:
            break
        ends.append(pos)
    ends.reverse()
    return ends


class _Found:
    """A match's span, as `re.Match` gives it."""

    __slots__ = ("_start", "_end")

    def __init__(self, start: int, end: int) -> None:
        self._start, self._end = start, end

    def start(self) -> int:
        return self._start

    def end(self) -> int:
        return self._end


class _Loose:
    """The tokens of a sentence joined by `_SEPARATOR`, searched as the regex would: leftmost, the separators
    greedy with backtracking, matches that do not overlap."""

    def __init__(self, tokens: list[str]) -> None:
        self.tokens = tokens

    def _end(self, text: str, start: int) -> int | None:
        tokens = self.tokens
        pos = start + len(tokens[0])
        if len(tokens) == 1:
            return pos
        stack = [iter(_separator_ends(text, pos))]
        while stack:
            token = tokens[len(stack)]
            for end in stack[-1]:
                if text.startswith(token, end):
                    if len(stack) + 1 == len(tokens):
                        return end + len(token)
                    stack.append(iter(_separator_ends(text, end + len(token))))
                    break
            else:
                stack.pop()
        return None

    def finditer(self, text: str) -> Iterator[_Found]:
        first = self.tokens[0]
        start = text.find(first)
        while start >= 0:
            end = self._end(text, start)
            if end is None:
                start = text.find(first, start + 1)
            else:
                yield _Found(start, end)
                start = text.find(first, end)

    def search(self, text: str) -> _Found | None:
        return next(self.finditer(text), None)


def _whole_sentence_at(text: str, sentence: str) -> tuple[int, int] | None:
    """Where `sentence` stands in `text` as a whole sentence (at the start, after a sentence's end or a colon,
    or as a list item; before the end, a space or a line end), or None. A line break alone ends no sentence:
    "…the current section is\nMake sure to add e2e tests." is one ask."""
    for found in _loose(sentence).finditer(text):
        before = text[: found.start()].rstrip(" \t")
        after = text[found.end(): found.end() + 1]
        ended = not before.strip() or before.rstrip()[-1] in ".!?:;。！？" or bool(
            _EMPTY_ITEM.match(before.rsplit("\n", 1)[-1]) and before.rsplit("\n", 1)[-1].strip())
        if ended and (not after or after.isspace()):
            return found.start(), found.end()
    return None


def without_rules(request: str, sentences: list[str]) -> str:
    """A request as its Goal line says it (`said_once`)."""
    return said_once(request, sentences)[0]


def is_temporary(rule: str) -> bool:
    """A rule bounded by "yet", "for now", "until I say": a later go-ahead lifts it. One that also says
    "never", "always", "from now on" ("Leave the docs alone for now, and never push to main.") stands."""
    return bool(_TEMPORARY.search(rule)) and not _STANDING.search(rule)


def go_ahead(text: str) -> str | None:
    """The words by which a user message lifts a temporary rule ("Go ahead", "now do it", "fix what
    broke"), or None. Only the user's own words before anything they pasted count."""
    own = own_words(text)[:SCAN_PASTE]
    found = _GO_AHEAD.search(own)
    if found:
        return found.group(0)
    found = _ASKS_CHANGE.search(own)
    if not found:
        return None
    said = found.group(1).rstrip(".,;:!").split()  # "fix what broke", "write docs" (not "write docs for")
    while len(said) > 1 and said[-1].lower() in _STOP:
        said.pop()
    return " ".join(said)
