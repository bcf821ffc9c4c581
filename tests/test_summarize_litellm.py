"""The real litellm client against the loopback OpenAI-compatible server, alone and through the pool."""

from __future__ import annotations

import asyncio
import random
import subprocess
import sys

import pytest
from fake_clock import FakeClock
from llm_server import Answer, Error, Hang, Malformed, context_too_long, rate_limited

from batchcompact.core.calls import HISTORY, TURN_PREFIX, SummaryCall
from batchcompact.summarize import (
    ContextTooLongError,
    PoolSettings,
    RateLimitedError,
    RetryableError,
    RunFatalError,
    SessionFatalError,
    SummaryJob,
    build_summarizer,
    run_jobs,
)
from batchcompact.summarize.litellm_summarizer import LiteLLMSummarizer, parse_retry_after
from batchcompact.summarize.overflow import OverflowSummarizer

MODEL = "openai/gpt-4o-mini"
KEY = "sk-test-not-a-real-key-0000"


def summarizer_for(server, timeout=5.0, **kw) -> LiteLLMSummarizer:
    return LiteLLMSummarizer(MODEL, api_base=server.api_base, api_key=KEY, timeout=timeout, **kw)


def make_call(text="[User]: hello", kind=HISTORY, max_tokens=1000, messages=()) -> SummaryCall:
    return SummaryCall(
        kind=kind,
        system_prompt="You summarize.",
        user_prompt=text,
        max_tokens=max_tokens,
        messages=tuple(messages),
    )


def one(summarizer, call=None):
    return asyncio.run(summarizer.summarize(call or make_call()))


def run_pool(job_list, summarizer, **settings):
    clock = FakeClock()
    outcomes = {}
    base = {"base_delay": 0.01, "max_delay": 0.05, "concurrency": 4}
    stats = asyncio.run(
        run_jobs(
            job_list,
            summarizer,
            PoolSettings(**{**base, **settings}),
            on_outcome=lambda o: outcomes.__setitem__(o.key, o),
            clock=clock,
            sleep=clock.sleep,
            rng=random.Random(1),
        )
    )
    return stats, outcomes, clock


# -- the summarizer alone -------------------------------------------------------------------------
def test_success_with_usage_and_cost(llm_server):
    llm_server.enqueue(
        Answer("## Goal\nsummary", prompt_tokens=1000, completion_tokens=200, cached_tokens=400)
    )
    result = one(summarizer_for(llm_server))
    assert result.text == "## Goal\nsummary"
    assert (result.prompt_tokens, result.completion_tokens, result.cache_read_tokens) == (1000, 200, 400)
    assert result.model == MODEL and result.latency_s > 0
    # gpt-4o-mini: $0.15/M input, $0.075/M cached input, $0.60/M output
    assert result.cost_usd == pytest.approx(600 * 0.15e-6 + 400 * 0.075e-6 + 200 * 0.6e-6, rel=0.05)
    request = llm_server.requests[0]
    assert request.path.endswith("/chat/completions")
    assert request.body["messages"] == [
        {"role": "system", "content": "You summarize."},
        {"role": "user", "content": "[User]: hello"},
    ]
    assert request.body["max_tokens"] == 1000
    assert "reasoning_effort" not in request.body
    assert request.headers.get("authorization") == f"Bearer {KEY}"


def test_unpriced_model_cost_is_none(llm_server):
    summarizer = LiteLLMSummarizer("openai/my-local-model-xyz", api_base=llm_server.api_base, api_key=KEY)
    assert one(summarizer).cost_usd is None


def test_max_tokens_clamped_to_model_output_limit(llm_server):
    one(summarizer_for(llm_server), make_call(max_tokens=10_000_000))
    assert llm_server.requests[0].body["max_tokens"] == 16384  # gpt-4o-mini's max output


