"""Reports for teams, from the command line: `--by branch`, `--by provider`, project aliases and groups
(`[report.projects]` in the config file, `--by group`), the same bytes on every path."""

from __future__ import annotations

import json

import pytest
from teams import write_home


@pytest.fixture
def home(tmp_path):
    return write_home(tmp_path / "home")


def rows(text: str) -> dict[tuple, tuple[int, int]]:
    doc = json.loads(text)
    return {tuple(r[k] for k in doc["keys"]): (r["requests"], r["total_tokens"]) for r in doc["rows"]}


def report(bc, home, *args):
    code, out, err = bc("report", home / ".claude", home / ".codex", "--no-cache", *args)
    assert code == 0, err
    return out


def test_by_branch_splits_each_project_by_the_recorded_branch(bc, home):
    """Claude Code's `gitBranch` of each line (a line with an empty one: unknown), Codex's
    `session_meta.git.branch`."""
    got = rows(report(bc, home, "--by", "branch", "--format", "json"))
    assert got == {
        ("/home/ana/src/shop", "main"): (1, 1110),
        ("/home/ana/src/shop", "feature/login"): (2, 2550),
        ("/home/ana/src/shop", "unknown"): (1, 1440),
        ("/home/bo/code/shop-api", "fix/api"): (2, 7700),
    }
    # a feature's cost over a date range, per model
    got = rows(report(bc, home, "--by", "branch", "--breakdown", "--since", "2026-03-02", "--until", "2026-03-02",
                      "--format", "json"))
    assert got == {("/home/ana/src/shop", "feature/login", "claude-sonnet-4-5-20250929"): (2, 2550),
                   ("/home/bo/code/shop-api", "fix/api", "gpt-5"): (2, 7700)}


def test_by_provider_names_who_served_each_request_across_agents(bc, home, tmp_path):
    from teams import codex_lines, write

    # Codex through Azure (its model_provider, spelled as the user configured it: lower-cased)
    write(home / ".codex" / "sessions" / "2026" / "03" / "05" / "rollout-2026-03-05T09-00-00-t-azure.jsonl",
          codex_lines("t-azure", "2026-03-05", None, provider="Azure"))
    got = rows(report(bc, home, "--by", "provider", "--format", "json"))
    assert got == {("anthropic",): (4, 5100), ("openai",): (2, 7700), ("azure",): (2, 7700)}
    table = report(bc, home, "--by", "provider", "--format", "table")
    assert table.splitlines()[0].split()[0] == "provider"


CONFIG = """
[report.projects.aliases]
"/home/ana/src/shop" = "shop"
"api-checkout" = "shop-api"

[report.projects.groups]
storefront = ["shop", "shop-api"]
"""


def test_project_aliases_and_groups_from_the_config_file(bc, home, tmp_path):
    from teams import codex_lines, write

    # the same repository checked out elsewhere on another machine: one alias by folder name
    write(home / ".codex" / "sessions" / "2026" / "03" / "06" / "rollout-2026-03-06T09-00-00-t-other.jsonl",
          codex_lines("t-other", "2026-03-06", "main", cwd="/Users/bo/api-checkout"))
    config = tmp_path / "config.toml"
    config.write_text(CONFIG)
    got = rows(report(bc, home, "--config", config, "--by", "project", "--format", "json"))
    assert got == {("shop",): (4, 5100), ("/home/bo/code/shop-api",): (2, 7700), ("shop-api",): (2, 7700)}
    got = rows(report(bc, home, "--config", config, "--by", "group", "--format", "json"))
    assert got == {("storefront",): (8, 20500)}
    # --project names a project as shown; a project in no group is a group of its own
    got = rows(report(bc, home, "--config", config, "--by", "group", "--project", "shop", "--format", "json"))
    assert got == {("storefront",): (4, 5100)}
    got = rows(report(bc, home, "--by", "group", "--format", "json"))
    assert got == {("/home/ana/src/shop",): (4, 5100), ("/home/bo/code/shop-api",): (2, 7700),
                   ("/Users/bo/api-checkout",): (2, 7700)}
    # a group may list a project by its recorded path though an alias renames it
    other = tmp_path / "other.toml"
    other.write_text('[report.projects.aliases]\n"/home/ana/src/shop" = "shop"\n'
                     '[report.projects.groups]\nweb = ["/home/ana/src/shop"]\n')
    cached = ("--cache-above", "0", "--cache-dir", tmp_path / "c")
    assert bc("report", home / ".claude", home / ".codex", *cached)[0] == 0  # the parts: polars next time
    for engine in (("--no-cache",), cached):
        code, out, err = bc("report", home / ".claude", home / ".codex", "--config", other, "--by", "group",
                            "--format", "json", *engine)
        assert code == 0, err
        assert rows(out)[("web",)] == (4, 5100)
    # the session view shows the alias too
    got = rows(report(bc, home, "--config", config, "--by", "session", "--format", "json"))
    assert ("s-claude", "claude", "shop") in got


