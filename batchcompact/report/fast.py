"""The cold `--no-cache` report without polars or pyarrow: rows aggregated in plain Python.

`report --no-cache` reads every file anyway and keeps nothing, so the Parquet parts and the polars
plan of `aggregate.py` only cost time there (importing polars, pyarrow and numpy alone is ~0.3 s of
CPU). This module computes the same `Report` from the rows themselves, for the common outputs
(`supported`: every grouping but blocks, every filter): `fast_collect.py` extracts each file's rows in
worker processes (`extract_rows`, the same readers) and hands them back as tuples in `COLUMNS` order; here
one row per `dedupe_key` is kept, sidechain replays collapse, each request is priced (rounded once to
whole picodollars, `money.py`) and the groups are summed as integers, every rule the one `aggregate.py`
applies: both take them from `rules.py` (and `model_price.tier_rate`/`token_cost`). Rows and totals are
plain dicts (`row_list.RowList`), which the renderers read like the polars frame.

The output is byte-identical to the polars path's (`tests/test_report_fast.py` runs both over every
fixture for each grouping and format); anything outside `supported` (blocks,
Parquet/JSONL output, a chart, the cache, another executor) takes the polars path, and so does a row
this module will not price the way polars would (`Unsupported`, e.g. a NaN cost).
"""
from __future__ import annotations

import logging
import operator
import re
from collections.abc import Callable
from datetime import UTC, date, datetime, timedelta
from typing import cast
from zoneinfo import ZoneInfo

from batchcompact import money
from batchcompact.model_price import prompt_tokens, tier_rate, token_cost
from batchcompact.money import from_pico
from batchcompact.pricing import PriceTable
from batchcompact.report import dimensions, rules
from batchcompact.report.files import Walk
from batchcompact.report.result import Report
from batchcompact.report.row_list import RowList
from batchcompact.report.settings import PERIODS, ReportSettings, week_start_index

log = logging.getLogger(__name__)

FORMATS = ("table", "json", "csv")
COLUMNS = rules.REPORT_COLUMNS  # the row tuple
(SOURCE, AGENT, SESSION, PROJECT, TIME, PROVIDER, MODEL, KIND, KEY, RANK, INP, OUT, CR, CW, CW1H,
 REASONING, TOTAL, RECORDED, BRANCH, MACHINE, MACHINE_ID) = range(len(COLUMNS))
WIDTH = len(COLUMNS)
# A fed row (Builder.feed) carries two more fields: its cost in picodollars (None: unpriced; an
# Unsupported: raised if the row is counted) and its group key.
PICO, GROUP = WIDTH, WIDTH + 1
SUMS = tuple((name, COLUMNS.index(name)) for name in rules.SUM_COLUMNS)
_SUM_GETTERS = tuple(operator.itemgetter(index) for _, index in SUMS)
_PICO_OF, _MODEL_OF, _AGENT_OF, _TIME_OF = (operator.itemgetter(index) for index in (PICO, MODEL, AGENT, TIME))


class Unsupported(Exception):
    """These rows or options need the polars path. `walk`: the files found, when that is known already."""

    walk: Walk | None = None


def supported(settings: ReportSettings, fmt: str) -> bool:
    """Whether this report can be computed here (the caller checks cache, chart and executor)."""
    s = settings
    return (
        fmt in FORMATS
        and s.by in dimensions.FAST_GROUPINGS
    )


# ---- dedupe and the replay collapse (rules.DEDUPE_ORDER, rules.REPLAY_ORDER) ----

# A replay copy's rules.SIDE is appended to it (the last field) while the copies are compared.
_INDEX = {name: index for index, name in enumerate(COLUMNS)} | {rules.SIDE: -1}
_better = rules.first_wins([(_INDEX[name], descending) for name, descending in rules.DEDUPE_ORDER])
_replay_better = rules.first_wins([(_INDEX[name], descending) for name, descending in rules.REPLAY_ORDER])


def _first(rows: list[tuple], better: Callable[[tuple, tuple], bool]) -> tuple:
    """The row that comes first by `better`."""
    best = rows[0]
    for row in rows[1:]:
        if better(row, best):
            best = row
    return best