@pytest.mark.parametrize(
    "behaviour,error,status",
    [
        (rate_limited(7), RateLimitedError, 429),
        (Error(500, "boom"), RetryableError, 500),
        (Error(503, "unavailable"), RetryableError, 503),
        (Malformed(), RetryableError, None),
        (Error(400, "Invalid 'messages': bad thing"), SessionFatalError, 400),
        (Error(404, "model not found"), SessionFatalError, 404),
        (context_too_long(), ContextTooLongError, 400),
        (Error(401, f"Incorrect API key provided: {KEY}"), RunFatalError, 401),
        (Error(403, "not allowed"), RunFatalError, 403),
    ],
)
def test_error_classification(llm_server, behaviour, error, status):
    llm_server.enqueue(behaviour)
    with pytest.raises(error) as info:
        one(summarizer_for(llm_server))
    exc = info.value
    if status is not None:
        assert exc.status_code == status
    assert KEY not in str(exc)
    if status == 429:
        assert exc.retry_after == 7.0
    if status == 400 and error is SessionFatalError:
        assert "bad thing" in str(exc)
    if isinstance(exc, RunFatalError):
        assert exc.exit_code == 3 and "--api-key" in str(exc) or status == 403


def test_hang_times_out_as_retryable(llm_server):
    llm_server.enqueue(Hang(10))
    with pytest.raises(RetryableError):
        one(summarizer_for(llm_server, timeout=0.3))


def test_parse_retry_after():
    assert parse_retry_after({"retry-after": "3"}) == 3.0
    assert parse_retry_after({"retry-after-ms": "1500"}) == 1.5
    assert parse_retry_after({"retry-after": "Sun, 22 Nov 2026 03:00:10 GMT"}, now=1_795_316_400.0) == 10.0
    assert parse_retry_after({}) is None and parse_retry_after(None) is None


def test_reasoning_only_for_reasoning_models(llm_server):
    plain = summarizer_for(llm_server, reasoning_effort="high")
    assert "reasoning_effort" not in plain.build_request(make_call())
    reasoning = LiteLLMSummarizer(
        "openai/o3-mini", api_base=llm_server.api_base, api_key=KEY, reasoning_effort="high"
    )
    assert reasoning.build_request(make_call())["reasoning_effort"] == "high"


def test_no_litellm_import_at_module_import():
    code = (
        "import sys, batchcompact.summarize, batchcompact.summarize.litellm_summarizer, "
        "batchcompact.summarize.pool, batchcompact.cli.summarize_options; "
        "build = batchcompact.summarize.build_summarizer('openai/gpt-4o-mini'); "
        "assert 'litellm' not in sys.modules, 'litellm imported'"
    )
    subprocess.run([sys.executable, "-c", code], check=True, timeout=60)


# -- through the pool -----------------------------------------------------------------------------
def jobs(n, prefix="s"):
    return [SummaryJob(f"{prefix}{i}", [make_call(f"[User]: session {i}")]) for i in range(n)]


def test_pool_429_with_retry_after_then_success(llm_server):
    llm_server.enqueue(rate_limited(2), Answer("## Goal\nafter 429"))
    stats, outcomes, clock = run_pool(jobs(1), summarizer_for(llm_server))
    assert outcomes["s0"].status == "ok" and outcomes["s0"].results[0].text == "## Goal\nafter 429"
    assert outcomes["s0"].attempts == 2
    assert 2.0 in clock.sleeps  # waited Retry-After
    assert stats.rate_limited == 1


def test_pool_several_500s_then_success(llm_server):
    llm_server.enqueue(Error(500, "a"), Error(502, "b"), Error(503, "c"), Answer("## Goal\nfinally"))
    stats, outcomes, _ = run_pool(jobs(1), summarizer_for(llm_server))
    assert outcomes["s0"].status == "ok" and outcomes["s0"].attempts == 4
    assert len(llm_server.requests) == 4


def test_pool_permanent_400_fails_only_that_session(llm_server):
    def behave(body):
        prompt = body["messages"][1]["content"]
        return Error(400, "Invalid value for 'temperature': too hot") if "session 2" in prompt else Answer()

    llm_server.default = behave
    stats, outcomes, _ = run_pool(jobs(5), summarizer_for(llm_server))
    assert outcomes["s2"].status == "failed"
    assert "Invalid value for 'temperature': too hot" in outcomes["s2"].error
    assert outcomes["s2"].attempts == 1
    assert all(outcomes[f"s{i}"].status == "ok" for i in (0, 1, 3, 4))


def test_pool_401_aborts_the_run(llm_server):
    llm_server.default = Error(401, f"Incorrect API key provided: {KEY[:10]}****")
    stats, outcomes, _ = run_pool(jobs(20), summarizer_for(llm_server), concurrency=1)
    assert set(o.status for o in outcomes.values()) == {"aborted"} and len(outcomes) == 20
    assert len(llm_server.requests) == 1
    assert "refused the credentials" in stats.stop_reason and KEY not in stats.stop_reason


