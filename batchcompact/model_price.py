"""One model's prices: its entry in the price map (`ModelInfo.from_entry`), its price sets, base and tiers
(`ModelInfo.rates`), and the cost of one request, written once (`prompt_tokens`, `tier_rate`, `token_cost`:
`PriceTable.cost`, `plan`'s estimates and both report engines call them, report/fast.py with numbers,
report/aggregate.py with polars expressions). Which entry a model name resolves to is pricing.py's.

Costs (`PriceTable.cost`): `input_tokens` is NON-cached input. cache-read tokens use
`cache_read_input_token_cost` and cache-write tokens `cache_creation_input_token_cost`; either falls
back to `input_cost_per_token` when the map has no cache price. Tiered prices
(`*_above_<N>k_tokens`) apply to the whole request when its prompt (input + cache read + cache write)
exceeds N thousand tokens, the way Anthropic and Google bill; DashScope's `tiered_pricing` ranges (Qwen
models) are read the same way, each range a tier above its start.
1-hour cache writes (Anthropic's `ephemeral_1h_input_tokens`, passed as `cache_write_1h_tokens`, a part
of `cache_write_tokens`) use `cache_creation_input_token_cost_above_1hr` (and its `_above_<N>k_tokens`
tier); where the map lacks it, twice the input price, Anthropic's published 1-hour write rate. `batch=True` uses the `*_batches`
prices where the map has them, else 50% of the standard prices for providers that document that discount
(OpenAI, Azure, Anthropic), otherwise the standard prices (an upper bound).
"""

from __future__ import annotations

import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any, TypeAlias, TypeVar, cast, overload

from batchcompact.core.jsontypes import JsonObject, JsonValue

# Providers whose batch APIs document a 50% discount on all usage (OpenAI, Azure OpenAI, Anthropic): used
# when the map has no `*_batches` price for one of their models.
HALF_PRICE_BATCH_PROVIDERS = frozenset({"openai", "azure", "anthropic", "text-completion-openai"})

_TIER_KEY = re.compile(
    r"^(input_cost_per_token|output_cost_per_token|cache_read_input_token_cost|"
    r"cache_creation_input_token_cost|cache_creation_input_token_cost_above_1hr)_above_(\d+)k_tokens(_batches)?$"
)
ONE_HOUR_WRITE_INPUT_MULTIPLIER = 2.0  # Anthropic: a 1-hour cache write costs twice the base input price
_TIER_FIELDS = {"cache_creation_input_token_cost_above_1hr": "cache_creation_1h_cost"}


@dataclass(frozen=True)
class PriceTier:
    """Prices (USD per token) that replace the base prices when the prompt exceeds `above_tokens`."""

    above_tokens: int
    input_cost_per_token: float | None = None
    output_cost_per_token: float | None = None
    cache_read_input_token_cost: float | None = None
    cache_creation_input_token_cost: float | None = None
    cache_creation_1h_cost: float | None = None

    def prices(self) -> tuple[float, float, float, float, float]:
        """The five per-token prices in `token_cost`'s order (input, output, cache read, cache write, 1-hour
        cache write): a tier of `ModelInfo.rates`, whose every price is filled."""
        return cast("tuple[float, float, float, float, float]", (  # (rates' tiers: no None)
            self.input_cost_per_token, self.output_cost_per_token, self.cache_read_input_token_cost,
            self.cache_creation_input_token_cost, self.cache_creation_1h_cost))


# The rules of a request's cost, written once: `PriceTable.cost`, `plan`'s estimates and both report engines
# (report/fast.py with numbers, report/aggregate.py with polars expressions) call these.

# Any: a number (fast.py, `ModelInfo.cost`) or a polars expression (aggregate.py): one arithmetic for both engines
Amount: TypeAlias = Any
Rate = TypeVar("Rate")  # what a tier holds: a PriceTier, a tuple of prices or of polars expressions


