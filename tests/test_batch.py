"""`run --batch` end to end against loopback fakes of the OpenAI Batch API and Anthropic Message Batches
(tests/batch_server.py): submit, collect on a rerun, --wait, crashes around submission and writing,
resubmission of failed requests, budget, a file changed between submit and collect, `batches`.

Every test runs the real CLI in-process on copies of the bundled samples; the fake server counts every
request and every summary it answered, so "never paid twice" is asserted, not assumed.
"""

from __future__ import annotations

import json
import shutil
import sqlite3
from pathlib import Path
from typing import Any

import polars as pl
import pytest
from batch_server import COMPLETION_TOKENS, PROMPT_TOKENS, FakeBatchServer
from conftest import SAMPLES

KEY = "sk-test-batch-secret-998877"
FAST = ("--min-age", "0", "--jobs", "1", "--force", "--keep-recent-tokens", "1500")
MODELS = {"openai": "openai/gpt-4o-mini", "anthropic": "anthropic/claude-haiku-4-5",
          "azure": "azure/gpt-4o-mini"}


class Crash(BaseException):
    """A process dying at this point (not an error any layer would handle)."""


@pytest.fixture(params=["openai", "anthropic"])
def server(request):
    fake = FakeBatchServer(request.param).start()
    yield fake
    fake.stop()


@pytest.fixture
def archive(tmp_path) -> Path:
    """The bundled samples (all valid; the deliberately broken one is in examples/broken)."""
    target = tmp_path / "in"
    shutil.copytree(SAMPLES, target)
    return target


def batch_run(bc, server, archive: Path, out: Path, *extra: Any) -> tuple[int, str, str]:
    return bc("run", archive, "--output-dir", out, *FAST, "--model", MODELS[server.provider], "--api-base",
              server.api_base, "--api-key", KEY, "--batch", *extra)


def report(out: Path) -> pl.DataFrame:
    return pl.read_parquet(sorted((out / ".batchcompact" / "reports").glob("compactions-*.parquet")))


def last_report(out: Path) -> pl.DataFrame:
    files = sorted((out / ".batchcompact" / "reports").glob("compactions-*.parquet"), key=lambda p: p.stat().st_mtime)
    return pl.read_parquet(files[-1])


def batch_price(model: str, calls: int) -> float:
    from batchcompact.pricing import PriceTable

    one = PriceTable.load(None).cost(model, input_tokens=PROMPT_TOKENS, output_tokens=COMPLETION_TOKENS, batch=True)
    return one * calls


def test_submit_then_collect_writes_verified_sessions_at_the_batch_price(bc, server, archive, tmp_path):
    out = tmp_path / "out"
    code, text, _ = batch_run(bc, server, archive, out)
    assert code == 0, text
    assert "submitted; rerun to collect" in text
    first = last_report(out)
    pending = first.filter(pl.col("status") == "batch_pending")
    assert pending.height >= 3  # the samples: pi, Claude Code and Codex sessions to compact
    calls = sum(server.submitted.values())
    assert f"{calls} calls in 1 batch submitted" in text
    # nothing written before the summaries are back (but the one bought on demand)
    written_now = {str(p) for p in out.rglob("*.jsonl")}
    assert written_now == set(first.filter(pl.col("status") == "compacted")["output_path"].to_list())
    assert server.bought == {}  # nothing answered yet

    code, text, _ = batch_run(bc, server, archive, out)
    assert code == 0, text
    assert f"collected {calls} summaries from 1 ended batch" in text
    second = last_report(out)
    done = second.filter(pl.col("status") == "compacted")
    assert done.height == pending.height
    assert done["batch"].to_list() == [True] * done.height
    # the one sample whose prompt exceeds gpt-4o-mini's window (128k) was bought on demand in the first run
    on_demand = [False] if server.provider == "openai" else []
    assert first.filter(pl.col("status") == "compacted")["batch"].to_list() == on_demand
    model = MODELS[server.provider]
    assert sum(done["cost_usd"].to_list()) == pytest.approx(batch_price(model, calls))
    from batchcompact.pricing import PriceTable

    on_demand = PriceTable.load(None).cost(model, input_tokens=PROMPT_TOKENS, output_tokens=COMPLETION_TOKENS)
    assert batch_price(model, 1) == pytest.approx(on_demand / 2)
    written = [Path(p) for p in done["output_path"].to_list()]
    assert bc("validate", *written)[0] == 0
    assert all(count == 1 for count in server.submitted.values())
    assert all(count == 1 for count in server.bought.values())
    assert KEY not in "".join(p.read_text() for p in written)

    creates_before = len(server.batches)
    code, text, _ = batch_run(bc, server, archive, out)  # a third run: nothing left to buy
    assert code == 0
    assert len(server.batches) == creates_before
    assert set(last_report(out)["status"].to_list()) == {"skipped"}


