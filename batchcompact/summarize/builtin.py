"""The built-in offline summarizer (`--model builtin`): deterministic, no network, cost 0.

It reads the structure of `call.messages` (pi-shaped LLM messages from any agent's reader, `Agent.reader`; see
`builtin_facts.py` for what it takes from each agent's tools) and fills the headings a model is asked for
(`builtin_sections.py` fits them into the budget),
like a handover note: the goal and later requests, rules the user stated (never questions), each changed
file with what changed, checks that passed, failures not fixed later, the unfinished request and what the
agent was about to do. Invariants:
- the same call gives the same text (no clock, no randomness, no dict-order surprises);
- linear time in the size of the messages;
- each section within a weighted share of `call.max_tokens` (chars/4), unused shares going to the sections
  that need them; "(none)" only under a section with nothing to say (one whose items do not fit is left out,
  and at the smallest budgets only the sections with something to say are shown: `fit_sections`);
- items of `call.previous_summary` are kept (update semantics); only "Next Steps" is rewritten; a
  previous summary in another layout (Claude Code's, Codex's) is kept as one block of critical context.
"""

from __future__ import annotations

import re
import time

from batchcompact.core.calls import BRANCH, TURN_PREFIX, SummaryCall
from batchcompact.summarize.base import SummaryResult
from batchcompact.summarize.builtin_facts import Facts, extract_facts
from batchcompact.summarize.builtin_previous import parse_previous
from batchcompact.summarize.builtin_sections import TRAIL_HEADING, Section, fit_sections, merge
from batchcompact.summarize.builtin_text import SCAN_CHARS, SENTENCE, clean_item, clip, clip_whole
from batchcompact.summarize.builtin_trail import normal_path
from batchcompact.summarize.handover import current_failures, goal_requests, request_gist, standing_rules
from batchcompact.summarize.user_message import is_temporary, words
from batchcompact.tokenizer import count_tokens

# A request as the Goal says it (the first: the session's goal, up to its outline; a later one, a split turn's):
# ended at a whole item, sentence or word (builtin_text.clip_whole)
FIRST_REQUEST_CHARS, REQUEST_CHARS = 600, 300
DETAILED_CHANGES = 8  # the newest changed files say what changed; older ones, that they changed
FIT_ROUNDS = 6  # refits when the tokenizer counts more than chars/4 (paths, code): rarely more than two
KEEP_NEW = {"constraints": 8, "decisions": 8, "blocked": 5, "todos": 8, "checks": 4}
# The artifact trail's candidates: this share of the summary's budget, never more than TRAIL_TOKENS (the
# section's weight then decides what it keeps beside the others).
TRAIL_SHARE = 0.8
TRAIL_TOKENS = 1500
TRAIL_LINE_CHARS = 160
TRAIL_NAMES = 400  # the most salient code names considered: a long session names thousands
TRAIL_WEIGHT = 10  # of 26: the largest share; measured in docs/summaries.md ("The budget")
# The sections' weights at the default budget and at a tight one (pi's own summaries are ~1,000 tokens):
# below the default the handover comes first (docs/summaries.md, "The budget"); linear between the two.
ROOMY_BUDGET, TIGHT_BUDGET = 2000, 1000
WEIGHTS = {"## Goal": (4, 6), "## Constraints & Preferences": (3, 5), "### Done": (3, 2),
           "### In Progress": (1, 1), "### Blocked": (1, 1), "## Key Decisions": (1, 1), "## Next Steps": (1, 1),
           "## Critical Context": (2, 1),
           # a split turn's prefix (pi's turn-prefix layout): its request and the rules it stated come first too
           "## Original Request": (2, 4), "## Early Progress": (3, 2), "## Context for Suffix": (4, 3)}
_VERBS = {"added": "Added", "wrote": "Wrote", "edited": "Edited", "deleted": "Deleted", "moved": "Moved"}
_WAITING = "no result yet"
_IN_FLIGHT = {"added": "Adding", "wrote": "Writing", "edited": "Editing", "deleted": "Deleting", "moved": "Moving"}
ROOT_MIN_PATHS = 3  # absolute paths under one folder before the summary writes them relative to it
ROOT_MIN_PARTS = 3  # `/home/user/app`: a shorter common folder saves too little to be worth its line


