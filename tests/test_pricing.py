"""Prices from litellm's bundled map (read as JSON, no litellm import), name resolution, costs."""

from __future__ import annotations

import json
import subprocess
import sys

import pytest

from batchcompact.errors import UsageError
from batchcompact.model_price import ModelInfo
from batchcompact.pricing import PriceTable, bundled_map_path


@pytest.fixture(scope="module")
def table() -> PriceTable:
    return PriceTable.load()


def test_loading_does_not_import_litellm():
    code = "import sys; from batchcompact.pricing import PriceTable; PriceTable.load(); print('litellm' in sys.modules)"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    assert out.strip() == "False"


def test_load_is_cached(table):
    assert PriceTable.load() is table
    assert bundled_map_path().name == "model_prices_and_context_window_backup.json"


@pytest.mark.parametrize(
    ("model", "provider", "key"),
    [
        ("claude-opus-4-5", None, "claude-opus-4-5"),
        ("claude-sonnet-4-5-20250929", None, "claude-sonnet-4-5-20250929"),
        ("anthropic/claude-opus-4-5", None, "claude-opus-4-5"),
        ("claude-opus-4-5", "anthropic", "claude-opus-4-5"),
        ("gpt-5.1-codex", None, "gpt-5.1-codex"),
        ("gpt-5.1-codex", "openai-codex", "gpt-5.1-codex"),
        ("openai/gpt-4o-mini", None, "gpt-4o-mini"),
        ("gemini/gemini-2.5-flash", None, "gemini/gemini-2.5-flash"),
        # a provider picks the provider's entry over the bare (Vertex) one
        ("gemini-2.5-flash", "google", "gemini/gemini-2.5-flash"),
        ("CLAUDE-OPUS-4-5", None, "claude-opus-4-5"),
        ("claude-haiku-4-5-20991231", None, "claude-haiku-4-5"),  # unknown snapshot date -> alias
        ("claude-sonnet-4.5", None, "claude-sonnet-4-5"),
        ("claude-opus-4-5:thinking", None, "claude-opus-4-5"),
        ("myproxy/gpt-4o-mini", None, "gpt-4o-mini"),
        ("claude-sonnet-4-20250514", None, "anthropic.claude-sonnet-4-20250514-v1:0"),
        # retired from Anthropic's entries, kept by Bedrock under its -v2:0 id (was unpriced: v1 only)
        ("claude-3-5-sonnet-20241022", None, "anthropic.claude-3-5-sonnet-20241022-v2:0"),
        ("claude-3-5-sonnet-20241022", "anthropic", "anthropic.claude-3-5-sonnet-20241022-v2:0"),
    ],
)
def test_resolution(table, model, provider, key):
    info = table.lookup(model, provider)
    assert info is not None and info.key == key


@pytest.mark.parametrize(("versions", "expected"), [
    (["-v3:0", "-v1", "-v1:2"], "-v1:2"),
    (["-v3:0", "-v1"], "-v1"),
    (["-v3:0"], "-v3:0"),
    (["-v1:2", "-v1:0"], "-v1:0"),
    (["-v10", "-v9:0"], "-v9:0"),
    (["", "-v2"], "-v2"),
    ([""], ""),
])
def test_the_bedrock_fallback_takes_any_version_the_lowest_first(versions, expected):
    """`anthropic.<name>-vN:M` or `-vN` for any N (it tried -v1:0 and -v1 only), the lowest first, then
    `anthropic.<name>`; a regional copy (`us.anthropic.…`) is not the model's Bedrock id."""
    entry = {"input_cost_per_token": 1e-6, "output_cost_per_token": 2e-6, "litellm_provider": "bedrock"}
    table = PriceTable({f"anthropic.claude-x-20990101{v}": entry for v in versions}
                       | {"us.anthropic.claude-y-20990101-v1:0": entry})
    assert table.resolve("claude-x-20990101") == f"anthropic.claude-x-20990101{expected}"
    assert table.resolve("claude-y-20990101") is None


@pytest.mark.parametrize("model", ["<synthetic>", "sonnet", "no-such-model-xyz", ""])
def test_unknown_models_are_unpriced_not_free(table, model):
    assert table.lookup(model) is None
    assert table.cost(model, input_tokens=1000, output_tokens=1000) is None


def test_gpt_4o_mini_cost_by_hand(table):
    # map: input 1.5e-7, output 6e-7, cache read 7.5e-8 per token
    cost = table.cost("gpt-4o-mini", input_tokens=1_000_000, output_tokens=100_000, cache_read_tokens=200_000)
    assert cost == pytest.approx(0.15 + 0.06 + 0.015)
    # batches: input 7.5e-8, output 3e-7
    assert table.cost(
        "gpt-4o-mini", input_tokens=1_000_000, output_tokens=100_000, batch=True
    ) == pytest.approx(0.075 + 0.03)