@pytest.mark.parametrize(("text", "message"), [
    ('[report.projects]\ngroups = "shop"\n', "[report.projects.groups] maps a group to a list of projects"),
    ('[report.projects]\nalias = {a = "b"}\n', "[report.projects] has no key 'alias' (use `aliases` and `groups`)"),
    ('[report.projects.aliases]\n"/a" = 3\n', "[report.projects.aliases] maps a project to a name"),
])
def test_a_bad_project_table_is_a_usage_error_naming_the_file(bc, home, tmp_path, text, message):
    config = tmp_path / "config.toml"
    config.write_text(text)
    code, out, err = bc("report", home / ".claude", "--config", config, "--by", "group")
    assert code == 2 and out == ""
    assert f"{config}: {message}" in err
    assert "Traceback" not in err


VIEWS = [
    ("--by", "branch"),
    ("--by", "branch", "--breakdown", "--since", "2026-03-02"),
    ("--by", "provider", "--breakdown"),
    ("--by", "provider", "--until", "2026-03-02", "--order", "asc"),
    ("--by", "group"),
    ("--by", "group", "--breakdown", "--last", "1"),
]


@pytest.mark.parametrize("view", VIEWS, ids=lambda v: " ".join(v))
@pytest.mark.parametrize("fmt", ["table", "json", "csv"])
def test_the_views_are_the_same_bytes_on_every_path(bc, home, tmp_path, view, fmt):
    """The report without polars (`--no-cache`), the parts path with polars (the archive's parts written by
    an earlier report with other options) and the stored report replayed print the same bytes
    (`--executor ray`: tests/test_executor_ray.py)."""
    config = tmp_path / "config.toml"
    config.write_text(CONFIG)
    inputs = (home / ".claude", home / ".codex", "--config", config)
    cached = ("--cache-above", "0", "--cache-dir", tmp_path / "c")
    code, _, err = bc("report", *inputs, "--by", "day", "--format", "json", *cached)  # writes the parts
    assert code == 0, err
    outputs, notes = [], []
    for extra in (("--no-cache",), cached, cached):
        code, out, err = bc("report", *inputs, *view, "--format", fmt, *extra)
        assert code == 0, err
        outputs.append(out)
        notes.append(err)
    assert "0 parsed, 2 from cache" in notes[1] and "stored report" not in notes[1]  # polars over the parts
    assert "from cache (the stored report)" in notes[2]
    assert outputs[0] == outputs[1] == outputs[2]
    assert "unknown" in outputs[0] or "storefront" in outputs[0] or "anthropic" in outputs[0]


def test_parquet_and_json_lines_carry_the_new_keys(bc, home, tmp_path):
    import pyarrow.parquet as pq

    for by, keys in (("branch", ["project", "branch"]), ("provider", ["provider"]), ("group", ["group"])):
        target = tmp_path / f"{by}.parquet"
        report(bc, home, "--by", by, "--format", "parquet", "-o", target)
        table = pq.read_table(target)
        assert table.column_names[: len(keys)] == keys
        assert sum(table.column("requests").to_pylist()) == 6
        lines = [json.loads(line) for line in report(bc, home, "--by", by, "--format", "jsonl").splitlines()]
        assert [[line[k] for k in keys] for line in lines] == [list(r) for r in zip(
            *(table.column(k).to_pylist() for k in keys), strict=True)]