def project_root(facts: Facts) -> str | None:
    """The folder the summary writes paths relative to (`src/lib/session.ts`, a handful of tokens less a line):
    the session's working folder (`facts.cwd`: the resumed agent runs there) when a path the span's tools
    changed or read lies in it; else the folder every absolute such path lies in (`/home/user/projects/webapp`),
    when there are at least `ROOT_MIN_PATHS` of them and it is `ROOT_MIN_PARTS` deep: the summary then states
    it once ("Project folder: …")."""
    paths = sorted({p for p in list(facts.changes) + facts.read.list()
                    if (p.startswith("/") or p[1:3] == ":/") and " → " not in p})
    cwd = normal_path(facts.cwd).rstrip("/") if facts.cwd else None
    if cwd and (not paths or any(_inside(p, cwd) for p in paths)):  # the tools' paths relative: cwd's
        return cwd
    if len(paths) < ROOT_MIN_PATHS:
        return None
    first, last = paths[0].split("/")[:-1], paths[-1].split("/")[:-1]  # sorted: their common folder is all's
    common: list[str] = []
    for a, b in zip(first, last, strict=False):
        if a != b:
            break
        common.append(a)
    root = "/".join(common)
    return root if len(common) - 1 >= ROOT_MIN_PARTS else None


def _inside(path: str, root: str) -> bool:
    if root[1:3] == ":/":  # a Windows drive: case does not matter
        return path.lower().startswith(root.lower() + "/")
    return path.startswith(root + "/")


def relative(path: str, root: str | None) -> str:
    return path[len(root) + 1:] if root and _inside(path, root) and len(path) > len(root) + 1 else path


def change_items(facts: Facts, pending: bool | None = None) -> list[str]:
    """One line per changed file: what happened to it and, when known, the first changed line.
    `pending`: only the changes whose result is (True) or is not (False) past the messages; None: all."""
    items = []
    root = project_root(facts)
    chosen = [(path, change) for path, change in facts.changes.items()
              if pending is None or change.pending == pending]
    for index, (path, change) in enumerate(chosen):
        verb = (_IN_FLIGHT if change.pending else _VERBS).get(change.op, "Changing" if change.pending else "Changed")
        times = f" ({change.count} edits)" if change.op == "edited" and change.count > 1 else ""
        # a written file's line count is short and always said; a changed line only for the newest files
        detail = change.detail if index >= len(chosen) - DETAILED_CHANGES else ""
        waiting = _WAITING if change.pending else ""
        if change.op == "wrote":
            notes = "; ".join(n for n in (change.size, waiting) if n)
            item = f"{verb} `{clip(relative(path, root), 160)}`" + (f" ({notes})" if notes else "")
            if change.edits_after:  # written, then edited: what the last edit changed
                item += f", then edited ({count_of(change.edits_after, 'edit')})" + (f": {detail}" if detail else "")
        else:
            item = f"{verb} `{clip(relative(path, root), 160)}`{times}" + (f" ({waiting})" if waiting else "")
            item += f": {detail}" if detail else ""
        items.append(item)
    if facts.patches_without_files and not pending:
        items.append(
            f"Applied {count_of(facts.patches_without_files, 'patch')} (file names not in the transcript)"
        )
    return items


def _done(facts: Facts) -> list[str]:
    done = change_items(facts, pending=False)
    done += [f"Delegated to a sub-agent: {d}" for d in facts.delegated.list()[-5:]]
    done += [f"Completed: {clean_item(text)}" for text, status in facts.todos or () if status == "completed"][
        -KEEP_NEW["todos"] :
    ]
    done += [f"Checks passed: {command}" for command in facts.checks_passed.values()]
    return done


def count_of(count: int, noun: str) -> str:
    """`3 edits`, `1 patch` as the summary says them (no thousands separator: `core.words.counted` is the
    messages')."""
    return f"{count} {noun}" + ("" if count == 1 else "es" if noun.endswith("ch") else "s")