def test_wait_polls_until_ended_then_writes(bc, server, archive, tmp_path, monkeypatch):
    import batchcompact.pipeline.batch_commands as batch_commands

    monkeypatch.setattr(batch_commands, "POLL_START_S", 0.01)
    server.polls = 3
    out = tmp_path / "out"
    code, text, err = batch_run(bc, server, archive, out, "--wait")
    assert code == 0, text + err
    rows = last_report(out)
    assert rows.filter(pl.col("status") == "compacted").height >= 3
    assert "batch_pending" not in rows["status"].to_list()
    assert server.count("GET", "/batches/batch_0001") >= 4  # polled while in progress
    assert all(count == 1 for count in server.bought.values())


def test_crash_after_submit_before_record_adopts_the_orphan(bc, server, archive, tmp_path, monkeypatch):
    from batchcompact.pipeline import batch_store

    real = batch_store.BatchStore.mark_submitted
    calls = {"n": 0}

    def crash(self, local_id, batch_id):
        calls["n"] += 1
        if calls["n"] == 1:
            raise Crash  # killed between the provider's answer and our record
        return real(self, local_id, batch_id)

    monkeypatch.setattr(batch_store.BatchStore, "mark_submitted", crash)
    out = tmp_path / "out"
    with pytest.raises(Crash):
        batch_run(bc, server, archive, out)
    assert len(server.batches) == 1
    code, text, _ = batch_run(bc, server, archive, out)
    assert code == 0, text
    assert len(server.batches) == 1  # found again through the listing, not submitted twice
    assert last_report(out).filter(pl.col("status") == "compacted").height >= 3
    assert all(count == 1 for count in server.submitted.values())


def test_crash_after_download_before_write_reuses_the_paid_summaries(bc, server, archive, tmp_path, monkeypatch):
    from batchcompact.pipeline import outcome

    out = tmp_path / "out"
    assert batch_run(bc, server, archive, out)[0] == 0
    real = outcome.OutcomeWriter.write
    monkeypatch.setattr(outcome.OutcomeWriter, "write", lambda *a, **k: (_ for _ in ()).throw(Crash()))
    with pytest.raises(Crash):
        batch_run(bc, server, archive, out)
    monkeypatch.setattr(outcome.OutcomeWriter, "write", real)
    requests_before = len(server.requests)
    code, text, _ = batch_run(bc, server, archive, out)
    assert code == 0, text
    done = last_report(out).filter(pl.col("status") == "compacted")
    assert done.height >= 3
    assert len(server.batches) == 1 and all(count == 1 for count in server.bought.values())
    assert not [r for r in server.requests[requests_before:] if r[0] == "POST"]  # nothing bought again
    # the collecting run died before writing: the summaries count in the run that writes them
    assert sum(done["cost_usd"].to_list()) == pytest.approx(batch_price(MODELS[server.provider],
                                                                        sum(server.bought.values())))


@pytest.mark.parametrize("final", ["expired", "cancelled"])
def test_expired_or_cancelled_requests_are_resubmitted_with_bounded_attempts(bc, server, archive, tmp_path, final):
    out = tmp_path / "out"
    server.final = final
    assert batch_run(bc, server, archive, out, "--batch-attempts", "2")[0] == 0
    code, text, _ = batch_run(bc, server, archive, out, "--batch-attempts", "2")
    assert code == 0, text
    assert len(server.batches) == 2  # everything went again, once
    assert set(last_report(out)["status"].to_list()) >= {"batch_pending"}
    code, text, _ = batch_run(bc, server, archive, out, "--batch-attempts", "2")
    assert code == 1  # out of attempts: those sessions fail, with the provider's word
    failed = last_report(out).filter(pl.col("status") == "failed")
    assert failed.height >= 3
    assert "gave up after 2 batch submissions" in failed["reason"][0]
    assert len(server.batches) == 2
    assert server.bought == {}


