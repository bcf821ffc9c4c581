"""The sections of a built-in summary: each heading with its items, fitted into the summary's budget by
weighted shares (`fit_sections`: a section that needs less gives the rest to the others, each drops its
least important items first), and an earlier checkpoint's sections read back (`parse_previous`: ours by
heading; another agent's kept as one block, its "Primary Request and Intent" as the goal).

Linear in the number of items; every heading is always present.
"""

from __future__ import annotations

import re
from collections.abc import Callable

from batchcompact.core.prompts import HISTORY_HEADINGS
from batchcompact.summarize.builtin_text import clean_item

NONE = "(none)"
SHORTENED_MIN = 400  # room left in a section for the start of an item that does not fit whole
TRAIL_HEADING = "## Relevant Files and Code Names"
_OUR_HEADINGS = ("## Goal", "### Done", "## Next Steps", "## Original Request")
# the headings read back as items: a split turn's ("## Original Request"…) in a history checkpoint are the
# text of an earlier turn, kept whole with its other sections
_HISTORY_KNOWN = frozenset(HISTORY_HEADINGS + (TRAIL_HEADING,))
# an item that says its section is empty ("None", "Nothing actively in-flight"): no item
_EMPTY_ITEM = re.compile(r"^(?:\(?(?:none|nothing|n/a|no blockers?)\)?)(?:[\s.,:;-]+\S+){0,3}[.!]?$", re.I)
_RULE_LINE = re.compile(r"^(?:-{3,}|\*{3,}|_{3,})$")
_BOLD_HEADING = re.compile(r"^\*\*[^*]+\*\*:?$|^\*\*[^*]+:\*\*$")


class Section:
    """A heading, its items and how items are rendered; `keep` says which items go last when trimming."""

    def __init__(
        self, heading: str, items: list[str], prefix: str = "- ", keep: str = "newest", weight: float = 1,
        gist: Callable[[str], str] | None = None, pinned: frozenset[str] = frozenset(),
    ):
        self.heading = heading
        self.items = items
        self.prefix = prefix
        self.keep = (
            keep  # newest: drop the oldest first; first: drop from the end; goal: keep item 0, then newest
        )
        self.weight = weight
        # with `gist`, an item that does not fit whole is said by its gist, and the items after it in
        # `keep` order are still tried (the tight layout's Goal: more open requests, each shorter)
        self.gist = gist
        # items kept before all others whatever `keep` says (an earlier checkpoint's rules and next steps:
        # the user's words and the plan the agent resumed with outrank what the span added)
        self.pinned = pinned

    def render_item(self, index: int, item: str) -> str:
        prefix = f"{index + 1}. " if self.prefix == "1. " else self.prefix
        return prefix + item.replace("\n", "\n  ")

    def render(self) -> str:
        if self.prefix is None:
            return self.heading
        lines = [self.render_item(i, item) for i, item in enumerate(self.items)]
        return self.heading + "\n" + ("\n".join(lines) if lines else NONE)


def parse_previous(summary: str | None) -> tuple[dict[str, list[str]], str | None]:
    """(heading -> items) of a previous checkpoint's sections in our layout, and the text of the rest.

    A checkpoint written by another summarizer (Claude Code's own compaction, Codex's) has none of our
    headings: it is kept whole, as one block of the critical context, rather than lost. One that has some
    of them (pi's own checkpoints: "## Goal" beside "## Files Created/Modified", "## Next Steps (WP14-WP20)")
    has its other sections kept the same way, as written: they are often what it knew best.
    """
    if not summary or not summary.strip():
        return {}, None
    if not any(h in summary for h in _OUR_HEADINGS):
        return _foreign_sections(_foreign_text(summary))
    out: dict[str, list[str]] = {}
    other: list[str] = []
    heading = None
    in_other = False
    for line in _FENCE.sub("(code omitted)", summary).splitlines():
        stripped = line.strip()
        if _RULE_LINE.match(stripped):  # a horizontal rule ends the section ("---" before pi's split turn)
            heading, in_other = None, True
            continue
        if _BOLD_HEADING.match(stripped) and (heading or in_other):
            # a bold line alone is a heading of the text it starts ("**Turn Context (split turn):**"): kept as
            # written with the other sections, never an item of the section above it
            heading, in_other = None, True
            other.append(stripped)
            continue
        if stripped.startswith("#"):
            in_other = stripped not in _HISTORY_KNOWN
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
            if item and item != NONE and not _EMPTY_ITEM.match(item):
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


_FOREIGN_HEADING = re.compile(r"^\s*(?:#+\s*|\d+\.\s+|\*\*)?([A-Z][^:*#]{1,60}?)(?:\*\*)?:?(?:\*\*)?\s*$")
_HARNESS_TAIL = ("If you need specific details from before compaction", "Continue the conversation from where it left off")
_FOREIGN_RULES = re.compile(r"constraint|preference|\brules?\b|instruction|user message", re.I)
_FOREIGN_STEPS = re.compile(r"next step|pending|remain|\btodo|to do|open request", re.I)


