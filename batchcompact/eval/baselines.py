"""The baselines every summary is measured against, at the summary's own length.

- `tail`: the kept messages alone, no summary at all (the floor: what compaction keeps anyway);
- `first`: the first N tokens of the replaced history, as plain text;
- `last`: the last N tokens of the replaced history;
- `list`: every user message in order (the user's own words, each cut at `LIST_MESSAGE_CHARS`), then the
  span's files and code names ranked by how often it names them, cut at N tokens: the list that a
  summarizer could write without choosing anything, which a handover must beat on `overall`;
- `words`: every distinct word and name of the replaced history, in an order fixed by a hash (chosen by
  nothing), cut at N tokens: what listing names without choosing them keeps. At the lengths summaries
  have, the distinct words of a span often fit in large part, so this is the baseline that catches a
  summary which only stuffs names;
where N is the summary's tokens (chars/4, as the planner counts). A summary that does not beat `first`
keeps less than the same length of raw history would. Written for eval alone: nothing here imports
`batchcompact/summarize/`.
"""

from __future__ import annotations

import hashlib
import json
import re
from collections import Counter

from batchcompact.core.jsontypes import JsonObject
from batchcompact.eval.probes import user_words
from batchcompact.eval.text import FILE, SYMBOL, block_texts, names

_WORD = re.compile(r"[\w./-]{3,}")

TAIL, FIRST, LAST, WORDS, LIST = "tail", "first", "last", "words", "list"
BASELINE = "baseline:"  # the summarizer label of a baseline row: baseline:tail, baseline:first, baseline:last
BASELINES = (TAIL, FIRST, LAST, WORDS, LIST)
LABEL = {TAIL: "kept tail only", FIRST: "first N tokens", LAST: "last N tokens", WORDS: "unchosen words",
         LIST: "user messages + names"}
LIST_MESSAGE_CHARS = 240
CHARS_PER_TOKEN = 4


def tokens_of(text: str) -> int:
    """chars/4, rounded up, as the planner estimates text."""
    return -(-len(text) // CHARS_PER_TOKEN)


def history_text(messages: list[JsonObject]) -> str:
    """The replaced messages as plain text, one block a line group: what a reader of the raw transcript sees."""
    parts: list[str] = []
    for message in messages:
        role = message.get("role")
        content = message.get("content")
        if isinstance(content, str):
            parts.append(f"[{role}] {content}")
            continue
        for block in content or ():
            if not isinstance(block, dict):
                continue
            if block.get("type") == "text" and block.get("text"):
                parts.append(f"[{role}] {block['text']}")
            elif block.get("type") == "toolCall":
                arguments = json.dumps(block.get("arguments"), ensure_ascii=False, sort_keys=True)
                parts.append(f"[tool call] {block.get('name')} {arguments}")
    return "\n".join(parts)


def unchosen_words(history: str, limit: int) -> str:
    """The distinct words of `history` in the order of their SHA-1, joined, at most `limit` characters."""
    words = dict.fromkeys(_WORD.findall(history))
    ordered = sorted(words, key=lambda w: hashlib.sha1(w.encode("utf-8", "surrogatepass")).digest())
    out, used = [], 0
    for word in ordered:
        if used + len(word) + 1 > limit:
            break
        out.append(word)
        used += len(word) + 1
    return " ".join(out)


def message_list(messages: list[JsonObject], limit: int) -> str:
    """`list`'s material: every user message in order, one a line (whitespace collapsed, each at most
    `LIST_MESSAGE_CHARS`), then the span's files and code names by how often it names them (ties: first
    named first), at most `limit` characters."""
    lines = []
    counts: Counter[str] = Counter()
    for message in messages:
        said = user_words(message)
        if said:
            said = " ".join(said.split())
            lines.append("- " + (said if len(said) <= LIST_MESSAGE_CHARS else said[: LIST_MESSAGE_CHARS - 1] + "…"))
        for text in block_texts(message):
            counts.update(name for kind, name in names(text) if kind in (FILE, SYMBOL))
    ranked = [name for name, _ in counts.most_common()]  # most_common keeps first-seen order among ties
    text = "User messages:\n" + "\n".join(lines) + "\n\nNames: " + ", ".join(ranked)
    return text[:limit]


def baseline_summary(kind: str, text: str, tokens: int) -> str:
    """The stand-in summary of a baseline: nothing (`tail`), or the first or last `tokens` of `text` (for
    `words`, the text `unchosen_words` made)."""
    if kind == TAIL or tokens <= 0:
        return ""
    chars = tokens * CHARS_PER_TOKEN
    return text[-chars:] if kind == LAST else text[:chars]
