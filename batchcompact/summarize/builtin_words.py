"""What the built-in summarizer reads in the agent's own words: the decisions it states and the work it
announces. What a user message is (requests, rules, acknowledgements, injected prompts) is
`user_message.py`'s.

Pure functions over one message's text, clipped before it is split.
"""

from __future__ import annotations

import re

from batchcompact.summarize.builtin_text import SCAN_CHARS, SENTENCE, clean_item

_DECISION = re.compile(
    r"\b(?:decided|decision|instead of|switch(?:ed|ing)? to|because|rather than|the fix is|chose|"
    r"going with|the root cause|the cause is)\b",
    re.IGNORECASE,
)
ANNOUNCE = re.compile(
    r"^(?:now\s+)?(?:let me|let's|i'll|i will|next,? i'll|next,? i will|now i'll)\s+(.+?)[:.]?$", re.I
)


def decisions(text: str) -> list[str]:
    out = []
    for sentence in SENTENCE.split(text[:SCAN_CHARS]):
        sentence = sentence.strip()
        if 20 < len(sentence) < 300 and not sentence.endswith((":", "?")) and _DECISION.search(sentence):
            out.append(clean_item(sentence))
    return out