def test_partly_errored_batch_writes_the_rest_and_resubmits_the_errored(bc, server, archive, tmp_path):
    out = tmp_path / "out"
    victims: set[str] = set()

    def fate(custom_id, body):
        if not victims:
            victims.add(custom_id)
        return "error" if custom_id in victims and server.submitted[custom_id] == 1 else "ok"

    server.fate = fate
    assert batch_run(bc, server, archive, out)[0] == 0
    code, text, _ = batch_run(bc, server, archive, out)
    assert code == 0, text
    rows = last_report(out)
    assert rows.filter(pl.col("status") == "batch_pending").height == 1  # its call went again
    assert rows.filter(pl.col("status") == "compacted").height >= 2
    assert len(server.batches) == 2 and len(server.batches["batch_0002"]["requests"]) == len(victims)
    code, text, _ = batch_run(bc, server, archive, out)
    assert code == 0, text
    assert last_report(out).filter(pl.col("status") == "compacted").height == 1
    assert all(count == 1 for count in server.bought.values())


def test_prompt_too_long_for_a_batch_is_bought_on_demand_with_overflow_recovery(bc, archive, tmp_path):
    """A request the provider refuses as too long needs chunked recovery, whose calls depend on each other's
    answers: the next run buys just that call on demand (successive calls), the rest stay batch-priced."""
    fake = FakeBatchServer("openai").start()
    try:
        victim: set[str] = set()

        def fate(custom_id, body):
            if not victim:
                victim.add(custom_id)
            return "too_long" if custom_id in victim else "ok"

        fake.fate = fate
        out = tmp_path / "out"
        assert batch_run(bc, fake, archive, out)[0] == 0
        chat_calls = fake.count("POST", "/chat/completions")
        code, text, _ = batch_run(bc, fake, archive, out, "--max-attempts", "1")
        assert code == 0, text
        assert "1 session bought on demand" in text
        rows = last_report(out).filter(pl.col("status") == "compacted")
        assert rows.height >= 3
        # the refused call's session: its other call came from the batch, the refused one on demand
        assert rows["batch"].to_list() == [True] * rows.height
        collected = sum(fake.bought.values())
        assert sum(rows["cost_usd"].to_list()) > batch_price("openai/gpt-4o-mini", collected)
        assert fake.count("POST", "/chat/completions") > chat_calls  # the recovery's calls, on demand
        assert len(fake.batches) == 1 and all(count == 1 for count in fake.bought.values())
    finally:
        fake.stop()


def test_max_cost_counts_submitted_requests_at_the_batch_price(bc, server, archive, tmp_path):
    out = tmp_path / "out"
    code, text, _ = batch_run(bc, server, archive, out, "--max-cost", "0.0001")
    assert code == 3  # the plan's batch-price estimate is over the budget: nothing submitted
    assert server.batches == {}
    code, text, _ = batch_run(bc, server, archive, out, "--max-cost", "0.5")
    assert code == 0 and len(server.batches) == 1


def test_session_changed_between_submit_and_collect(bc, server, archive, tmp_path):
    out = tmp_path / "out"
    assert batch_run(bc, server, archive, out)[0] == 0
    first = last_report(out).filter(pl.col("status") == "batch_pending")
    changed = Path(first["input_path"][0])
    with changed.open("a") as handle:  # a live agent appended to it
        handle.write(changed.read_text().splitlines()[-1] + "\n")
    code, text, _ = batch_run(bc, server, archive, out)
    assert code == 0, text
    rows = last_report(out)
    row = rows.filter(pl.col("input_path") == str(changed))
    assert row["status"][0] == "changed_during_run"
    assert "stay in the cache" in row["reason"][0]
    assert rows.filter(pl.col("status") == "compacted").height == first.height - 1
    # its paid summaries are in the cache; the next run plans the new content
    db = sqlite3.connect(out / ".batchcompact" / "state.sqlite")
    collected = db.execute("SELECT count(*) FROM batch_requests WHERE state IN ('collected', 'delivered')").fetchone()
    assert collected[0] == sum(server.bought.values())
    code, text, _ = batch_run(bc, server, archive, out)
    assert code == 0


