"""A report is the same bytes for the same archive, whatever the order its files are read in.

The archive is built so that order matters to float arithmetic: many requests with costs whose float
sum changes with the order of its terms (0.1 + 0.2 + 0.3 != 0.3 + 0.2 + 0.1), spread over projects,
models and days, some priced from the map and some carrying a recorded cost, and copies of a session
whose requests tie on time but not on cost. Each report is run with `--jobs 1/2/4`, with the files
named in shuffled orders (the order collection sees them in), with half the parts cached (cached parts
come first), and replayed from the stored report; every output must be byte-identical.
"""

from __future__ import annotations

import itertools
import json
import math
import random
from pathlib import Path

import pytest
from click.testing import CliRunner

from batchcompact.cli import cli
from batchcompact.money import from_pico, sum_usd, to_pico

PROJECTS = ("/work/alpha", "/work/beta", "/srv/gamma")
MODELS = (("anthropic", "claude-sonnet-4-5"), ("openai", "gpt-4o-mini"), ("google", "gemini-2.5-flash"))
# Costs whose float sums depend on the order of the terms.
AWKWARD = (0.1, 0.2, 0.3, 0.7, 1e-7, 3.3e-5, 12.345678901, 0.000123456789, 68.7837046 / 7, 1 / 3)


def _ts(day: int, minute: int) -> str:
    return f"2026-03-{day:02d}T{minute // 60:02d}:{minute % 60:02d}:00.000Z"


def write_session(path: Path, session_id: str, project: str, rng: random.Random, cost_of=None) -> None:
    lines = [{"type": "session", "version": 3, "id": session_id, "timestamp": _ts(1, 0), "cwd": project}]
    parent = None
    for i in range(40):
        provider, model = MODELS[rng.randrange(len(MODELS))]
        usage = {
            "input": rng.randrange(1, 40_000),
            "output": rng.randrange(1, 4_000),
            "cacheRead": rng.randrange(0, 90_000),
            "cacheWrite": rng.randrange(0, 9_000),
        }
        usage["totalTokens"] = sum(usage.values())
        cost = cost_of(i) if cost_of else (rng.choice(AWKWARD) * rng.randrange(1, 9) if i % 3 else None)
        if cost is not None:
            usage["cost"] = {"total": cost}
        entry_id = f"{session_id[:8]}-{i:04d}"
        lines.append({
            "type": "message", "id": entry_id, "parentId": parent, "timestamp": _ts(1 + i % 5, 60 + 7 * i),
            "message": {"role": "assistant", "provider": provider, "model": model, "usage": usage,
                        "content": [{"type": "text", "text": "ok"}]},
        })
        parent = entry_id
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text("".join(json.dumps(line) + "\n" for line in lines))


@pytest.fixture(scope="module")
def archive(tmp_path_factory) -> Path:
    root = tmp_path_factory.mktemp("determinism") / "archive"
    rng = random.Random(23)
    for n in range(18):
        project = PROJECTS[n % len(PROJECTS)]
        write_session(root / project.strip("/").replace("/", "-") / f"s{n:02d}.jsonl",
                      f"{n:08d}-aaaa-bbbb-cccc-dddddddddddd", project, rng)
    # copies of one session (same id, same times) whose recorded costs differ: ties in every sort key
    for copy in range(3):
        write_session(root / "copies" / f"copy{copy}.jsonl", "99999999-aaaa-bbbb-cccc-dddddddddddd",
                      PROJECTS[0], random.Random(99), cost_of=lambda i, c=copy: AWKWARD[(i + c) % len(AWKWARD)])
    return root


def report(*args) -> str:
    result = CliRunner().invoke(cli, ["report", *map(str, args)], standalone_mode=False, catch_exceptions=False)
    assert result.return_value == 0, result.stderr
    return result.stdout


VIEWS = [
    ("--by", "day", "--format", "json"),
    ("--by", "session", "--format", "json", "--order", "desc"),
    ("--by", "model", "--breakdown", "--format", "csv"),
    ("--by", "project", "--format", "table"),
    ("--by", "block", "--source", "pi", "--format", "json"),
]


