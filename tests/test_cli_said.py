"""What the commands say, from the command line (issue #50, "Said wrong"): one exit-code rule for plan, run
and validate, one wording for a file batchcompact reports but does not compact, messages that name a file
once and count in words."""

from __future__ import annotations

import json
import subprocess
import sys

import pytest
from click.testing import CliRunner
from conftest import REPO, SAMPLES, fixture_path

from batchcompact.cli import cli

BROKEN = REPO / "examples" / "broken"
KIMI = ("agents", "kimi", "kimi-cli-legacy-wire", ".kimi", "sessions", "group", "session-a", "wire.jsonl")
OTEL = ("agents", "copilot", "otel", "copilot-otel.jsonl")


def invoke(*args: str):
    return CliRunner().invoke(cli, list(args), catch_exceptions=False)


# ---- 6. one exit-code rule: an `error` row fails plan as an invalid file fails validate and run ----

def test_plan_exits_1_when_a_row_is_an_error_as_validate_and_run_do(tmp_path):
    planned = invoke("plan", str(BROKEN), "--format", "json")
    rows = json.loads(planned.stdout)["rows"]
    assert any(row["status"] == "error" for row in rows)
    assert planned.exit_code == 1, planned.output
    assert invoke("validate", str(BROKEN)).exit_code == 1
    ran = invoke("run", str(BROKEN), "--output-dir", str(tmp_path / "out"), "--min-age", "0",
                 "--state", str(tmp_path / "s.db"))
    assert ran.exit_code == 1, ran.output


def test_plan_without_error_rows_still_exits_0():
    planned = invoke("plan", str(SAMPLES / "pi"), "--format", "json")
    assert planned.exit_code == 0, planned.output
    assert all(row["status"] != "error" for row in json.loads(planned.stdout)["rows"])


# ---- 12. a file of an agent batchcompact does not compact is skipped, never failed ----

@pytest.mark.parametrize("parts", [KIMI, OTEL], ids=["kimi", "copilot-otel"])
def test_a_file_batchcompact_only_reports_is_skipped_by_plan_run_validate_and_eval(tmp_path, parts):
    source = fixture_path(*parts)
    what = "a Kimi transcript" if parts == KIMI else "a Copilot CLI OpenTelemetry export"
    reason = f"{what}: reported, not compacted"
    planned = invoke("plan", str(source), "--format", "json")
    assert planned.exit_code == 0, planned.output
    [row] = json.loads(planned.stdout)["rows"]
    assert (row["status"], row["reason"]) == ("skip", reason)
    ran = invoke("run", str(source), "--output-dir", str(tmp_path / "out"), "--min-age", "0",
                 "--state", str(tmp_path / "s.db"), "--format", "json")
    assert ran.exit_code == 0, ran.output
    [row] = json.loads(ran.stdout)["rows"]
    assert (row["status"], row["reason"]) == ("skipped", reason)
    checked = invoke("validate", str(source), "--format", "json")
    assert checked.exit_code == 0, checked.output
    assert json.loads(checked.stdout)["rows"][0]["valid"] is True
    scored = invoke("eval", str(source), "--format", "json")
    assert scored.exit_code == 0, scored.output
    assert json.loads(scored.stdout)["skipped"] == {reason: 1}


# ---- 7. a reader that leaves mid-write: exit 141, not 0 with the rest of the write dropped ----

@pytest.mark.parametrize("args", [["report", str(SAMPLES), "--no-cache", "--by", "request", "--format", "jsonl"],
                                  ["report", str(SAMPLES), "--no-cache", "--by", "request", "--format", "csv"]],
                         ids=["jsonl", "csv"])
def test_a_reader_that_leaves_after_the_first_line_stops_the_report_with_141(args):
    """`report --by request --format jsonl | head -1`: the export (650 kB) is one write, of which the pipe
    takes 64 kB before its reader leaves; the short write used to be dropped and the command ended 0."""
    proc = subprocess.Popen([sys.executable, "-m", "batchcompact", *args], stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE)
    first = proc.stdout.readline()  # what `head -1` reads, then it leaves with the rest unread
    proc.stdout.close()
    _, err = proc.communicate(timeout=180)
    assert first.startswith((b'{"export_version"', b"export_version,")), first[:80]
    assert proc.returncode == 141, err
    assert b"Error" not in err and b"Traceback" not in err, err


def test_standard_output_read_to_the_end_gets_every_byte():
    """The loop over short writes writes everything when the reader stays (the export, 650 kB)."""
    whole = subprocess.run([sys.executable, "-m", "batchcompact", "report", str(SAMPLES), "--no-cache", "--by",
                            "request", "--format", "jsonl"], capture_output=True, timeout=180)
    assert whole.returncode == 0, whole.stderr
    lines = whole.stdout.decode().splitlines()
    assert len(whole.stdout) > 200_000 and all(json.loads(line)["export_version"] for line in lines)