def deduplicated(rows: list[tuple]) -> list[tuple]:
    """One row per dedupe_key, sidechain replays collapsed (as `aggregate.scan_usage`)."""
    out: list[tuple] = []
    best: dict[str, tuple] = {}
    for row in rows:
        key = row[KEY]
        if key is None:
            out.append(row)
            continue
        seen = best.get(key)
        if seen is None or _better(row, seen):
            best[key] = row
    replays = frozenset(rules.replay_agents())
    end, main = rules.MESSAGE_END, rules.MAIN_KIND
    messages: dict[str, list[tuple]] = {}
    side: set[str] = set()
    for row in best.values():
        if row[AGENT] not in replays:
            out.append(row)
            continue
        message, found, _ = row[KEY].partition(end)
        if not found:  # no message id: never merged
            out.append(row)
            continue
        messages.setdefault(message, []).append(row)
        if row[KIND] != main:
            side.add(message)
    for message, copies in messages.items():
        if message in side:
            marked = [(*row, row[KIND] != main) for row in copies]
            out.append(_first(marked, _replay_better)[:-1])
        else:
            out.extend(copies)
    return out


# ---- costs (aggregate.add_costs) ----

RowCost = Callable[[tuple], float | None]  # a row -> its cost in USD (None: unpriced)


class Pricer:
    """Per-request cost as `add_costs` computes it (the rules: `model_price.tier_rate`, `model_price.token_cost`,
    `rules.cost_usd`), one price lookup per (model, provider)."""

    def __init__(self, table: PriceTable, cost_mode: str) -> None:
        self.table = table
        self.cost_mode = cost_mode
        self.rates: dict[tuple, tuple] = {}
        self.unpriced: set[str] = set()
        # the cost mode's choice made once: a function of the row (`rules.cost_usd` over row functions)
        recorded: RowCost = operator.itemgetter(RECORDED)
        self.cost: RowCost = rules.cost_usd(cost_mode, recorded, self.computed, _coalesced)

    def tiers(self, model: str | None, provider: str | None) -> tuple:
        """The (threshold, prices) pairs `model_price.tier_rate` takes; empty when the model is unpriced."""
        pair = (model or "", provider or "")
        rates = self.rates.get(pair)
        if rates is None:
            info = self.table.lookup(model, provider) if model else None
            found = info.rates() if info else ()
            if not found:
                self.unpriced.add(rules.model_name(model))
            rates = tuple((float(t.above_tokens), tuple(map(float, t.prices()))) for t in found)
            self.rates[pair] = rates
        return rates

    def computed(self, row: tuple) -> float | None:
        """The cost from the price map (None: unpriced)."""
        tiers = self.tiers(row[MODEL], row[PROVIDER])
        if not tiers:
            return None
        inp, cache_read, cache_write = row[INP], row[CR], row[CW]
        prices = tier_rate(tiers, prompt_tokens(inp, cache_read, cache_write))
        return token_cost(inp, row[OUT], cache_read, cache_write, row[CW1H], prices)


def _coalesced(first: RowCost, second: RowCost) -> RowCost:
    """A row -> `first(row)`, or `second(row)` where that is None."""
    def either(row: tuple) -> float | None:
        value = first(row)
        return second(row) if value is None else value
    return either


def checked_pico(usd: float) -> int:
    """`money.to_pico` (as `aggregate.pico_usd`), refusing what an Int64 cannot hold (Unsupported)."""
    try:
        pico = money.to_pico(usd)
    except (ValueError, OverflowError):  # math.floor of NaN, of an infinity
        raise Unsupported("a cost that is not a finite number") from None
    if not -(2**63) <= pico < 2**63:
        raise Unsupported("a cost beyond Int64 picodollars")
    return pico


# ---- periods (aggregate.with_periods) ----

BUCKET = timedelta(minutes=15)  # every offset and transition of the time zone database, these years, is on one