def test_the_archive_really_has_order_dependent_float_sums(archive):
    costs = [json.loads(line)["message"]["usage"].get("cost", {}).get("total")
             for path in sorted(archive.rglob("*.jsonl")) for line in path.read_text().splitlines()[1:]]
    costs = [c for c in costs if c is not None]
    orders = {sum(costs), sum(reversed(costs)), sum(sorted(costs)), sum(sorted(costs, reverse=True))}
    assert len(orders) > 1  # plain float addition would give different reports for different orders
    assert {sum_usd(costs), sum_usd(reversed(costs)), sum_usd(sorted(costs))} == {sum_usd(costs)}
    assert math.isclose(sum_usd(costs), math.fsum(costs), rel_tol=1e-12)


@pytest.mark.parametrize("view", VIEWS, ids=lambda v: "-".join(a.strip("-") for a in v[:2]))
def test_reports_are_byte_identical_whatever_the_jobs_and_file_order(archive, tmp_path, view):
    files = sorted(archive.rglob("*.jsonl"))
    outputs = {}
    for jobs in (1, 2, 4):
        outputs[f"jobs {jobs}"] = report(archive, *view, "--no-cache", "--jobs", jobs)
    for seed in (1, 2):
        shuffled = files[:]
        random.Random(seed).shuffle(shuffled)
        outputs[f"shuffled {seed}"] = report(*shuffled, *view, "--no-cache", "--jobs", 1 + seed)
    cache = tmp_path / "cache"
    report(*files[::2], *view, "--cache-dir", cache, "--jobs", 1)  # half the parts cached: they come first
    outputs["half cached"] = report(*reversed(files), *view, "--cache-dir", cache, "--jobs", 2)
    outputs["stored"] = report(*reversed(files), *view, "--cache-dir", cache, "--jobs", 4)
    expected = outputs["jobs 1"]
    assert expected.strip()
    assert {name: text for name, text in outputs.items() if text != expected} == {}


def test_parquet_output_is_byte_identical_whatever_the_jobs(archive, tmp_path):
    written = []
    for jobs in (1, 2, 4):
        target = tmp_path / f"jobs{jobs}.parquet"
        report(archive, "--by", "session", "--format", "parquet", "-o", target, "--no-cache", "--jobs", jobs)
        written.append(target.read_bytes())
    assert written[0] == written[1] == written[2]


def test_total_cost_is_the_exact_sum_of_the_requests(archive):
    """The recorded costs of the copies (cost mode `recorded`): the total is the picodollar sum of the
    requests kept. The copies are one session (the same session and entry ids), so each message counts
    once, and of its copies, equal in everything else, the total order keeps the smallest recorded cost."""
    copies = sorted((archive / "copies").glob("*.jsonl"))
    per_entry: dict[str, list[float]] = {}
    for path in copies:
        for line in path.read_text().splitlines()[1:]:
            entry = json.loads(line)
            per_entry.setdefault(entry["id"], []).append(entry["message"]["usage"]["cost"]["total"])
    assert all(len(set(found)) == len(copies) for found in per_entry.values())  # the copies' costs differ
    costs = [min(found) for found in per_entry.values()]
    totals = set()
    for order in itertools.islice(itertools.permutations(copies), 4):
        text = report(*order, "--by", "session", "--cost-mode", "recorded", "--format", "json", "--no-cache")
        totals.add(json.loads(text)["totals"]["cost_usd"])
    assert totals == {from_pico(sum(to_pico(c) for c in costs))}


def test_sum_usd_does_not_depend_on_the_order():
    values = [0.1, 0.2, 0.3, None, 1e-7, 12.345678901, 1 / 3]
    assert len({sum(p) for p in itertools.permutations([v for v in values if v is not None])}) > 1
    assert {sum_usd(p) for p in itertools.permutations(values)} == {sum_usd(values)}
    assert sum_usd([0.1, 0.2]) == 0.3
    assert sum_usd([]) == 0.0
