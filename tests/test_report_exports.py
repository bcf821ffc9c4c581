"""Usage across machines, from the command line: two HOMEs as two machines, each exporting its requests
(`report --by request`) nightly into a shared folder, and one report over that folder.

Machine A (alice) has a Claude Code session, a Codex rollout and a pi session; machine B (bob) has the
same Claude session and pi session (a synced folder) and a Claude session of its own. The synced
requests count once, whatever mix of exports and transcripts the report is given.
"""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest
from conftest import SAMPLES
from teams import claude_line, write, write_home

from batchcompact.report.export import COLUMNS, EXPORT_SCHEMA_VERSION

PI_SESSION = SAMPLES / "pi" / "small-fix.jsonl"
ENV_VARS = ("CLAUDE_CONFIG_DIR", "CODEX_HOME", "PI_CODING_AGENT_DIR", "PI_AGENT_DIR", "ATOMIC_CODING_AGENT_DIR",
            "INDUSAGI_CODING_AGENT_DIR", "XDG_DATA_HOME")


def pi_folder(home: Path) -> Path:
    return home / ".pi" / "agent" / "sessions" / "--home-ana-src-shop--"


@pytest.fixture
def machines(tmp_path):
    a = write_home(tmp_path / "alice")
    shutil.copytree(PI_SESSION.parent, pi_folder(a), ignore=lambda d, names: [n for n in names if n != PI_SESSION.name])
    b = tmp_path / "bob"
    synced = b / ".claude" / "projects" / "-home-ana-src-shop"
    synced.mkdir(parents=True)
    shutil.copy(a / ".claude" / "projects" / "-home-ana-src-shop" / "s-claude.jsonl", synced)  # the synced session
    write(synced / "s-bob.jsonl", [claude_line(1, "2026-03-04T10:00:00.000Z", "main", 50, 5, session="s-bob")])
    pi_folder(b).mkdir(parents=True)
    shutil.copy(PI_SESSION, pi_folder(b))  # the synced pi session: its rows have no id of the agent's own
    return a, b


def on_machine(monkeypatch, home: Path, machine_id: str) -> None:
    """What a cron job on that machine sees: its HOME, its machine id."""
    for name in ENV_VARS:
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv("HOME", str(home))
    monkeypatch.setenv("BATCHCOMPACT_MACHINE_ID", machine_id)


def export(bc, monkeypatch, home, name, target, fmt="parquet", *extra):
    on_machine(monkeypatch, home, f"id-{name}")
    code, out, err = bc("report", "--by", "request", "--format", fmt, "-o", target, "--machine", name, *extra)
    assert code == 0, err
    assert out == ""
    return err


def folders(home: Path) -> list[Path]:
    return [p for p in (home / ".claude", home / ".codex", home / ".pi") if p.exists()]


def as_json(bc, *args) -> dict:
    code, out, err = bc("report", *args, "--format", "json")
    assert code == 0, err
    return json.loads(out)


