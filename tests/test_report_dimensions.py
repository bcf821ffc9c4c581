"""The report's dimensions are one table (report/dimensions.py) that every route reads.

Each route's list is compared with the table: `--by`'s choices and help, the dimensions the plain-Python engine
computes and those the polars engine builds (their keys, the table's), the HTML page's dimensions, their names
in its script, and the lists in docs/report.md. And no module keeps a list of its own: a literal naming three
dimensions or more anywhere in the package but the table fails here (the periods are settings.PERIODS).
"""

from __future__ import annotations

import ast
import json
import re
from datetime import UTC, datetime
from pathlib import Path

import click
import pytest

from batchcompact.adapters.common.usage_rows import UsageRows
from batchcompact.cli.report import report
from batchcompact.report import aggregate, fast, html, rules
from batchcompact.report.dimensions import (
    BY_COLUMN,
    BY_NAME,
    DIMENSIONS,
    FAST_GROUPINGS,
    GROUPINGS,
    PAGE,
    PERIOD_COLUMNS,
    by_help,
)
from batchcompact.report.settings import PERIODS, ReportSettings

ROOT = Path(__file__).resolve().parent.parent
PACKAGE = ROOT / "batchcompact"


def test_the_table_is_whole():
    assert GROUPINGS == tuple(d.name for d in DIMENSIONS) and len(set(GROUPINGS)) == len(GROUPINGS)
    assert len(BY_COLUMN) == len(DIMENSIONS)  # each dimension defines its own key column
    for d in DIMENSIONS:
        assert d.column in d.keys, d.name
        assert all(key in BY_COLUMN for key in d.keys), d.name  # every key is some dimension's column
        if d.fast:  # what the plain-Python engine reads from a row
            assert set(d.reads) <= set(rules.REPORT_COLUMNS), d.name
    assert tuple(PERIOD_COLUMNS) == PERIODS  # the periods are dimensions, in the same order
    assert [d.page_rank for d in PAGE] == sorted({d.page_rank for d in PAGE})  # one place each in the switch


def test_the_cli_offers_the_tables_dimensions():
    by = next(p for p in report.params if p.name == "by")
    assert isinstance(by.type, click.Choice) and tuple(by.type.choices) == GROUPINGS
    assert by.help == by_help()
    for d in DIMENSIONS:
        assert f"{d.name}: {d.help}" in by.help if d.help else f"{d.name}:" not in by.help


def _usage() -> UsageRows:
    """A few requests: three agents, projects, branches, providers, a null model, project and session."""
    usage = UsageRows()
    when = datetime(2026, 3, 7, 12, tzinfo=UTC)
    for n, (agent, project, branch, provider, model, session) in enumerate([
        ("claude", "/w/shop", "main", "anthropic", "claude-sonnet-4-5", "s1"),
        ("codex", "/w/api", None, None, "gpt-5", "s2"),
        ("pi", None, "feature", "openai", None, None),
    ]):
        usage.add(source=agent, file="/f.jsonl", line=n + 1, session_id=session, project=project,
                  timestamp=when, provider=provider, model=model, kind="main", input_tokens=10 + n,
                  output_tokens=5, branch=branch, dedupe_key=f"k{n}")
    return usage


def _rows() -> list[tuple]:
    from batchcompact.report import fast_collect

    return [fast_collect._PICK(row) for row in _usage().rows]


@pytest.fixture(scope="module")
def part(tmp_path_factory):
    import pyarrow.parquet as pq

    path = tmp_path_factory.mktemp("dims") / "part.parquet"
    pq.write_table(_usage().to_table(), path)
    return str(path)


@pytest.mark.parametrize("by", GROUPINGS)
def test_both_engines_take_the_tables_dimensions_with_its_keys(part, by):
    d = BY_NAME[by]
    settings = ReportSettings(by=by, machine="here", machine_id="m-1")
    assert fast.supported(settings, "json") == d.fast
    if d.fast:
        quick = fast.build_report(_rows(), settings)
        assert quick.keys == list(d.keys)
        assert quick.rows.height > 0
    else:
        with pytest.raises(fast.Unsupported):
            fast.Builder(settings, aggregate.PriceTable.load(None))
    slow = aggregate.build_report([part], settings)
    assert slow.keys == list(d.keys)
    assert slow.rows.height > 0
    if d.fast:  # (byte for byte over every option set: test_report_rules.py, test_report_fast.py)
        assert list(quick.rows.iter_rows()) == slow.rows.to_dicts()


def test_the_page_reads_its_dimensions_and_their_names_from_the_table(tmp_path, part):
    assert html.DIMENSIONS == tuple(d.name for d in PAGE)
    data = html.page_data([part], ReportSettings(machine="here", machine_id="m-1"))
    assert tuple(data["dimensions"]) == html.DIMENSIONS
    for d in PAGE:
        assert data["dimensions"][d.name]["keys"] == list(d.keys)
    script = html.page_script()
    found = re.search(r"const DIM_LABELS = (\{.*?\});", script, re.S)
    assert found, "page.js's DIM_LABELS"
    labels = json.loads(re.sub(r"(\w+):", r'"\1":', found.group(1)))
    assert labels == {d.name: d.page_label for d in PAGE}
    assert list(labels) == list(html.DIMENSIONS)
    source = (PACKAGE / "report" / "page" / "page.js").read_text()
    assert html.LABELS_SLOT in source
    assert not re.search(r"\b(model|agent|provider|machine)\s*:\s*\"", source), "page.js names the dimensions"


def test_the_docs_lists_are_the_tables():
    report = (ROOT / "docs" / "report.md").read_text()
    text = " ".join(report.split())  # lines wrap anywhere
    assert f"`--by {'|'.join(FAST_GROUPINGS)}`" in text  # what the plain-Python engine computes
    assert f"`--by {'|'.join(PERIODS)}` picks the chart's first bucket" in text
    assert f"`--by {'|'.join(d.name for d in PAGE)}` the dimension it opens on" in text
    assert f"({', '.join(d.page_label for d in PAGE)})" in text  # the page's switch, by its names
    cli_doc = (ROOT / "docs" / "cli.md").read_text() + (ROOT / "README.md").read_text()
    for line in cli_doc.splitlines():  # a `--by` list anywhere else is the table's too
        for listed in re.findall(r"--by ((?:\w+\|){2,}\w+)", line):
            assert listed.split("|") == [g for g in GROUPINGS if g in listed.split("|")], line


def _literal_strings(node: ast.AST) -> list[str]:
    if isinstance(node, ast.Dict):
        items = node.keys
    elif isinstance(node, (ast.Tuple, ast.List, ast.Set)):
        items = node.elts
    else:
        return []
    return [i.value for i in items if isinstance(i, ast.Constant) and isinstance(i.value, str)]


# Dimension names that are no usage column: a literal of the columns (rules.REPORT_COLUMNS, the export's) is
# not a list of dimensions, one naming these is.
NOT_COLUMNS = set(GROUPINGS) - set(rules.REPORT_COLUMNS)


def test_no_module_keeps_its_own_list_of_dimensions():
    found = []
    for path in sorted(PACKAGE.rglob("*.py")):
        if path == PACKAGE / "report" / "dimensions.py":
            continue
        for node in ast.walk(ast.parse(path.read_text())):
            names = [s for s in _literal_strings(node) if s in GROUPINGS]
            if len(set(names)) >= 3 and set(names) & NOT_COLUMNS and tuple(names) != PERIODS:
                found.append(f"{path.relative_to(ROOT)}:{node.lineno}: {names}")
    assert not found, "a list of dimensions outside report/dimensions.py:\n" + "\n".join(found)