def test_refuses_missing_key_or_unknown_model_before_uploading(bc, archive, tmp_path):
    fake = FakeBatchServer("anthropic").start()
    try:
        out = tmp_path / "out"
        code, _, err = bc("run", archive, "--output-dir", out, *FAST, "--model", "anthropic/claude-haiku-4-5", "--batch")
        assert code == 3 and "ANTHROPIC_API_KEY" in err
        code, _, err = bc("run", archive, "--output-dir", out, *FAST, "--model", "mystery/model-x", "--api-key", KEY,
                          "--api-base", fake.api_base, "--batch")
        assert code == 2 and "unknown model" in err
        code, _, err = bc("run", archive, "--output-dir", out, *FAST, "--batch")
        assert code == 2 and "provider model" in err
        assert fake.requests == []
    finally:
        fake.stop()


def test_batches_lists_and_cancels(bc, server, archive, tmp_path):
    out = tmp_path / "out"
    server.polls = 100
    assert batch_run(bc, server, archive, out)[0] == 0
    code, text, _ = bc("batches", "--output-dir", out, "--format", "json")
    assert code == 0
    rows = json.loads(text)["rows"]
    assert [r["id"] for r in rows] == ["batch_0001"]
    assert rows[0]["provider"] == server.provider and rows[0]["requests"] == sum(server.submitted.values())
    assert rows[0]["est_cost_usd"] > 0 and rows[0]["cost_usd"] is None
    code, text, _ = bc("batches", "--output-dir", out, "--refresh", "--api-key", KEY, "--format", "json")
    assert code == 0 and json.loads(text)["rows"][0]["status"] == "in_progress"
    code, text, _ = bc("batches", "--output-dir", out, "--cancel", "batch_0001", "--api-key", KEY)
    assert code == 0, text
    assert server.count("POST", "cancel") == 1
    code, text, _ = bc("batches", "--output-dir", out)
    assert "batch_0001" in text and server.provider in text
    code, text, _ = batch_run(bc, server, archive, out)  # collects the cancelled batch, resubmits
    assert code == 0 and len(server.batches) == 2


def test_azure_uses_its_paths_and_key_header(bc, archive, tmp_path):
    fake = FakeBatchServer("azure").start()
    try:
        out = tmp_path / "out"
        assert batch_run(bc, fake, archive, out)[0] == 0
        assert batch_run(bc, fake, archive, out)[0] == 0
        assert last_report(out).filter(pl.col("status") == "compacted").height >= 3
        assert fake.keys_seen == {KEY}
    finally:
        fake.stop()


def test_split_batches_keep_a_jobs_calls_together(archive, tmp_path):
    """With at most 2 requests per batch, every session's calls (a split turn's two) share one batch."""
    from batchcompact.cli.options import pop_settings  # noqa: F401  (the CLI's settings defaults)
    from batchcompact.core.planner import CompactionSettings
    from batchcompact.pipeline.batch import BatchOptions
    from batchcompact.pipeline.run import RunOptions, run_archive
    from batchcompact.summarize import build_summarizer
    from batchcompact.summarize.pool import PoolSettings

    fake = FakeBatchServer("openai").start()
    try:
        model = "openai/gpt-4o-mini"
        options = RunOptions(output_dir=tmp_path / "out", min_age_s=0, summary_model=model,
                             batch=BatchOptions(api_base=fake.api_base, api_key=KEY, max_requests=2))
        settings = CompactionSettings(keep_recent_tokens=1500)
        summarizer = build_summarizer(model, api_base=fake.api_base, api_key=KEY)
        summary = run_archive([str(archive)], settings, options, summarizer, PoolSettings())
        assert summary.by_status.get("batch_pending", 0) >= 3
        assert len(fake.batches) >= 2
        by_session: dict[str, set[str]] = {}
        db = sqlite3.connect(tmp_path / "out" / ".batchcompact" / "state.sqlite")
        for job_key, local_id in db.execute("SELECT job_key, local_id FROM batch_requests"):
            by_session.setdefault(job_key, set()).add(local_id)
        assert all(len(batches) == 1 for batches in by_session.values())
        assert any(len(b["requests"]) == 2 for b in fake.batches.values())
    finally:
        fake.stop()