def prompt_tokens(input_tokens: Amount, cache_read_tokens: Amount, cache_write_tokens: Amount) -> Amount:
    """The prompt a tier's threshold is compared with: input, cache read and cache write tokens."""
    return input_tokens + cache_read_tokens + cache_write_tokens


def _either(condition: bool, then: Rate, otherwise: Rate) -> Rate:
    return then if condition else otherwise


def tier_rate(tiers: Sequence[tuple[Amount, Rate]], prompt: Amount,
              pick: Callable[[Amount, Rate, Rate], Rate] = _either) -> Rate:
    """The rate a prompt pays: `tiers` are (threshold, rate) pairs, the base first (its threshold unused),
    then ascending thresholds; the highest threshold the prompt EXCEEDS wins (a prompt exactly at it pays
    the rate below). `pick(condition, then, otherwise)` chooses (polars: `when/then/otherwise`)."""
    rate = tiers[0][1]
    for above, tier in tiers[1:]:
        rate = pick(prompt > above, tier, rate)
    return rate


def token_cost(input_tokens: Amount, output_tokens: Amount, cache_read_tokens: Amount, cache_write_tokens: Amount,
               cache_write_1h_tokens: Amount, prices: Sequence[Amount]) -> Amount:
    """USD of one request at `prices` (`PriceTier.prices()` order), the float operations in this order (the
    report's engines agree to the bit): the 1-hour cache writes are the part of `cache_write_tokens` billed
    at the 1-hour rate."""
    per_input, per_output, per_read, per_write, per_write_1h = prices
    return (
        input_tokens * per_input
        + output_tokens * per_output
        + cache_read_tokens * per_read
        + (cache_write_tokens - cache_write_1h_tokens) * per_write
        + cache_write_1h_tokens * per_write_1h
    )


