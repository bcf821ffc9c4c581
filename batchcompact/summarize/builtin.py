"""The built-in offline summarizer (`--model builtin`): deterministic, no network, cost 0.

It reads the structure of `call.messages` (pi-shaped LLM messages from any agent's reader, `Agent.reader`; see
`builtin_facts.py` for what it takes from each agent's tools) and fills the headings a model is asked for,
like a handover note: the goal and later requests, rules the user stated (never questions), each changed
file with what changed, checks that passed, failures not fixed later, the unfinished request and what the
agent was about to do. Invariants:
- the same call gives the same text (no clock, no randomness, no dict-order surprises);
- linear time in the size of the messages;
- every heading of the call's kind is present, each section within a weighted share of
  `call.max_tokens` (chars/4), unused shares going to the sections that need them;
- items of `call.previous_summary` are kept (update semantics); only "Next Steps" is rewritten; a
  previous summary in another layout (Claude Code's, Codex's) is kept as one block of critical context.
"""

from __future__ import annotations

import re
import time

from batchcompact.core.calls import BRANCH, TURN_PREFIX, SummaryCall
from batchcompact.core.prompts import HISTORY_HEADINGS, TURN_PREFIX_HEADINGS
from batchcompact.summarize.base import SummaryResult
from batchcompact.summarize.builtin_facts import Facts, clean_item, clip, extract_facts
from batchcompact.summarize.handover import current_failures, goal_requests
from batchcompact.tokenizer import count_tokens

NONE = "(none)"
SHORTENED_MIN = 400  # room left in a section for the start of an item that does not fit whole
DETAILED_CHANGES = 8  # the newest changed files say what changed; older ones, that they changed
FIT_ROUNDS = 6  # refits when the tokenizer counts more than chars/4 (paths, code): rarely more than two
KEEP_NEW = {"constraints": 8, "decisions": 8, "blocked": 5, "todos": 8, "checks": 4}
TRAIL_HEADING = "## Relevant Files and Code Names"
# The artifact trail's candidates: this share of the summary's budget, never more than TRAIL_TOKENS (the
# section's weight then decides what it keeps beside the others).
TRAIL_SHARE = 0.8
TRAIL_TOKENS = 1500
TRAIL_LINE_CHARS = 160
TRAIL_NAMES = 400  # the most salient code names considered: a long session names thousands
TRAIL_WEIGHT = 10  # of 26: the largest share; measured in docs/summaries.md ("The budget")
_VERBS = {"added": "Added", "wrote": "Wrote", "edited": "Edited", "deleted": "Deleted", "moved": "Moved"}
_WAITING = "no result yet"
_IN_FLIGHT = {"added": "Adding", "wrote": "Writing", "edited": "Editing", "deleted": "Deleting", "moved": "Moving"}
_OUR_HEADINGS = ("## Goal", "### Done", "## Next Steps", "## Original Request")
_KNOWN_HEADINGS = frozenset(HISTORY_HEADINGS + TURN_PREFIX_HEADINGS + (TRAIL_HEADING,))


# -- sections -------------------------------------------------------------------------------------------
class Section:
    """A heading, its items and how items are rendered; `keep` says which items go last when trimming."""

    def __init__(
        self, heading: str, items: list[str], prefix: str = "- ", keep: str = "newest", weight: int = 1
    ):
        self.heading = heading
        self.items = items
        self.prefix = prefix
        self.keep = (
            keep  # newest: drop the oldest first; first: drop from the end; goal: keep item 0, then newest
        )
        self.weight = weight

    def render_item(self, index: int, item: str) -> str:
        prefix = f"{index + 1}. " if self.prefix == "1. " else self.prefix
        return prefix + item.replace("\n", "\n  ")

    def render(self) -> str:
        if self.prefix is None:
            return self.heading
        lines = [self.render_item(i, item) for i, item in enumerate(self.items)]
        return self.heading + "\n" + ("\n".join(lines) if lines else NONE)


