"""The worker pool with a fake summarizer and an injected clock: limits, retries, budget, abort, cancel."""

from __future__ import annotations

import asyncio
import random

import pytest
from fake_clock import FakeClock

from batchcompact.core.calls import HISTORY, TURN_PREFIX, SummaryCall
from batchcompact.summarize import (
    Cancel,
    ContextTooLongError,
    PoolSettings,
    RateLimitedError,
    RetryableError,
    RunFatalError,
    SessionFatalError,
    SummaryJob,
    SummaryResult,
    run_jobs,
)
from batchcompact.summarize.custom import HookSummarizer


def make_call(text="hello", kind=HISTORY, prompt_tokens=100, max_tokens=50) -> SummaryCall:
    return SummaryCall(
        kind=kind, system_prompt="sys", user_prompt=text, max_tokens=max_tokens, prompt_tokens=prompt_tokens
    )


def jobs(n, **kw):
    return [SummaryJob(f"s{i}", [make_call(f"session {i}", **kw)]) for i in range(n)]


def run(job_list, summarizer, settings=None, clock=None, **kw):
    clock = clock or FakeClock()
    outcomes = []
    stats = asyncio.run(
        run_jobs(
            job_list,
            summarizer,
            settings or PoolSettings(base_delay=0.01),
            on_outcome=outcomes.append,
            clock=clock,
            sleep=clock.sleep,
            rng=random.Random(0),
            **kw,
        )
    )
    return stats, {o.key: o for o in outcomes}


class TimedSummarizer:
    """Records the virtual time of each call; answers with fixed usage after `duration` virtual seconds."""

    name = "timed"
    remote = False

    def __init__(self, clock, tokens=(100, 20), duration=0.5, cost=0.01):
        self.clock, self.tokens, self.duration, self.cost = clock, tokens, duration, cost
        self.times: list[float] = []
        self.in_flight = 0
        self.max_in_flight = 0

    async def summarize(self, call):
        self.times.append(self.clock())
        self.in_flight += 1
        self.max_in_flight = max(self.max_in_flight, self.in_flight)
        try:
            await self.clock.sleep(self.duration)
        finally:
            self.in_flight -= 1
        return SummaryResult(
            text=f"summary of {call.user_prompt}",
            model="timed",
            prompt_tokens=self.tokens[0],
            completion_tokens=self.tokens[1],
            cost_usd=self.cost,
        )


def test_all_jobs_ok_and_reported(fake_summarizer):
    stats, outcomes = run(jobs(20), fake_summarizer)
    assert len(outcomes) == 20 and all(o.status == "ok" for o in outcomes.values())
    assert stats.by_status == {"ok": 20} and stats.calls == 20
    assert len(fake_summarizer.history) == 20


def test_split_turn_job_runs_both_calls_concurrently():
    clock = FakeClock()
    summarizer = TimedSummarizer(clock, duration=1.0)
    job = SummaryJob("split", [make_call("history"), make_call("prefix", kind=TURN_PREFIX)])
    stats, outcomes = run([job], summarizer, PoolSettings(concurrency=2), clock=clock)
    assert outcomes["split"].status == "ok"
    assert [r.text for r in outcomes["split"].results] == ["summary of history", "summary of prefix"]
    assert summarizer.max_in_flight == 2