def test_two_machines_exports_count_a_synced_session_once(bc, monkeypatch, machines, tmp_path):
    a, b = machines
    shared = tmp_path / "shared" / "usage"
    shared.mkdir(parents=True)
    export(bc, monkeypatch, a, "alice", shared / "alice.parquet")
    export(bc, monkeypatch, b, "bob", shared / "bob.parquet")
    export(bc, monkeypatch, b, "bob", shared / "bob-again.jsonl", "jsonl")  # a second export of the same day
    export(bc, monkeypatch, b, "bob", shared / "bob.csv", "csv")

    on_machine(monkeypatch, tmp_path / "anywhere", "id-laptop")
    by_machine = as_json(bc, shared, "--by", "machine", "--no-cache")
    alice_alone = as_json(bc, *folders(a), "--by", "day", "--no-cache")["totals"]
    rows = {r["machine"]: r for r in by_machine["rows"]}
    # the synced Claude and pi requests are alice's (the machine whose name sorts first keeps a copy);
    # bob's own request is his
    assert set(rows) == {"alice", "bob"}
    assert rows["bob"]["requests"] == 1 and rows["bob"]["total_tokens"] == 1055
    assert rows["alice"]["requests"] == alice_alone["requests"] > 6  # the pi session's requests too
    assert rows["alice"]["total_tokens"] == alice_alone["total_tokens"]

    # the same report as every machine's transcripts read together, to the byte
    from_exports = as_json(bc, shared, "--by", "day", "--no-cache")
    from_transcripts = as_json(bc, *folders(a), *folders(b), "--by", "day", "--no-cache")
    assert from_exports == from_transcripts
    # and an export given with the transcripts it came from counts them once
    assert as_json(bc, shared / "alice.parquet", *folders(a), *folders(b), "--by", "day", "--no-cache") == from_exports
    # other views read the exports' branches, projects, providers
    assert {r["branch"] for r in as_json(bc, shared, "--by", "branch", "--no-cache")["rows"]} == {
        "main", "feature/login", "fix/api", "unknown"}


def test_the_machine_is_the_flag_the_config_file_or_the_host_name(bc, monkeypatch, machines, tmp_path):
    a, _ = machines
    on_machine(monkeypatch, a, "id-alice")
    import socket

    host = socket.gethostname().split(".", 1)[0]
    assert {r["machine"] for r in as_json(bc, *folders(a), "--by", "machine", "--no-cache")["rows"]} == {host}
    config = tmp_path / "config.toml"
    config.write_text('[report]\nmachine = "ana-desktop"\n')
    got = as_json(bc, *folders(a), "--by", "machine", "--no-cache", "--config", config)
    assert [r["machine"] for r in got["rows"]] == ["ana-desktop"]
    target = tmp_path / "e.jsonl"
    code, _, err = bc("report", *folders(a), "--by", "request", "--format", "jsonl", "-o", target, "--config", config)
    assert code == 0, err
    lines = [json.loads(line) for line in target.read_text().splitlines()]
    assert {line["machine"] for line in lines} == {"ana-desktop"} and {line["machine_id"] for line in lines} == {"id-alice"}


def test_every_export_format_holds_the_same_requests(bc, monkeypatch, machines, tmp_path):
    """JSON lines, CSV and Parquet of one export, each read back alone, make the same report as the
    transcripts; every JSON line is valid against schemas/usage-export-v2.schema.json."""
    import jsonschema
    import pyarrow.parquet as pq

    a, _ = machines
    for fmt in ("jsonl", "csv", "parquet"):
        export(bc, monkeypatch, a, "alice", tmp_path / f"e.{fmt}", fmt)
    schema = json.loads((Path(__file__).parents[1] / "schemas" / "usage-export-v2.schema.json").read_text())
    lines = [json.loads(line) for line in (tmp_path / "e.jsonl").read_text().splitlines()]
    for line in lines:
        jsonschema.validate(line, schema, format_checker=jsonschema.FormatChecker())
        assert list(line) == list(COLUMNS) and line["export_version"] == EXPORT_SCHEMA_VERSION
    assert len({line["request_id"] for line in lines}) == len(lines)
    assert (tmp_path / "e.csv").read_text().splitlines()[0] == ",".join(COLUMNS)
    table = pq.read_table(tmp_path / "e.parquet")
    assert table.column_names == list(COLUMNS)
    assert table.schema.metadata[b"batchcompact_table"] == b"usage-export"
    expected = as_json(bc, *folders(a), "--by", "session", "--no-cache")
    for fmt in ("jsonl", "csv", "parquet"):
        # renamed: an export is known by what it holds, not by its name
        renamed = shutil.copy(tmp_path / f"e.{fmt}", tmp_path / f"nightly-{fmt}.{fmt}")
        assert as_json(bc, renamed, "--by", "session", "--no-cache")["rows"] == expected["rows"], fmt


