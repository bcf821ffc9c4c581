"""An earlier checkpoint read back, so that the new summary carries what it said (docs/summaries.md,
"Carried from the earlier summary").

Ours and pi's share headings: they are read by heading, an item with the lines under it (sub-bullets,
wrapped text) as one item, "None" / "(none)" / "Nothing in flight" as nothing, and a split turn's part (after
pi's "---" / "**Turn Context (split turn):**") as what it is: its request, its rules, its early progress, never
as items of the heading before it. Sections under other headings (pi's "## Files Created/Modified",
"## Additional Notes") are kept as written, as one block. Another agent's checkpoint (Claude Code's numbered
sections, Codex's handoff) is kept as one block too, its harness's closing instructions left out, and its
sections read by their titles: the request ("Primary Request and Intent"), the rules ("Constraints",
"Preferences", "Rules"), the next steps ("Pending Tasks", "Next Step(s)", "Remaining").

Linear in the summary's length; deterministic.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field

from batchcompact.core.prompts import HISTORY_HEADINGS, TURN_PREFIX_HEADINGS
from batchcompact.summarize.builtin_text import clean_item
from batchcompact.summarize.user_message import (
    ACKNOWLEDGEMENT,
    COMMAND,
    GO_AHEAD,
    INJECTED,
    read_user_message,
)

TRAIL_HEADING = "## Relevant Files and Code Names"
NONE = "(none)"
_OUR_HEADINGS = ("## Goal", "### Done", "## Next Steps", "## Original Request")
_KNOWN_HEADINGS = frozenset(HISTORY_HEADINGS + TURN_PREFIX_HEADINGS + (TRAIL_HEADING,))
_SPLIT_TURN = re.compile(r"^\s*(?:-\s*)?\*\*Turn Context \(split turn\):\*\*\s*$", re.MULTILINE)
_FENCE = re.compile(r"^\s*```.*?^\s*```[ \t]*$", re.DOTALL | re.MULTILINE)
_TAGS = re.compile(r"^<(read-files|modified-files)>\n.*?^</\1>", re.DOTALL | re.MULTILINE)
_RULER = re.compile(r"^\s*(?:[-*_]\s*){3,}$")
_ITEM = re.compile(r"^(\s*)(?:[-*•+]|\d+[.)]|\[[ xX]\])\s+")
# What a section says when it has nothing: "None", "(none)", "Nothing actively in-flight", "N/A",
# "No pending task — … Awaiting next instruction."
_NOTHING = re.compile(r"^(?:\(?none\)?|n/?a|\(?empty\)?|-|nothing(?: (?:is )?(?:actively |currently )?(?:in[- ]flight|"
                      r"in progress|pending|blocked|yet|to do))?)\W*$", re.IGNORECASE)
ITEM_CHARS = 400  # an item with the lines under it, at most this long
# Another agent's sections by their titles
_TITLE = re.compile(r"^(?:#{1,4}\s+(.{3,60}?)\s*#*|\d+\.\s+([A-Z][^:\n]{2,60}):|\*\*([^*\n]{3,60}?):?\*\*:?)\s*$")
_INTENT_TITLE = re.compile(r"primary request|user intent|^goal|^task\b|^objective", re.IGNORECASE)
_RULES_TITLE = re.compile(r"constraint|preference|rule|requirement|convention", re.IGNORECASE)
# Claude Code's "6. All user messages:": the user's own words, carried as rules are (each as the user said it)
_USER_TITLE = re.compile(r"user(?:'s)? (?:messages?|instructions?|feedback)|instructions", re.IGNORECASE)
_STEPS_TITLE = re.compile(r"next step|pending|remaining|to ?do|open (?:tasks|items)|follow-?ups?", re.IGNORECASE)
# the sections carried as rules or next steps: not repeated in the block of Critical Context
_CARRIED_TITLE = re.compile("|".join(p.pattern for p in (_USER_TITLE, _RULES_TITLE, _STEPS_TITLE)), re.IGNORECASE)
# A harness's instructions after another agent's checkpoint (Claude Code's): to the model, not the summary's
_CLOSING = re.compile(r"^(?:If you need specific details from before compaction|Continue the conversation from where "
                      r"it left off|Please continue the conversation from where we left)", re.MULTILINE)
_INTENT = re.compile(
    r"^\s*(?:\d+\.\s*)?(?:\*\*)?(?:Primary Request(?: and Intent)?|User Intent|Goal|Task)s?(?:\*\*)?:\s*(.*)$",
    re.I,
)
_NUMBERED_HEADING = re.compile(r"^\s*\d+\.\s+\S.*:\s*$")
STEP_CHARS = 300  # another agent's next step (a paragraph) by its first sentences


@dataclass
class Previous:
    """What an earlier checkpoint said, by section."""

    sections: dict[str, list[str]] = field(default_factory=dict)  # our headings -> items
    foreign: str | None = None  # its other sections, or another agent's checkpoint, as written
    ours: bool = False  # in our layout (ours or pi's): its sections are read by heading
    goal: list[str] = field(default_factory=list)
    rules: list[str] = field(default_factory=list)
    steps: list[str] = field(default_factory=list)  # its next steps
    in_flight: str | None = None  # a split turn's request: the work in hand when it was written

    def get(self, heading: str, default: list[str] | None = None) -> list[str]:
        return self.sections.get(heading, default or [])


def parse_previous(summary: str | None) -> Previous:
    """An earlier checkpoint, by section (the module's docstring)."""
    if not summary or not summary.strip():
        return Previous()
    summary = _TAGS.sub("", summary)
    history, _, prefix = _SPLIT_TURN.split(summary, 1)[0], None, _after_split(summary)
    if not any(h in history for h in _OUR_HEADINGS):
        return _foreign(summary)
    sections, other = _by_heading(history)
    previous = Previous(sections=sections, foreign="\n".join(other) if other else None, ours=True)
    previous.goal = sections.get("## Goal", [])
    previous.rules = sections.get("## Constraints & Preferences", [])
    previous.steps = sections.get("## Next Steps", [])
    if prefix:
        turn, _ = _by_heading(prefix)
        request = [i for i in turn.get("## Original Request", []) if not i.startswith("Rule: ")]
        previous.in_flight = request[0] if request else None
        previous.rules = previous.rules + [i[len("Rule: "):] for i in turn.get("## Original Request", [])
                                           if i.startswith("Rule: ")]
        sections.setdefault("### Done", [])
        sections["### Done"] = sections["### Done"] + turn.get("## Early Progress", [])
    return previous


def _after_split(summary: str) -> str | None:
    parts = _SPLIT_TURN.split(summary, 1)
    return parts[1] if len(parts) > 1 else None


def _by_heading(text: str) -> tuple[dict[str, list[str]], list[str]]:
    """(heading -> items, the lines under other headings as written); an item with the lines under it as one."""
    out: dict[str, list[str]] = {}
    other: list[str] = []
    heading = None
    in_other = False
    for line in _FENCE.sub("(code omitted)", text).splitlines():
        stripped = line.strip()
        if stripped.startswith("#"):
            in_other = stripped not in _KNOWN_HEADINGS
            heading = None if in_other else stripped
            if in_other:
                other.append(stripped)
            else:
                out.setdefault(stripped, [])
        elif _RULER.match(stripped) or stripped.startswith("<"):
            continue  # pi's split-turn ruler, a file tag
        elif in_other:
            if stripped:
                other.append(line.rstrip())
        elif heading and stripped:
            items = out[heading]
            item = _ITEM.match(line)
            under = _ITEM.sub("", line).strip()
            if (items and (not item and line[:1].isspace() or item and len(item.group(1)) >= 2)
                    and len(items[-1]) + len(under) + 2 <= ITEM_CHARS):  # its lines, while the item holds them
                joint = " " if items[-1].endswith(":") else "; "
                items[-1] = clean_item(f"{items[-1]}{joint}{under}", ITEM_CHARS)
                continue
            said = clean_item(stripped, ITEM_CHARS)
            if said and said != NONE and not _NOTHING.match(said):
                items.append(said)
    for heading, items in out.items():
        out[heading] = [item for item in items if not _NOTHING.match(item)]
    return out, other


def _foreign(summary: str) -> Previous:
    """Another agent's checkpoint: kept whole, its request, rules and next steps read by their titles."""
    text = foreign_text(summary)
    previous = Previous()
    intent = foreign_intent(text)
    previous.goal = [intent] if intent else []
    title = None
    body: dict[str, list[str]] = {}
    rest: list[str] = []  # the block of Critical Context: what is not carried as rules or next steps
    for line in text.splitlines():
        match = _TITLE.match(line)
        if match:  # "## Next steps", "7. Pending Tasks:", "**Constraints**"
            title = next(g for g in match.groups() if g).strip()
            body.setdefault(title, [])
        elif title is not None:
            body[title].append(line)
        if title is None or not _CARRIED_TITLE.search(title):
            rest.append(line)
    for name, lines in body.items():
        if _USER_TITLE.search(name):
            previous.rules += [said for said in map(_unquoted, _items(lines)) if _users(said)]
        elif _RULES_TITLE.search(name):
            previous.rules += _items(lines)
        elif _STEPS_TITLE.search(name):
            previous.steps += _items(lines)
    previous.foreign = "\n".join(rest) if any(line.strip() for line in rest) else None
    return previous


def _unquoted(item: str) -> str:
    """A user's message as a summary quotes it ('"Use the sandbox keys"'), without the quotes."""
    if len(item) > 1 and item[0] in "\"“" and item[-1] in "\"”":
        return item[1:-1].strip()
    return item


def _users(item: str) -> bool:
    """An item of another agent's "All user messages" that says something: not an acknowledgement, a go-ahead,
    a harness command ("/model opus") or a prompt a harness injected (`read_user_message`'s vocabulary)."""
    said = read_user_message({"role": "user", "content": item.strip()})
    return said is not None and said.kind not in (ACKNOWLEDGEMENT, GO_AHEAD, COMMAND, INJECTED)


def _items(lines: list[str]) -> list[str]:
    """The items of a section's lines: each bullet with the lines under it, or a paragraph by its first
    sentences."""
    items: list[str] = []
    base = None
    for line in lines:
        if not line.strip() or line.strip() == "(code omitted)":
            continue
        item = _ITEM.match(line)
        indent = len(line) - len(line.lstrip())
        if item and (base is None or indent <= base):
            base = indent
            items.append(_ITEM.sub("", line).strip())
        elif items and len(items[-1]) + len(line.strip()) + 2 <= ITEM_CHARS:  # its lines, while it holds them
            joint = " " if items[-1].endswith(":") or not item else "; "
            items[-1] = f"{items[-1]}{joint}{_ITEM.sub('', line).strip()}"
        else:
            items.append(line.strip())
    return [_first_sentences(clean_item(i, 1200)) for i in items if not _NOTHING.match(clean_item(i))]


def _first_sentences(text: str) -> str:
    if len(text) <= STEP_CHARS:
        return text
    cut = text[:STEP_CHARS]
    ends = [m.end() for m in re.finditer(r"[.!?](?=\s)", cut)]
    return cut[: ends[-1]] if ends and ends[-1] >= STEP_CHARS // 3 else cut.rsplit(" ", 1)[0] + "…"


def foreign_text(summary: str) -> str:
    """Another agent's checkpoint, without its preamble, analysis, code blocks (the files hold the code) and
    the instructions its harness adds after it ("Continue the conversation from where it left off…")."""
    text = re.sub(r"<analysis>.*?</analysis>", "", summary, flags=re.DOTALL)
    if "\nSummary:" in text:
        text = text.split("\nSummary:", 1)[1]
    closing = _CLOSING.search(text)
    if closing:
        text = text[: closing.start()]
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
