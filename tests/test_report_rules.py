"""The report's counting rules (report/rules.py, model_price.tier_rate/token_cost): each written once, applied
alike by both engines.

An equivalence corpus made for the rules (rows written as a usage part for aggregate.py, the same rows as
tuples for fast.py) holds a case of every rule: sidechain replays (a main-line copy, side copies only, a tie,
a key without a message id, a non-replaying agent's look-alikes), a prompt exactly at a tier threshold and one
token above, timestamps around midnight in several time zones, every first day of the week, dedupe ties
decided late in the order, null models, providers, costs, times, projects and sessions, zero-token rows.
Both engines must print the same bytes for every grouping, format and variant, and the figures the rules
give are checked by value, so a rule broken in rules.py itself fails too.
"""

from __future__ import annotations

import ast
import dataclasses
import json
import random
from datetime import UTC, date, datetime, timedelta
from pathlib import Path

import polars as pl
import pyarrow.parquet as pq
import pytest
from report_variants import outputs

import batchcompact.agents as registry
from batchcompact.adapters.common.usage_rows import UsageRows
from batchcompact.model_price import tier_rate, token_cost
from batchcompact.report import aggregate, fast, fast_collect, rules
from batchcompact.report.dimensions import FAST_GROUPINGS
from batchcompact.report.render import write_report
from batchcompact.report.settings import WEEKDAYS, ReportSettings

TIER_MODEL = "tier-model"
PRICES = {
    TIER_MODEL: {
        "litellm_provider": "anthropic", "input_cost_per_token": 1e-6, "output_cost_per_token": 2e-6,
        "cache_read_input_token_cost": 1e-7, "cache_creation_input_token_cost": 1.25e-6,
        "cache_creation_input_token_cost_above_1hr": 2e-6,
        "input_cost_per_token_above_200k_tokens": 3e-6, "output_cost_per_token_above_200k_tokens": 4e-6,
        "cache_read_input_token_cost_above_200k_tokens": 5e-7,
        "cache_creation_input_token_cost_above_200k_tokens": 2.5e-6,
    },
    "flat-model": {"litellm_provider": "openai", "input_cost_per_token": 3e-7, "output_cost_per_token": 1.1e-6},
}
MIDNIGHT = datetime(2026, 3, 7, tzinfo=UTC)  # a Saturday; New York's DST starts on 2026-03-08


def _add(rows: UsageRows, n: int, **fields) -> None:
    base = {"source": "claude", "file": "/f.jsonl", "line": n, "session_id": "s1", "project": "/w/shop",
            "timestamp": MIDNIGHT + timedelta(hours=n % 40, minutes=7 * n), "provider": "anthropic",
            "model": TIER_MODEL, "kind": "main", "input_tokens": 100 + n, "output_tokens": 10 + n}
    rows.add(**(base | fields))


