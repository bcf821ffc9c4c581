"""Parity with the anchor: ccusage 20 (npm, its native build, `--offline --json`) on the fixtures.

ccusage is installed from npm into a cache folder (`$BATCHCOMPACT_TEST_CACHE` or
`~/.cache/batchcompact-tests`), once; the test is skipped with the reason only when npm or the registry
cannot be reached, and fails then too when `CI` is set. Both tools read the same tmp layout (`CLAUDE_CONFIG_DIR`, `CODEX_HOME`,
`PI_AGENT_DIR` pointing at copies of ../shared/fixtures, coverage files included) and are compared per
day and per session, tokens and cost (computed from the same litellm prices), for Claude, Codex and pi.
Every difference that remains is listed in `KNOWN_DIFFERENCES` and in docs/report.md, with the reason.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
from collections import defaultdict
from pathlib import Path

import pytest
from conftest import shared_fixtures, unavailable

from batchcompact.report import ReportSettings, build_report, collect_usage

pytestmark = pytest.mark.slow

# `ccusage@20` resolves to 20.0.26, whose launcher needs @ccusage/ccusage-linux-x64@20.0.26, a package
# the registry does not have (the native packages stop at 20.0.24); then 20.0.24 is installed.
CCUSAGE_SPECS = ("ccusage@20", "ccusage@20.0.24")
TOKEN_FIELDS = ("input", "output", "cache_write", "cache_read", "total")
AGENTS = ("claude", "codex", "pi")


def _cache_root() -> Path:
    base = os.environ.get("BATCHCOMPACT_TEST_CACHE") or Path.home() / ".cache" / "batchcompact-tests"
    return Path(base)


def _runs(binary: Path) -> str | None:
    try:
        done = subprocess.run([str(binary), "--version"], capture_output=True, text=True, timeout=60)
    except (OSError, subprocess.TimeoutExpired):
        return None
    return done.stdout.strip() if done.returncode == 0 and done.stdout.strip() else None


@pytest.fixture(scope="session")
def ccusage() -> tuple[Path, str]:
    """(the ccusage executable, its version), installed from npm into the cache folder on first use."""
    npm = shutil.which("npm")
    errors = []
    for spec in CCUSAGE_SPECS:
        prefix = _cache_root() / spec.replace("@", "-")
        binary = prefix / "node_modules" / ".bin" / "ccusage"
        version = _runs(binary) if binary.exists() else None
        if version is None and npm:
            prefix.mkdir(parents=True, exist_ok=True)
            try:
                done = subprocess.run(
                    [npm, "install", "--prefix", str(prefix), "--no-audit", "--no-fund", spec],
                    capture_output=True,
                    text=True,
                    timeout=300,
                )
            except subprocess.TimeoutExpired:
                errors.append(f"{spec}: npm install timed out")
                continue
            if done.returncode != 0:
                errors.append(f"{spec}: {done.stderr.strip().splitlines()[-1:] or done.returncode}")
                continue
            version = _runs(binary)
        if version:
            return binary, version
        errors.append(f"{spec}: installed launcher does not run (no native build for this platform)")
    if not npm:
        unavailable("npm is not installed, so ccusage cannot be fetched")
    if all("ENOTFOUND" in e or "EAI_AGAIN" in e or "ECONNREFUSED" in e or "timed out" in e for e in errors):
        unavailable("the npm registry cannot be reached: " + "; ".join(errors))
    raise AssertionError("could not install a working ccusage 20: " + "; ".join(errors))


@pytest.fixture(scope="module")
def layout(tmp_path_factory) -> Path:
    """The fixtures in the agents' on-disk layout (coverage files as one more project / day folder)."""
    fixtures_dir = shared_fixtures()
    root = tmp_path_factory.mktemp("agents")
    shutil.copytree(fixtures_dir / "claude" / "projects", root / "claude" / "projects")
    shutil.copytree(fixtures_dir / "claude" / "coverage", root / "claude" / "projects" / "coverage")
    shutil.copytree(fixtures_dir / "codex" / "sessions", root / "codex" / "sessions")
    shutil.copytree(fixtures_dir / "codex" / "coverage", root / "codex" / "sessions" / "coverage")
    pi = root / "pi" / "sessions" / "--work--"
    pi.mkdir(parents=True)
    for path in (fixtures_dir / "pi").glob("*.jsonl"):
        shutil.copy(path, pi)
    (root / "home").mkdir()
    for path in root.rglob("*"):
        path.chmod(0o755 if path.is_dir() else 0o644)
    return root