def _parse_previous(summary: str | None) -> tuple[dict[str, list[str]], str | None]:
    """(heading -> items) of a previous checkpoint's sections in our layout, and the text of the rest.

    A checkpoint written by another summarizer (Claude Code's own compaction, Codex's) has none of our
    headings: it is kept whole, as one block of the critical context, rather than lost. One that has some
    of them (pi's own checkpoints: "## Goal" beside "## Files Created/Modified", "## Next Steps (WP14-WP20)")
    has its other sections kept the same way, as written: they are often what it knew best.
    """
    if not summary or not summary.strip():
        return {}, None
    if not any(h in summary for h in _OUR_HEADINGS):
        return {}, _foreign_text(summary)
    out: dict[str, list[str]] = {}
    other: list[str] = []
    heading = None
    in_other = False
    for line in _FENCE.sub("(code omitted)", summary).splitlines():
        stripped = line.strip()
        if stripped.startswith("#"):
            in_other = stripped not in _KNOWN_HEADINGS
            heading = None if in_other else stripped
            if in_other:
                other.append(stripped)
            else:
                out.setdefault(stripped, [])
        elif stripped.startswith("<"):
            heading, in_other = None, False  # file tags: the composition adds fresh ones
        elif in_other:
            if stripped:
                other.append(line.rstrip())
        elif heading and stripped and stripped != NONE:
            item = clean_item(stripped, 400)
            if item and item != NONE:
                out[heading].append(item)
    return out, "\n".join(other) if other else None


_FENCE = re.compile(r"^\s*```.*?^\s*```[ \t]*$", re.DOTALL | re.MULTILINE)
_INTENT = re.compile(
    r"^\s*(?:\d+\.\s*)?(?:\*\*)?(?:Primary Request(?: and Intent)?|User Intent|Goal|Task)s?(?:\*\*)?:\s*(.*)$",
    re.I,
)
_NUMBERED_HEADING = re.compile(r"^\s*\d+\.\s+\S.*:\s*$")


def _foreign_text(summary: str) -> str:
    """Another agent's checkpoint, without its preamble, analysis and code blocks (the files hold the code)."""
    text = re.sub(r"<analysis>.*?</analysis>", "", summary, flags=re.DOTALL)
    if "\nSummary:" in text:
        text = text.split("\nSummary:", 1)[1]
    text = _FENCE.sub("(code omitted)", text)
    lines = [
        line.rstrip()
        for line in text.splitlines()
        if line.strip()
        and not line.startswith("This session is being continued")
        and line.strip() != "Analysis:"
    ]
    return "\n".join(lines)


def foreign_intent(text: str) -> str | None:
    """The "Primary Request and Intent" of another agent's checkpoint: the goal it carries."""
    lines = text.splitlines()
    for index, line in enumerate(lines):
        match = _INTENT.match(line)
        if not match:
            continue
        body = [match.group(1)] if match.group(1).strip() else []
        for following in lines[index + 1 :]:
            if _NUMBERED_HEADING.match(following) or _INTENT.match(following):
                break
            body.append(following.strip())
        return clean_item(" ".join(body), 400) or None
    return None


def _merge(previous: list[str], new: list[str]) -> list[str]:
    return list(dict.fromkeys(previous + [item for item in new if item]))


ROOT_MIN_PATHS = 3  # absolute paths under one folder before the summary writes them relative to it
ROOT_MIN_PARTS = 3  # `/home/user/app`: a shorter common folder saves too little to be worth its line


def project_root(facts: Facts) -> str | None:
    """The folder every absolute path the span's tools changed or read lies in (`/home/user/projects/webapp`),
    when there are at least `ROOT_MIN_PATHS` of them and it is `ROOT_MIN_PARTS` deep: the summary states it
    once and writes those paths relative to it (`src/lib/session.ts`), a handful of tokens less a line."""
    paths = sorted({p for p in list(facts.changes) + facts.read.list() if p.startswith("/") and " → " not in p})
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


