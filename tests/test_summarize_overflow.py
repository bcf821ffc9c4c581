"""Overflow recovery with a fake inner summarizer: pre-check, provider refusal, chunking invariants."""

from __future__ import annotations

import asyncio

import pytest

from batchcompact.core.calls import BRANCH, HISTORY, TURN_PREFIX, SummaryCall
from batchcompact.core.prompts import build_summary_prompt
from batchcompact.core.serialize import serialize_conversation
from batchcompact.summarize import ContextTooLongError, SummaryResult
from batchcompact.summarize.overflow import OverflowSummarizer, split_into_chunks


def messages(n, size=400):
    out = []
    for i in range(n):
        out.append({"role": "user", "content": f"request {i}: " + "x" * size})
        out.append(
            {"role": "assistant", "content": [{"type": "text", "text": f"answer {i}"}], "stopReason": "stop"}
        )
    return out


def make_call(msgs, kind=HISTORY, max_tokens=200, previous=None):
    prompt = build_summary_prompt(serialize_conversation(msgs), previous)
    return SummaryCall(
        kind=kind,
        system_prompt="sys",
        user_prompt=prompt,
        max_tokens=max_tokens,
        messages=tuple(msgs),
        previous_summary=previous,
    )


class Inner:
    """Refuses prompts longer than `limit` chars; otherwise answers 'summary N' with a cost."""

    name = "inner"

    def __init__(self, limit, cost=0.01):
        self.limit, self.cost = limit, cost
        self.prompts: list[str] = []

    async def summarize(self, call):
        self.prompts.append(call.user_prompt)
        if len(call.user_prompt) > self.limit:
            raise ContextTooLongError("too long")
        return SummaryResult(
            text=f"## Goal\nsummary {len(self.prompts)}",
            model="m",
            prompt_tokens=10,
            completion_tokens=5,
            cost_usd=self.cost,
        )


def test_split_into_chunks_keeps_order_and_bounds():
    parts = [f"part {i} " + "y" * (i * 10) for i in range(30)]
    chunks = split_into_chunks(parts, 500)
    assert all(len(c) <= 500 for c in chunks)
    assert "\n\n".join(chunks) == "\n\n".join(parts)


def test_split_cuts_an_oversized_part_with_a_marker():
    chunks = split_into_chunks(["a" * 50, "b" * 5000, "c" * 50], 1000)
    assert len(chunks) == 3 and len(chunks[1]) <= 1000
    assert "characters cut to fit" in chunks[1]


def test_fitting_call_passes_through():
    inner = Inner(limit=10**9)
    call = make_call(messages(3))
    result = asyncio.run(OverflowSummarizer(inner, context_window=100_000).summarize(call))
    assert result.overflow_calls == 0 and result.calls == 1 and inner.prompts == [call.user_prompt]


def test_precheck_chunks_without_sending_the_big_prompt():
    inner = Inner(limit=10**9)
    call = make_call(messages(40), max_tokens=200)  # ~4,400 tokens
    summarizer = OverflowSummarizer(inner, context_window=200 + 1500 + 200 + 1000)
    result = asyncio.run(summarizer.summarize(call))
    assert call.user_prompt not in inner.prompts  # never sent whole
    assert result.overflow_calls == len(inner.prompts) >= 3 and result.calls == result.overflow_calls
    assert result.cost_usd == pytest.approx(0.01 * result.overflow_calls)
    assert result.prompt_tokens == 10 * result.overflow_calls
    for i in range(40):
        assert sum(f"request {i}:" in p for p in inner.prompts) == 1
    assert "<previous-summary>" not in inner.prompts[0]
    assert "<previous-summary>\n## Goal\nsummary 1\n</previous-summary>" in inner.prompts[1]


def test_refusal_without_known_window_halves_until_it_fits():
    inner = Inner(limit=3000)
    call = make_call(messages(30))
    result = asyncio.run(OverflowSummarizer(inner).summarize(call))
    assert result.overflow_calls >= 2 and result.calls > result.overflow_calls
    assert result.text == f"## Goal\nsummary {len(inner.prompts)}"


def test_previous_summary_reaches_first_chunk():
    inner = Inner(limit=10**9)
    call = make_call(messages(40), previous="## Goal\nolder work")
    asyncio.run(OverflowSummarizer(inner, context_window=3500).summarize(call))
    assert "<previous-summary>\n## Goal\nolder work\n</previous-summary>" in inner.prompts[0]


@pytest.mark.parametrize("kind,marker", [(TURN_PREFIX, "## Original Request"), (BRANCH, "## Goal")])
def test_other_kinds_fold_running_summary_into_conversation(kind, marker):
    inner = Inner(limit=10**9)
    call = make_call(messages(40), kind=kind)
    asyncio.run(OverflowSummarizer(inner, context_window=3500).summarize(call))
    assert "[Summary of the earlier part of this conversation]:\n## Goal\nsummary 1" in inner.prompts[1]
    assert marker in inner.prompts[0]


def test_unpriced_chunk_makes_cost_none():
    inner = Inner(limit=10**9, cost=None)
    result = asyncio.run(OverflowSummarizer(inner, context_window=3500).summarize(make_call(messages(40))))
    assert result.cost_usd is None


def test_refusal_without_messages_is_reraised():
    inner = Inner(limit=10)
    call = SummaryCall(kind=HISTORY, system_prompt="s", user_prompt="x" * 100, max_tokens=10)
    with pytest.raises(ContextTooLongError):
        asyncio.run(OverflowSummarizer(inner).summarize(call))
