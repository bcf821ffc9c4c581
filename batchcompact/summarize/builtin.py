"""The built-in offline summarizer (`--model builtin`): deterministic, no network, cost 0.

It reads the structure of `call.messages` (pi LLM messages) and fills the same headings a model is asked
for, from what is really there: user requests and corrections, files written/edited, commands and their
failures, error messages, the last unfinished request. Invariants:
- the same call gives the same text (no clock, no randomness, no dict-order surprises);
- every heading of the call's kind is present, even when trimmed to `call.max_tokens` (chars/4);
- items of `call.previous_summary` are kept (update semantics); only "Next Steps" is rewritten.
"""

from __future__ import annotations

import re
import time
from dataclasses import dataclass, field
from typing import Any

from batchcompact.core.calls import BRANCH, TURN_PREFIX, SummaryCall
from batchcompact.summarize.base import SummaryResult

ITEM_CHARS = 200
NONE = "(none)"
_CONSTRAINT = re.compile(
    r"\b(?:must|mustn't|never|always|don't|do not|should|shouldn't|prefer|make sure|avoid|only|without|keep)\b",
    re.IGNORECASE,
)
_DECISION = re.compile(
    r"\b(?:decided|decision|instead of|switch(?:ed|ing)? to|because|rather than|the fix is|chose|going with)\b",
    re.IGNORECASE,
)
_EXIT_CODE = re.compile(r"Command exited with code (\d+)")
_RAN = re.compile(r"^Ran `([^`]*)`")


def _clip(text: str, limit: int = ITEM_CHARS) -> str:
    text = " ".join(str(text).split())
    return text if len(text) <= limit else text[: limit - 1].rstrip() + "…"


def _text(content: Any) -> str:
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        return "".join(b.get("text", "") for b in content if isinstance(b, dict) and b.get("type") == "text")
    return ""


def _first_line(text: str) -> str:
    for line in text.splitlines():
        if line.strip():
            return line.strip()
    return ""


def _sentences(text: str) -> list[str]:
    return [s.strip() for s in re.split(r"(?<=[.!?])\s+|\n+", text) if s.strip()]


def _add(items: list[str], item: str) -> None:
    if item and item not in items:
        items.append(item)


@dataclass
class Facts:
    """What the builtin summarizer extracts from the messages, in order of appearance."""

    requests: list[str] = field(default_factory=list)
    constraints: list[str] = field(default_factory=list)
    written: list[str] = field(default_factory=list)
    edited: list[str] = field(default_factory=list)
    read: list[str] = field(default_factory=list)
    commands: list[str] = field(default_factory=list)
    failures: list[str] = field(default_factory=list)
    decisions: list[str] = field(default_factory=list)
    last_assistant_text: str = ""
    unfinished: str | None = None


def extract_facts(messages: list[dict[str, Any]] | tuple[dict[str, Any], ...]) -> Facts:
    """One pass over the messages; tool results are matched to their calls by id."""
    facts = Facts()
    calls: dict[str, dict[str, Any]] = {}
    last_request: str | None = None
    answered = True
    for message in messages:
        role = message.get("role")
        if role == "user":
            text = _text(message.get("content"))
            ran = _RAN.match(text)
            if ran:  # a bash execution, converted to user text
                _add(facts.commands, f"`{_clip(ran.group(1), 120)}`")
                code = _EXIT_CODE.search(text)
                if code:
                    _add(facts.failures, f"`{_clip(ran.group(1), 120)}` exited with code {code.group(1)}")
                continue
            if not text.strip() or text.startswith("The conversation history before this point"):
                continue
            if re.fullmatch(r"/\S+", text.strip()):  # a slash command such as /mode, not a request
                continue
            last_request = _clip(text)
            answered = False
            _add(facts.requests, last_request)
            for sentence in _sentences(text):
                if _CONSTRAINT.search(sentence) and len(sentence) < 300:
                    _add(facts.constraints, _clip(sentence))
        elif role == "assistant":
            has_calls = False
            for block in message.get("content") or []:
                kind = block.get("type") if isinstance(block, dict) else None
                if kind == "toolCall":
                    has_calls = True
                    calls[block.get("id", "")] = block
                    _record_tool_call(facts, block)
                elif kind == "text" and block.get("text", "").strip():
                    facts.last_assistant_text = block["text"]
                    for sentence in _sentences(block["text"]):
                        if _DECISION.search(sentence) and 20 < len(sentence) < 300 and sentence[-1] != ":":
                            _add(facts.decisions, _clip(sentence))
            if message.get("stopReason") == "error" and message.get("errorMessage"):
                _add(facts.failures, f"model error: {_clip(message['errorMessage'])}")
            answered = not has_calls and message.get("stopReason") not in ("error", "aborted", "length")
        elif role == "toolResult" and message.get("isError"):
            call = calls.get(message.get("toolCallId", ""), {})
            name = message.get("toolName") or call.get("name") or "tool"
            args = call.get("arguments") or {}
            what = args.get("command") or args.get("path") or ""
            label = f"`{name}`" + (f" on `{_clip(what, 120)}`" if what else "")
            _add(facts.failures, f"{label} failed: {_clip(_first_line(_text(message.get('content'))), 160)}")
    if last_request and not answered:
        facts.unfinished = last_request
    facts.decisions = facts.decisions[-12:]
    return facts


def _record_tool_call(facts: Facts, block: dict[str, Any]) -> None:
    name = block.get("name")
    args = block.get("arguments") if isinstance(block.get("arguments"), dict) else {}
    path = args.get("path")
    if isinstance(path, str) and path:
        target = {"write": facts.written, "edit": facts.edited, "read": facts.read}.get(name)
        if target is not None:
            _add(target, path)
    if name == "bash" and isinstance(args.get("command"), str):
        _add(facts.commands, f"`{_clip(args['command'], 120)}`")


