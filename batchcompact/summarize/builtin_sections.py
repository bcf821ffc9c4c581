"""The sections of a built-in summary: each heading with its items, fitted into the summary's budget by
weighted shares (`fit_sections`: a section that needs less gives the rest to the others, each drops its
least important items first; an earlier checkpoint's carried items, `pinned`, go last). An earlier
checkpoint is read back by `builtin_previous.py`.

Linear in the number of items; "(none)" only under a section with nothing to say.
"""

from __future__ import annotations

import re
from collections.abc import Callable

from batchcompact.summarize.builtin_previous import NONE, TRAIL_HEADING

SHORTENED_MIN = 400  # room left in a section for the start of an item that does not fit whole


class Section:
    """A heading, its items and how items are rendered; `keep` says which items go last when trimming."""

    def __init__(
        self, heading: str, items: list[str], prefix: str | None = "- ", keep: str = "newest", weight: float = 1,
        gist: Callable[[str], str] | None = None, pinned: frozenset[str] = frozenset(),
    ):
        self.heading = heading
        self.items = items
        self.prefix = prefix
        self.keep = (
            keep  # newest: drop the oldest first; first: drop from the end; goal: keep item 0, then newest;
            # ends: keep the first and the newest, drop from the middle
        )
        self.weight = weight
        # with `gist`, an item that does not fit whole is said by its gist, and the items after it in
        # `keep` order are still tried (the tight layout's Goal: more open requests, each shorter)
        self.gist = gist
        # items kept before the others, whatever `keep` says (the earlier summary's rules: carried over)
        self.pinned = pinned

    def render_item(self, index: int, item: str) -> str:
        prefix = f"{index + 1}. " if self.prefix == "1. " else self.prefix
        assert prefix is not None  # a heading-only section (prefix None) has no items to render
        return prefix + item.replace("\n", "\n  ")

    def render(self) -> str:
        if self.prefix is None:
            return self.heading
        lines = [self.render_item(i, item) for i, item in enumerate(self.items)]
        return self.heading + "\n" + ("\n".join(lines) if lines else NONE)


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
    elif section.keep == "ends":
        # the first and the newest, dropping from the middle: 0, n-1, 1, n-2, …
        order = list(dict.fromkeys(i for k in range(len(items)) for i in (k, len(items) - 1 - k)))
    if section.pinned:  # carried items first, in the same order
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
            return [short] if room > 0 and short else []
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
                if short and _item_cost(section, index, short) <= budget - used:
                    return [items[i] if i != index else short for i in sorted(chosen + [index])]
            break
    return [gists.get(i, items[i]) for i in sorted(chosen)]


_SENTENCE_END = re.compile(r"[.!?](?=\s)")


def _shorten(item: str, room: int) -> str:
    """The start of `item` within `room` characters, ended where a reader can stop: at a line end (a
    multi-line block), else at a sentence end, else at a word's end with "…", never inside a word, a `name`
    or a path (a list of `names` ends at its last whole one) when the kept start would still be at least
    half the room; "" when what would be kept says nothing (fewer than `SHORT_MIN` characters of words)."""
    if len(item) <= room:
        return item
    cut = item[: max(room - 1, 0)]
    half = len(cut) // 2
    if "\n" in cut and len(cut.rsplit("\n", 1)[0]) >= half:  # a multi-line block: cut at a line end
        return cut.rsplit("\n", 1)[0].rstrip() + "…"
    ends = [m.end() for m in _SENTENCE_END.finditer(item[: len(cut) + 1]) if cut[: m.end()].count("`") % 2 == 0]
    if ends and ends[-1] >= half:  # a whole sentence reads as one: no "…" after it
        return item[: ends[-1]]
    if cut.count("`") % 2:  # inside a `name` or a path: end before it
        cut = cut[: cut.rindex("`")]
    elif item[len(cut)] not in " \t" and " " in cut and len(cut.rsplit(" ", 1)[0]) >= half:
        cut = cut.rsplit(" ", 1)[0]  # not inside a word
    if len(re.sub(r"^[^:`]{0,40}:\s*", "", cut.rstrip())) < SHORT_MIN:  # "Last assistant message: There…"
        return ""
    cut = cut.rstrip().rstrip(",;:(")
    return cut + "…"


SHORT_MIN = 12


