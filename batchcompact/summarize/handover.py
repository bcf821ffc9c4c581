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

from batchcompact.summarize.user_message import (
    ACKNOWLEDGEMENT,
    GO_AHEAD,
    OPENING,
    PASTED,
    QUESTION,
    WITH,
    classify,
    word_count,
    words,
)

# -- goal ---------------------------------------------------------------------------------------------
# A request of fewer significant words than this, without a file or code name, is a one-off ("delete the
# file", "think then say hello"): once the agent answered it and the user asked something else, it is done.
SHORT_WORDS = 6
# Two requests whose significant words overlap this much (Jaccard) are one request said twice.
SAME_REQUEST = 0.7
# Comparing a request with the newest kept ones only: linear time on a session of thousands of messages.
COMPARE_LAST = 40

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
    kind: str | None = None  # what the message is (user_message.py); None: read from `text`

    def __post_init__(self) -> None:
        if self.kind is None:
            self.kind = classify(self.text).kind


GIST_CHARS = 160  # an open request said by its gist (the tight layout's Goal): at most this long
GIST_MORE = 130  # its next sentences follow its first while the gist stays under this


def request_gist(text: str) -> str:
    """An open request in a few words, for a Goal that cannot hold it whole: the user's words without a
    leading acknowledgement or politeness, its first sentence (and the next ones while short), then the
    error it came with ("(with a traceback: KeyError: 'cursor')"), at most `GIST_CHARS` characters."""
    text = " ".join(text.split())
    tail = WITH.search(text)
    with_part = tail.group(0) if tail else ""
    body = text[: tail.start()] if tail else text
    opening = OPENING.match(body)
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
    if request.kind in (ACKNOWLEDGEMENT, GO_AHEAD):
        return True
    if request.answered and request.kind == QUESTION:
        return True  # the agent answered it: nothing left to do
    if last:
        return False
    if request.kind == PASTED:
        return True  # pasted material (a diff, a numbered listing, a code block) asks for nothing by itself
    few = word_count(request.text) < SHORT_WORDS and not _NAMED.search(request.text)
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
    shared = len(a & b)
    return shared / (len(a) + len(b) - shared) >= SAME_REQUEST  # len(a | b), without building it


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


# -- names ----------------------------------------------------------------------------------------------
# Calls of the languages' standard libraries and runtimes (the browser's DOM and its CSS properties as a
# style object spells them, Rust's std among them): they name nothing of the project's own.
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
fontSize fontWeight fontFamily fontStyle lineHeight letterSpacing textAlign textDecoration textTransform
textOverflow whiteSpace wordBreak marginTop marginBottom marginLeft marginRight paddingTop paddingBottom
paddingLeft paddingRight borderRadius borderTop borderBottom borderLeft borderRight borderColor borderWidth
borderStyle boxShadow boxSizing backgroundColor backgroundImage alignItems alignSelf alignContent
justifyContent justifyItems flexDirection flexWrap flexShrink flexGrow flexBasis gridTemplateColumns
gridTemplateRows gridColumn gridRow gridGap columnGap rowGap maxWidth minWidth maxHeight minHeight zIndex
overflowX overflowY objectFit pointerEvents userSelect transitionDuration className htmlFor
classList getAttribute setAttribute removeAttribute getSelection getRangeAt intersectsNode isCollapsed
scrollIntoView scrollTo scrollBy getBoundingClientRect shiftKey ctrlKey metaKey altKey currentTarget
innerWidth innerHeight scrollWidth scrollHeight scrollTop scrollLeft clientWidth clientHeight offsetWidth
offsetHeight parentElement nextElementSibling previousElementSibling insertBefore replaceChild cloneNode
localeCompare globalThis
HashMap HashSet BTreeMap BTreeSet VecDeque RwLock PathBuf SystemTime UNIX_EPOCH PartialEq PartialOrd
saturating_add saturating_sub saturating_mul checked_add checked_sub div_ceil as_nanos as_millis as_secs
duration_since from_str is_empty or_else find_map filter_map as_array as_f64 as_u64 as_i64 to_le_bytes
to_be_bytes from_le_bytes with_capacity
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


_NUMBERED_REF = re.compile(r"^[a-z]{1,4}_\d+$")


def is_noise_name(name: str) -> bool:
    """A code-name-like token that names no part of the project: a built-in, a library call, a product,
    a redaction placeholder (`REDACTED_TEXT`), an id (`req_011CY4p6wvSLjiJyWSJ2VXzB`)."""
    if name in BUILTIN_NAMES or name in GENERIC_NAMES or name.startswith("REDACTED"):
        return True
    if name.endswith("_") and not name.endswith("__"):  # `update_lock_` of `update_lock_*`: a piece
        return True
    if _NUMBERED_REF.match(name):  # `ref_12`, `e_3`: a browser tool's element reference, an id
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