def corpus_rows() -> UsageRows:
    rows = UsageRows()
    n = iter(range(1000))
    # Sidechain replays. m1: a main-line copy and a larger side replay -> the main-line copy counts.
    _add(rows, next(n), dedupe_key="m1:r1", cache_read_tokens=20)
    _add(rows, next(n), dedupe_key="m1:r2", kind="sidechain", cache_read_tokens=50_000, session_id="s2")
    # m2: side copies only -> the largest; m3: side copies that tie on total and output -> the first session.
    _add(rows, next(n), dedupe_key="m2:r1", kind="sidechain", input_tokens=500, output_tokens=5)
    _add(rows, next(n), dedupe_key="m2:r2", kind="sidechain", input_tokens=900, output_tokens=5)
    _add(rows, next(n), dedupe_key="m3:r1", kind="sidechain", input_tokens=7, output_tokens=7, session_id="s9")
    _add(rows, next(n), dedupe_key="m3:r2", kind="sidechain", input_tokens=7, output_tokens=7, session_id="s3")
    # m4: a distinct side answer (its own message) stays; a key without ":" is never merged.
    _add(rows, next(n), dedupe_key="m4:r1", kind="sidechain")
    _add(rows, next(n), dedupe_key="nocolon", kind="sidechain")
    _add(rows, next(n), dedupe_key="nocolon2")
    # The same shapes from an agent without replays: every copy counts.
    for key, kind in (("x1:r1", "main"), ("x1:r2", "sidechain"), ("x1:r3", "sidechain")):
        _add(rows, next(n), source="codex", provider="openai", model="flat-model", dedupe_key=key, kind=kind)
    # Tiers: prompts (input + cache read + cache write) of exactly 200,000 and 200,001, with 1-hour writes.
    _add(rows, next(n), dedupe_key="t1:r", input_tokens=50_000, cache_read_tokens=100_000, cache_write_tokens=50_000,
         cache_write_1h_tokens=20_000, output_tokens=1_000)
    _add(rows, next(n), dedupe_key="t2:r", input_tokens=50_001, cache_read_tokens=100_000, cache_write_tokens=50_000,
         cache_write_1h_tokens=20_000, output_tokens=1_000)
    # Around midnight UTC (and so around other zones' midnights), on several days.
    for day in range(9):
        for offset in (-1, 0, 1, 330 * 60, 330 * 60 - 1, -210 * 60, 14 * 3600):
            when = MIDNIGHT + timedelta(days=day, seconds=offset)
            _add(rows, next(n), timestamp=when, dedupe_key=f"d{day}{offset}:r", session_id=f"day{day % 3}")
    _add(rows, next(n), timestamp=MIDNIGHT - timedelta(microseconds=1), dedupe_key="edge:r")
    # Dedupe ties: the higher rank wins over a larger copy; equal rank and usage: a session over none,
    # then the first session; equal that far: the later columns (project, then the recorded cost).
    _add(rows, next(n), dedupe_key="k1", dedupe_rank=1, output_tokens=1, input_tokens=1, session_id="sdb")
    _add(rows, next(n), dedupe_key="k1", dedupe_rank=0, output_tokens=900, input_tokens=900, session_id="sjs")
    _add(rows, next(n), dedupe_key="k2", output_tokens=5, input_tokens=5, session_id=None)
    _add(rows, next(n), dedupe_key="k2", output_tokens=5, input_tokens=5, session_id="sb", project="/w/b")
    _add(rows, next(n), dedupe_key="k2", output_tokens=5, input_tokens=5, session_id="sa", project="/w/a")
    _add(rows, next(n), dedupe_key="k3", output_tokens=5, input_tokens=5, project="/w/z", recorded_cost_usd=0.5)
    _add(rows, next(n), dedupe_key="k3", output_tokens=5, input_tokens=5, project="/w/a", recorded_cost_usd=None)
    _add(rows, next(n), dedupe_key="k3", output_tokens=5, input_tokens=5, project="/w/a", recorded_cost_usd=0.25)
    # A copy equal in every column the report reads (read twice: only its line differs): counted once.
    for line in (900, 901):
        rows.add(source="claude", file="/f.jsonl", line=line, session_id="s1", project="/w/shop", timestamp=MIDNIGHT,
                 provider="anthropic", model=TIER_MODEL, kind="main", input_tokens=3, output_tokens=4, dedupe_key="same:r")
    # Nulls: model (unpriced), provider, recorded cost, time, project, session; no dedupe key at all.
    _add(rows, next(n), model=None, provider=None, session_id=None, project=None)
    _add(rows, next(n), timestamp=None, source="pi", provider=None, model="flat-model")
    _add(rows, next(n), model="unknown-model", recorded_cost_usd=None, branch="feature")
    _add(rows, next(n), source="pi", agent="oh-my-pi", model="flat-model", provider="openai", recorded_cost_usd=0.75)
    # Zero tokens: dropped, unless a cost is recorded.
    _add(rows, next(n), input_tokens=0, output_tokens=0)
    _add(rows, next(n), input_tokens=0, output_tokens=0, recorded_cost_usd=0.125)
    _add(rows, next(n), input_tokens=0, output_tokens=0, recorded_cost_usd=0.0, machine="other", machine_id="m-2")
    return rows


