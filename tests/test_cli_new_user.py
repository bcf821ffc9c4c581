"""What a new user found (issue #56, items 12-22), from the command line: each test fails before its fix."""

from __future__ import annotations

import gzip
import json

from click.testing import CliRunner
from conftest import SAMPLES

from batchcompact.cli import cli

SMALL_FIX = SAMPLES / "pi" / "small-fix.jsonl"


def invoke(*args: str, **kwargs):
    return CliRunner().invoke(cli, list(args), catch_exceptions=False, **kwargs)


# ---- 12. plan: a piped table keeps its reasons whole; the summary counts errors by kind ----

def test_plan_piped_keeps_each_reason_whole_and_counts_errors_by_kind(tmp_path):
    packed = tmp_path / "packed.jsonl.gz"
    packed.write_bytes(gzip.compress(SMALL_FIX.read_bytes()))
    planned = invoke("plan", str(packed), str(SMALL_FIX))
    assert planned.exit_code == 1, planned.output
    reason = "gzip-compressed: decompress it first (gunzip), then run again"
    [line] = [line for line in planned.stdout.splitlines() if line.startswith(str(packed))]
    assert line.endswith(reason)
    assert "2 sessions: 1 error, 1 skip\n" in planned.stdout
    assert f"\n  1 error: 1 {reason}\n" in planned.stdout
    as_json = invoke("plan", str(packed), "--format", "json")
    assert f"\n  1 error: 1 {reason}\n" in as_json.stderr