def fit_sections(sections: list[Section], max_chars: int) -> str:
    """Render within `max_chars`: each section gets a weighted share; what one leaves unused goes to others.

    Linear in the number of items. "(none)" says that a section has nothing to say, never that its items did
    not fit: a section none of whose items fits is left out, heading and all. At a budget too small for
    every heading (`COMPACT`: the headings alone would take more than a third of it) the compact layout
    shows only the sections that have something to say, and the Goal (a turn prefix's Original Request).
    """
    text = render_sections(sections)
    if len(text) <= max_chars:
        return text
    compact = len(render_sections([Section(s.heading, [], s.prefix) for s in sections])) * COMPACT > max_chars
    shown = [s for s in sections if s.items or s.prefix is None or not compact or s.heading in ALWAYS_SHOWN]
    if compact:  # headings within half the room, the least needed sections left out first
        for heading in reversed(COMPACT_ORDER):
            if len(render_sections([Section(s.heading, [], s.prefix) for s in shown])) * 2 <= max_chars:
                break
            shown = [s for s in shown if s.heading != heading]
    bare = [Section(s.heading, [], s.prefix) for s in shown]
    overhead = len(render_sections(bare)) - sum(len(NONE) + 1 for s in shown if s.prefix is not None)
    room = max_chars - overhead
    needs = {id(s): len(s.render()) - len(s.heading) for s in shown if s.prefix is not None}
    # an earlier checkpoint's pinned items (its rules, its next steps) get their room first, up to a third
    floors = {id(s): min(sum(_item_cost(s, i, item) for i, item in enumerate(s.items) if item in s.pinned),
                         max(room, 0) // 3)
              for s in shown if s.prefix is not None and s.pinned}
    needs = {key: need - floors.get(key, 0) for key, need in needs.items()}
    room -= sum(floors.values())
    if compact:  # the request before anything else: half the room, at most what it needs
        first = next((s for s in shown if s.heading in ALWAYS_SHOWN), None)
        if first is not None:
            needs[id(first)] = min(needs[id(first)], max(room // 2, 0))
            budgets = _share([s for s in shown if s is not first], needs, room - needs[id(first)])
            budgets[id(first)] = needs[id(first)]
        else:
            budgets = _share(shown, needs, room)
    else:
        budgets = _share(shown, needs, room)
    for key, floor in floors.items():
        budgets[key] += floor
    fitted = [
        s if s.prefix is None else Section(s.heading, _select(s, budgets[id(s)]), s.prefix, s.keep, s.weight,
                                           pinned=s.pinned)
        for s in shown
    ]
    fitted = _said(shown, fitted)
    text = render_sections(fitted)
    if len(text) > max_chars and max_chars > len(render_sections(_said(shown, bare))) + 64:
        return fit_sections(sections, max_chars - (len(text) - max_chars) - 32)  # rounding: a little tighter
    if len(text) > max_chars:  # a budget too small for anything but the request
        text = _request_only(sections, max_chars)
    return text


def _request_only(sections: list[Section], max_chars: int) -> str:
    """The Goal (a turn prefix's Original Request) alone, its first item shortened to `max_chars`."""
    first = next((s for s in sections if s.heading in ALWAYS_SHOWN), sections[0])
    item = _shorten(first.items[0], max_chars - len(first.heading) - 4) if first.items else ""
    return first.heading + "\n" + (first.render_item(0, item) if item else NONE)


COMPACT = 3
ALWAYS_SHOWN = frozenset({"## Goal", "## Original Request"})
# In the compact layout, the sections in the order a reader needs them most (the last left out first)
COMPACT_ORDER = ("## Goal", "## Original Request", "## Next Steps", "## Constraints & Preferences",
                 "### In Progress", "### Blocked", "### Done", "## Early Progress", TRAIL_HEADING,
                 "## Context for Suffix", "## Critical Context", "## Key Decisions")


def _said(sections: list[Section], fitted: list[Section]) -> list[Section]:
    """`fitted` without the sections that had items and kept none (their heading would say "(none)"), and a
    group heading ("## Progress") none of whose subsections is left."""
    kept = [f for s, f in zip(sections, fitted, strict=True)
            if f.prefix is None or f.items or not s.items or f.heading in ALWAYS_SHOWN]
    out = []
    for index, section in enumerate(kept):
        following = kept[index + 1] if index + 1 < len(kept) else None
        if section.prefix is None and not (following and following.heading.startswith("### ")):
            continue
        out.append(section)
    return out


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