class Periods:
    """The period label of a timestamp, as `with_periods` computes it with polars.

    Labels are cached per 15 minutes of UTC time (rows come in time order, so most hit): a bucket is cached
    only when its first and last microsecond have the same UTC offset and the same label, so that every
    instant in it has that label too. In UTC itself the day is the timestamp's own (UTC rows)."""

    def __init__(self, timezone: str, by: str, start_of_week: str) -> None:
        self.zone = ZoneInfo(timezone)
        self.utc = timezone == "UTC"
        self.by = by
        self.first = week_start_index(start_of_week)
        self.buckets: dict[datetime, str] = {}
        self.days: dict[date, str] = {}  # UTC: the label of each day seen (one string per day, shared)

    def label(self, when: datetime | None) -> str:
        if when is None:
            return self._day_label(None)
        if self.utc and when.tzinfo is UTC:
            day = when.date()
            found = self.days.get(day)
            if found is None:
                found = self.days[day] = self._day_label(day)
            return found
        start = when.replace(minute=when.minute - when.minute % 15, second=0, microsecond=0)
        found = self.buckets.get(start)
        if found is None:
            found = self._label(when)
            if start.tzinfo is not None:
                end = start + BUCKET - timedelta(microseconds=1)
                first, last = start.astimezone(self.zone), end.astimezone(self.zone)
                if first.utcoffset() == last.utcoffset() and self._day_label(first.date()) == found == \
                        self._day_label(last.date()):
                    self.buckets[start] = found
        return found

    def _label(self, when: datetime) -> str:
        return self._day_label(when.astimezone(self.zone).date())

    def _day_label(self, day: date | None) -> str:
        return rules.period_label(day, self.by, self.first)


# ---- groups ----

class Group:
    """The sums of one group (and of the totals)."""

    __slots__ = ("requests", "sums", "pico", "unpriced", "models", "agents", "first", "last")

    def __init__(self) -> None:
        self.requests = 0
        self.sums = [0] * len(SUMS)
        self.pico = 0
        self.unpriced = 0
        self.models: set[str] = set()
        self.agents: set[str] = set()
        self.first: datetime | None = None
        self.last: datetime | None = None

    @classmethod
    def of(cls, rows: list[tuple]) -> Group:
        """The group of these counted rows, summed column by column: each column is one loop in C
        (`sum`, `set`, `min` over an itemgetter), not a Python step per row (~3x faster per row)."""
        group = cls()
        group.requests = len(rows)
        group.sums = [sum(map(getter, rows)) for getter in _SUM_GETTERS]
        picos = list(map(_PICO_OF, rows))
        group.unpriced = picos.count(None)
        group.pico = sum(filter(None, picos))  # None (unpriced) and 0 add nothing
        group.models = set(map(rules.model_name, map(_MODEL_OF, rows)))
        group.agents = set(map(_AGENT_OF, rows))
        times = list(filter(None, map(_TIME_OF, rows)))  # a datetime is never false; None is
        if times:
            group.first, group.last = min(times), max(times)
        return group

    def merge(self, other: Group) -> None:
        """Add another group's sums (the totals of the groups `--last` keeps)."""
        self.requests += other.requests
        self.sums = [a + b for a, b in zip(self.sums, other.sums, strict=True)]
        self.pico += other.pico
        self.unpriced += other.unpriced
        self.models |= other.models
        self.agents |= other.agents
        for when in (other.first, other.last):
            if when is not None:
                if self.first is None or when < self.first:
                    self.first = when
                if self.last is None or when > self.last:
                    self.last = when

    def record(self) -> dict:
        out: dict = {"requests": self.requests}
        out.update((name, total) for (name, _), total in zip(SUMS, self.sums, strict=True))
        out["cost_usd"] = from_pico(self.pico)
        out["unpriced_requests"] = self.unpriced
        out["models"] = sorted(self.models)
        out["agents"] = sorted(self.agents)
        out["first_timestamp"] = self.first
        out["last_timestamp"] = self.last
        return out