@pytest.fixture(scope="module")
def corpus(tmp_path_factory):
    folder = tmp_path_factory.mktemp("rules")
    usage = corpus_rows()
    part = folder / "part.parquet"
    pq.write_table(usage.to_table(), part)
    prices = folder / "prices.json"
    prices.write_text(json.dumps(PRICES))
    rows = [fast_collect._PICK(row) for row in usage.rows]
    return [str(part)], rows, str(prices)


def both(corpus, **options) -> tuple[dict, dict]:
    parts, rows, prices = corpus
    settings = ReportSettings(pricing_file=prices, machine="here", machine_id="m-1", **options)
    return outputs(aggregate.build_report(parts, settings)), outputs(fast.build_report(rows, settings))


VARIANTS = [
    {},
    {"breakdown": True, "order": "desc"},
    {"cost_mode": "calculate"},
    {"cost_mode": "recorded", "order": "asc"},
    *({"timezone": zone} for zone in ("Asia/Kolkata", "America/St_Johns", "Pacific/Kiritimati", "America/New_York",
                                       "Pacific/Pago_Pago")),
    {"last": 2, "now": MIDNIGHT + timedelta(days=9)},
    {"since": date(2026, 3, 8), "until": date(2026, 3, 10), "timezone": "Asia/Kolkata"},
    {"agents": ("pi",)},
    # the naming rules of project and group ([report.projects]), the project and session filters
    {"project_aliases": (("/w/a", "shop"), ("b", "shop")), "project_groups": (("store", ("shop", "/w/z")),),
     "breakdown": True},
    {"projects": ("shop", "/w/z/"), "sessions": ("day", "s1"), "project_aliases": (("/w/shop", "shop"),)},
]


@pytest.mark.parametrize("by", FAST_GROUPINGS)
def test_both_engines_print_the_same_bytes_for_every_rule(corpus, by):
    for variant in VARIANTS:
        slow, quick = both(corpus, by=by, **variant)
        for fmt, text in slow.items():
            assert quick[fmt] == text, f"--by {by} {variant} {fmt}"
        assert json.loads(slow["json"])["rows"], variant


@pytest.mark.parametrize("first", WEEKDAYS)
@pytest.mark.parametrize("zone", ["UTC", "Asia/Kolkata", "America/St_Johns"])
def test_every_first_day_of_the_week_in_both_engines(corpus, first, zone):
    slow, quick = both(corpus, by="week", start_of_week=first, timezone=zone)
    assert quick == slow
    index = WEEKDAYS.index(first) + 1
    weeks = [row["week"] for row in json.loads(slow["json"])["rows"]]
    assert all(date.fromisoformat(w).isoweekday() == index for w in weeks if w != "unknown"), (first, weeks)
    assert "unknown" in weeks  # the row without a time


def _totals(text: str) -> dict:
    return json.loads(text)["totals"]


def test_the_rules_figures(corpus):
    """What the rules give, by value (the same on both engines): broken in rules.py, both would agree wrongly."""
    slow, quick = both(corpus, by="session", cost_mode="calculate")
    assert slow == quick
    report = json.loads(slow["json"])
    parts, rows, _ = corpus
    keys = {row[fast.KEY] for row in rows}
    # every distinct key once, less the replays (m1, m2, m3 collapse to one each), the zero-token rows dropped
    keyless = sum(row[fast.KEY] is None for row in rows)
    assert report["totals"]["requests"] == len(keys - {None}) - 3 + keyless - 2
    sessions = {r["session_id"]: r for r in report["rows"]}
    assert "s2" not in sessions  # m1's side replay (50,000 cache reads) collapsed into the main-line copy
    assert report["totals"]["cache_read_tokens"] < 50_000 + 200_000
    assert "s9" not in sessions and "s3" in sessions  # the m3 tie: the first session
    assert "sdb" in sessions and "sjs" not in sessions  # rank before usage
    assert "sa" in sessions and "sb" not in sessions  # a session over none, then the first
    assert "unknown" in sessions  # a null session