@pytest.mark.parametrize("view", [("--by", "machine"), ("--by", "machine", "--breakdown"),
                                  ("--by", "provider", "--since", "2026-03-02")])
@pytest.mark.parametrize("fmt", ["table", "json", "csv"])
def test_the_shared_folder_report_is_the_same_bytes_on_every_path(bc, monkeypatch, machines, tmp_path, view, fmt):
    a, b = machines
    shared = tmp_path / "shared"
    shared.mkdir()
    export(bc, monkeypatch, a, "alice", shared / "alice.parquet")
    export(bc, monkeypatch, b, "bob", shared / "bob.csv", "csv")
    on_machine(monkeypatch, tmp_path / "anywhere", "id-laptop")
    cached = ("--cache-above", "0", "--cache-dir", tmp_path / "c")
    code, _, err = bc("report", shared, *folders(a), "--by", "day", *cached)  # writes the parts
    assert code == 0, err
    outputs, notes = [], []
    for extra in (("--no-cache",), cached, cached):
        code, out, err = bc("report", shared, *folders(a), *view, "--format", fmt, *extra)
        assert code == 0, err
        outputs.append(out)
        notes.append(err)
    assert "0 parsed" in notes[1] and "stored report" not in notes[1]
    assert "(the stored report)" in notes[2]
    assert outputs[0] == outputs[1] == outputs[2]


def test_an_export_of_a_newer_schema_is_an_error_naming_both_versions(bc, monkeypatch, machines, tmp_path):
    import pyarrow.parquet as pq

    a, _ = machines
    export(bc, monkeypatch, a, "alice", tmp_path / "e.jsonl", "jsonl")
    lines = (tmp_path / "e.jsonl").read_text().splitlines()
    newer = tmp_path / "shared" / "newer.jsonl"
    newer.parent.mkdir()
    newer.write_text("".join(line.replace('"export_version":2', '"export_version":3') + "\n" for line in lines))
    code, out, err = bc("report", newer.parent, "--no-cache")
    assert code == 2 and out == ""
    assert err.strip() == (f"Error: {newer}: a usage export of schema version 3; this batchcompact reads version 2 "
                           "and older: upgrade batchcompact here to read it")
    # Parquet says its version in its metadata
    export(bc, monkeypatch, a, "alice", tmp_path / "e.parquet")
    table = pq.read_table(tmp_path / "e.parquet")
    meta = dict(table.schema.metadata)
    meta[b"batchcompact.usage_export_version"] = b"3"
    pq.write_table(table.replace_schema_metadata(meta), tmp_path / "newer.parquet")
    code, out, err = bc("report", tmp_path / "newer.parquet", "--no-cache")
    assert code == 2 and "schema version 3; this batchcompact reads version 2" in err
    assert "Traceback" not in err