def relative(path: str, root: str | None) -> str:
    return path[len(root) + 1:] if root and path.startswith(root + "/") and len(path) > len(root) + 1 else path


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
    return [clean_item(text, 300) if first else f"Later request: {clean_item(text, 240)}"
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
    if root:  # first: the paths of the whole summary are relative to it
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


def build_history_sections(facts: Facts, previous: str | None, branch: bool,
                           max_chars: int = TRAIL_TOKENS * 40, listed: tuple[str, ...] = ()) -> list[Section]:
    prev, foreign = _parse_previous(previous)
    intent = foreign_intent(foreign) if foreign else None
    prev_goal = prev.get("## Goal", []) or ([intent] if intent else [])
    goal = _merge(prev_goal, _later_requests(facts, bool(prev_goal)))
    todos = facts.todos or []
    in_progress = [clean_item(t) for t, status in todos if status == "in_progress"]
    if facts.unfinished:
        in_progress.insert(0, clean_item(facts.unfinished, 300))
    in_progress += change_items(facts, pending=True)
    if facts.announced:
        in_progress.append(f"Working on: {clean_item(facts.announced)}")
    blocked = blocked_items(facts)[-KEEP_NEW["blocked"] :]
    steps = [clean_item(t) for t, status in todos if status == "pending"][: KEEP_NEW["todos"]]
    if facts.unfinished:
        steps.insert(0, f"Finish: {clean_item(facts.unfinished)}")
    steps += [f"Fix: {b}" for b in blocked[-2:]]
    if not steps and facts.announced:
        steps.append(f"Continue: {clean_item(facts.announced)}")
    if not steps and (facts.requests or prev_goal):
        steps.append("Wait for the user's next request")
    critical = []
    if foreign:
        label = "Earlier summary, its other sections" if prev else "Earlier summary (from the agent's own compaction)"
        critical.append(f"{label}:\n" + foreign)
    shown = " ".join(blocked)
    ran = [command for family, command in facts.checks_run.items()
           if facts.checks_passed.get(family) != command and f"`{command}`" not in shown]
    if ran:  # how the project runs its checks, when Done does not already say it
        critical.append("Checks run: " + ", ".join(f"`{clip(command, 80)}`" for command in ran[-KEEP_NEW["checks"]:]))
    last = facts.last_assistant_text.strip()
    if last and not last.endswith(":"):
        critical.append(f"Last assistant message: {clip(last)}")
    trail = _merge(trail_items(facts, max_chars, listed), prev.get(TRAIL_HEADING, []))
    sections = [
        Section("## Goal", goal, "", keep="goal", weight=4),
        Section(
            "## Constraints & Preferences",
            _merge(
                prev.get("## Constraints & Preferences", []),
                facts.constraints.list(),
            ),
            weight=2,
        ),
        Section("## Progress", [], None),
        Section(
            "### Done",
            # work in flight last time is done now, except changes whose result was not seen: their result
            # is in these messages, which report them again
            _merge(prev.get("### Done", []) + [i for i in prev.get("### In Progress", []) if _WAITING not in i],
                   _done(facts)),
            "- [x] ",
            weight=4,
        ),
        Section("### In Progress", in_progress, "- [ ] ", keep="first", weight=1),
        Section("### Blocked", _merge(prev.get("### Blocked", []), blocked), weight=1),
        Section(
            "## Key Decisions",
            _merge(prev.get("## Key Decisions", []), facts.decisions.list()[-KEEP_NEW["decisions"] :]),
            weight=1,
        ),
        Section("## Next Steps", steps or prev.get("## Next Steps", []), "1. ", keep="first", weight=1),
    ]
    if not branch:
        sections.append(
            Section("## Critical Context", _merge(prev.get("## Critical Context", []), critical), weight=2)
        )
    sections.append(Section(TRAIL_HEADING, trail, keep="first", weight=TRAIL_WEIGHT))
    return sections


def build_turn_prefix_sections(facts: Facts, max_chars: int = TRAIL_TOKENS * 40,
                               listed: tuple[str, ...] = ()) -> list[Section]:
    early = change_items(facts) + [f"Checks passed: {c}" for c in facts.checks_passed.values()]
    early += blocked_items(facts)[-3:]
    context = trail_items(facts, max_chars, listed)
    if facts.announced:
        context.append(f"Working on: {clean_item(facts.announced)}")
    last = facts.last_assistant_text.strip()
    if last and not last.endswith(":"):
        context.append(f"Last assistant message: {clip(last)}")
    return [
        Section("## Original Request", [clean_item(r, 300) for r in (facts.requests or [facts.first_words])[:1] if r],
                "", weight=2),
        Section("## Early Progress", early, weight=3),
        Section("## Context for Suffix", context, keep="first", weight=4),
    ]


# -- budgets --------------------------------------------------------------------------------------------
def render_sections(sections: list[Section]) -> str:
    return "\n\n".join(section.render() for section in sections)


def _item_cost(section: Section, index: int, item: str) -> int:
    return len(section.render_item(index, item)) + 1


def _select(section: Section, budget: int) -> list[str]:
    """The items of `section` that fit in `budget` characters, dropping by the section's `keep` rule."""
    items = section.items
    order = list(range(len(items)))
    if section.keep == "newest":
        order.reverse()
    elif section.keep == "goal":
        order = [0] + list(range(len(items) - 1, 0, -1)) if items else []
    chosen: list[int] = []
    used = 0
    for index in order:
        cost = _item_cost(section, index, items[index])
        if used + cost <= budget:
            chosen.append(index)
            used += cost
        elif not chosen and budget - used > 24:  # the most important item, shortened
            room = budget - used - len(section.render_item(index, "")) - 1
            short = _shorten(items[index], room)
            while room > 0 and _item_cost(section, index, short) > budget - used:  # indented lines cost more
                room -= _item_cost(section, index, short) - (budget - used)
                short = _shorten(items[index], room)
            return [short] if room > 0 else []
        else:
            room = budget - used - len(section.render_item(index, "")) - 1
            if room >= SHORTENED_MIN:  # what is left holds the start of the next item (an earlier checkpoint)
                short = _shorten(items[index], room)
                if _item_cost(section, index, short) <= budget - used:
                    return [items[i] if i != index else short for i in sorted(chosen + [index])]
            break
    return [items[i] for i in sorted(chosen)]


def _shorten(item: str, room: int) -> str:
    if len(item) <= room:
        return item
    cut = item[: max(room - 1, 0)]
    if "\n" in cut and len(cut.rsplit("\n", 1)[0]) >= len(cut) // 2:  # a multi-line block: cut at a line end
        cut = cut.rsplit("\n", 1)[0]
    return cut.rstrip() + "…"


def fit_sections(sections: list[Section], max_chars: int) -> str:
    """Render within `max_chars`: each section gets a weighted share; what one leaves unused goes to others.

    Linear in the number of items. Every heading is always present, even at a tiny budget.
    """
    text = render_sections(sections)
    if len(text) <= max_chars:
        return text
    bare = [Section(s.heading, [], s.prefix) for s in sections]
    overhead = len(render_sections(bare)) - sum(len(NONE) + 1 for s in sections if s.prefix is not None)
    room = max_chars - overhead
    needs = {id(s): len(s.render()) - len(s.heading) for s in sections if s.prefix is not None}
    budgets = _share(sections, needs, room)
    fitted = [
        s if s.prefix is None else Section(s.heading, _select(s, budgets[id(s)]), s.prefix, s.keep)
        for s in sections
    ]
    text = render_sections(fitted)
    if len(text) > max_chars and max_chars > len(render_sections(bare)) + 64:  # rounding: fit a little tighter
        return fit_sections(sections, max_chars - (len(text) - max_chars) - 32)
    if len(text) > max_chars:  # a budget too small for anything but the headings
        text = render_sections(bare)
    return text


def _share(sections: list[Section], needs: dict[int, int], room: int) -> dict[int, int]:
    """Water-filling: sections that need less than their weighted share give the rest to the others."""
    budgets: dict[int, int] = {}
    pending = sorted((s for s in sections if s.prefix is not None), key=lambda s: needs[id(s)] / s.weight)
    weight = sum(s.weight for s in pending)
    for section in pending:
        share = max(room, 0) * section.weight // max(weight, 1)
        budgets[id(section)] = given = min(needs[id(section)], share)
        room -= given
        weight -= section.weight
    return budgets


def summary_tokens(text: str) -> int:
    """The summary's length as the budget counts it: the larger of the project's tokenizer (cl100k) and
    chars/4 (how plan, run and eval estimate text), so the summary is within the budget by either."""
    return max(-(-len(text) // 4), count_tokens(text))


def summarize_offline(call: SummaryCall) -> str:
    """The summary of `call`, never longer than `call.max_tokens` tokens (`summary_tokens`): the sections
    are fitted to chars/4 of the budget, then, while the tokenizer counts more, to a proportionally smaller
    number of characters."""
    budget = max(call.max_tokens, 1)
    facts = extract_facts(call.messages)
    listed = tuple(call.meta.get("listed_files") or ())
    if call.kind == TURN_PREFIX:
        sections = build_turn_prefix_sections(facts, budget * 4, listed)
    else:
        sections = build_history_sections(facts, call.previous_summary, branch=call.kind == BRANCH,
                                          max_chars=budget * 4, listed=listed)
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
    return text  # headings alone, at a budget too small for them (--summary-budget is at least 200)


class BuiltinSummarizer:
    """`--model builtin`: the offline summarizer. Never fails on well-formed messages; costs nothing."""

    name = "builtin"
    remote = False  # prompts never leave the machine: no redaction needed

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