def _later_requests(facts: Facts, has_goal: bool) -> list[str]:
    """The first request (unless an earlier summary holds the goal), then the later ones still open at the
    cut (handover.goal_requests); the budget trims the oldest first, the first request last."""
    return [clip_whole(text, FIRST_REQUEST_CHARS) if first else f"Later request: {clip_whole(text, REQUEST_CHARS)}"
            for first, text in goal_requests(facts.asked, has_goal)]


def blocked_items(facts: Facts) -> list[str]:
    """Failures not resolved later and not left behind when the user moved on (handover.current_failures)."""
    return current_failures(facts.blocked, facts.blocked_epoch, facts.requests)


def trail_items(facts: Facts, max_chars: int, listed: tuple[str, ...] = ()) -> list[str]:
    """The artifact trail, most salient first: files grouped by folder ("`src/tui/`: footer.ts, theme.ts")
    and code names, a line of each in turn so that a short budget keeps both kinds; the files the
    summary's tags already list (`listed`) are not repeated. Within `TRAIL_SHARE` of the summary's budget
    and `TRAIL_TOKENS`; the section's share of the budget trims it from the end."""
    budget = min(int(max_chars * TRAIL_SHARE), TRAIL_TOKENS * 4)
    salience = facts.salience
    known = {_last_parts(path) for path in listed}
    files = [path for path in salience.ranked_files() if _last_parts(path) not in known
             and not (_LIBRARY.search(path) and path not in facts.changes and path not in facts.read)]
    root = project_root(facts)
    groups: dict[str, list[str]] = {}
    for path in files:
        path = relative(path, root)
        groups.setdefault(path.rpartition("/")[0], []).append(path)
    file_lines: list[str] = []
    single_at = -1  # the line that collects files alone in their folder, in rank order
    for folder, paths in groups.items():  # in the order of each folder's most salient file
        if folder and len(paths) > 1:
            file_lines.append(_pack(f"`{clip(folder, 120)}/`:", [p.rpartition("/")[2] for p in paths]))
            continue
        for path in paths:
            path = f"`{clip(path, 160)}`"
            if single_at < 0 or len(file_lines[single_at]) + len(path) + 2 > TRAIL_LINE_CHARS:
                file_lines.append(f"Files: {path}")
                single_at = len(file_lines) - 1
            else:
                file_lines[single_at] += f", {path}"
    folders = [relative(path, root) for path in salience.ranked(salience.paths) if path not in salience.files
               and _last_parts(path) not in known and path != root]
    if folders:  # where the agent searched and listed: one line, after the most salient files
        file_lines.insert(1, _pack("Folders used:", [f"`{clip(path, 120)}`" for path in folders]))
    name_lines = _chunks("Code names:", salience.ranked(salience.names))
    lines: list[str] = []
    used = 0
    if root and root != (normal_path(facts.cwd).rstrip("/") if facts.cwd else None):
        # first: the paths of the whole summary are relative to it (the working folder goes without saying)
        lines.append(f"Project folder: `{clip(root, 120)}` (paths relative to it)")
        used = len(lines[0]) + 3
    for index in range(max(len(file_lines), len(name_lines))):
        for line in (file_lines[index] if index < len(file_lines) else None,
                     name_lines[index] if index < len(name_lines) else None):
            if line is None:
                continue
            if used + len(line) + 3 > budget:
                return lines
            lines.append(line)
            used += len(line) + 3
    return lines


# A file of an installed library (a traceback's frame, a stack's `node_modules` line): the project's own
# files are what the next turns open; a library file stays in the trail only when a tool read or changed it.
_LIBRARY = re.compile(r"(?:^|/)(?:site-packages|dist-packages|node_modules|\.venv|\.tox|\.cargo/registry)/")


def _last_parts(path: str) -> str:
    """A path's last two parts: how a file is known whatever folder it was named from."""
    return "/".join(path.split(" → ")[-1].strip().rsplit("/", 2)[-2:])


def _pack(label: str, names: list[str]) -> str:
    """`label` and as many names as fit on one line."""
    line = label
    for name in names:
        name = clip(name, 80)
        if len(line) + len(name) + 2 > TRAIL_LINE_CHARS and not line.endswith(":"):
            break
        line = f"{line} {name}" if line.endswith(":") else f"{line}, {name}"
    return line