def test_a_truncated_parquet_is_named_and_skipped(bc, monkeypatch, machines, tmp_path):
    a, b = machines
    shared = tmp_path / "shared"
    shared.mkdir()
    export(bc, monkeypatch, a, "alice", shared / "alice.parquet")
    export(bc, monkeypatch, b, "bob", shared / "bob.parquet")
    data = (shared / "alice.parquet").read_bytes()
    (shared / "alice.parquet").write_bytes(data[: len(data) // 2])  # a sync cut short
    on_machine(monkeypatch, tmp_path / "anywhere", "id-laptop")
    for path in ("--no-cache",), ("--cache-above", "0", "--cache-dir", tmp_path / "c"):
        code, out, err = bc("report", shared, "--by", "machine", "--format", "json", *path)
        assert code == 1, err  # the report is made, and is incomplete (issue 50)
        assert f"warning: {shared / 'alice.parquet'}: not a complete Parquet file (" in err
        assert "warning: the report is incomplete: 1 file not read or cut short (named above); exit 1" in err
        assert "2 files: 1 parsed, 0 from cache, 1 not read (named above)" in err
        assert [r["machine"] for r in json.loads(out)["rows"]] == ["bob"]


def test_two_machines_of_one_name_are_a_warning(bc, monkeypatch, machines, tmp_path):
    a, b = machines
    shared = tmp_path / "shared"
    shared.mkdir()
    export(bc, monkeypatch, a, "dev", shared / "a.parquet")
    export(bc, monkeypatch, b, "bob", shared / "b.parquet")
    on_machine(monkeypatch, b, "id-bob-clone")  # a cloned image: another machine, the same name
    code, out, err = bc("report", shared, "--by", "machine", "--machine", "dev", *folders(b), "--no-cache")
    assert code == 0, err
    assert (f"warning: two machines are named 'dev' (id id-bob-clone in this machine's own files; id id-dev in "
            f"{shared / 'a.parquet'}): their requests are reported together; give each its own name with "
            "--machine (or `machine` in the config file)") in err
    # two exports of one machine are no warning
    export(bc, monkeypatch, b, "bob", shared / "b2.parquet")
    code, out, err = bc("report", shared, "--by", "machine", "--no-cache")
    assert "two machines" not in err


def test_a_bad_row_in_an_export_is_named_with_its_line(bc, monkeypatch, machines, tmp_path):
    a, _ = machines
    export(bc, monkeypatch, a, "alice", tmp_path / "e.csv", "csv")
    before = as_json(bc, tmp_path / "e.csv", "--no-cache")["totals"]["requests"]
    import csv

    with open(tmp_path / "e.csv", newline="") as fh:
        lines = list(csv.reader(fh))
    lines[2][COLUMNS.index("total_tokens")] = "-4"
    with open(tmp_path / "e.csv", "w", newline="") as fh:
        csv.writer(fh, lineterminator="\n").writerows(lines)
    code, out, err = bc("report", tmp_path / "e.csv", "--no-cache", "--format", "json")
    assert code == 0
    assert f"warning: {tmp_path / 'e.csv'}:3: not a usage export row: total_tokens is not a count; skipped" in err
    assert json.loads(out)["totals"]["requests"] == before - 1


@pytest.mark.parametrize(("args", "message"), [
    (("--format", "table"), "--by request writes one row per request: use --format jsonl, csv, parquet, not table"),
    (("--format", "csv", "--breakdown"), "--breakdown does not apply to --by request"),
    (("--format", "csv", "--last", "2"), "--last does not apply to --by request"),
])
def test_by_request_refuses_what_shapes_groups(bc, machines, args, message):
    a, _ = machines
    code, out, err = bc("report", *folders(a), "--by", "request", *args)
    assert code == 2 and out == ""
    assert message in err


def test_an_export_keeps_the_recorded_project_and_aliases_apply_where_it_is_read(bc, monkeypatch, machines,
                                                                                  tmp_path):
    a, _ = machines
    config = tmp_path / "config.toml"
    config.write_text('[report.projects.aliases]\n"/home/ana/src/shop" = "shop"\n')
    export(bc, monkeypatch, a, "alice", tmp_path / "e.jsonl", "jsonl", "--config", config)
    projects = {json.loads(line)["project"] for line in (tmp_path / "e.jsonl").read_text().splitlines()}
    assert "/home/ana/src/shop" in projects and "shop" not in projects
    got = as_json(bc, tmp_path / "e.jsonl", "--by", "project", "--no-cache", "--config", config)
    assert "shop" in {r["project"] for r in got["rows"]}


@pytest.mark.parametrize("fmt", ["jsonl", "csv", "parquet"])
def test_every_agents_export_reads_back_to_the_same_report(bc, tmp_path, fmt):
    """Every fixture of every agent (databases, JSON documents, JSON lines) and the sample sessions:
    the report made from the export is, to the byte, the report made from the files."""
    from conftest import shared_fixtures

    inputs = (shared_fixtures(), SAMPLES)
    target = tmp_path / f"all.{fmt}"
    code, _, err = bc("report", *inputs, "--by", "request", "--format", fmt, "-o", target, "--no-cache")
    assert code == 0, err
    for view in (("--by", "session"), ("--by", "day", "--breakdown")):
        expected = as_json(bc, *inputs, *view, "--no-cache")
        assert len(expected["totals"]["agents"]) > 10
        assert as_json(bc, target, *view, "--no-cache") == expected, view


def test_a_clean_parquet_export_is_read_column_by_column_to_the_same_rows(tmp_path):
    """#57: a Parquet export every row of which passes is added column by column (a million rows took most of a
    cold report one dict at a time); the rows, their order, types and time zone are those of the row-by-row read,
    and a row that would not pass sends the whole file back to it (named with its line)."""
    import sys

    import pyarrow as pa
    import pyarrow.parquet as pq

    sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
    from batchcompact.adapters.common.lines import ExtractStats
    from batchcompact.adapters.common.usage_rows import UsageRows
    from batchcompact.report import export
    from bench.bench_html import generate

    generate(tmp_path, 300)
    path = sorted(tmp_path.glob("*.parquet"))[0]
    table = pq.read_table(path)
    assert table.num_rows > 10
    fast, fast_stats = UsageRows(), ExtractStats(path=str(path))
    assert export._add_clean_table(table, str(path), fast, fast_stats)
    slow, slow_stats = UsageRows(), ExtractStats(path=str(path))
    original = export._add_clean_table
    try:
        export._add_clean_table = lambda *args: False
        export.extract_export(path, slow, slow_stats)
    finally:
        export._add_clean_table = original
    assert fast.rows == slow.rows and fast_stats.machines == slow_stats.machines
    assert all(row[6].tzinfo is slow.rows[0][6].tzinfo for row in fast.rows)
    total = table.column_names.index("total_tokens")
    bad = table.set_column(total, "total_tokens", pa.array([1] + table.column(total).to_pylist()[1:], pa.int64()))
    pq.write_table(bad, path)
    rows, stats = UsageRows(), ExtractStats(path=str(path))
    export.extract_export(path, rows, stats)
    assert len(rows) == table.num_rows - 1 and stats.malformed == 1


def test_a_clean_parquet_export_becomes_its_usage_part_in_arrow(tmp_path):
    """#57: the parts path (`--html`, `--chart`, polars) takes a clean Parquet export's table as the usage part
    column by column (`export.usage_table`): the same table and stats as its rows read one by one; a cost or a
    count that `extract_rows` would fix (and name) sends the file to that read."""
    import sys

    import pyarrow as pa
    import pyarrow.parquet as pq

    sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
    from batchcompact.report import export
    from batchcompact.report.extract_rows import extract_rows
    from batchcompact.report.part_cache import extract_file
    from bench.bench_html import generate

    generate(tmp_path, 300)
    path = sorted(tmp_path.glob("*.parquet"))[0]
    made, stats = export.usage_table(path)
    rows, row_stats = extract_rows(path)
    assert made.num_rows > 10 and made.equals(rows.to_table()) and stats.to_dict() == row_stats.to_dict()
    table = pq.read_table(path)
    for name, value in (("recorded_cost_usd", 2e6), ("reasoning_tokens", 2_000_000_000)):
        at = table.column_names.index(name)
        kind = table.schema.field(name).type
        bad = table.set_column(at, name, pa.array([value] + table.column(at).to_pylist()[1:], kind))
        pq.write_table(bad, path)
        assert export.usage_table(path) is None
        part, part_stats = extract_file(path)
        assert part.num_rows == table.num_rows and part_stats.warning_count == 1, name
        assert f"{path}:1: " in part_stats.warnings[0]


def test_parquet_exports_of_many_requests_take_the_polars_path(bc, tmp_path, monkeypatch):
    """#57: a cold report whose Parquet exports hold more than `MAX_EXPORT_ROWS` requests is polars' (they are
    read as Arrow columns; the plain-Python engine makes a tuple of each): `collect_rows` refuses before any
    file is read, the footers counted, and the report is the same bytes as the plain-Python engine's."""
    import sys

    sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
    import pyarrow.parquet as pq

    from batchcompact.report import collect, fast, fast_collect
    from bench.bench_html import generate

    exports = tmp_path / "exports"
    exports.mkdir()
    generate(exports, 300)
    files = sorted(str(p) for p in exports.glob("*.parquet"))
    rows = sum(pq.read_metadata(p).num_rows for p in files)
    assert fast_collect.parquet_export_rows(files, rows) == rows
    assert fast_collect.parquet_export_rows([str(SAMPLES / "pi" / "small-fix.jsonl")], 0) == 0
    with pytest.raises(fast.Unsupported) as refused:
        fast_collect.collect_rows([exports], max_export_rows=rows - 1)
    assert refused.value.walk.files == len(files)
    polars = []
    real = collect.collect_usage
    monkeypatch.setattr(collect, "collect_usage", lambda *a, **k: polars.append(1) or real(*a, **k))
    inputs = (exports, SAMPLES, "--no-cache", "--format", "json", "--by")
    monkeypatch.setattr(fast_collect, "MAX_EXPORT_ROWS", rows)
    expected = {by: bc("report", *inputs, by) for by in ("day", "session", "model")}  # plain Python: at the bound
    assert all(code == 0 for code, _, _ in expected.values()) and not polars
    monkeypatch.setattr(fast_collect, "MAX_EXPORT_ROWS", rows - 1)
    for by, output in expected.items():
        assert bc("report", *inputs, by) == output, by
    assert len(polars) == len(expected)


def test_a_clean_parquet_export_is_its_own_part_when_no_part_is_kept(tmp_path):
    """#57: a report that keeps no parts (`--no-cache`) reads a clean Parquet export's columns with polars where
    it would read the part made from it (`export.direct_part`, `scan_export`): the same rows and stats as that
    part; the files keep their order among the others; an export that is not clean is extracted as before."""
    import sys

    import polars as pl
    import pyarrow as pa
    import pyarrow.parquet as pq

    sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
    from batchcompact.report import export
    from batchcompact.report.aggregate import REPORT_COLUMNS
    from batchcompact.report.collect import collect_usage
    from bench.bench_html import generate

    folder = tmp_path / "exports"
    folder.mkdir()
    generate(folder, 300)
    paths = sorted(folder.glob("*.parquet"))
    part, stats = export.direct_part(paths[0])
    table, table_stats = export.usage_table(paths[0])
    assert isinstance(part, export.ExportPart) and stats.to_dict() == table_stats.to_dict()
    direct = export.scan_export(part, REPORT_COLUMNS).collect()
    assert direct.equals(pl.from_arrow(table).select(REPORT_COLUMNS)) and direct.height > 10
    table = pq.read_table(paths[1])
    at = table.column_names.index("recorded_cost_usd")
    pq.write_table(table.set_column(at, "recorded_cost_usd", pa.array([2e6] + [None] * (table.num_rows - 1),
                                                                      pa.float64())), paths[1])
    assert export.direct_part(paths[1]) is None and export.direct_part(SAMPLES / "pi" / "small-fix.jsonl") is None
    shutil.copy(PI_SESSION, folder / "b-session.jsonl")  # a transcript among the exports
    collected = collect_usage([folder], use_cache=False)
    try:
        kinds = [(type(p) is export.ExportPart, Path(s["path"]).name) for p, s in zip(collected.parts, collected.stats,
                                                                                     strict=True)]
        assert kinds == sorted(kinds, key=lambda kind: kind[1]) and sum(k for k, _ in kinds) == len(paths) - 1
        bad = next(s for s in collected.stats if s["path"] == str(paths[1]))
        assert bad["warning_count"] == 1 and collected.extracted == len(paths) + 1
    finally:
        collected.cleanup()
