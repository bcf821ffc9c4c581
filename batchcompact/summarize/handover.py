"""What makes the built-in summary a handover rather than a dump (docs/summaries.md, "Handover rules").

- Goal: the session's first request and the requests still open at the cut. A question the agent answered,
  an acknowledgement, a short request the agent carried out before the user moved on and a pasted repeat
  are not goals; near-duplicates are merged into their newest spelling (`goal_requests`); a request's
  line leaves out the rule sentences Constraints carries, and a request that is only rules has none
  (`without_rules`).
- Rules: each once, a restated or amended rule in its newest spelling at its newest place (`standing_rules`).
- The artifact trail leaves out what no agent needs: git's diff prefixes (`a/src/x.py` is `src/x.py`),
  language built-ins and library calls the project did not define (`setTimeout`, `toFixed`), product names
  that look like files (`Node.js`), bare extensions (`.test.ts`), placeholder file names (`file.txt`)
  and generic capitalised words (`JavaScript`, `GitHub`) (`trail_token`, `is_noise_name`).

Pure functions over small inputs, no clock, no randomness: the same requests give the same goal.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

# -- goal ---------------------------------------------------------------------------------------------
# A request of fewer significant words than this, without a file or code name, is a one-off ("delete the
# file", "think then say hello"): once the agent answered it and the user asked something else, it is done.
SHORT_WORDS = 6
# Two requests whose significant words overlap this much (Jaccard) are one request said twice.
SAME_REQUEST = 0.7
# Comparing a request with the newest kept ones only: linear time on a session of thousands of messages.
COMPARE_LAST = 40

_WORD = re.compile(r"[a-z0-9][a-z0-9_'-]*")
_STOP = frozenset(
    "a an the and or but so to of in on at for with from by is are was were be been it its this that these "
    "those i you we he she they me my your our us them do does did can could would will should shall may "
    "might must have has had not no yes ok okay please just then than now also too very really there here "
    "what why how where when which who let lets i'm it's don't can't".split()
)
_THANKS = re.compile(
    r"^(?:(?:ok(?:ay)?|yes|yep|yeah|sure|great|perfect|nice|cool|good|awesome|alright|all right|thanks?|"
    r"thank you|ty|lgtm|looks good|sounds good|works|it works|that works|do it|go|go ahead|go for it|"
    r"proceed|continue|next|done|fine|right|exactly|correct|got it|makes sense|ship it|commit|yes please|"
    r"it all|all|everything|both|that|please)"
    r"[\s,.!:;-]*)+$",
    re.IGNORECASE,
)
# The words a question opens with, here and for the rule sentences (`builtin_words`). A request may also
# open with "isn't/doesn't/don't" ("don't you think…?"); a rule sentence never does ("Don't push to main.").
QUESTION_WORDS = (r"do|does|did|can|could|would|will|is|are|was|were|should|shall|what|why|how|where|when|which|"
                  r"who|have|has|any idea")
_QUESTION = re.compile(
    rf"^(?:wait\b|hmm+\b|so\b|and\b|but\b|ok(?:ay)?\b|also\b)?[,\s]*(?:{QUESTION_WORDS}|isn't|doesn't|don't)\b",
    re.IGNORECASE,
)
_ASKS_WORK = re.compile(
    r"\b(?:can you|could you|would you|will you|please|make|add|fix|write|create|implement|change|update|"
    r"remove|delete|rename|refactor|move|port|build|run|test|commit|push|release)\b",
    re.IGNORECASE,
)
# A line of a pasted terminal screen: one that opens with a box-drawing character (`─────`, `│ > `, `╭─`) or a
# spinner glyph and a word (`⠇ Working...`), a prompt (`❯ `, `➜ `, `>>> `, `dev@host:~/app$ `), or a line with a
# progress bar (`███░░░ 60%`, `[=====>   ]`). A user's own words never open a line so.
SCREEN_LINE = (r"[ \t]*(?:[\u2500-\u257f]|[\u2800-\u28ff][ \t]+\S|(?:[❯➜]|>>>)[ \t]|"
               r"[\w.-]+@[\w.-]+:[^\n]{0,80}?[$#][ \t]|"
               r"(?=[^\n]*(?:[\u2580-\u259f]{3}|\[[=#]{3,}[=#>]*[ .-]*\])))")
_SCREEN = re.compile(SCREEN_LINE)
_PASTED = re.compile(rf"^\s*(?:\+\s|\d+\s+[-+]\s|```|diff --git|@@|\||<[a-z])|^{SCREEN_LINE}")
# Where pasted material starts inside a request: a traceback, a fenced block, a diff, a log (a line of its own),
# a terminal screen
_PASTE_START = re.compile(rf"^(?:\s*(?:Traceback \(most recent call last\)|```|diff --git|@@ |\$ |"
                          rf"(?:[A-Z]\w*)?(?:Error|Exception): [^\n]*\n\s+at )|{SCREEN_LINE})",
                          re.MULTILINE)  # `Error: …` then `at`: a JS stack
# The line of a pasted traceback or stack that says what went wrong: `KeyError: 'cursor'`
_ERROR_LINE = re.compile(r"^\s*((?:[A-Za-z_][\w.]*)?(?:Error|Exception|Exit|Interrupt)\b.*)$", re.MULTILINE)
_NAMED = re.compile(r"[\w-]+\.[a-z]{1,5}\b|[a-z0-9]_[a-z0-9]|[a-z][A-Z]|/")


@dataclass
class Request:
    """One substantive user request, and what the span shows became of it."""

    text: str
    answered: bool = False  # the agent's turn after it ended with its own reply
    worked: bool = False  # the agent called tools after it
    # as a later Goal line says it (`without_rules`; "": its rules say it all); None: `text`. The first
    # request is said whole: the Goal's first line is the session's goal as asked
    line: str | None = None


def asked_words(text: str) -> str:
    """A request as its Goal line says it: the user's words before the material they pasted after them (a
    traceback, a code block, a diff, a shell log), which the line names instead of quoting its start."""
    start = _PASTE_START.search(text)
    if start is None or not text[: start.start()].strip():
        return text
    paste = text[start.start():].lstrip()
    if paste.startswith("Traceback"):
        raised = _raised(paste)
        return f"{text[: start.start()].rstrip()} (with a traceback" + (f": {raised})" if raised else ")")
    errors = _ERROR_LINE.findall(paste[:SCAN_PASTE])  # a JS stack names it first
    if _SCREEN.match(text, start.start()):  # what the screen shows went wrong, when it shows an error
        pasted = "a pasted terminal screen" + (f": {_one_line(errors[0])}" if errors else "")
    elif errors and not paste.startswith(("```", "diff", "@@", "$")):
        pasted = f"an error: {_one_line(errors[0])}"
    else:
        pasted = "pasted output"
    return f"{text[: start.start()].rstrip()} (with {pasted})"


SCAN_PASTE = 2000  # of a pasted traceback, the end (Python) or the start (a JS stack) holds the error line
ERROR_CHARS = 100


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


def words(text: str) -> frozenset[str]:
    return frozenset(w for w in _WORD.findall(text.lower()[:2000]) if w not in _STOP and len(w) > 1)


# One word of reply, whatever follows it ("ok?", "no", "nope", "y", "thank you"): nothing asked either.
ONE_WORD_REPLY = re.compile(
    r"^(?:ok(?:ay)?|yes|yep|y|no|nope|sure|thanks?(?: you)?|continue|go on|go ahead|proceed|do it|lgtm|"
    r"sounds good|great|perfect|nice|cool|next)\W*$",
    re.IGNORECASE,
)


def is_acknowledgement(text: str) -> bool:
    """"ok", "thanks!", "yes do it", "great, go ahead", "nope": nothing new asked."""
    text = text.strip()
    return bool(_THANKS.match(text) or ONE_WORD_REPLY.match(text))


_GO = re.compile(r"\b(?:yes|yep|yeah|sure|do it|go|go ahead|go for it|proceed|continue|next|ship it|commit|please|all|"
                 r"everything|both)\b", re.IGNORECASE)
_GO_ON = re.compile(
    r"^(?:ok(?:ay)?[,\s]*)?(?:yes|yep|y|sure|continue|go on|go ahead|proceed|do it|next|keep going)?\W*$",
    re.IGNORECASE,
)


def is_go_on(text: str) -> bool:
    """An acknowledgement that tells the agent to go on ("ok", "yes do it", "yeah, do it all"): the request
    before it is still the work."""
    return bool(_GO_ON.match(text.strip())) or is_acknowledgement(text) and bool(_GO.search(text))


# A sentence that tells the agent to do something: after a question ("Why did you change X? Undo that
# part."), it makes the message a request.
_IMPERATIVE = re.compile(
    r"^(?:please\s+|now\s+|then\s+|just\s+|and\s+)?(?:undo|revert|fix|add|remove|delete|drop|change|make|use|"
    r"keep|run|try|put|move|rename|write|update|create|implement|split|refactor|commit|push|stop|do|don'?t|"
    r"never|always|go ahead|roll back)\b", re.IGNORECASE)


def is_question(text: str) -> bool:
    """A question rather than a request for work: "wait, do we only limit POST requests?" is one,
    "can you add a test?" and "Why did you change the import order? Undo that part." are requests."""
    text = text.strip()
    sentences = re.split(r"(?<=[.!?])\s+", text[:400])
    first = sentences[0]
    if _ASKS_WORK.search(first) and not first.lower().startswith(("what", "why", "how", "where", "which", "who")):
        return False
    if any(not s.endswith("?") and _IMPERATIVE.match(s) for s in sentences[1:]):
        return False  # a question, then what to do about it
    return text.endswith("?") and len(text) < 400 or bool(_QUESTION.match(text)) and "?" in text[:400]


GIST_CHARS = 160  # an open request said by its gist (the tight layout's Goal): at most this long
GIST_MORE = 130  # its next sentences follow its first while the gist stays under this
# What opens a request without asking anything: an acknowledgement ("Looks right.", "Good, but", "Ok, now")
# and politeness ("please", "can you"): the tight layout's Goal says the request without them.
_OPENING = re.compile(
    r"^(?:(?:ok(?:ay)?|great|good|nice|cool|perfect|alright|thanks|thank you|yes|yeah|sure|right|"
    r"looks (?:good|right|great|fine)|that works|lgtm)\b[\s,.!]*(?:but\s+|and\s+|so\s+)?)*"
    r"(?:(?:please|can you|could you|would you)\b[\s,]*)?", re.IGNORECASE)
# What `asked_words` says came with a request: " (with a traceback: KeyError: 'cursor')"
_WITH = re.compile(r" \(with (?:a traceback|an error|a pasted terminal screen|pasted output)\b[^\n]*\)$")


def request_gist(text: str) -> str:
    """An open request in a few words, for a Goal that cannot hold it whole: the user's words without a
    leading acknowledgement or politeness, its first sentence (and the next ones while short), then the
    error it came with ("(with a traceback: KeyError: 'cursor')"), at most `GIST_CHARS` characters."""
    text = " ".join(text.split())
    tail = _WITH.search(text)
    with_part = tail.group(0) if tail else ""
    body = text[: tail.start()] if tail else text
    opening = _OPENING.match(body)
    polite = bool(opening and re.search(r"(?:can|could|would) you\s*$", opening.group(0).rstrip(", "), re.I))
    body = body[opening.end():] if opening and opening.end() < len(body) else body
    body = body[:1].upper() + body[1:]
    sentences = re.split(r"(?<=[.!?])\s+", body)
    gist = sentences[0][:-1] + "." if polite and sentences[0].endswith("?") else sentences[0]  # "Can you X?"
    for sentence in sentences[1:]:
        if len(gist) + len(sentence) + 1 > GIST_MORE:
            break
        gist += " " + sentence
    if with_part and len(gist) + len(with_part) <= GIST_CHARS:
        gist += with_part
    if len(gist) > GIST_CHARS:
        gist = gist[: GIST_CHARS - 1].rsplit(" ", 1)[0].rstrip(",;:") + "…"
    return gist


def _closed(request: Request, last: bool) -> bool:
    """Whether a later request is done by the cut: an acknowledgement, an answered question, or (unless it
    is the newest) pasted material or a short request the agent carried out before the user asked
    something else."""
    if is_acknowledgement(request.text):
        return True
    if request.answered and is_question(request.text):
        return True  # the agent answered it: nothing left to do
    if last:
        return False
    if _PASTED.match(request.text):
        return True  # pasted material (a diff, a numbered listing, a code block) asks for nothing by itself
    few = len(words(request.text)) < SHORT_WORDS and not _NAMED.search(request.text)
    return few and (request.answered or request.worked)


def goal_requests(requests: list[Request], has_goal: bool) -> list[tuple[bool, str]]:
    """(is the first request, text) of the requests a Goal lists, oldest first: the first request (unless an
    earlier summary holds the goal), then the later ones still open; of near-duplicates, the newest."""
    if not requests:
        return []
    first = [] if has_goal else [requests[0]]
    later = requests[len(first):]
    kept: list[tuple[Request, frozenset[str]]] = []
    first_words = words(first[0].text) if first else frozenset()
    for index, request in enumerate(later):
        if request.line == "" or _closed(request, index == len(later) - 1):
            continue  # "" : Constraints carries it
        own = words(request.text)
        if first and _similar(own, first_words):
            continue
        for at in range(len(kept) - 1, max(len(kept) - COMPARE_LAST, 0) - 1, -1):
            if _similar(own, kept[at][1]):
                del kept[at]  # the newer spelling replaces it
                break
        kept.append((request, own))
    return [(True, r.text) for r in first] + [(False, r.text if r.line is None else r.line) for r, _ in kept]


def _similar(a: frozenset[str], b: frozenset[str]) -> bool:
    if not a or not b:
        return a == b
    return len(a & b) / len(a | b) >= SAME_REQUEST


# -- rules ----------------------------------------------------------------------------------------------
def standing_rules(rules: list[str]) -> list[str]:
    """The user's rules oldest first, each once: a rule said again or amended in most of its words
    (`SAME_REQUEST`) is one rule in its newest spelling, at the place of its newest statement, so the budget
    (which drops the oldest first) keeps a repeated rule longest and the newer of two that conflict."""
    kept: list[tuple[str, frozenset[str]]] = []
    for rule in rules:
        own = words(rule)
        for at in range(len(kept) - 1, max(len(kept) - COMPARE_LAST, 0) - 1, -1):
            if kept[at][0] == rule or _similar(own, kept[at][1]):
                del kept[at]
                break
        kept.append((rule, own))
    return [rule for rule, _ in kept]


# A request less its rules keeps its line only when this many significant words remain.
REQUEST_WORDS = 3
# What a user says before a rule to correct the agent, asking nothing by itself: "That's not what I meant.
# Keep the public signature of `paginate` unchanged." is its rule.
_REACTION = re.compile(
    r"^\W*(?:(?:no+|nope|wrong|stop|wait|hm+|ugh|sorry|not quite|not like that|not that|"
    r"that(?:'s| is) (?:not (?:it|right|what i (?:meant|asked for|asked|wanted))|wrong)|you misunderstood)"
    r"\b[\s,.!;:-]*)+$", re.IGNORECASE)


def said_once(request: str, sentences: list[str]) -> tuple[str, list[str]]:
    """A later request's Goal line and the rules Constraints carries for it, so that each is said once:
    - the request less its rule sentences ("Run `npm test` and summarize the failures. Don't change anything
      yet." -> "Run `npm test` and summarize the failures."), its rules to Constraints;
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
    tail = _WITH.search(request)
    pasted = tail.group(0) if tail else ""
    rest = request[: tail.start()] if tail else request
    for sentence in sentences:
        rest = rest.replace(sentence, "", 1)
    if rest == (request[: tail.start()] if tail else request):
        return request, sentences
    rest = " ".join(line for line in rest.splitlines() if not _EMPTY_ITEM.match(line)).strip()  # a bullet it emptied
    if not words(rest):
        return (request, []) if pasted else ("", sentences)
    if is_acknowledgement(rest) or _REACTION.match(rest):
        return (rest + pasted, sentences) if pasted else ("", sentences)
    if len(words(rest)) < REQUEST_WORDS:
        return request, [] if pasted else sentences
    return rest + pasted, sentences


def without_rules(request: str, sentences: list[str]) -> str:
    """A request as its Goal line says it (`said_once`)."""
    return said_once(request, sentences)[0]


_EMPTY_ITEM = re.compile(r"^\s*(?:[-*•+]|\d+[.)])?\s*$")
# A rule for one step: it binds until the user says to go on ("Don't change anything yet.", "Leave the tests
# alone for now.", "Do not push until I say so.")
_TEMPORARY = re.compile(
    r"\b(?:yet|for now|for the moment|for the time being|until (?:i|we) (?:say|tell|confirm|approve|review|"
    r"give|look|check)|until further notice|before (?:i|we) (?:say|confirm|approve|review|look|check))\b",
    re.IGNORECASE)
# A go-ahead: the user lifts such a rule ("Go ahead.", "ok, now do it", "you can fix them now", "proceed")
_GO_AHEAD = re.compile(
    r"\b(?:go ahead|go for it|(?:now )?do it|proceed|you can (?:now )?(?:start|go|change|edit|fix|proceed|make|"
    r"apply|implement|commit|push)|now (?:fix|change|apply|implement|make|edit|commit|push)|"
    r"(?:fix|change|apply) (?:it|them|those|these|that|all)(?: now)?)\b", re.IGNORECASE)


_STANDING = re.compile(r"\b(?:never|always|from now on|every time|each time|whenever)\b", re.IGNORECASE)


def is_temporary(rule: str) -> bool:
    """A rule bounded by "yet", "for now", "until I say": a later go-ahead lifts it. One that also says
    "never", "always", "from now on" ("Leave the docs alone for now, and never push to main.") stands."""
    return bool(_TEMPORARY.search(rule)) and not _STANDING.search(rule)


# A request for a change lifts it too: a sentence, or its "and"/"then" part, that opens with a verb of
# change ("Run the suite and fix what broke.", "Write docs for X.", "Now rename `x`."), not one that
# mentions a change ("Why did you change X?", "after my last change to X").
_ASKS_CHANGE = re.compile(
    r"(?:^|[.!?;]\s+|\band\s+|\bthen\s+)(?:(?:ok(?:ay)?|now|please|just|so|then|also|can you|could you|would you)"
    r"[,\s]+)*((?:fix|add|remove|delete|change|rename|write|update|create|implement|refactor|revert|undo|apply|"
    r"commit|push|move|split|port|edit|roll back)\b(?:\s+[\w`'./-]+){0,2})", re.IGNORECASE)


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


def own_words(text: str) -> str:
    """A user message less the material pasted after its words (a traceback, a terminal screen…)."""
    start = _PASTE_START.search(text)
    return text if start is None or not text[: start.start()].strip() else text[: start.start()]


# -- names ----------------------------------------------------------------------------------------------
# Calls of the languages' standard libraries and runtimes: they name nothing of the project's own.
BUILTIN_NAMES = frozenset("""
setTimeout setInterval clearTimeout clearInterval setImmediate requestAnimationFrame toFixed toString
toLowerCase toUpperCase toLocaleString toISOString forEach indexOf lastIndexOf startsWith endsWith includes
padStart padEnd trimStart trimEnd charAt charCodeAt fromCharCode codePointAt parseInt parseFloat isNaN
isArray hasOwnProperty getOwnPropertyNames defineProperty readFileSync writeFileSync existsSync mkdirSync
readdirSync statSync unlinkSync appendFileSync createReadStream createWriteStream addEventListener
removeEventListener getElementById querySelector querySelectorAll createElement appendChild removeChild
innerHTML textContent innerText preventDefault stopPropagation useState useEffect useRef useMemo
useCallback useContext useReducer setState getItem setItem removeItem localStorage sessionStorage getTime
getDate getFullYear getMonth toJSON stringify JSON readFile writeFile execSync spawnSync childProcess
encodeURIComponent decodeURIComponent structuredClone console.log NodeJS process.env instanceOf typeof
dirname basename __dirname __filename ReadableStream WritableStream TextEncoder TextDecoder AbortController
AbortSignal URLSearchParams FormData XMLHttpRequest EventEmitter setEncoding toBe toEqual toHaveBeenCalled
toHaveBeenCalledWith toContain toThrow beforeEach afterEach beforeAll afterAll
isinstance getattr setattr hasattr read_text write_text read_bytes write_bytes add_argument parse_args
add_parser assert_called_once_with assert_called_with assert_called_once return_value side_effect
get_event_loop run_until_complete create_task gather_results read_csv to_csv to_dict from_dict is_file
is_dir exists_ok mkdir_p rglob glob_pattern
unwrap_or unwrap_or_else unwrap_or_default to_string to_owned as_str as_ref into_iter iter_mut is_some
is_none is_ok is_err ok_or map_err and_then
fmt.Println fmt.Sprintf Sprintf Println Printf Errorf Fatalf Logf Sprint Fprintf
isFinite isInteger
TypeError ValueError KeyError IndexError AttributeError RuntimeError NameError ImportError ModuleNotFoundError
FileNotFoundError FileExistsError PermissionError OSError IOError NotImplementedError StopIteration
StopAsyncIteration AssertionError ZeroDivisionError OverflowError RecursionError TimeoutError ConnectionError
ConnectionRefusedError ConnectionResetError BrokenPipeError KeyboardInterrupt SystemExit UnicodeDecodeError
UnicodeEncodeError JSONDecodeError SyntaxError IndentationError LookupError ArithmeticError BaseException
UnboundLocalError IsADirectoryError NotADirectoryError ChildProcessError BlockingIOError InterruptedError
ProcessLookupError EOFError MemoryError BufferError ReferenceError EnvironmentError DeprecationWarning
UserWarning RuntimeWarning FutureWarning PendingDeprecationWarning ResourceWarning CancelledError
RangeError EvalError URIError AggregateError DOMException AbortError
MagicMock AsyncMock NonCallableMock PropertyMock mock_open create_autospec mockResolvedValue mockReturnValue
mockImplementation mockRejectedValue mockReturnValueOnce mockResolvedValueOnce mockClear mockReset spyOn
toHaveBeenCalledTimes toHaveLength toMatchObject toStrictEqual toBeDefined toBeUndefined toBeNull toBeTruthy
toBeFalsy toMatch toThrowError toBeInTheDocument toHaveTextContent getByText getByRole findByText queryByText
tmp_path monkeypatch capsys caplog tmpdir pytest_mark
""".split())
# Product and language names that look like code names or files: they name no part of the work.
GENERIC_NAMES = frozenset("""
JavaScript TypeScript CoffeeScript GitHub GitLab BitBucket PostgreSQL MySQL SQLite MongoDB MariaDB OpenAI
ChatGPT PyPI NodeJS VSCode VSCodium iTerm iTerm2 macOS iOS iPadOS iPhone iPad tvOS watchOS WebSocket
WebSockets YouTube LinkedIn PowerShell DevTools LaTeX GraphQL OAuth OAuth2 WebAssembly WebGL WebGPU
DynamoDB BigQuery CloudFlare Cloudflare DigitalOcean HuggingFace FastAPI PyTorch TensorFlow NumPy SciPy
OpenSSL OpenSSH OpenCode ClaudeCode CamelCase PascalCase SnakeCase README TODO FIXME JetBrains IntelliJ
PyCharm WebStorm XCode Xcode HomeBrew Homebrew OpenAPI ESLint TSLint PostCSS TailwindCSS NextJS NuxtJS
""".split())
# File names an explanation uses as an example, not a file of the project.
PLACEHOLDER_STEMS = frozenset("file foo bar baz qux example sample myfile my_file filename yourfile your_file "
                              "some_file somefile".split())
# Compound extensions a text names on their own (`.test.ts`, `.d.ts`): a kind of file, not a file.
_BARE_EXTENSION = re.compile(r"^\.(?:test|spec|d|min|module|stories|config|e2e|story|types?)\.[A-Za-z0-9]+$")
# `Node.js`, `Vue.js`, `Three.js`: one capitalised word and `.js`, no folder.
_PRODUCT_JS = re.compile(r"^[A-Z][A-Za-z0-9]*\.js$")
_DIFF_PREFIX = re.compile(r"^[ab]/(?=[\w.~-]+/|[\w.-]+\.\w+$)")


def strip_diff_prefix(token: str) -> str:
    """`a/src/x.py` and `b/src/x.py` (git's diff headers) -> `src/x.py`."""
    return _DIFF_PREFIX.sub("", token, count=1)


def is_noise_file(token: str) -> bool:
    """A file-like token of a text that is no file of the project: `Node.js`, `.test.ts`, `file.txt`."""
    if "/" in token:
        return False
    if _BARE_EXTENSION.match(token) or _PRODUCT_JS.match(token):
        return True
    stem = token.split(".", 1)[0].lower()
    return stem in PLACEHOLDER_STEMS


# An id rather than a name: a piece of 12+ characters mixing letters and 4+ digits (`req_011CY4p6wvSLjiJy`).
_ID_PIECE = re.compile(r"(?=[A-Za-z0-9]*(?:[0-9][A-Za-z]*){4})(?=[A-Za-z0-9]*[A-Za-z])[A-Za-z0-9]{12,}")


def is_noise_name(name: str) -> bool:
    """A code-name-like token that names no part of the project: a built-in, a library call, a product,
    a redaction placeholder (`REDACTED_TEXT`), an id (`req_011CY4p6wvSLjiJyWSJ2VXzB`)."""
    if name in BUILTIN_NAMES or name in GENERIC_NAMES or name.startswith("REDACTED"):
        return True
    if name.endswith("_") and not name.endswith("__"):  # `update_lock_` of `update_lock_*`: a piece
        return True
    return any(_ID_PIECE.fullmatch(piece) for piece in name.split("_") if len(piece) >= 12)


# -- failures -------------------------------------------------------------------------------------------
_ABOUT_FAILURE = re.compile(
    r"\b(?:fix|fixing|error|errors|fail|fails|failed|failing|failure|broken|breaks|crash|crashes|bug|"
    r"doesn'?t work|not working)\b", re.IGNORECASE)


_ADDITION = re.compile(r"^(?:also|and|plus|additionally|then|after that|as well)\b|\b(?:too|as well)\W*$", re.IGNORECASE)


def current_failures(blocked: dict[str, str], epochs: dict[str, int], requests: list[str]) -> list[str]:
    """The failures a handover still carries: those since the user's last request, and older ones while
    every request since adds to the work ("also write the docs") or comes back to the failure (asks to fix
    something, or names a word of it). A failure from before the user moved on to other work is not a
    next step."""
    out = []
    for key, description in blocked.items():
        since = requests[epochs.get(key, len(requests)):]
        named = {w for w in words(description) if len(w) >= 5}
        if all(_ADDITION.search(r.strip()) or _ABOUT_FAILURE.search(r) or named & words(r) for r in since):
            out.append(description)
    return out