def run_ccusage(ccusage, layout: Path, agent: str, view: str) -> dict:
    binary, _ = ccusage
    env = {
        "PATH": os.environ.get("PATH", ""),
        "HOME": str(layout / "home"),
        "CLAUDE_CONFIG_DIR": str(layout / "claude"),
        "CODEX_HOME": str(layout / "codex"),
        "PI_AGENT_DIR": str(layout / "pi" / "sessions"),
        "NO_COLOR": "1",
    }
    done = subprocess.run(
        [str(binary), agent, view, "--offline", "--json", "--timezone", "UTC"],
        capture_output=True,
        text=True,
        env=env,
        timeout=120,
    )
    assert done.returncode == 0, done.stderr
    return json.loads(done.stdout)


def ccusage_rows(doc: dict, agent: str, view: str) -> dict[str, dict]:
    """ccusage JSON -> {key: {tokens..., cost}} with our field names."""
    out = {}
    for row in doc["daily" if view == "daily" else "sessions"]:
        key = row["date"] if view == "daily" else row["sessionId"]
        out[key] = {
            "input": row["inputTokens"],
            "output": row["outputTokens"],
            "cache_write": row["cacheCreationTokens"],
            "cache_read": row["cacheReadTokens"],
            "total": row["totalTokens"],
            "cost": row.get("totalCost", row.get("costUSD")),
        }
        for ours, theirs in (("first", "firstActivity"), ("last", "lastActivity")):
            if view == "session" and theirs in row:
                out[key][ours] = _ms(row[theirs])
    return out


def _ms(value) -> str:
    """A UTC time to the millisecond, the way ccusage prints it."""
    from datetime import UTC, datetime

    if isinstance(value, str):
        value = datetime.fromisoformat(value.replace("Z", "+00:00"))
    return value.astimezone(UTC).strftime("%Y-%m-%dT%H:%M:%S.") + f"{value.microsecond // 1000:03d}Z"


def session_names(layout: Path, agent: str) -> dict[str, str]:
    """Our session id -> ccusage's session name for each file (ccusage names sessions by path)."""
    names: dict[str, str] = {}
    for path in sorted((layout / agent).rglob("*.jsonl")):
        ours = None
        with open(path, encoding="utf-8") as fh:
            for line in fh:
                try:
                    obj = json.loads(line)
                except ValueError:
                    continue
                if agent == "claude":
                    ours = obj.get("sessionId") or (obj.get("data") or {}).get("sessionId")
                elif agent == "codex" and obj.get("type") == "session_meta":
                    ours = obj["payload"].get("id")
                elif agent == "pi" and obj.get("type") == "session":
                    ours = obj.get("id")
                if ours:
                    break
        if agent == "claude":
            parts = path.relative_to(layout / "claude" / "projects").parts
            theirs = parts[-3] if len(parts) >= 4 and parts[-2] == "subagents" else path.stem
        elif agent == "codex":
            theirs = path.relative_to(layout / "codex" / "sessions").with_suffix("").as_posix()
        else:
            theirs = path.stem
        names[ours or path.stem] = theirs
    return names


def our_rows(layout: Path, agent: str, view: str, tmp_path) -> dict[str, dict]:
    collected = collect_usage([layout / agent], cache_dir=tmp_path / "cache", jobs=1)
    try:
        by = "day" if view == "daily" else "session"
        report = build_report(collected.parts, ReportSettings(by=by, sources=(agent,)))
    finally:
        collected.cleanup()
    names = session_names(layout, agent) if view == "session" else {}
    out: dict[str, dict] = defaultdict(lambda: dict.fromkeys((*TOKEN_FIELDS, "cost"), 0))
    for row in report.rows.iter_rows(named=True):
        key = row["date"] if view == "daily" else names.get(row["session_id"], row["session_id"])
        cell = out[key]
        for ours, field in zip(
            ("input_tokens", "output_tokens", "cache_write_tokens", "cache_read_tokens", "total_tokens"),
            TOKEN_FIELDS,
            strict=True,
        ):
            cell[field] += row[ours]
        cell["cost"] += row["cost_usd"] or 0.0
        if view == "session":
            cell["first"], cell["last"] = _ms(row["first_timestamp"]), _ms(row["last_timestamp"])
    return dict(out)


