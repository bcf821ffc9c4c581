"""Counted once, said plainly (issue 50): a pi fork or a migrated copy of a session counts each request
once, Copilot CLI's own compaction call is counted, a cut export is named, an unknown model is named."""

from __future__ import annotations

import json
import secrets
import uuid
from pathlib import Path

import pytest
from click.testing import CliRunner
from conftest import fixture_path

from batchcompact.cli import cli
from batchcompact.core.migrate import migrate

PATHS = [["--no-cache"], ["--cache-above", "0"]]  # the path without polars, and the parts


def report(tmp_path: Path, *args: object, cache: list[str], code: int = 0) -> dict:
    result = CliRunner().invoke(cli, ["report", *map(str, args), "--format", "json", *cache,
                                      "--cache-dir", str(tmp_path / "cache")], catch_exceptions=False)
    assert result.exit_code == code, result.output
    return json.loads(result.stdout)


def read_lines(path: Path) -> list[dict]:
    return [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines() if line.strip()]


def write_lines(path: Path, objects: list[dict]) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text("".join(json.dumps(o, separators=(",", ":")) + "\n" for o in objects), encoding="utf-8")
    return path


def pi_migrated(source: Path, target: Path) -> Path:
    """The v1 file as pi's `migrateToCurrentVersion` rewrites it: each entry a random 8-hex id
    (`generateId`: randomUUID().slice(0, 8)), parentId the previous entry, the header at version 3."""
    header, *entries = read_lines(source)
    previous = None
    for entry in entries:
        entry["id"], entry["parentId"] = secrets.token_hex(4), previous
        previous = entry["id"]
        if entry.get("type") == "compaction" and isinstance(entry.get("firstKeptEntryIndex"), int):
            entry["firstKeptEntryId"] = entries[entry.pop("firstKeptEntryIndex") - 1]["id"]
    return write_lines(target, [{**header, "version": 3}, *entries])


def our_migrated(source: Path, target: Path) -> Path:
    """The v1 file as batchcompact migrates it (`core.migrate`: ids derived from the session and position)."""
    header, *entries = read_lines(source)
    migrate(header, entries)
    return write_lines(target, [header, *entries])


def pi_fork(source: Path, folder: Path, leaf_index: int | None = None, cwd: str | None = None) -> Path:
    """A fork as pi writes it: `createBranchedSession(leaf)` (the path from the root to the leaf, entries
    copied verbatim) or, without a leaf, `forkFrom` (every entry, into `cwd`); a new session id and a header
    naming the parent file."""
    header, *entries = read_lines(source)
    by_id = {e["id"]: e for e in entries}
    if leaf_index is None:
        copied = entries
    else:
        copied, at = [], entries[leaf_index]
        while at is not None:
            copied.append(at)
            at = by_id.get(at.get("parentId"))
        copied.reverse()
    session = str(uuid.uuid4())
    fork_header = {"type": "session", "version": 3, "id": session, "timestamp": "2026-03-01T10:00:00.000Z",
                   "cwd": cwd or header.get("cwd"), "parentSession": str(source)}
    return write_lines(folder / f"2026-03-01T10-00-00-000Z_{session}.jsonl", [fork_header, *copied])


TOTALS = ("requests", "input_tokens", "output_tokens", "cache_read_tokens", "cache_write_tokens", "cost_usd")


def totals(data: dict) -> dict:
    return {k: data["totals"][k] for k in TOTALS}


@pytest.mark.parametrize("cache", PATHS)
def test_a_pi_fork_counts_its_copied_requests_once(tmp_path, cache):
    """A session and a `/fork` of its first 60% (and a `forkFrom` copy of all of it into another project)
    report what the session alone reports; each request stays the original session's."""
    v1 = fixture_path("pi", "large-session.jsonl")
    original = pi_migrated(v1, tmp_path / "sessions" / "a" / "original.jsonl")
    alone = report(tmp_path, original, "--by", "session", cache=cache)
    assert alone["totals"]["requests"] > 400
    entries = read_lines(original)[1:]
    branch = pi_fork(original, tmp_path / "sessions" / "a", leaf_index=int(len(entries) * 0.6))
    moved = pi_fork(original, tmp_path / "sessions" / "b", cwd="/elsewhere")
    for forks in ([branch], [moved], [branch, moved]):
        both = report(tmp_path, original, *forks, "--by", "session", cache=cache)
        assert totals(both) == totals(alone), forks
        assert [row["session_id"] for row in both["rows"]] == [row["session_id"] for row in alone["rows"]]
    # a fork alone still reports its copied requests (nothing else holds them)
    fork_only = report(tmp_path, branch, "--by", "session", cache=cache)
    assert 0 < fork_only["totals"]["requests"] < alone["totals"]["requests"]


@pytest.mark.parametrize("cache", PATHS)
def test_a_v1_session_and_its_migrated_copies_count_once(tmp_path, cache):
    """pi v1 rows were keyed by line number: the file, pi's v3 rewrite of it (random ids) and ours
    (derived ids) counted three times."""
    v1 = fixture_path("pi", "large-session.jsonl")
    alone = report(tmp_path, v1, cache=cache)
    by_pi = pi_migrated(v1, tmp_path / "pi" / "migrated.jsonl")
    by_us = our_migrated(v1, tmp_path / "ours" / "migrated.jsonl")
    for copies in ([by_pi], [by_us], [by_pi, by_us]):
        assert totals(report(tmp_path, v1, *copies, cache=cache)) == totals(alone), copies