def test_pool_hang_times_out_and_retries(llm_server):
    llm_server.enqueue(Hang(10), Answer("## Goal\nafter hang"))
    stats, outcomes, _ = run_pool(jobs(1), summarizer_for(llm_server, timeout=0.3))
    assert outcomes["s0"].status == "ok" and outcomes["s0"].attempts == 2


def test_pool_malformed_body_is_retried(llm_server):
    llm_server.enqueue(Malformed(), Malformed(b'{"choices": []}'), Answer("## Goal\nwell formed"))
    stats, outcomes, _ = run_pool(jobs(1), summarizer_for(llm_server))
    assert outcomes["s0"].status == "ok" and outcomes["s0"].attempts == 3


def _messages(n):
    out = []
    for i in range(n):
        out.append({"role": "user", "content": f"request {i}: " + "x" * 400})
        out.append(
            {"role": "assistant", "content": [{"type": "text", "text": f"answer {i}"}], "stopReason": "stop"}
        )
    return out


def test_pool_context_length_error_recovers_in_chunks(llm_server):
    from batchcompact.core.prompts import build_summary_prompt
    from batchcompact.core.serialize import serialize_conversation

    messages = _messages(12)
    conversation = serialize_conversation(messages)
    call = make_call(build_summary_prompt(conversation), messages=messages, max_tokens=300)
    llm_server.enqueue(
        context_too_long(),
        Answer("## Goal\nchunk 1"),
        Answer("## Goal\nchunk 2"),
        Answer("## Goal\nchunk 3"),
        Answer("## Goal\nchunk 4"),
    )
    summarizer = build_summarizer(MODEL, api_base=llm_server.api_base, api_key=KEY, timeout=5)
    assert isinstance(summarizer, OverflowSummarizer)
    stats, outcomes, _ = run_pool([SummaryJob("big", [call])], summarizer)
    outcome = outcomes["big"]
    assert outcome.status == "ok", outcome.error
    result = outcome.results[0]
    assert result.overflow_calls >= 2 and result.calls == result.overflow_calls + 1
    assert result.text == f"## Goal\nchunk {result.overflow_calls}"
    prompts = [r.user_prompt for r in llm_server.requests[1:]]
    assert (
        "<previous-summary>\n## Goal\nchunk 1\n</previous-summary>" in prompts[1]
    )  # folded with update prompt
    for i in range(12):  # no message was lost
        assert sum(f"request {i}:" in p for p in prompts) == 1


def test_pool_turn_prefix_and_history_concurrently(llm_server):
    llm_server.default = Answer(delay=0.2)
    job = SummaryJob("split", [make_call("history"), make_call("prefix", kind=TURN_PREFIX)])
    stats, outcomes, _ = run_pool([job], summarizer_for(llm_server))
    assert outcomes["split"].status == "ok" and llm_server.max_in_flight == 2


def test_no_secret_reaches_the_server(llm_server):
    secret = "gh" + "p_" + "a1B2c3D4e5F6g7H8i9J0k1L2m3N4o5P6q7R8"
    aws = "AK" + "IAZ7QW3ERT5YUI9OPA"
    call = make_call(f"[Tool result]: GITHUB_TOKEN={secret}\naws_access_key_id={aws}")
    stats, outcomes, _ = run_pool([SummaryJob("a", [call])], summarizer_for(llm_server))
    assert outcomes["a"].results[0].redactions == {"github_token": 1, "aws_access_key": 1}
    raw = repr([r.body for r in llm_server.requests])
    assert secret not in raw and aws not in raw and "[REDACTED:github_token]" in raw


def test_api_key_never_logged(llm_server, caplog):
    import logging

    caplog.set_level(logging.DEBUG)
    llm_server.enqueue(Answer(), Error(401, "Incorrect API key provided: " + KEY), Error(500, KEY))
    summarizer = summarizer_for(llm_server)
    one(summarizer)
    for error in (RunFatalError, RetryableError):
        with pytest.raises(error) as info:
            one(summarizer)
        assert KEY not in str(info.value) and KEY not in repr(info.value)
    assert KEY not in caplog.text
    assert KEY not in repr(summarizer)
