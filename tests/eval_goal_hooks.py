"""Summarizers that must fail #47's goals (tests/test_eval_goals.py; `--summarizer eval_goal_hooks:NAME`,
tests/ on the path).

- `as_list`: the ~30-line list the issue measured: every user message (240 characters each), then a regex
  name list ranked by frequency, cut at the budget. It shares no code with eval's baselines or probes: a
  list written the way anyone would write one.
- `without_handover`: the built-in summary with its handover sections (Progress, Key Decisions, Next Steps,
  Critical Context) cut out by their headings: the built-in is run as a black box through the public
  summarizer interface (`BuiltinSummarizer().summarize(call)`, which the pipeline uses) and its text
  post-processed; nothing of its code is read here.
"""

from __future__ import annotations

import asyncio
import re
from collections import Counter
from concurrent.futures import ThreadPoolExecutor
from typing import Any

BUDGET = 2000  # tokens: the built-in's default --summary-budget (#47); chars/4 as eval counts
HANDOVER = ("Progress", "Key Decisions", "Next Steps", "Critical Context")
_NAME = re.compile(r"[\w./-]*\w\.[A-Za-z]{1,5}\b|\b[a-z]+(?:_[a-z0-9]+)+\b|\b[a-z]+[A-Z]\w+\b|\b[A-Z][a-z]+[A-Z]\w*\b")
_HEADING = re.compile(r"^(#+)\s+(.*)")


def _texts(message: dict[str, Any]) -> list[tuple[str, str]]:
    content = message.get("content")
    blocks = [{"type": "text", "text": content}] if isinstance(content, str) else content or []
    out = []
    for block in blocks:
        if isinstance(block, dict):
            kind = block.get("type")
            out.append((kind, str(block.get("text") if kind == "text" else block.get("arguments") or "")))
    return out


def as_list(call: Any) -> str:
    users: list[str] = []
    counts: Counter[str] = Counter()
    for message in call.messages:
        for kind, text in _texts(message):
            if message.get("role") == "user" and kind == "text" and text.strip():
                users.append(" ".join(text.split())[:240])
            counts.update(_NAME.findall(text))
    text = "\n".join(f"- {u}" for u in users) + "\n\nNames: " + ", ".join(n for n, _ in counts.most_common())
    return text[: BUDGET * 4]


def builtin_text(call: Any) -> str:
    """The built-in summary of `call`, through the summarizer interface (run in a thread: the pool's event
    loop is running)."""
    from batchcompact.summarize import BuiltinSummarizer

    with ThreadPoolExecutor(1) as pool:
        return pool.submit(asyncio.run, BuiltinSummarizer().summarize(call)).result().text


def strip_sections(text: str, names: tuple[str, ...] = HANDOVER) -> str:
    """`text` without the markdown sections headed by `names` (each with its sub-sections)."""
    out, skipping = [], 0
    for line in text.splitlines():
        heading = _HEADING.match(line)
        if heading and not (skipping and len(heading.group(1)) > skipping):
            skipping = len(heading.group(1)) if heading.group(2).strip() in names else 0
        if not skipping:
            out.append(line)
    return "\n".join(out)


def without_handover(call: Any) -> str:
    return strip_sections(builtin_text(call))