def test_buyer_stops_submitting_at_max_cost_counting_requests_at_the_batch_price(tmp_path):
    """Within a run (resubmissions, --wait rounds), requests count at the batch price when submitted."""
    import asyncio

    from batchcompact.core.calls import SummaryCall
    from batchcompact.pipeline.batch import BatchBuyer, BatchOptions, batch_cost
    from batchcompact.pipeline.state import RunState
    from batchcompact.summarize import build_summarizer
    from batchcompact.summarize.pool import PoolSettings, SummaryJob

    fake = FakeBatchServer("anthropic").start()
    try:
        model = "anthropic/claude-haiku-4-5"
        calls = [SummaryCall("history", "system", f"conversation {i} " * 500, 1000, prompt_tokens=2000)
                 for i in range(3)]
        one = batch_cost(model, None, prompt_tokens=2000, completion_tokens=1000)
        outcomes = []
        with RunState(tmp_path / "state.sqlite") as state:
            buyer = BatchBuyer(BatchOptions(api_base=fake.api_base, api_key=KEY),
                               build_summarizer(model, api_base=fake.api_base, api_key=KEY), state, model,
                               PoolSettings(), "run-1", max_cost_usd=one * 2.5)
            jobs = [SummaryJob(f"s{i}", [call], "v1") for i, call in enumerate(calls)]
            asyncio.run(buyer.buy(jobs, outcomes.append))
        assert [o.status for o in outcomes] == ["batch_pending", "batch_pending", "budget_exhausted"]
        assert "committed to batches" in outcomes[2].error
        assert len(fake.batches) == 1 and len(fake.batches["batch_0001"]["requests"]) == 2
        assert buyer.committed == pytest.approx(one * 2)
    finally:
        fake.stop()


def test_crash_before_the_provider_created_the_batch_submits_again(bc, server, archive, tmp_path, monkeypatch):
    """Intent recorded, then killed before the upload: the next run finds no such batch and submits again."""
    from batchcompact.summarize import batch_api

    client = batch_api.AnthropicBatches if server.provider == "anthropic" else batch_api.OpenAIBatches
    real = client.submit

    def crash(self, lines, tag):
        raise Crash

    monkeypatch.setattr(client, "submit", crash)
    out = tmp_path / "out"
    with pytest.raises(Crash):
        batch_run(bc, server, archive, out)
    monkeypatch.setattr(client, "submit", real)
    assert server.batches == {}
    code, text, _ = batch_run(bc, server, archive, out)
    assert code == 0 and "submitted; rerun to collect" in text
    assert len(server.batches) == 1
    db = sqlite3.connect(out / ".batchcompact" / "state.sqlite")
    assert db.execute("SELECT state FROM batches ORDER BY created_at").fetchall() == [("abandoned",), ("submitted",)]
    assert {a for (a,) in db.execute("SELECT attempts FROM batch_requests")} == {1}  # never sent: not counted
    assert batch_run(bc, server, archive, out)[0] == 0
    assert last_report(out).filter(pl.col("status") == "compacted").height >= 3


def test_identical_sessions_share_one_request_and_a_keyless_compatible_server_works(bc, tmp_path):
    """Two copies of a session ask for the same summaries: one request each, bought once, both written.
    An OpenAI-compatible server at --api-base (vLLM) needs no key."""
    fake = FakeBatchServer("openai").start()
    try:
        archive = tmp_path / "in"
        archive.mkdir()
        for name in ("a.jsonl", "b.jsonl"):
            shutil.copy(SAMPLES / "pi" / "branched.jsonl", archive / name)
        out = tmp_path / "out"
        args = ("run", archive, "--output-dir", out, *FAST, "--model", "hosted_vllm/gpt-4o-mini", "--api-base", fake.api_base,
                "--batch")
        code, text, _ = bc(*args)
        assert code == 0, text
        calls = sum(fake.submitted.values())
        assert calls >= 1 and f"{calls} calls in 1 batch submitted" in text
        assert last_report(out)["status"].to_list() == ["batch_pending", "batch_pending"]
        code, text, _ = bc(*args)
        assert code == 0, text
        rows = last_report(out)
        assert rows["status"].to_list() == ["compacted", "compacted"]
        assert sorted(rows["reused_summaries"].to_list()) == [0, calls]  # the copy reuses what the first paid
        assert all(count == 1 for count in fake.submitted.values()) and all(c == 1 for c in fake.bought.values())
        assert fake.keys_seen == {""}
    finally:
        fake.stop()


