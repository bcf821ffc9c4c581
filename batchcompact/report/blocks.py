"""Claude's 5-hour billing blocks (`report --by block`), by the rules ccusage's `blocks` uses.

A block starts at the hour (UTC) of its first request and lasts `session_hours` (5). A request more
than 5 hours after the block's start, or more than 5 hours after the previous request, opens a new
block; a silence longer than 5 hours between two blocks shows as a gap row (no requests). A block is
active while `now` is inside it and its last request is less than 5 hours ago. For the active block:
burn rate = its tokens (and cost) per minute between its first and last request, and the projection
adds that rate over the minutes left in the block. `token_limit` ("max" = the largest finished block)
adds the share of the limit each block used, and for the active block the projected status (`ok`,
`warning` above 80%, `exceeds`).

Input is the filtered, priced usage frame (only `timestamp`, token columns, `cost_usd`, `model` are
read; requests without a time cannot be placed and are left out).
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from typing import cast

import polars as pl

from batchcompact.money import from_pico, to_pico
from batchcompact.report.result import Report
from batchcompact.report.rules import model_name
from batchcompact.report.settings import ReportSettings

WARNING_SHARE = 0.8
TOKEN_COLUMNS = ("input_tokens", "output_tokens", "cache_read_tokens", "cache_write_tokens", "total_tokens")
BLOCK_COLUMNS = [
    "block_end",
    "status",
    "active",
    "gap",
    "burn_tokens_per_minute",
    "burn_cost_per_hour",
    "projected_total_tokens",
    "projected_cost_usd",
    "remaining_minutes",
    "token_limit",
    "limit_percent",
    "limit_status",
]


@dataclass
class Block:
    start: datetime
    end: datetime
    gap: bool = False
    first: datetime | None = None
    last: datetime | None = None
    requests: int = 0
    tokens: dict[str, int] = field(default_factory=lambda: dict.fromkeys(TOKEN_COLUMNS, 0))
    reasoning_tokens: int = 0
    cost_pico: int = 0  # whole picodollars: the sum does not depend on the order (money.py)
    unpriced: int = 0
    models: set[str] = field(default_factory=set)
    agents: set[str] = field(default_factory=set)
    model_pico: dict[str, int] = field(default_factory=dict)  # cost per model (the chart's stacks)

    @property
    def cost(self) -> float:
        return from_pico(self.cost_pico)

    def add(self, row: dict) -> None:
        self.first = self.first or row["timestamp"]
        self.last = row["timestamp"]
        self.requests += 1
        for name in TOKEN_COLUMNS:
            self.tokens[name] += row[name] or 0
        self.reasoning_tokens += row["reasoning_tokens"] or 0
        if row["cost_usd"] is None:
            self.unpriced += 1
        else:
            pico = to_pico(row["cost_usd"])
            self.cost_pico += pico
            model = model_name(row["model"])
            self.model_pico[model] = self.model_pico.get(model, 0) + pico
        if row["model"]:
            self.models.add(row["model"])
        self.agents.add(row["agent"])


def identify_blocks(rows: Iterable[dict], hours: float) -> list[Block]:
    """Blocks (and gaps) from requests sorted by time."""
    length = timedelta(hours=hours)
    blocks: list[Block] = []
    current: Block | None = None
    for row in rows:
        when = row["timestamp"]
        if current is not None and (when - current.start > length or when - current.last > length):
            blocks.append(current)
            if when - current.last > length:
                gap_start = cast(datetime, current.last) + length  # (set by the block's first add)
                blocks.append(Block(start=gap_start, end=when, gap=True))
            current = None
        if current is None:
            start = when.replace(minute=0, second=0, microsecond=0)
            current = Block(start=start, end=start + length)
        current.add(row)
    if current is not None:
        blocks.append(current)
    return blocks


def parse_token_limit(value: str | None, largest: int) -> int | None:
    if value is None:
        return None
    if value in ("", "max"):
        return largest or None
    try:
        limit = int(value)
    except ValueError:
        raise ValueError(f"--token-limit {value!r}: give a number of tokens or 'max'") from None
    return limit if limit > 0 else None


def build_blocks(lf: pl.LazyFrame, settings: ReportSettings) -> Report:
    """A `Report` whose rows are billing blocks (key `block_start`)."""
    columns = ["timestamp", *TOKEN_COLUMNS, "reasoning_tokens", "cost_usd", "model", "agent"]
    frame = lf.filter(pl.col("timestamp").is_not_null()).select(columns).sort("timestamp").collect()
    now = settings.now or datetime.now(UTC)
    length = timedelta(hours=settings.session_hours)
    blocks = identify_blocks(frame.iter_rows(named=True), settings.session_hours)
    largest = max(
        (b.tokens["total_tokens"] for b in blocks if not b.gap and not _active(b, now, length)), default=0
    )
    limit = parse_token_limit(settings.token_limit, largest)
    shown = [(_record(b, now, length, limit), b) for b in blocks]
    if settings.last:
        shown = [(r, b) for r, b in shown if not r["gap"]][-settings.last :]
    if settings.order == "desc":
        shown.reverse()
    records = [r for r, _ in shown]
    rows = pl.DataFrame(records, schema=_schema()) if records else pl.DataFrame(schema=_schema())
    kept = [r for r in records if not r["gap"]]
    models = sorted({m for r in kept for m in r["models"]})
    totals = {
        "requests": sum(r["requests"] for r in kept),
        **{name: sum(r[name] for r in kept) for name in (*TOKEN_COLUMNS, "reasoning_tokens")},
        "cost_usd": from_pico(sum(b.cost_pico for _, b in shown if not b.gap)),
        "unpriced_requests": sum(r["unpriced_requests"] for r in kept),
        "models": models,
        "agents": sorted({a for r in kept for a in r["agents"]}),
        "first_timestamp": min((r["first_timestamp"] for r in kept), default=None),
        "last_timestamp": max((r["last_timestamp"] for r in kept), default=None),
    }
    stacks = [(b.start.strftime("%Y-%m-%d %H:%M"), {m: from_pico(p) for m, p in b.model_pico.items()})
              for _, b in shown if not b.gap]
    return Report(settings=settings, keys=["block_start"], rows=rows, totals=totals, extra_columns=BLOCK_COLUMNS,
                  stacks=stacks)


def _active(block: Block, now: datetime, length: timedelta) -> bool:
    return not block.gap and block.last is not None and now - block.last < length and now < block.end


def _record(block: Block, now: datetime, length: timedelta, limit: int | None) -> dict:
    active = _active(block, now, length)
    total = block.tokens["total_tokens"]
    burn_tokens = burn_cost = projected_tokens = projected_cost = remaining = None
    if active and block.first is not None and block.last is not None:
        minutes = (block.last - block.first).total_seconds() / 60
        remaining = round((block.end - now).total_seconds() / 60)
        if minutes > 0:
            burn_tokens = total / minutes
            burn_cost = block.cost / minutes * 60
            projected_tokens = round(total + burn_tokens * remaining)
            projected_cost = round(block.cost + burn_cost / 60 * remaining, 2)
    limit_status = None
    if limit and projected_tokens is not None:
        limit_status = (
            "exceeds" if projected_tokens > limit else "warning" if projected_tokens > limit * WARNING_SHARE else "ok"
        )
    return {
        "block_start": block.start,
        "block_end": block.end,
        "status": "gap" if block.gap else "active" if active else "",
        "active": active,
        "gap": block.gap,
        "requests": block.requests,
        **block.tokens,
        "reasoning_tokens": block.reasoning_tokens,
        "cost_usd": block.cost if block.requests else 0.0,
        "unpriced_requests": block.unpriced,
        "models": sorted(block.models),
        "agents": sorted(block.agents),
        "first_timestamp": block.first,
        "last_timestamp": block.last,
        "burn_tokens_per_minute": burn_tokens,
        "burn_cost_per_hour": burn_cost,
        "projected_total_tokens": projected_tokens,
        "projected_cost_usd": projected_cost,
        "remaining_minutes": remaining,
        "token_limit": limit,
        "limit_percent": (total / limit * 100) if limit and not block.gap else None,
        "limit_status": limit_status,
    }


def _schema() -> dict:
    ts = pl.Datetime("us", "UTC")
    return {
        "block_start": ts,
        "block_end": ts,
        "status": pl.String,
        "active": pl.Boolean,
        "gap": pl.Boolean,
        "requests": pl.Int64,
        **dict.fromkeys(TOKEN_COLUMNS, pl.Int64),
        "reasoning_tokens": pl.Int64,
        "cost_usd": pl.Float64,
        "unpriced_requests": pl.Int64,
        "models": pl.List(pl.String),
        "agents": pl.List(pl.String),
        "first_timestamp": ts,
        "last_timestamp": ts,
        "burn_tokens_per_minute": pl.Float64,
        "burn_cost_per_hour": pl.Float64,
        "projected_total_tokens": pl.Int64,
        "projected_cost_usd": pl.Float64,
        "remaining_minutes": pl.Int64,
        "token_limit": pl.Int64,
        "limit_percent": pl.Float64,
        "limit_status": pl.String,
    }