# -- sections -----------------------------------------------------------------------------------------
Sections = list[tuple[str, list[str], str]]  # (heading, items, item prefix)


def _parse_previous(summary: str | None) -> dict[str, list[str]]:
    """Heading -> item lines (prefix stripped) of a previous checkpoint; file tags are dropped."""
    out: dict[str, list[str]] = {}
    heading = None
    for line in (summary or "").splitlines():
        stripped = line.strip()
        if stripped.startswith("#"):
            heading = stripped
            out.setdefault(heading, [])
        elif stripped.startswith("<"):
            heading = None
        elif heading and stripped and stripped != NONE:
            item = re.sub(r"^(?:- \[[ x]\] |- |\d+\. )", "", stripped)
            if item and item != NONE:
                out[heading].append(item)
    return out


def _merge(previous: list[str], new: list[str]) -> list[str]:
    items: list[str] = []
    for item in previous + new:
        _add(items, item)
    return items


def build_history_sections(facts: Facts, previous: str | None, branch: bool) -> Sections:
    prev = _parse_previous(previous)
    goal = facts.requests[:1] + [f"Later request: {r}" for r in facts.requests[1:][-3:]]
    done = [f"Wrote `{p}`" for p in facts.written] + [
        f"Edited `{p}`" for p in facts.edited if p not in facts.written
    ]
    if facts.commands:
        done.append(f"Ran {len(facts.commands)} command(s), last: {facts.commands[-1]}")
    in_progress = [facts.unfinished] if facts.unfinished else []
    blocked = facts.failures[-5:]
    steps = []
    if facts.unfinished:
        steps.append(f"Finish: {facts.unfinished}")
    if facts.failures:
        steps.append(f"Resolve: {facts.failures[-1]}")
    if not steps and facts.requests:
        steps.append("Wait for the user's next request")
    critical = [f"Error: {f}" for f in facts.failures[-3:]]
    if facts.read:
        critical.append("Files read: " + ", ".join(f"`{p}`" for p in facts.read[-10:]))
    if facts.last_assistant_text:
        critical.append(f"Last assistant message: {_clip(facts.last_assistant_text)}")
    sections: Sections = [
        ("## Goal", _merge(prev.get("## Goal", []), goal), ""),
        (
            "## Constraints & Preferences",
            _merge(prev.get("## Constraints & Preferences", []), facts.constraints[-8:]),
            "- ",
        ),
        ("## Progress", [], ""),
        ("### Done", _merge(prev.get("### Done", []) + prev.get("### In Progress", []), done), "- [x] "),
        ("### In Progress", in_progress, "- [ ] "),
        ("### Blocked", _merge(prev.get("### Blocked", []), blocked), "- "),
        ("## Key Decisions", _merge(prev.get("## Key Decisions", []), facts.decisions), "- "),
        ("## Next Steps", steps or prev.get("## Next Steps", []), "1. "),
    ]
    if not branch:
        sections.append(("## Critical Context", _merge(prev.get("## Critical Context", []), critical), "- "))
    return sections


def build_turn_prefix_sections(facts: Facts) -> Sections:
    early = [f"Wrote `{p}`" for p in facts.written] + [f"Edited `{p}`" for p in facts.edited]
    early += [f"Ran {c}" for c in facts.commands[-5:]] + [f"Failed: {f}" for f in facts.failures[-3:]]
    context = []
    if facts.read:
        context.append("Files read: " + ", ".join(f"`{p}`" for p in facts.read[-10:]))
    if facts.last_assistant_text:
        context.append(f"Last assistant message: {_clip(facts.last_assistant_text)}")
    return [
        ("## Original Request", facts.requests[:1], ""),
        ("## Early Progress", early, "- "),
        ("## Context for Suffix", context, "- "),
    ]


def render_sections(sections: Sections) -> str:
    parts = []
    for heading, items, prefix in sections:
        if heading == "## Progress":
            parts.append(heading)
            continue
        lines = [f"{i + 1}. {item}" if prefix == "1. " else f"{prefix}{item}" for i, item in enumerate(items)]
        parts.append(heading + "\n" + ("\n".join(lines) if lines else NONE))
    return "\n\n".join(parts)


def fit_sections(sections: Sections, max_chars: int) -> str:
    """Render, dropping the oldest item of the longest list (then shortening items) until it fits."""
    sections = [(h, list(items), p) for h, items, p in sections]
    limit = ITEM_CHARS
    text = render_sections(sections)
    while len(text) > max_chars:
        longest = max(sections, key=lambda s: len(s[1]))
        if len(longest[1]) > 1:
            # Oldest first, but the original goal and the first next step are the last to go.
            longest[1].pop(-1 if longest[0] == "## Next Steps" else 1 if longest[0] == "## Goal" else 0)
        elif limit > 24:
            limit //= 2
            sections = [(h, [_clip(i, limit) for i in items], p) for h, items, p in sections]
        else:
            sections = [(h, [], p) for h, _, p in sections]
            text = render_sections(sections)
            break
        text = render_sections(sections)
    return text


def summarize_offline(call: SummaryCall) -> str:
    facts = extract_facts(call.messages)
    if call.kind == TURN_PREFIX:
        sections = build_turn_prefix_sections(facts)
    else:
        sections = build_history_sections(facts, call.previous_summary, branch=call.kind == BRANCH)
    return fit_sections(sections, max(call.max_tokens, 1) * 4)


class BuiltinSummarizer:
    """`--model builtin`: the offline summarizer. Never fails on well-formed messages; costs nothing."""

    name = "builtin"
    remote = False  # prompts never leave the machine: no redaction needed

    async def summarize(self, call: SummaryCall) -> SummaryResult:
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