def build_report(rows: list[tuple], settings: ReportSettings, table: PriceTable | None = None) -> Report:
    """`aggregate.build_report` for the dimensions both engines compute (`dimensions.FAST_GROUPINGS`); raises
    Unsupported."""
    builder = Builder(settings, table or PriceTable.load(settings.pricing_file))
    builder.feed(rows)
    return builder.report()


class Builder:
    """`build_report` in two steps: `feed` rows as each file's arrive (each row's cost and group key are
    computed then, while the workers still extract), `report()` once all are in (dedupe, filter, sums)."""

    def __init__(self, settings: ReportSettings, table: PriceTable) -> None:
        if settings.by not in dimensions.FAST_GROUPINGS:
            raise Unsupported(f"--by {settings.by}")
        self.settings = settings
        self.table = table
        self.pricer = Pricer(table, settings.cost_mode)
        self.periods = Periods(settings.timezone, settings.by, settings.start_of_week) if settings.by in PERIODS else None
        self.keys = dimensions.keys_of(settings.by)
        if settings.breakdown and "model" not in self.keys:
            self.keys.append("model")
        self.rows: list[tuple] = []
        names = rules.ProjectNames(settings)
        getters = [_key_getter(name, self.periods, names) for name in self.keys]
        # One tuple per group, shared by its rows: pickling a worker's rows then writes each key once.
        interned: dict[object, tuple] = {}
        if len(getters) == 1:
            (only,) = getters

            def group_key(row: tuple) -> tuple:
                value = only(row)
                key = interned.get(value)
                if key is None:
                    key = interned[value] = (value,)
                return key
        else:
            def group_key(row: tuple) -> tuple:
                key = tuple([get(row) for get in getters])
                return interned.setdefault(key, key)
        self.group_key = group_key

    def feed(self, rows: list[tuple]) -> None:
        self.rows.extend(self.prepare(rows))

    def absorb(self, prepared: list[tuple], unpriced: frozenset) -> None:
        """Rows a worker's Builder for the same settings prepared, and the models it found no price for."""
        self.rows.extend(prepared)
        self.pricer.unpriced |= unpriced

    def prepare(self, rows: list[tuple]) -> list[tuple]:
        """Each row with its cost in picodollars and its group key (PICO, GROUP)."""
        cost, group_key, out = self.pricer.cost, self.group_key, []
        machine, machine_id = self.settings.machine, self.settings.machine_id
        for row in rows:
            if row[MACHINE] is None:  # read from this machine's own files (`aggregate.scan_usage`)
                row = (*row[:MACHINE], machine, machine_id if row[MACHINE_ID] is None else row[MACHINE_ID])
            elif row[MACHINE_ID] is None:
                row = (*row[:MACHINE_ID], machine_id)
            pico: int | Unsupported | None
            try:
                usd = cost(row)
                pico = None if usd is None else checked_pico(usd)
            except Unsupported as exc:  # only if this row is counted: dedupe or a filter may drop it
                pico = exc
            out.append((*row, pico, group_key(row)))
        return out

    def report(self) -> Report:
        settings, keys = self.settings, self.keys
        by_group: dict[tuple, list[tuple]] = {}  # group key -> its counted rows, in order
        dropped = 0
        wanted = row_filter(settings)
        has_usage = rules.has_usage
        for row in deduplicated(self.rows):
            if wanted is not None and not wanted(row):
                continue
            if isinstance(row[PICO], Unsupported):
                raise row[PICO]
            if not has_usage(row[TOTAL], row[RECORDED] or 0):
                dropped += 1
                continue
            rows = by_group.get(row[GROUP])
            if rows is None:
                by_group[row[GROUP]] = [row]
            else:
                rows.append(row)
        groups = {key: Group.of(rows) for key, rows in by_group.items()}
        totals = Group()
        for group in groups.values():  # every row is in one group: the totals are the groups' sums
            totals.merge(group)
        records = []
        for key, group in groups.items():
            record = dict(zip(keys, key, strict=True))
            record.update(group.record())
            records.append(record)
        if settings.last and settings.by not in PERIODS:  # the N groups with the latest activity
            records = _sorted(records, rules.last_groups_order(keys))[: settings.last]
            totals = Group()
            for record in records:
                totals.merge(groups[tuple(record[k] for k in keys)])
        records = sort_records(records, keys, settings)
        totals_record = totals.record()
        used = set(totals_record["models"])
        unpriced = [] if settings.cost_mode == "recorded" else sorted(self.pricer.unpriced)
        return Report(
            settings=settings,
            keys=keys,
            rows=RowList(records),
            totals=totals_record,
            unpriced_models=[m for m in unpriced if m in used],
            pricing_source=self.table.source,
            dropped_zero=dropped,
        )


