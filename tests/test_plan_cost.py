"""Plan cost estimates checked by hand: published per-million prices times exact prompt tokens."""

from __future__ import annotations

import json

import pytest
from click.testing import CliRunner
from conftest import fixture_path

from batchcompact.cli import cli

# (model, USD per million input tokens, per million output, batch input, batch output): the prices in
# litellm 1.106.2's bundled map, which are the providers' list prices.
PRICES = [
    ("gpt-4o-mini", 0.15, 0.60, 0.075, 0.30),
    ("claude-haiku-4-5", 1.00, 5.00, 0.50, 2.50),
    ("gemini/gemini-2.5-flash", 0.30, 2.50, 0.15, 1.25),
]


def _plan(*args: str) -> list[dict]:
    result = CliRunner().invoke(cli, ["plan", *args, "--jobs", "1", "--format", "json"])
    assert result.exit_code == 0, result.output
    return json.loads(result.output[result.output.index("["): result.output.rindex("]") + 1])


@pytest.mark.parametrize(("model", "inp", "out", "binp", "bout"), PRICES)
def test_cost_estimate_by_hand(model, inp, out, binp, bout):
    path = fixture_path("pi", "large-session.jsonl")
    row = _plan(str(path), "--force", "--summary-model", model)[0]
    # The output is assumed at what the stored summary may hold: the summary budget (2,000 tokens), less what
    # its file tags (at most half of it) and the split turn's separator take. The budget's whole effect on
    # the estimate is test_the_output_estimate_follows_the_summary_budget's.
    output = row["est_output_tokens"]
    assert 2000 // 2 <= output < 2000
    prompt = row["prompt_tokens"]
    assert 90_000 < prompt < 100_000
    assert row["est_cost_usd"] == pytest.approx(prompt * inp / 1e6 + output * out / 1e6, rel=1e-9)
    assert row["est_batch_cost_usd"] == pytest.approx(prompt * binp / 1e6 + output * bout / 1e6, rel=1e-9)


def test_the_output_estimate_follows_the_summary_budget():
    path = str(fixture_path("pi", "large-session.jsonl"))
    small = _plan(path, "--force", "--summary-model", "gpt-4o-mini", "--summary-budget", "1000")[0]
    large = _plan(path, "--force", "--summary-model", "gpt-4o-mini", "--summary-budget", "2000")[0]
    assert large["est_output_tokens"] - small["est_output_tokens"] == 1000
    # run's "tokens (compacted sessions): A -> ~B" counts the summary at its budget: 1,000 tokens fewer
    assert large["tokens_after_est"] - small["tokens_after_est"] == 1000


def test_gpt4o_mini_figure_in_dollars():
    row = _plan(str(fixture_path("pi", "large-session.jsonl")), "--force", "--summary-model", "gpt-4o-mini")[0]
    # o200k_base count of the two prompts; $0.15/M in, $0.60/M out: about 1.6 cents.
    assert 0.014 < row["est_cost_usd"] < 0.018


def test_pricing_file_overrides_the_bundled_map(tmp_path):
    prices = tmp_path / "prices.json"
    prices.write_text(json.dumps({"my-model": {"input_cost_per_token": 1e-5, "output_cost_per_token": 2e-5,
                                                "max_input_tokens": 50_000, "max_output_tokens": 4096,
                                                "litellm_provider": "openai", "mode": "chat"}}))
    row = _plan(str(fixture_path("pi", "large-session.jsonl")), "--force", "--summary-model", "my-model",
                "--pricing", str(prices))[0]
    assert row["est_cost_usd"] == pytest.approx(row["prompt_tokens"] * 1e-5 + row["est_output_tokens"] * 2e-5)


def test_context_window_from_the_model_map_and_override():
    path = str(fixture_path("pi", "large-session.jsonl"))
    row = _plan(path)[0]
    assert row["model"] == "claude-sonnet-4-5" and row["context_window"] == 200_000
    assert row["status"] == "skip" and row["reason"] == "below threshold (177,657 <= 183,616 tokens)"
    small = _plan(path, "--context-window", "128000")[0]
    assert small["status"] == "compact" and small["context_window"] == 128_000
    pct = _plan(path, "--threshold-percent", "95")[0]
    assert pct["status"] == "skip" and pct["reason"] == "below threshold (177,657 <= 190,000 tokens)"