def _chunks(label: str, names: list[str]) -> list[str]:
    """`names` packed into labelled lines of `TRAIL_LINE_CHARS` characters."""
    lines, line = [], label
    for name in names[:TRAIL_NAMES]:
        name = clip(name, 80)
        if len(line) + len(name) + 2 > TRAIL_LINE_CHARS and line != label:
            lines.append(line)
            line = label
        line = f"{line} {name}" if line == label else f"{line}, {name}"
    if line != label:
        lines.append(line)
    return lines


def tightness(summary_budget: int) -> float:
    """0 at the default budget and above, 1 at `TIGHT_BUDGET` and below, linear between."""
    return min(max((ROOMY_BUDGET - summary_budget) / (ROOMY_BUDGET - TIGHT_BUDGET), 0.0), 1.0)


def weight(heading: str, tight: float) -> float:
    roomy, tightest = WEIGHTS[heading]
    return roomy + (tightest - roomy) * tight


def build_history_sections(facts: Facts, previous: str | None, branch: bool,
                           max_chars: int = TRAIL_TOKENS * 40, listed: tuple[str, ...] = (),
                           summary_budget: int = ROOMY_BUDGET) -> list[Section]:
    """The history summary's sections; `summary_budget`, the whole summary's, sets their shares (`tightness`):
    below the default, the open requests and rules get more, and a request that does not fit whole is said by
    its gist (handover.request_gist)."""
    tight = tightness(summary_budget)
    prev = parse_previous(previous)
    prev_goal = prev.goal + ([f"Later request: {clip_whole(prev.in_flight, REQUEST_CHARS)}"] if prev.in_flight else [])
    goal = merge(prev_goal, _later_requests(facts, bool(prev_goal)))
    todos = facts.todos or []
    in_progress = [clean_item(t) for t, status in todos if status == "in_progress"]
    if facts.unfinished:
        in_progress.insert(0, clean_item(facts.unfinished, 300))
    in_progress += change_items(facts, pending=True)
    if facts.announced:
        in_progress.append(f"Working on: {clean_item(facts.announced)}")
    blocked = blocked_items(facts)[-KEEP_NEW["blocked"] :]
    done = _done(facts)
    steps = [clean_item(t) for t, status in todos if status == "pending"][: KEEP_NEW["todos"]]
    if facts.unfinished:
        steps.insert(0, f"Finish: {clean_item(facts.unfinished)}")
    steps += [f"Fix: {b}" for b in blocked[-2:]]
    if not steps and facts.announced:
        steps.append(f"Continue: {clean_item(facts.announced)}")
    carried, done_since = carried_steps(prev.steps, done, facts.last_assistant_text)
    steps += [step for step in carried if step not in steps]
    if not steps and (facts.requests or prev_goal):
        steps.append("Wait for the user's next request")
    foreign = prev.foreign
    critical = []
    if foreign:
        label = "Earlier summary, its other sections" if prev.ours else "Earlier summary (from the agent's own compaction)"
        critical.append(f"{label}:\n" + foreign)
    shown = " ".join(blocked)
    ran = [command for family, command in facts.checks_run.items()
           if facts.checks_passed.get(family) != command and command not in shown]
    if ran:  # how the project runs its checks, when Done does not already say it
        critical.append("Checks run: " + ", ".join(ran[-KEEP_NEW["checks"]:]))
    last = facts.last_assistant_text.strip()
    if last and not last.endswith(":"):
        critical.append(f"Last assistant message: {clip(last)}")
    trail = merge(trail_items(facts, max_chars, listed), prev.get(TRAIL_HEADING, []))
    sections = [
        Section("## Goal", goal, "", keep="goal", weight=weight("## Goal", tight),
                gist=_gist if tight > 0 else None),
        Section(
            "## Constraints & Preferences",
            _lifted(standing_rules(prev.rules + facts.constraints.list()), facts, set(prev.rules)),
            weight=weight("## Constraints & Preferences", tight) + min(len(prev.rules) / 2, CARRIED_RULES_WEIGHT),
            pinned=frozenset(prev.rules) | frozenset(f"{rule} ({LIFTED})" for rule in prev.rules), keep="ends",
        ),
        Section("## Progress", [], None),
        Section(
            "### Done",
            # work in flight last time is done now, except changes whose result was not seen: their result
            # is in these messages, which report them again
            merge(prev.get("### Done", []) + [i for i in prev.get("### In Progress", []) if _WAITING not in i],
                  done + [f"{step} (next step of the earlier summary)" for step in done_since]),
            "- [x] ",
            weight=weight("### Done", tight),
        ),
        Section("### In Progress", in_progress, "- [ ] ", keep="first", weight=weight("### In Progress", tight),
                gist=_gist if tight > 0 else None),
        Section("### Blocked", merge(prev.get("### Blocked", []), blocked), weight=weight("### Blocked", tight)),
        Section(
            "## Key Decisions",
            merge(prev.get("## Key Decisions", []), facts.decisions.list()[-KEEP_NEW["decisions"] :]),
            weight=weight("## Key Decisions", tight),
        ),
        Section("## Next Steps", steps, "1. ", keep="first", gist=_gist if tight > 0 else None,
                weight=weight("## Next Steps", tight) + min(len(carried), CARRIED_WEIGHT), pinned=frozenset(carried)),
    ]
    if not branch:
        sections.append(
            Section("## Critical Context", merge(prev.get("## Critical Context", []), critical),
                    weight=weight("## Critical Context", tight),
                    gist=_last_message_gist if tight > 0 else None)
        )
    sections.append(Section(TRAIL_HEADING, trail, keep="first", weight=TRAIL_WEIGHT))
    return sections