def row_filter(settings: ReportSettings) -> Callable[[tuple], bool] | None:
    """`rules.row_filters` as a predicate on a row (None: every row), applied before the zero check
    (aggregate.py's `filter_usage` turns the same values into polars expressions)."""
    wanted = rules.row_filters(settings)
    tests = []
    if wanted.agents:
        agents = frozenset(wanted.agents)
        tests.append(lambda row: row[AGENT] in agents)
    if wanted.projects:
        projects = frozenset(wanted.projects)
        shown = rules.ProjectNames(settings).name

        def project(row: tuple) -> bool:
            path = shown(row[PROJECT]) or ""
            return path in projects or TAIL.sub("", path, count=1) in projects

        tests.append(project)
    if wanted.sessions:
        prefixes = wanted.sessions
        tests.append(lambda row: (row[SESSION] or "").startswith(prefixes))
    since, until = wanted.since, wanted.until
    if since or until:
        zone = ZoneInfo(settings.timezone)

        def when(row: tuple) -> bool:
            if row[TIME] is None:  # no date: outside every range, as polars compares a null
                return False
            day = row[TIME].astimezone(zone).date()
            return (since is None or day >= since) and (until is None or day <= until)

        tests.append(when)
    if not tests:
        return None
    if len(tests) == 1:
        return tests[0]
    return lambda row: all(test(row) for test in tests)


TAIL = re.compile(rules.PROJECT_DIR)


def _key_getter(column: str, periods: Periods | None, names: rules.ProjectNames) -> Callable[[tuple], object]:
    """A row -> its value of group key `column`, by the entry of the dimension that defines it
    (dimensions.py): a period's label, or its naming rule over the columns it reads (as `aggregate.with_names`
    maps it), or the recorded value."""
    dimension = dimensions.BY_COLUMN[column]
    if dimension.period:
        label = cast(Periods, periods).label  # (a period dimension: `settings.by` is a period, periods are made)
        return lambda row: label(row[TIME])
    indexes = [COLUMNS.index(name) for name in dimension.reads]
    if dimension.shown is None:
        return operator.itemgetter(*indexes)
    shown = dimension.shown(names)
    if len(indexes) == 1:
        (index,) = indexes
        return lambda row: shown(row[index])
    if len(indexes) == 2:
        first, second = indexes
        return lambda row: shown(row[first], row[second])
    return lambda row: shown(*[row[index] for index in indexes])


def sort_records(records: list[dict], keys: list[str], settings: ReportSettings) -> list[dict]:
    """`aggregate.sort_rows` (stable sorts from the last key to the first; nulls last either way)."""
    base = rules.breakdown_groups(settings, keys)
    if base is None:
        return _sorted(records, rules.sort_order(settings, keys))
    costs, lasts = rules.group_values([tuple(r[k] for k in base) for r in records], [r["cost_usd"] for r in records],
                                [r["last_timestamp"] for r in records])
    for record, cost, last in zip(records, costs, lasts, strict=True):
        record[rules.GROUP_COST], record[rules.GROUP_LAST] = cost, last
    out = _sorted(records, rules.sort_order(settings, keys))
    for record in out:
        del record[rules.GROUP_COST], record[rules.GROUP_LAST]
    return out


def _sorted(records: list[dict], order: list[tuple[str, bool]]) -> list[dict]:
    out = list(records)
    for name, descending in reversed(order):
        present = [r for r in out if r[name] is not None]
        missing = [r for r in out if r[name] is None]
        present.sort(key=operator.itemgetter(name), reverse=descending)
        out = present + missing
    return out