def test_claude_haiku_4_5_cost_by_hand(table):
    # map: input 1e-6, output 5e-6, cache read 1e-7, cache write 1.25e-6
    kwargs = dict(
        input_tokens=10_000, output_tokens=2_000, cache_read_tokens=50_000, cache_write_tokens=4_000
    )
    assert table.cost("claude-haiku-4-5", **kwargs) == pytest.approx(0.01 + 0.01 + 0.005 + 0.005)
    # batches: 5e-7, 2.5e-6, cache read 5e-8, cache write 6.25e-7
    assert table.cost("claude-haiku-4-5", batch=True, **kwargs) == pytest.approx(
        0.005 + 0.005 + 0.0025 + 0.0025
    )


def test_gemini_2_5_flash_cost_by_hand(table):
    # map: input 3e-7, output 2.5e-6, cache read 3e-8; no cache-write price -> input price
    cost = table.cost(
        "gemini/gemini-2.5-flash",
        input_tokens=100_000,
        output_tokens=10_000,
        cache_read_tokens=1_000_000,
        cache_write_tokens=1_000,
    )
    assert cost == pytest.approx(0.03 + 0.025 + 0.03 + 0.0003)


def test_tiered_price_applies_above_200k_prompt(table):
    info = table.lookup("gemini-2.5-pro")
    assert info.input_cost_per_token_above_200k_tokens == 2.5e-06
    small = table.cost("gemini-2.5-pro", input_tokens=200_000, output_tokens=1_000)
    large = table.cost("gemini-2.5-pro", input_tokens=150_000, output_tokens=1_000, cache_read_tokens=60_000)
    assert small == pytest.approx(200_000 * 1.25e-6 + 1_000 * 1e-5)
    assert large == pytest.approx(150_000 * 2.5e-6 + 1_000 * 1.5e-5 + 60_000 * 2.5e-7)


def test_context_windows(table):
    assert table.context_window("claude-opus-4-5") == 200_000
    assert table.max_output_tokens("claude-opus-4-5") == 64_000
    assert table.context_window("gpt-4o-mini") == 128_000
    assert table.context_window("nope-model") is None
    assert table.lookup("claude-opus-4-5").supports_reasoning is True


def test_pricing_file_overrides_and_extends(tmp_path):
    override = tmp_path / "prices.json"
    override.write_text(
        json.dumps(
            {
                "gpt-4o-mini": {"input_cost_per_token": 1e-6},
                "acme-coder-1": {
                    "input_cost_per_token": 2e-6,
                    "output_cost_per_token": 4e-6,
                    "max_input_tokens": 32000,
                },
            }
        )
    )
    table = PriceTable.load(override)
    assert table is PriceTable.load(str(override))
    assert table.cost("gpt-4o-mini", input_tokens=1000, output_tokens=1000) == pytest.approx(
        1000 * 1e-6 + 1000 * 6e-7
    )
    assert table.cost("acme-coder-1", input_tokens=1000, output_tokens=1000) == pytest.approx(0.006)
    assert table.context_window("acme-coder-1") == 32000
    assert PriceTable.load().cost("gpt-4o-mini", input_tokens=1000, output_tokens=0) == pytest.approx(1.5e-4)


def test_bad_pricing_file_is_a_usage_error(tmp_path):
    bad = tmp_path / "bad.json"
    bad.write_text("{not json")
    with pytest.raises(UsageError, match="not valid JSON"):
        PriceTable.load(bad)


def test_model_info_tolerates_odd_fields():
    info = ModelInfo.from_entry("x", {"input_cost_per_token": "free", "max_tokens": 1000})
    assert info.input_cost_per_token is None and info.max_input_tokens == 1000
    assert info.cost(input_tokens=1, output_tokens=1) is None


def test_source_names_the_snapshot(table):
    assert table.source.startswith("litellm ") and "bundled map" in table.source


def test_the_other_agents_model_names_find_their_prices():
    """Gemini models listed only under `vertex_ai/` (Gemini CLI names them bare), Qwen Code's models under
    DashScope with `tiered_pricing` ranges (a whole request priced by its prompt's range)."""
    table = PriceTable.load()
    assert table.resolve("gemini-3-pro-preview", "google") == "vertex_ai/gemini-3-pro-preview"
    assert table.resolve("gemini-2.5-flash", "google") == "gemini/gemini-2.5-flash"  # the direct entry first
    assert table.resolve("qwen3-coder-plus", "qwen") == "dashscope/qwen3-coder-plus"
    small = table.cost("qwen3-coder-plus", provider="qwen", input_tokens=1000, output_tokens=100)
    large = table.cost("qwen3-coder-plus", provider="qwen", input_tokens=40_000, output_tokens=100)
    assert small == pytest.approx(1000 * 1e-6 + 100 * 5e-6)
    assert large == pytest.approx(40_000 * 1.8e-6 + 100 * 9e-6)  # the 32k-128k range


def test_litellm_version_is_what_the_package_metadata_says():
    """The bundled map's source names litellm's version, read from its METADATA without importlib.metadata."""
    from importlib.metadata import version

    from batchcompact.pricing import _litellm_version

    assert _litellm_version() == version("litellm")
