"""`batchcompact report --agent NAME` from the CLI, as the report-only agents' tests call it."""

from __future__ import annotations

import json
from pathlib import Path

from click.testing import CliRunner

from batchcompact.cli import cli

FIELDS = ("input_tokens", "output_tokens", "cache_read_tokens", "cache_write_tokens", "total_tokens")


def agent_report(agent: str, *args: str) -> tuple[str, str]:
    """(stdout, stderr) of `report --agent AGENT ARGS`, which must exit 0."""
    result = CliRunner().invoke(cli, ["report", "--agent", agent, *args])
    assert result.exit_code == 0, result.output
    return result.stdout, result.stderr


def agent_rows(agent: str, by: str, *args: str) -> tuple[list[dict], str]:
    """The report's rows as JSON (`--by request` is written one row a line: JSON lines), and its stderr."""
    if by == "request":
        out, err = agent_report(agent, "--by", by, "--format", "jsonl", *args)
        return [json.loads(line) for line in out.splitlines()], err
    out, err = agent_report(agent, "--by", by, "--format", "json", *args)
    return json.loads(out)["rows"], err


def summed(rows: list[dict], fields: tuple[str, ...] = FIELDS) -> dict:
    """Each token kind summed over `rows`, and the requests they count."""
    return {k: sum(int(r[k]) for r in rows) for k in fields} | {"requests": sum(int(r.get("requests", 1))
                                                                              for r in rows)}


def every_format(agent: str, folder: Path, total: dict, *in_table: str) -> None:
    """The session table names every `in_table` text; the day rows as JSON lines, the month rows as CSV and the
    model rows as Parquet each sum to `total` (`summed`'s fields; Parquet: its total tokens)."""
    import csv
    import io

    import polars as pl

    table, _ = agent_report(agent, "--by", "session")
    assert all(text in table for text in in_table), table
    lines = agent_report(agent, "--by", "day", "--format", "jsonl")[0].splitlines()
    assert summed([json.loads(line) for line in lines]) == total
    text = agent_report(agent, "--by", "month", "--format", "csv")[0]
    assert summed(list(csv.DictReader(io.StringIO(text)))) == total
    out = folder / f"{agent}.parquet"
    agent_report(agent, "--by", "model", "--format", "parquet", "-o", str(out))
    assert pl.read_parquet(out)["total_tokens"].sum() == total["total_tokens"]
