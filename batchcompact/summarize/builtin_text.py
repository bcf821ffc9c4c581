"""Text helpers of the built-in summarizer: one-line items, a message's text, an ordered set.

Linear: every text is clipped before it is split.
"""

from __future__ import annotations

import re

from batchcompact.core.jsontypes import JsonValue

ITEM_CHARS = 200
SCAN_CHARS = 4000  # user text beyond this is pasted material, not instructions

BULLET = re.compile(r"^(?:[-*•+]\s+|\d+[.)]\s+|\[[ xX]\]\s+)+")
SENTENCE = re.compile(r"(?<=[.!?])\s+|\n+")


def clip(text: object, limit: int = ITEM_CHARS) -> str:
    """One line, whitespace collapsed, at most `limit` characters (linear: long text is cut first)."""
    text = " ".join(str(text)[: limit * 4].split())
    return text if len(text) <= limit else text[: limit - 1].rstrip() + "…"


def clip_whole(text: object, limit: int = ITEM_CHARS) -> str:
    """`clip`, ended where a reader can stop: after the last whole item of an outline ("; "), else a sentence
    end, else a word's end, with "…" (a request said as asked: never "… organizer analytics R…")."""
    text = " ".join(str(text)[: limit * 4].split())
    if len(text) <= limit:
        return text
    cut = text[: limit - 1]
    items = cut.rfind("; ")
    if items >= limit // 2:
        return cut[:items].rstrip(",;:") + "…"
    ends = [m.end() for m in _SENTENCE_END.finditer(cut)]
    if ends and ends[-1] >= limit // 2:
        return cut[: ends[-1]]
    words = cut.rfind(" ")
    return (cut[:words] if words >= limit // 2 else cut).rstrip(",;:") + "…"


_SENTENCE_END = re.compile(r"(?<=[^\d\s])[.!?](?= )")  # not `4.` of a numbered list


def clean_item(text: str, limit: int = ITEM_CHARS) -> str:
    """An item's text without leading bullets, so rendering never doubles them."""
    return BULLET.sub("", clip(text, limit)).strip()


def message_text(content: JsonValue) -> str:
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        return "".join(b.get("text", "") for b in content if isinstance(b, dict) and b.get("type") == "text")
    return ""


def first_line(text: str) -> str:
    for line in text[:SCAN_CHARS].splitlines():
        if line.strip():
            return line.strip()
    return ""


class Items:
    """An ordered list without duplicates; `add` is O(1)."""

    def __init__(self) -> None:
        self._seen: dict[str, None] = {}

    def add(self, item: str) -> None:
        if item:
            self._seen.setdefault(item, None)

    def discard(self, item: str) -> None:
        self._seen.pop(item, None)

    def __contains__(self, item: str) -> bool:
        return item in self._seen

    def __len__(self) -> int:
        return len(self._seen)

    def list(self) -> list[str]:
        return list(self._seen)