@pytest.mark.parametrize("rpm", [5, 12, 30])
def test_rpm_never_exceeded(rpm):
    clock = FakeClock()
    summarizer = TimedSummarizer(clock, duration=0.2)
    stats, outcomes = run(jobs(60), summarizer, PoolSettings(concurrency=8, rpm=rpm), clock=clock)
    assert stats.by_status == {"ok": 60}
    times = sorted(summarizer.times)
    for i, start in enumerate(times):
        in_window = [t for t in times[i:] if t < start + 60.0]
        assert len(in_window) <= rpm, (start, len(in_window))
    assert times[-1] >= (60 // rpm - 1) * 60 - 1e-6  # it did have to wait


@pytest.mark.parametrize("tpm", [1000, 2500])
def test_tpm_never_exceeded_and_refunds(tpm):
    clock = FakeClock()
    # reserve 100 + 400 = 500 tokens per call, actually use 120: refunds let more calls through.
    summarizer = TimedSummarizer(clock, tokens=(100, 20), duration=0.1)
    job_list = jobs(40, prompt_tokens=100, max_tokens=400)
    stats, _ = run(job_list, summarizer, PoolSettings(concurrency=4, tpm=tpm), clock=clock)
    assert stats.by_status == {"ok": 40}
    times = sorted(summarizer.times)
    for i, start in enumerate(times):
        used = 120 * len([t for t in times[i:] if t < start + 60.0])
        # a call reserves 500 before it starts, so the in-window actual usage is at most tpm
        assert used <= tpm
    calls_first_minute = len([t for t in times if t < 60.0])
    assert calls_first_minute > tpm // 500  # refunds made room for more than the reservations alone


def test_concurrency_bound():
    clock = FakeClock()
    summarizer = TimedSummarizer(clock, duration=5)
    run(jobs(50), summarizer, PoolSettings(concurrency=3), clock=clock)
    assert summarizer.max_in_flight <= 3


def test_jobs_are_consumed_lazily(fake_summarizer):
    taken = []

    def generate():
        for i in range(1000):
            taken.append(i)
            yield SummaryJob(f"s{i}", [make_call()])

    seen = []

    async def main():
        async def on_outcome(outcome):
            seen.append(len(taken))

        await run_jobs(generate(), fake_summarizer, PoolSettings(concurrency=2), on_outcome=on_outcome)

    asyncio.run(main())
    assert len(seen) == 1000
    assert seen[0] <= 2 * 2 + 2 + 1  # the first outcome arrived before the generator ran ahead


def test_async_iterable_jobs(fake_summarizer):
    async def generate():
        for job in jobs(5):
            yield job

    stats, outcomes = run(generate(), fake_summarizer)
    assert stats.by_status == {"ok": 5}


def test_retry_then_success_with_backoff_and_retry_after(fake_summarizer):
    clock = FakeClock()
    fake_summarizer.enqueue(
        RetryableError("500 boom", status_code=500), RateLimitedError("429", retry_after=7.0), "## Goal\nok"
    )
    stats, outcomes = run(jobs(1), fake_summarizer, PoolSettings(base_delay=1.0, max_delay=60), clock=clock)
    outcome = outcomes["s0"]
    assert outcome.status == "ok" and outcome.attempts == 3 and outcome.results[0].attempts == 3
    assert 0.5 <= clock.sleeps[0] <= 1.0  # first backoff: base_delay with jitter
    assert 7.0 in clock.sleeps  # Retry-After honoured (it is larger than the backoff)
    assert stats.retries == 2 and stats.rate_limited == 1


def test_rate_limit_pauses_the_whole_run():
    clock = FakeClock()

    class Limited(TimedSummarizer):
        async def summarize(self, call):
            if call.user_prompt == "session 0" and not getattr(self, "hit", False):
                self.hit = True
                raise RateLimitedError("429", retry_after=30.0)
            return await super().summarize(call)

    summarizer = Limited(clock, duration=0.01)
    stats, outcomes = run(jobs(10), summarizer, PoolSettings(concurrency=1), clock=clock)
    assert stats.by_status == {"ok": 10}
    assert min(summarizer.times) >= 30.0 - 1e-9  # nobody called during the pause


def test_max_attempts_exhausted_fails_only_that_job(fake_summarizer):
    fake_summarizer.enqueue(*[RetryableError("server error (HTTP 503)", status_code=503)] * 3)
    stats, outcomes = run(
        jobs(1) + [SummaryJob("other", [make_call()])],
        fake_summarizer,
        PoolSettings(concurrency=1, max_attempts=3, base_delay=0.01),
    )
    assert outcomes["s0"].status == "failed"
    assert "gave up after 3 attempts" in outcomes["s0"].error and "503" in outcomes["s0"].error
    assert outcomes["other"].status == "ok"


def test_session_fatal_fails_job_without_retry(fake_summarizer):
    fake_summarizer.enqueue(SessionFatalError("model rejected the request: bad thing", status_code=400))
    stats, outcomes = run(jobs(3), fake_summarizer, PoolSettings(concurrency=1))
    assert outcomes["s0"].status == "failed" and "bad thing" in outcomes["s0"].error
    assert outcomes["s0"].attempts == 1
    assert outcomes["s1"].status == "ok" and outcomes["s2"].status == "ok"


def test_context_too_long_is_session_fatal(fake_summarizer):
    fake_summarizer.enqueue(ContextTooLongError("prompt too long"))
    stats, outcomes = run(jobs(2), fake_summarizer, PoolSettings(concurrency=1))
    assert outcomes["s0"].status == "failed" and outcomes["s1"].status == "ok"


def test_run_fatal_aborts_and_reports_every_job(fake_summarizer):
    fake_summarizer.enqueue(RunFatalError("refused the credentials (HTTP 401)", status_code=401))
    stats, outcomes = run(jobs(30), fake_summarizer, PoolSettings(concurrency=1))
    assert outcomes["s0"].status == "aborted"
    assert len(outcomes) == 30
    assert stats.by_status == {"aborted": 30}
    assert len(fake_summarizer.history) == 1  # nothing launched after the abort
    assert "401" in stats.stop_reason


def test_budget_stops_launching_and_marks_the_rest():
    clock = FakeClock()
    summarizer = TimedSummarizer(clock, duration=1.0, cost=0.25)
    stats, outcomes = run(jobs(10), summarizer, PoolSettings(concurrency=1, max_cost_usd=1.0), clock=clock)
    assert stats.by_status == {"ok": 4, "budget_exhausted": 6}
    assert stats.cost_usd == pytest.approx(1.0)
    assert len(summarizer.times) == 4
    assert "budget" in outcomes["s9"].error


def test_budget_lets_in_flight_calls_finish():
    clock = FakeClock()
    summarizer = TimedSummarizer(clock, duration=1.0, cost=1.0)
    stats, outcomes = run(jobs(10), summarizer, PoolSettings(concurrency=4, max_cost_usd=0.5), clock=clock)
    assert stats.by_status.get("ok") == 4  # the four started before any spend was known
    assert stats.by_status.get("budget_exhausted") == 6


def test_custom_cancel_skips_session():
    def hook(call):
        return Cancel("not worth it") if "1" in call.user_prompt else "## Goal\nhook"

    stats, outcomes = run(jobs(3), HookSummarizer(hook, "hook"))
    assert outcomes["s1"].status == "skipped" and outcomes["s1"].error == "not worth it"
    assert outcomes["s0"].status == "ok" and outcomes["s0"].results[0].from_hook


def test_unexpected_exception_fails_job(fake_summarizer):
    fake_summarizer.enqueue(ZeroDivisionError("oops"))
    stats, outcomes = run(jobs(2), fake_summarizer, PoolSettings(concurrency=1))
    assert outcomes["s0"].status == "failed" and "ZeroDivisionError" in outcomes["s0"].error
    assert outcomes["s1"].status == "ok"


def test_redaction_before_the_summarizer(fake_summarizer):
    secret = "sk-" + "proj-" + "Q3vT9xLm2KpR7wYz4NbC8dFgH1jKlMnOp"
    message = {
        "role": "toolResult",
        "toolCallId": "c",
        "toolName": "bash",
        "isError": False,
        "content": [{"type": "text", "text": f"OPENAI_API_KEY={secret}"}],
    }
    call = SummaryCall(
        kind=HISTORY,
        system_prompt="s",
        user_prompt=f"[Tool result]: OPENAI_API_KEY={secret}",
        max_tokens=10,
        messages=(message,),
        previous_summary=f"key {secret}",
    )
    stats, outcomes = run([SummaryJob("a", [call])], fake_summarizer)
    sent = fake_summarizer.history[0]
    assert secret not in repr(sent)
    assert outcomes["a"].results[0].redactions == {"openai_key": 1}
    assert secret in call.user_prompt  # the original is not changed

    fake_summarizer.history.clear()
    asyncio.run(run_jobs([SummaryJob("b", [call])], fake_summarizer, PoolSettings(redact=False)))
    assert secret in fake_summarizer.history[0].user_prompt


def test_stop_event_is_graceful():
    clock = FakeClock()
    summarizer = TimedSummarizer(clock, duration=1.0)
    outcomes = []

    async def main():
        stop = asyncio.Event()

        def on_outcome(outcome):
            outcomes.append(outcome)
            if len(outcomes) == 3:
                stop.set()

        return await run_jobs(
            jobs(50),
            summarizer,
            PoolSettings(concurrency=2),
            on_outcome=on_outcome,
            clock=clock,
            sleep=clock.sleep,
            stop_event=stop,
        )

    asyncio.run(main())
    statuses = [o.status for o in outcomes]
    assert statuses.count("ok") >= 3 and "cancelled" in statuses
    assert len(summarizer.times) <= 6  # nothing new launched after the stop
    assert len(outcomes) < 50  # the generator is not drained after a cancel


def test_task_cancel_reports_taken_jobs_and_reraises():
    outcomes = []

    class Slow:
        name = "slow"
        remote = False

        async def summarize(self, call):
            await asyncio.sleep(30)

    async def main():
        task = asyncio.ensure_future(
            run_jobs(jobs(10), Slow(), PoolSettings(concurrency=2), on_outcome=outcomes.append)
        )
        await asyncio.sleep(0.05)
        task.cancel()
        with pytest.raises(asyncio.CancelledError):
            await task

    asyncio.run(main())
    assert outcomes and all(o.status == "cancelled" for o in outcomes)
    assert len({o.key for o in outcomes}) == len(outcomes)
    assert len(outcomes) >= 2  # the two in flight (and any queued) got an outcome


def test_on_outcome_is_called_as_jobs_finish():
    clock = FakeClock()
    summarizer = TimedSummarizer(clock, duration=1.0)
    order = []
    asyncio.run(
        run_jobs(
            jobs(4),
            summarizer,
            PoolSettings(concurrency=4),
            on_outcome=lambda o: order.append((o.key, clock())),
            clock=clock,
            sleep=clock.sleep,
        )
    )
    assert len(order) == 4


def test_on_result_is_called_per_paid_call_before_the_outcome(fake_summarizer):
    events = []
    fake_summarizer.enqueue("## Goal\nfirst", SessionFatalError("second call refused"))
    job = SummaryJob("split", [make_call("a"), make_call("b", kind=TURN_PREFIX)])

    async def main():
        await run_jobs(
            [job],
            fake_summarizer,
            PoolSettings(concurrency=1),
            on_result=lambda j, i, r: events.append(("result", j.key, i, r.text)),
            on_outcome=lambda o: events.append(
                ("outcome", o.key, o.status, [r and r.text for r in o.results])
            ),
        )

    asyncio.run(main())
    assert events == [
        ("result", "split", 0, "## Goal\nfirst"),
        ("outcome", "split", "failed", ["## Goal\nfirst", None]),
    ]


@pytest.mark.parametrize("grace,expect_ok", [(0.0, 0), (5.0, 2)])
def test_task_cancel_with_grace_lets_in_flight_calls_finish(grace, expect_ok):
    outcomes = []

    class Quick:
        name = "quick"
        remote = False

        async def summarize(self, call):
            await asyncio.sleep(0.2)
            return SummaryResult(text="## Goal\nx", model="q")

    async def main():
        settings = PoolSettings(concurrency=2, cancel_grace=grace)
        task = asyncio.ensure_future(run_jobs(jobs(10), Quick(), settings, on_outcome=outcomes.append))
        await asyncio.sleep(0.05)
        task.cancel()
        with pytest.raises(asyncio.CancelledError):
            await task

    asyncio.run(main())
    statuses = [o.status for o in outcomes]
    assert statuses.count("ok") == expect_ok
    assert len(outcomes) == len({o.key for o in outcomes}) >= 2
    assert set(statuses) <= {"ok", "cancelled"}


def test_window_limiter_random_amounts_never_exceed_the_limit():
    from batchcompact.summarize.ratelimit import WindowLimiter

    clock = FakeClock()
    rng = random.Random(7)
    limiter = WindowLimiter(1000, clock, clock.sleep)
    log = []

    async def main():
        for _ in range(300):
            amount = rng.randint(1, 400)
            reservation = await limiter.acquire(amount)
            actual = rng.randint(0, amount)
            limiter.settle(reservation, actual)
            log.append((reservation.time, actual))
            await clock.sleep(rng.random() * 2)

    asyncio.run(main())
    for start, _ in log:
        assert sum(a for t, a in log if start <= t < start + 60) <= 1000


def test_on_outcome_exception_propagates(fake_summarizer):
    def boom(outcome):
        raise RuntimeError("writer failed")

    with pytest.raises(RuntimeError, match="writer failed"):
        asyncio.run(run_jobs(jobs(5), fake_summarizer, PoolSettings(concurrency=2), on_outcome=boom))