@dataclass(frozen=True)
class ModelInfo:
    """One model's entry in the price map. Prices are USD per token; None means the map has no price."""

    key: str
    max_input_tokens: int | None
    max_output_tokens: int | None
    input_cost_per_token: float | None
    output_cost_per_token: float | None
    cache_read_input_token_cost: float | None
    cache_creation_input_token_cost: float | None
    input_cost_per_token_batches: float | None
    output_cost_per_token_batches: float | None
    supports_reasoning: bool
    provider: str | None = None
    mode: str | None = None
    cache_read_input_token_cost_batches: float | None = None
    cache_creation_input_token_cost_batches: float | None = None
    input_cost_per_token_above_200k_tokens: float | None = None
    output_cost_per_token_above_200k_tokens: float | None = None
    cache_read_input_token_cost_above_200k_tokens: float | None = None
    cache_creation_input_token_cost_above_200k_tokens: float | None = None
    tiers: tuple[PriceTier, ...] = ()
    batch_tiers: tuple[PriceTier, ...] = ()
    cache_creation_input_token_cost_above_1hr: float | None = None

    @property
    def priced(self) -> bool:
        return self.input_cost_per_token is not None and self.output_cost_per_token is not None

    @classmethod
    def from_entry(cls, key: str, entry: JsonObject) -> ModelInfo:
        """Build from one map entry, tolerating missing or non-numeric fields."""
        tiers: dict[tuple[int, bool], dict[str, float]] = {}
        for field, value in entry.items():
            match = _TIER_KEY.match(field)
            if match and (number := _num(value)) is not None:
                slot = (int(match.group(2)) * 1000, bool(match.group(3)))
                name = _TIER_FIELDS.get(match.group(1), match.group(1))
                tiers.setdefault(slot, {})[name] = number
        base_tiers = tuple(PriceTier(t, **p) for (t, b), p in sorted(tiers.items()) if not b)
        batch_tiers = tuple(PriceTier(t, **p) for (t, b), p in sorted(tiers.items()) if b)
        ranges = _ranges(entry.get("tiered_pricing"))
        if ranges and _num(entry.get("input_cost_per_token")) is None:
            # DashScope-style `tiered_pricing` [{range: [from, to], prices}]: the first range is the base
            # price, each later one a tier above its start (the whole request priced by its prompt's size)
            entry = {**entry, **ranges[0][1]}
            base_tiers = tuple(PriceTier(start, **prices) for start, prices in ranges[1:])
        max_input = _int(entry.get("max_input_tokens"))
        max_output = _int(entry.get("max_output_tokens"))
        if max_input is None and max_output is None:
            max_input = _int(entry.get("max_tokens"))  # legacy single field
        return cls(
            key=key,
            max_input_tokens=max_input,
            max_output_tokens=max_output,
            input_cost_per_token=_num(entry.get("input_cost_per_token")),
            output_cost_per_token=_num(entry.get("output_cost_per_token")),
            cache_read_input_token_cost=_num(entry.get("cache_read_input_token_cost")),
            cache_creation_input_token_cost=_num(entry.get("cache_creation_input_token_cost")),
            input_cost_per_token_batches=_num(entry.get("input_cost_per_token_batches")),
            output_cost_per_token_batches=_num(entry.get("output_cost_per_token_batches")),
            supports_reasoning=bool(entry.get("supports_reasoning", False)),
            provider=entry.get("litellm_provider")
            if isinstance(entry.get("litellm_provider"), str)
            else None,
            mode=entry.get("mode") if isinstance(entry.get("mode"), str) else None,
            cache_read_input_token_cost_batches=_num(entry.get("cache_read_input_token_cost_batches")),
            cache_creation_input_token_cost_batches=_num(
                entry.get("cache_creation_input_token_cost_batches")
            ),
            input_cost_per_token_above_200k_tokens=_num(entry.get("input_cost_per_token_above_200k_tokens")),
            output_cost_per_token_above_200k_tokens=_num(
                entry.get("output_cost_per_token_above_200k_tokens")
            ),
            cache_read_input_token_cost_above_200k_tokens=_num(
                entry.get("cache_read_input_token_cost_above_200k_tokens")
            ),
            cache_creation_input_token_cost_above_200k_tokens=_num(
                entry.get("cache_creation_input_token_cost_above_200k_tokens")
            ),
            tiers=base_tiers,
            batch_tiers=batch_tiers,
            cache_creation_input_token_cost_above_1hr=_num(entry.get("cache_creation_input_token_cost_above_1hr")),
        )

    def cost(self, *, input_tokens: int, output_tokens: int, cache_read_tokens: int = 0, cache_write_tokens: int = 0,
             batch: bool = False, cache_write_1h_tokens: int = 0) -> float | None:
        """USD for one request; `input_tokens` excludes cached tokens. None when the model is unpriced.

        `cache_write_1h_tokens` is the part of `cache_write_tokens` written to the 1-hour cache.
        """
        chosen = self._rate_for(input_tokens, cache_read_tokens, cache_write_tokens, batch)
        if chosen is None:
            return None
        return token_cost(input_tokens, output_tokens, cache_read_tokens, cache_write_tokens, cache_write_1h_tokens,
                          chosen.prices())

    def cost_parts(self, *, input_tokens: int, output_tokens: int, cache_read_tokens: int = 0,
                   cache_write_tokens: int = 0, batch: bool = False) -> dict[str, float] | None:
        """`cost` split as pi records it (`input`, `output`, `cacheRead`, `cacheWrite`), at the same rate
        (tier, batch or not); added in that order the parts give exactly `cost`. None when unpriced."""
        chosen = self._rate_for(input_tokens, cache_read_tokens, cache_write_tokens, batch)
        if chosen is None:
            return None
        per_input, per_output, per_read, per_write, _ = chosen.prices()
        return {
            "input": input_tokens * per_input,
            "output": output_tokens * per_output,
            "cacheRead": cache_read_tokens * per_read,
            "cacheWrite": cache_write_tokens * per_write,
        }

    def _rate_for(self, input_tokens: int, cache_read_tokens: int, cache_write_tokens: int,
                  batch: bool) -> PriceTier | None:
        """The price set a request pays (tiers: the highest threshold its prompt exceeds); None: unpriced."""
        rates = self.rates(batch=batch)
        if not rates:
            return None
        prompt = prompt_tokens(input_tokens, cache_read_tokens, cache_write_tokens)
        return tier_rate(tuple((rate.above_tokens, rate) for rate in rates), prompt)

    def rates(self, *, batch: bool = False) -> tuple[PriceTier, ...]:
        """Fully resolved price sets, base first (above_tokens = -1) then tiers by ascending threshold.

        Every field is filled: a tier lacking a price takes the base one; cache prices missing from
        the map take the input price. Empty when the model is unpriced.
        """
        inp, out = self.input_cost_per_token, self.output_cost_per_token
        if inp is None or out is None:  # (not `priced`)
            return ()
        read, write = self.cache_read_input_token_cost, self.cache_creation_input_token_cost
        tiers = self.tiers
        if batch and self.input_cost_per_token_batches is None and self.output_cost_per_token_batches is None \
                and (self.provider or "") in HALF_PRICE_BATCH_PROVIDERS:
            # no `*_batches` prices in the map, but the provider documents 50% off everything
            return tuple(PriceTier(r.above_tokens, *(p * 0.5 for p in r.prices())) for r in self.rates(batch=False))
        if batch:
            inp = _first(self.input_cost_per_token_batches, inp)
            out = _first(self.output_cost_per_token_batches, out)
            read = _first(self.cache_read_input_token_cost_batches, read)
            write = _first(self.cache_creation_input_token_cost_batches, write)
            tiers = self.batch_tiers or self.tiers
        hour = _first(self.cache_creation_input_token_cost_above_1hr, inp * ONE_HOUR_WRITE_INPUT_MULTIPLIER)
        base = PriceTier(-1, inp, out, _first(read, inp), _first(write, inp), hour)
        out_rates = [base]
        for tier in tiers:
            t_inp = _first(tier.input_cost_per_token, inp)
            t_hour = tier.cache_creation_1h_cost
            if t_hour is None:  # scale the base 1-hour rate like the tier scales input
                t_hour = hour * (t_inp / inp) if inp else hour
            out_rates.append(
                PriceTier(
                    tier.above_tokens,
                    t_inp,
                    _first(tier.output_cost_per_token, out),
                    _first(tier.cache_read_input_token_cost, base.cache_read_input_token_cost),
                    _first(tier.cache_creation_input_token_cost, base.cache_creation_input_token_cost),
                    t_hour,
                )
            )
        return tuple(out_rates)


_RANGE_FIELDS = ("input_cost_per_token", "output_cost_per_token", "cache_read_input_token_cost",
                 "cache_creation_input_token_cost")


def _ranges(value: JsonValue) -> list[tuple[int, dict[str, float]]]:
    """`tiered_pricing` as (start of the range in tokens, its prices), by start; empty when unusable."""
    if not isinstance(value, list):
        return []
    out = []
    for item in value:
        span = item.get("range") if isinstance(item, dict) else None
        start = _num(span[0]) if isinstance(span, list) and span else None
        if start is None:
            return []
        prices = {k: price for k in _RANGE_FIELDS if (price := _num(item.get(k))) is not None}
        out.append((int(start), prices))
    return sorted(out, key=lambda r: r[0])


@overload
def _first(value: float | None, fallback: float) -> float: ...
@overload
def _first(value: float | None, fallback: float | None) -> float | None: ...
def _first(value: float | None, fallback: float | None) -> float | None:
    return fallback if value is None else value


def _num(value: JsonValue) -> float | None:
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        return None
    return float(value)


def _int(value: JsonValue) -> int | None:
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        return None
    return int(value)