def test_batch_bought_usage_is_priced_at_the_batch_rate_in_every_cost_field(bc, server, archive, tmp_path):
    """A written entry's usage.cost parts (input, output, cacheRead, cacheWrite) are each the batch rate
    times their tokens and add up to `total`; the run report and `report` carry the same figures."""
    from batchcompact.pricing import PriceTable

    server.cached_tokens = 300
    out = tmp_path / "out"
    assert batch_run(bc, server, archive, out)[0] == 0
    code, text, _ = batch_run(bc, server, archive, out)
    assert code == 0, text
    done = last_report(out).filter(pl.col("status") == "compacted")
    assert done.height >= 3 and done["batch"].to_list() == [True] * done.height
    model = MODELS[server.provider]
    batch_rate = PriceTable.load(None).lookup(model).rates(batch=True)[0]
    on_demand_rate = PriceTable.load(None).lookup(model).rates()[0]
    assert batch_rate.input_cost_per_token == pytest.approx(on_demand_rate.input_cost_per_token / 2)
    entries = [json.loads(line) for path in out.rglob("*.jsonl") if ".batchcompact" not in path.parts
               for line in path.read_text().splitlines() if '"usage"' in line and '"compaction"' in line]
    entries = [e for e in entries if e.get("type") == "compaction" and isinstance(e.get("usage"), dict)
               and "batch summary" in e.get("summary", "")]  # ours, bought through the batch
    assert entries, "no written compaction entry carries usage"
    for entry in entries:
        usage, cost = entry["usage"], entry["usage"]["cost"]
        calls = usage["cacheRead"] // server.cached_tokens
        assert calls >= 1 and usage["input"] == (PROMPT_TOKENS - server.cached_tokens) * calls  # non-cached
        assert usage["totalTokens"] == (PROMPT_TOKENS + COMPLETION_TOKENS) * calls
        assert cost["input"] + cost["output"] + cost["cacheRead"] + cost["cacheWrite"] == cost["total"]
        assert cost["input"] == pytest.approx(usage["input"] * batch_rate.input_cost_per_token, rel=1e-12)
        assert cost["output"] == pytest.approx(usage["output"] * batch_rate.output_cost_per_token, rel=1e-12)
        assert cost["cacheRead"] == pytest.approx(usage["cacheRead"] * batch_rate.cache_read_input_token_cost,
                                                  rel=1e-12)
        assert cost["total"] == pytest.approx(PriceTable.load(None).cost(
            model, input_tokens=usage["input"], output_tokens=usage["output"], cache_read_tokens=usage["cacheRead"],
            batch=True), rel=1e-12)
    # the run report's row for each session: the same batch-priced total as its written entries
    by_session = {row["output_path"]: row["cost_usd"] for row in done.iter_rows(named=True)}
    for path, cost in by_session.items():
        written = [json.loads(line) for line in Path(path).read_text().splitlines()]
        totals = [e["usage"]["cost"]["total"] for e in written[1:] if e.get("type") in ("compaction", "branch_summary")
                  and isinstance(e.get("usage"), dict) and e.get("summary", "").find("batch summary") >= 0]
        if totals:
            assert sum(totals) == pytest.approx(cost, rel=1e-12)
    # `report` over the run reports: tokens split as pi counts them, cost at the batch rate
    code, text, err = bc("report", out / ".batchcompact" / "reports", "--format", "json", "--no-cache")
    assert code == 0, err
    totals = json.loads(text)["totals"]
    assert totals["cache_read_tokens"] == server.cached_tokens * sum(server.bought.values())
    every_run = report(out).filter(pl.col("status") == "compacted")  # + the one bought on demand (openai)
    assert totals["cost_usd"] == pytest.approx(sum(every_run["cost_usd"].to_list()), rel=1e-12)


@pytest.mark.parametrize("provider", ["openai", "anthropic"])
def test_a_request_line_with_half_an_emoji_is_valid_utf8(provider):
    """A lone surrogate in a prompt (half an emoji a JavaScript agent cut) went out as bytes that are not
    UTF-8 (`surrogatepass`): a provider refuses such an upload. It goes as U+FFFD."""
    from batchcompact.core.calls import SummaryCall
    from batchcompact.summarize.batch_api import BatchTarget, client_for

    client = client_for(BatchTarget(provider, f"{provider}/m", "m", "http://127.0.0.1:9"))
    call = SummaryCall(kind="history", system_prompt="sys", user_prompt="cut \ud83d here", max_tokens=10)
    line = client.request_line("id-1", call).decode("utf-8")  # strict: fails on surrogatepass bytes
    assert "cut \ufffd here" in line and json.loads(line)