CARRIED_WEIGHT = 2  # Next Steps' weight grows by one a carried step, up to this: they stay the work
CARRIED_RULES_WEIGHT = 3  # Constraints' by a half a carried rule, up to this: the user's rules still bind
DONE_SHARE = 0.6  # of a carried step's words a span's Done line holds when it says the step is done


def carried_steps(steps: list[str], done: list[str], said: str = "") -> tuple[list[str], list[str]]:
    """(the earlier summary's next steps still open, those the span did): a step is done when one line of the
    span's Done, or one sentence of the agent's last message, holds most (`DONE_SHARE`) of its significant
    words besides its opening verb ("Write `docs/bands.md` describing the bands" / "Wrote docs/bands.md
    describing the bands.")."""
    lines = [words(line) for line in done] + [words(s) for s in SENTENCE.split(said[:SCAN_CHARS]) if s.strip()]
    still, finished = [], []
    for step in steps:
        own = words(" ".join(step.split()[1:]))
        if len(own) >= 2 and any(len(own & line) >= DONE_SHARE * len(own) for line in lines):
            finished.append(step)
        else:
            still.append(step)
    return still, finished


def _lifted(rules: list[str], facts: Facts, earlier: set[str]) -> list[str]:
    """The rules, a temporary one that a later go-ahead lifted said so ("Don't change anything yet. (lifted
    later)"): its words stay, so that the reader knows it was said and no longer binds; an
    earlier checkpoint's temporary rule is lifted by a go-ahead of this span. A lifted rule keeps its place."""
    out = []
    for rule in rules:
        by = facts.lifted.get(rule) or (facts.go_ahead if rule in earlier and rule not in facts.constraints
                                        and is_temporary(rule) and LIFTED not in rule else None)
        out.append(f'{rule} ({LIFTED})' if by else rule)
    return out


LIFTED = "lifted later"


def _gist(item: str) -> str:
    """A request's line said by its gist (handover.request_gist), its label ("Later request: ", "Finish: ")
    kept."""
    for label in ("Later request: ", "Finish: "):
        if item.startswith(label):
            return label + request_gist(item[len(label):])
    return request_gist(item)


def _last_message_gist(item: str) -> str:
    """Critical Context's last assistant message by its first sentences (its other items, an earlier
    checkpoint's text, keep their start instead)."""
    label = "Last assistant message: "
    return label + request_gist(item[len(label):]) if item.startswith(label) else item