def _foreign_sections(text: str) -> tuple[dict[str, list[str]], str | None]:
    """Another agent's checkpoint: the items of its rule sections (Claude Code's "All user messages",
    "Constraints") and of its open-work sections ("Pending Tasks", "Optional Next Step", "What remains"), read
    as our Constraints and Next Steps, so that they are carried as ours are; the rest kept whole as text."""
    out: dict[str, list[str]] = {}
    rest: list[str] = []
    target = None
    for line in text.splitlines():
        stripped = line.strip()
        heading = _FOREIGN_HEADING.match(line) if line[:1] != " " or stripped.startswith("#") else None
        if heading and not stripped.startswith(("- ", "* ")) and (stripped.endswith(":") or stripped[:1] in "#*"
                                                                  or stripped[:1].isdigit()):
            name = heading.group(1)
            target = ("## Next Steps" if _FOREIGN_STEPS.search(name)
                      else "## Constraints & Preferences" if _FOREIGN_RULES.search(name) else None)
            if target is None:
                rest.append(line)
            continue
        if stripped.startswith(_HARNESS_TAIL):  # the harness's lines after Claude Code's summary: not its text
            target = None
            continue
        if target is None:
            rest.append(line)
            continue
        item = clean_item(stripped, 400)
        if item and item != NONE and not _EMPTY_ITEM.match(item) and not item.endswith(":"):
            out.setdefault(target, []).append(item)
    return out, "\n".join(rest) if any(line.strip() for line in rest) else None


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


def merge(previous: list[str], new: list[str]) -> list[str]:
    return list(dict.fromkeys(previous + [item for item in new if item]))


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
    if section.pinned:
        order = [i for i in order if items[i] in section.pinned] + [i for i in order if items[i] not in section.pinned]
    chosen: list[int] = []
    gists: dict[int, str] = {}
    used = 0
    for index in order:
        cost = _item_cost(section, index, items[index])
        if used + cost <= budget:
            chosen.append(index)
            used += cost
        elif not chosen and budget - used > 24:  # the most important item, shortened (from its gist if any)
            item = section.gist(items[index]) if section.gist is not None else items[index]
            if item != items[index] and _item_cost(section, index, item) <= budget - used:
                gists[index] = item
                chosen.append(index)
                used += _item_cost(section, index, item)
                continue
            room = budget - used - len(section.render_item(index, "")) - 1
            short = _shorten(item, room)
            while room > 0 and _item_cost(section, index, short) > budget - used:  # indented lines cost more
                room -= _item_cost(section, index, short) - (budget - used)
                short = _shorten(item, room)
            return [short] if room > 0 else []
        elif section.gist is not None and ((short := section.gist(items[index])) != items[index]
                                           or budget - used - len(section.render_item(index, "")) - 1 < SHORTENED_MIN):
            # said by its gist, or skipped for the next one that fits; with room for the start of a long
            # item that has no gist (an earlier checkpoint's text), that start, as without a gist
            if used + _item_cost(section, index, short) <= budget:
                gists[index] = short
                chosen.append(index)
                used += _item_cost(section, index, short)
        else:
            room = budget - used - len(section.render_item(index, "")) - 1
            if room >= SHORTENED_MIN:  # what is left holds the start of the next item (an earlier checkpoint)
                short = _shorten(items[index], room)
                if _item_cost(section, index, short) <= budget - used:
                    return [items[i] if i != index else short for i in sorted(chosen + [index])]
            break
    return [gists.get(i, items[i]) for i in sorted(chosen)]


_SENTENCE_END = re.compile(r"[.!?](?=\s)")


def _shorten(item: str, room: int) -> str:
    """The start of `item` within `room` characters, ended where a reader can stop: at a line end (a
    multi-line block), else at a sentence end, else at a word's end with "…", never inside a word (or a
    `name`) when the kept start would still be at least half the room."""
    if len(item) <= room:
        return item
    cut = item[: max(room - 1, 0)]
    half = len(cut) // 2
    if "\n" in cut and len(cut.rsplit("\n", 1)[0]) >= half:  # a multi-line block: cut at a line end
        return cut.rsplit("\n", 1)[0].rstrip() + "…"
    ends = [m.end() for m in _SENTENCE_END.finditer(item[: len(cut) + 1])]
    if ends and ends[-1] >= half:  # a whole sentence reads as one: no "…" after it
        return item[: ends[-1]]
    if item[len(cut)] not in " \t" and " " in cut and len(cut.rsplit(" ", 1)[0]) >= half:
        cut = cut.rsplit(" ", 1)[0]  # not inside a word
    return cut.rstrip().rstrip(",;:(`") + "…"


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
    # an earlier checkpoint's pinned items (its rules, its next steps) get their room first, up to a quarter
    floors = {id(s): min(sum(_item_cost(s, i, item) for i, item in enumerate(s.items) if item in s.pinned),
                         max(room, 0) // 4)
              for s in sections if s.prefix is not None and s.pinned}
    budgets = _share(sections, {k: v - floors.get(k, 0) for k, v in needs.items()}, room - sum(floors.values()))
    for key, floor in floors.items():
        budgets[key] += floor
    fitted = [
        s if s.prefix is None else Section(s.heading, _select(s, budgets[id(s)]), s.prefix, s.keep, s.weight,
                                           pinned=s.pinned)
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
        share = int(max(room, 0) * section.weight // max(weight, 1))
        budgets[id(section)] = given = min(needs[id(section)], share)
        room -= given
        weight -= section.weight
    return budgets