def test_a_prompt_at_the_threshold_pays_the_base_rate_one_token_above_the_tier(corpus):
    parts, rows, prices = corpus
    at = [r for r in rows if r[fast.KEY] == "t1:r"]
    over = [r for r in rows if r[fast.KEY] == "t2:r"]
    settings = ReportSettings(by="model", cost_mode="calculate", pricing_file=prices)
    costs = []
    for picked in (at, over):
        got = json.loads(write_report(fast.build_report(picked, settings), "json", None))["totals"]["cost_usd"]
        costs.append(got)
    base = 50_000 * 1e-6 + 1_000 * 2e-6 + 100_000 * 1e-7 + 30_000 * 1.25e-6 + 20_000 * 2e-6
    tier_1h = 2e-6 * (3e-6 / 1e-6)  # the tier scales the 1-hour rate as it scales input
    tier = 50_001 * 3e-6 + 1_000 * 4e-6 + 100_000 * 5e-7 + 30_000 * 2.5e-6 + 20_000 * tier_1h
    assert costs == [pytest.approx(base, abs=1e-12), pytest.approx(tier, abs=1e-12)]
    # and polars prices them alike, to the bit
    frame = pl.DataFrame([dict(zip(rules.REPORT_COLUMNS, r, strict=True)) for r in at + over])
    priced, _ = aggregate.add_costs(frame.lazy(), aggregate.PriceTable.load(prices), "calculate")
    key = rules.REPORT_COLUMNS[fast.KEY]
    polars_costs = dict(priced.collect().select(key, "computed_cost_usd").iter_rows())  # polars may reorder rows
    pricer = fast.Pricer(aggregate.PriceTable.load(prices), "calculate")
    assert polars_costs == {r[fast.KEY]: pricer.cost(r) for r in at + over}


def test_tier_rate_and_token_cost_are_one_rule_for_numbers_and_expressions():
    tiers = ((-1.0, "base"), (200_000.0, "t1"), (1_000_000.0, "t2"))
    assert [tier_rate(tiers, p) for p in (0, 200_000, 200_001, 1_000_000, 1_000_001)] == \
        ["base", "base", "t1", "t1", "t2"]
    prices = (1e-6, 2e-6, 1e-7, 1.25e-6, 2e-6)
    frame = pl.DataFrame({"a": [3, 0], "b": [5, 1], "c": [7, 2], "d": [11, 3], "e": [4, 1]})
    expr = token_cost(*(pl.col(c) for c in "abcde"), prices)
    assert frame.select(expr.alias("x"))["x"].to_list() == [token_cost(*row, prices) for row in frame.iter_rows()]


def _orders_agree(order, rows: list[tuple], columns: tuple[str, ...]) -> int:
    """`rules.first_wins(order)` picks, in every group of rows, the row polars' sort puts first."""
    index = {name: i for i, name in enumerate(columns)}
    better = rules.first_wins([(index[c], d) for c, d in order])
    rng = random.Random(11)
    decided = 0
    for _ in range(300):
        group = rng.sample(rows, 6)
        frame = pl.DataFrame(group, schema=list(columns), orient="row")
        first = frame.sort(**aggregate._sort_args(order)).row(0)
        mine = fast._first(group, better)
        assert mine == first, (group, mine, first)
        decided += mine != group[0]
    return decided


def _random_row(rng: random.Random) -> tuple:
    pick = rng.choice
    return (
        pick(["claude", "codex"]), pick(["claude", "codex"]), pick([None, "s1", "s2"]), pick([None, "/p", "/q"]),
        pick([None, datetime(2026, 1, 1, tzinfo=UTC), datetime(2026, 1, 2, tzinfo=UTC)]), pick([None, "openai"]),
        pick([None, "gpt-5", "gpt-5.1"]), pick(["main", "sidechain"]), "k", pick([0, 1]), pick([1, 2]),
        pick([3, 4]), pick([0, 5]), pick([0, 6]), pick([0, 1]), pick([0, 7]), pick([10, 11]), pick([None, 0.5, 1.5]),
        pick([None, "main", "feature"]), pick([None, "alice", "bob"]), pick([None, "id-1", "id-2"]),
    )