def build_turn_prefix_sections(facts: Facts, max_chars: int = TRAIL_TOKENS * 40,
                               listed: tuple[str, ...] = (), summary_budget: int = ROOMY_BUDGET) -> list[Section]:
    """A split turn's prefix: its request and rules, what it did, what the rest of the turn needs; the whole
    summary's budget sets their shares as for the history (`tightness`)."""
    tight = tightness(summary_budget)
    early = change_items(facts) + [f"Checks passed: {c}" for c in facts.checks_passed.values()]
    early += blocked_items(facts)[-3:]
    context = trail_items(facts, max_chars, listed)
    if facts.announced:
        context.append(f"Working on: {clean_item(facts.announced)}")
    last = facts.last_assistant_text.strip()
    if last and not last.endswith(":"):
        context.append(f"Last assistant message: {clip(last)}")
    request = [clip_whole(r, REQUEST_CHARS) for r in (facts.requests or [facts.first_words or ""])[:1] if r]
    shown = request[0] if request else ""
    # no Constraints heading in a turn prefix: the rules follow the request, unless its shown start holds them
    rules = [f"Rule: {rule}" for rule in _lifted(standing_rules(facts.constraints.list()), facts, set())
             if rule not in shown]
    return [
        Section("## Original Request", request + rules, "", keep="goal", weight=weight("## Original Request", tight)),
        Section("## Early Progress", early, weight=weight("## Early Progress", tight)),
        Section("## Context for Suffix", context, keep="first", weight=weight("## Context for Suffix", tight),
                gist=_last_message_gist if tight > 0 else None),
    ]


def summary_tokens(text: str) -> int:
    """The summary's length as the budget counts it: the larger of the project's tokenizer (cl100k) and
    chars/4 (how plan, run and eval estimate text), so the summary is within the budget by either."""
    return max(-(-len(text) // 4), count_tokens(text))


def summarize_offline(call: SummaryCall) -> str:
    """The summary of `call`, never longer than `call.max_tokens` tokens (`summary_tokens`): the sections
    are fitted to chars/4 of the budget, then, while the tokenizer counts more, to a proportionally smaller
    number of characters."""
    budget = max(call.max_tokens, 1)
    facts = extract_facts(call.messages, call.meta.get("cwd"))
    listed = tuple(call.meta.get("listed_files") or ())
    if call.kind == TURN_PREFIX:
        sections = build_turn_prefix_sections(facts, budget * 4, listed,
                                              summary_budget=call.meta.get("summary_budget") or budget)
    else:
        sections = build_history_sections(facts, call.previous_summary, branch=call.kind == BRANCH,
                                          max_chars=budget * 4, listed=listed,
                                          summary_budget=call.meta.get("summary_budget") or budget)
    chars = budget * 4
    text = fit_sections(sections, chars)
    for _ in range(FIT_ROUNDS):
        if len(text.encode("utf-8", "surrogatepass")) <= budget:  # a token is at least one byte: no count needed
            return text
        tokens = summary_tokens(text)
        if tokens <= budget:
            return text
        chars = min(chars - 1, int(chars * budget / tokens) - 16)
        if chars <= 0:
            break
        text = fit_sections(sections, chars)
    return text  # the request alone, at a budget too small for more (--summary-budget is at least 200)


class BuiltinSummarizer:
    """`--model builtin`: the offline summarizer. Never fails on well-formed messages; costs nothing."""

    name = "builtin"
    remote = False  # prompts never leave the machine: no redaction needed
    free = True  # costs nothing: a --max-cost budget never refuses it (pool.py)

    async def summarize(self, call: SummaryCall) -> SummaryResult:
        return self.summarize_now(call)

    def summarize_now(self, call: SummaryCall) -> SummaryResult:
        """The same summary, synchronously: how a worker that planned the session makes it in place."""
        start = time.perf_counter()
        text = summarize_offline(call)
        return SummaryResult(
            text=text,
            model="builtin",
            prompt_tokens=call.prompt_tokens,
            completion_tokens=-(-len(text) // 4),
            cost_usd=0.0,
            latency_s=time.perf_counter() - start,
        )