def differences(ours: dict, theirs: dict) -> dict[str, dict]:
    """Per key: {field: (ours, theirs)} for every field that differs (cost to a micro-dollar)."""
    out = {}
    for key in sorted(set(ours) | set(theirs)):
        a, b = ours.get(key), theirs.get(key)
        if a is None or b is None:
            out[key] = {"missing": ("ours" if a is None else "ccusage")}
            continue
        diff = {f: (a[f], b[f]) for f in TOKEN_FIELDS if a[f] != b[f]}
        if abs((a["cost"] or 0) - (b["cost"] or 0)) > 1e-6:
            diff["cost"] = (round(a["cost"], 6), round(b["cost"] or 0, 6))
        diff.update({f: (a.get(f), b[f]) for f in ("first", "last") if f in b and a.get(f) != b[f]})
        if diff:
            out[key] = diff
    return out


SUBAGENT_SESSION = "4d5611e5-241a-462a-8d15-5122611a9569"
# Every difference left, with its reason (the same list, in words, is in docs/report.md).
KNOWN_DIFFERENCES = {
    # ccusage 20's session view parses only lines with a top-level `message.usage`, so the Task
    # sub-agent requests carried by `agent_progress` lines (11 requests, 604,344 tokens) are in its
    # daily view but not in its session view. We count them in both.
    ("claude", "session"): {
        SUBAGENT_SESSION: {
            "input": (233, 180),
            "output": (28_898, 28_763),
            "cache_write": (559_000, 488_218),
            "cache_read": (12_316_771, 11_783_397),
            "total": (12_904_902, 12_300_558),
            "cost": (10.090665, 9.663036),
        }
    },
}


@pytest.mark.parametrize("view", ["daily", "session"])
@pytest.mark.parametrize("agent", AGENTS)
def test_tokens_and_cost_match_ccusage(ccusage, layout, agent, view, tmp_path):
    theirs = ccusage_rows(run_ccusage(ccusage, layout, agent, view), agent, view)
    ours = our_rows(layout, agent, view, tmp_path)
    assert theirs, f"ccusage {ccusage[1]} found no {agent} usage in {layout}"
    assert differences(ours, theirs) == KNOWN_DIFFERENCES.get((agent, view), {})


def test_billing_blocks_match_ccusage(ccusage, layout, tmp_path):
    """`--by block` against `ccusage blocks`: the same windows, gaps, requests, tokens and cost."""
    binary, _ = ccusage
    env = {"PATH": os.environ.get("PATH", ""), "HOME": str(layout / "home"),
           "CLAUDE_CONFIG_DIR": str(layout / "claude"), "NO_COLOR": "1"}
    done = subprocess.run([str(binary), "blocks", "--offline", "--json", "--timezone", "UTC"],
                          capture_output=True, text=True, env=env, timeout=120)
    assert done.returncode == 0, done.stderr
    theirs = [
        (_ms(b["startTime"]) if not b["isGap"] else b["id"][len("gap-"):], _ms(b["endTime"]), b["isGap"],
         b["entries"], b["totalTokens"], round(b["costUSD"], 6), b["isActive"])
        for b in json.loads(done.stdout)["blocks"]
    ]
    collected = collect_usage([layout / "claude"], cache_dir=tmp_path / "cache", jobs=1)
    try:
        report = build_report(collected.parts, ReportSettings(by="block"))
    finally:
        collected.cleanup()
    ours = [
        (_ms(r["block_start"]), _ms(r["block_end"]), r["gap"], r["requests"], r["total_tokens"],
         round(r["cost_usd"], 6), r["active"])
        for r in report.rows.iter_rows(named=True)
    ]
    assert len(ours) == len(theirs)
    differ = [(o, t) for o, t in zip(ours, theirs, strict=True) if o != t]
    # ccusage 20's blocks, like its session view, leave out the 11 agent_progress sub-agent requests
    assert differ == [(
        ("2026-02-12T16:00:00.000Z", "2026-02-12T21:00:00.000Z", False, 131, 10_986_290, 8.555422, False),
        ("2026-02-12T16:00:00.000Z", "2026-02-12T21:00:00.000Z", False, 120, 10_381_946, 8.127793, False),
    )]