def test_the_dedupe_and_replay_orders_pick_what_polars_sorts_first():
    """The Python comparison fast.py uses and the polars sort aggregate.py uses are built from one order."""
    rng = random.Random(28)
    rows = [_random_row(rng) for _ in range(3000)]
    assert _orders_agree(rules.DEDUPE_ORDER, rows, rules.REPORT_COLUMNS) > 100
    marked = [(*row, row[fast.KIND] != rules.MAIN_KIND) for row in rows]
    columns = (*rules.REPORT_COLUMNS, rules.SIDE)
    assert _orders_agree(rules.REPLAY_ORDER, marked, columns) > 100


def test_replays_are_an_agent_property(corpus, monkeypatch):
    """The collapse applies to the agents whose `sidechain_replays` is set (Claude Code), and to another
    agent once the registry says so, in both engines."""
    assert rules.replay_agents() == ("claude",)
    assert rules.block_agents() == ("claude",)
    before = _totals(both(corpus, by="agent")[0]["json"])["requests"]
    agents = [dataclasses.replace(a, sidechain_replays=True) if a.name == "codex" else a for a in registry.AGENTS]
    monkeypatch.setattr(registry, "AGENTS", agents)
    assert rules.replay_agents() == ("claude", "codex")
    slow, quick = both(corpus, by="agent")
    assert slow == quick
    assert _totals(slow["json"])["requests"] == before - 2  # x1's side copies collapse into its main line


def test_blocks_show_the_billing_block_agents_by_default(corpus):
    parts, rows, prices = corpus
    report = aggregate.build_report(parts, ReportSettings(by="block", pricing_file=prices))
    expected = json.loads(outputs(aggregate.build_report(parts, ReportSettings(
        by="block", pricing_file=prices, agents=rules.block_agents())))["json"])["totals"]
    assert json.loads(write_report(report, "json", None))["totals"] == expected
    assert set(report.totals["agents"]) == {"claude"}


def test_no_agent_is_named_in_the_engines():
    """The engines and the rules ask the registry; no agent's name is a string in their code."""
    names = set(registry.names())
    report = Path(rules.__file__).parent
    for module in ("fast.py", "fast_collect.py", "row_list.py", "aggregate.py", "rules.py"):
        tree = ast.parse((report / module).read_text())
        docstrings = {id(node.body[0].value) for node in ast.walk(tree)
                      if isinstance(node, (ast.Module, ast.FunctionDef, ast.ClassDef)) and node.body
                      and isinstance(node.body[0], ast.Expr) and isinstance(node.body[0].value, ast.Constant)}
        literals = {node.value for node in ast.walk(tree)
                    if isinstance(node, ast.Constant) and isinstance(node.value, str) and id(node) not in docstrings}
        assert not literals & names, (module, literals & names)


def test_the_filters_are_one_set_of_values_for_both_engines():
    """`rules.row_filters`: a place label stands for its agent, `--by block` alone keeps the billing-block
    agents, `--project` values lose a trailing separator, and the first day is the later of `--since` and
    the first of the `--last` periods (`first_day`, also the HTML page's)."""
    label = next(place.label for agent in registry.AGENTS for place in agent.places if place.label)
    owner = next(agent.name for agent in registry.AGENTS if any(p.label == label for p in agent.places))
    assert owner in rules.row_filters(ReportSettings(agents=(label,))).agents
    assert rules.row_filters(ReportSettings(by="block")).agents == rules.block_agents()
    assert rules.row_filters(ReportSettings(by="day")).agents == ()
    assert rules.row_filters(ReportSettings(projects=("/src/shop/", "/"))).projects == ("/src/shop", "/")
    now = datetime(2026, 3, 18, 12, tzinfo=UTC)
    assert rules.first_day(ReportSettings(by="day", last=3, now=now)) == date(2026, 3, 16)
    assert rules.first_day(ReportSettings(by="day", last=3, now=now, since=date(2026, 3, 17))) == date(2026, 3, 17)
    assert rules.first_day(ReportSettings(by="model", last=3, now=now)) is None  # --last N groups, not days
