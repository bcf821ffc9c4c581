"""What the commands say, from the command line (issue #50, "Said wrong"): one exit-code rule for plan, run
and validate, one wording for a file batchcompact reports but does not compact, messages that name a file
once and count in words."""

from __future__ import annotations

import csv
import errno
import io
import json
import os
import re
import shutil
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


# ---- 8. one form of time in every text format, the export's included ----

ISO = re.compile(r"^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{6}\+00:00$")


@pytest.mark.parametrize("fmt", ["jsonl", "csv"])
def test_the_request_export_writes_times_as_every_text_format_does(tmp_path, fmt):
    """The export wrote `2025-06-10T12:36:26.585000Z`; docs/cli.md promises `+00:00` everywhere. It is
    still read back (and an old export with `Z` too)."""
    out = tmp_path / f"requests.{fmt}"
    done = invoke("report", str(SAMPLES), "--no-cache", "--by", "request", "--format", fmt, "-o", str(out))
    assert done.exit_code == 0, done.output
    if fmt == "jsonl":
        times = [json.loads(line)["timestamp"] for line in out.read_text().splitlines()]
    else:
        times = [row["timestamp"] for row in csv.DictReader(io.StringIO(out.read_text()))]
    assert times and all(ISO.match(t) for t in times if t), times[:3]
    old = tmp_path / f"old.{fmt}"
    old.write_text(out.read_text().replace("+00:00", "Z"))
    again = invoke("report", str(out), "--no-cache", "--format", "json")
    before = invoke("report", str(old), "--no-cache", "--format", "json")
    assert again.exit_code == 0 and before.exit_code == 0, again.output + before.output
    assert json.loads(again.stdout)["totals"] == json.loads(before.stdout)["totals"]


def test_json_rows_write_whole_seconds_with_six_decimals_too():
    done = invoke("report", str(SAMPLES), "--no-cache", "--by", "block", "--format", "json")
    starts = [row["block_start"] for row in json.loads(done.stdout)["rows"]]
    assert starts and all(ISO.match(t) for t in starts), starts[:3]


# ---- 9. messages that name a file once and count in words ----

def test_a_database_that_is_not_one_we_know_is_named_once():
    """`kilo.db: kilo.db: no `session` table`: the store's reason named its database, and the row (or line,
    or error) that reports it named it again. kilo.db is Kilo's, and says what it holds (it was "not an
    OpenCode database", #56 item 20)."""
    db = fixture_path("agents", "kilo", ".local", "share", "kilo", "kilo.db")
    planned = invoke("plan", str(db), "--format", "json")
    [row] = json.loads(planned.stdout)["rows"]
    assert row["reason"] == "no `session` table (it holds only `message`): not a Kilo session database this version knows"
    checked = invoke("validate", str(db))
    assert checked.stdout == f"{db}: error: no `session` table (it holds only `message`): not a Kilo session database this version knows\n"
    shown = invoke("show", str(db))
    assert shown.exit_code == 1
    assert shown.stderr.strip() == f"Error: {db}: no `session` table (it holds only `message`): not a Kilo session database this version knows"
    scored = invoke("eval", str(db), "--format", "json")
    assert json.loads(scored.stdout)["problems"] == [
        f"{db}: no `session` table (it holds only `message`): not a Kilo session database this version knows"]


def test_a_session_that_names_no_model_says_so():
    path = fixture_path("agents", "codex-edge-cases", "ccusage-branch-copy-original-timestamps", "sessions", "2026",
                        "05", "12", "2026-05-12T08-00-00-parent.jsonl")
    [row] = json.loads(invoke("plan", str(path), "--format", "json").stdout)["rows"]
    assert row["reason"] == "unknown context window: the session names no model; pass --context-window N"


@pytest.mark.parametrize("bad_lines,said", [(2, " (and 1 more problem)"), (3, " (and 2 more problems)")])
def test_more_problems_are_counted_in_words(tmp_path, bad_lines, said):
    path = tmp_path / "s.jsonl"
    path.write_text('{"type":"session","version":3,"id":"s","timestamp":"2026-01-01T00:00:00Z","cwd":"/"}\n'
                    + "[1]\n" * bad_lines)  # a line pi skips ({oops) is a warning
    [row] = json.loads(invoke("plan", str(path), "--format", "json").stdout)["rows"]
    assert row["reason"].endswith(said), row["reason"]


def test_eval_counts_one_compaction_in_words(tmp_path):
    done = invoke("eval", str(SAMPLES / "pi" / "big-refactor.jsonl"))
    assert done.exit_code == 0, done.output
    assert "eval: 1 compaction scored, " in done.stderr, done.stderr


def test_a_file_the_report_could_not_read_is_not_counted_as_parsed(tmp_path):
    """`1 file: 1 parsed, 0 from cache, 1 not read`: the one file was counted twice."""
    odd = tmp_path / "odd.jsonl"
    odd.write_text('{"hello": "world"}\n')
    for extra in (["--no-cache"], ["--cache-dir", str(tmp_path / "c")], ["--cache-dir", str(tmp_path / "c")]):
        done = invoke("report", str(odd), *extra)
        assert done.exit_code == 0, done.output
        assert done.stderr.splitlines()[-1].startswith("1 file: 0 parsed, 0 from cache"), done.stderr
        assert done.stderr.splitlines()[-1].endswith(", 1 not read (named above)"), done.stderr


# ---- 10. a Parquet file that is no export, named on the command line ----

@pytest.mark.parametrize("name", ["table.parquet", "table.bin"])
def test_a_parquet_file_that_is_no_export_is_said_to_be_one(tmp_path, name):
    """It was `binary, not UTF-8 JSONL text (byte 7)`; docs/report.md promises a warning that it is not an
    export. Known by Parquet's magic bytes, whatever its name."""
    import polars as pl

    table = tmp_path / name
    pl.DataFrame({"a": [1, 2]}).write_parquet(table)
    done = invoke("report", str(table), "--no-cache")
    assert done.exit_code == 0, done.output
    assert done.stderr.splitlines()[0] == (f"warning: {table}: a Parquet file, but not a usage export "
                                           "(`report --by request`) nor a run report of batchcompact's")
    checked = invoke("validate", str(table))
    assert checked.stdout == f"{table}: error: a Parquet file, not a session transcript\n"


# ---- 11. an OS error said in the system's words, whichever option met it ----

def _read_only_mount_works() -> bool:
    if shutil.which("unshare") is None:
        return False
    probe = subprocess.run(["unshare", "-rm", "sh", "-c", "mount -t tmpfs -o ro none /mnt"], capture_output=True)
    return probe.returncode == 0


@pytest.mark.skipif(not _read_only_mount_works(),
                    reason="no read-only mount here (unshare -rm: user and mount namespaces refused)")
def test_output_file_and_output_dir_on_a_read_only_filesystem_say_the_same(tmp_path):
    """`-o` said `(permission denied)` where `--output-dir` said `(Read-only file system)`: a real read-only
    tmpfs (a private mount namespace), the CLI run inside it."""
    ro = tmp_path / "ro"
    ro.mkdir()
    script = (f"mount -t tmpfs -o ro none {ro} && "
              f"{sys.executable} -m batchcompact plan {SAMPLES / 'pi'} --format json -o {ro / 'p.json'}; "
              f"{sys.executable} -m batchcompact run {SAMPLES / 'pi'} --output-dir {ro / 'out'} --min-age 0 "
              f"--state {tmp_path / 's.db'}")
    done = subprocess.run(["unshare", "-rm", "sh", "-c", script], capture_output=True, text=True, timeout=120)
    assert done.stderr.splitlines() == [
        f"Error: -o/--output {ro / 'p.json'}: cannot write in the folder {ro} (Read-only file system)",
        f"Error: --output-dir {ro / 'out'}: cannot write in the folder {ro} (Read-only file system)",
    ], done.stderr


@pytest.mark.parametrize("code", [errno.EROFS, errno.EACCES])
def test_an_unwritable_output_folder_is_said_by_its_real_error(tmp_path, monkeypatch, code):
    """Where the folder's permissions say no, the reason is the error making a file there gives, the same
    for `-o FILE` and `--output-dir` (in process: the error the filesystem would give, injected)."""
    import tempfile

    locked = tmp_path / "locked"
    locked.mkdir()
    access = os.access
    monkeypatch.setattr(os, "access", lambda p, mode, **kw: False if str(p) == str(locked) else access(p, mode, **kw))

    def refused(*args, dir=None, **kwargs):
        raise OSError(code, os.strerror(code), str(dir))

    monkeypatch.setattr(tempfile, "mkstemp", refused)
    said = os.strerror(code)
    planned = invoke("plan", str(SAMPLES / "pi"), "--format", "json", "-o", str(locked / "p.json"))
    assert planned.exit_code == 2
    assert planned.stderr.strip() == (f"Error: -o/--output {locked / 'p.json'}: cannot write in the folder "
                                      f"{locked} ({said})")
    ran = invoke("run", str(SAMPLES / "pi"), "--output-dir", str(locked / "out"), "--state", str(tmp_path / "s.db"))
    assert ran.exit_code == 2
    assert ran.stderr.strip() == f"Error: --output-dir {locked / 'out'}: cannot write in the folder {locked} ({said})"


# ---- 13. `show DB` on a database of one session shows it ----

def test_show_a_database_of_one_session_shows_that_session(tmp_path):
    """It refused: "an OpenCode database of 1 session; name one as DB#<session id>". A database of more
    still asks for one, naming how many."""
    import sqlite3

    db = tmp_path / "opencode.db"
    shutil.copyfile(REPO / "tests" / "data" / "recorded" / "opencode" / "compacted.db", db)
    [session_id] = [row[0] for row in sqlite3.connect(db).execute("SELECT id FROM session")]
    alone = invoke("show", str(db), "--format", "json")
    named = invoke("show", f"{db}#{session_id}", "--format", "json")
    assert alone.exit_code == 0, alone.output
    assert alone.stdout == named.stdout and json.loads(alone.stdout)["rows"][0]["session_id"] == session_id
    conn = sqlite3.connect(db)
    conn.execute("CREATE TEMP TABLE t AS SELECT * FROM session")
    conn.execute("UPDATE t SET id = 'ses_other'")
    conn.execute("INSERT INTO session SELECT * FROM t")
    conn.commit()
    conn.close()
    two = invoke("show", str(db))
    assert two.exit_code == 1
    assert two.stderr.strip() == (f"Error: {db}: an OpenCode database of 2 sessions; name one as "
                                  f"{db}#<session id>")


# ---- 14. a run that skipped every session for its age says how to include them ----

def test_a_run_that_skipped_every_session_for_its_age_ends_saying_how_to_include_them(tmp_path):
    """A session copied a moment ago was skipped as `modified within --min-age 10m (live?)`, and nothing
    said how to compact it anyway."""
    fresh = tmp_path / "fresh"
    shutil.copytree(SAMPLES / "pi", fresh, copy_function=shutil.copyfile)  # copied now: every file is fresh
    done = invoke("run", str(fresh), "--output-dir", str(tmp_path / "out"), "--state", str(tmp_path / "s.db"))
    assert done.exit_code == 0, done.output
    count = len(list(fresh.glob("*.jsonl")))
    assert f"  {count} skipped: {count} modified within --min-age 10m (live?)" in done.stdout.splitlines()
    assert done.stdout.splitlines()[-1] == (f"nothing compacted: all {count} sessions were modified within "
                                            "--min-age 10m; to include them anyway, rerun with --min-age 0")
    one = invoke("run", str(fresh / "small-fix.jsonl"), "--output-dir", str(tmp_path / "out1"), "--min-age", "1h",
                 "--state", str(tmp_path / "s1.db"))
    assert one.stdout.splitlines()[-1] == ("nothing compacted: the session was modified within --min-age 1h; "
                                           "to include it anyway, rerun with --min-age 0")
    quiet = invoke("-q", "run", str(fresh), "--output-dir", str(tmp_path / "out2"), "--state", str(tmp_path / "s2.db"))
    assert quiet.stdout == quiet.stderr == ""  # -q: a clean run prints nothing


def test_a_run_that_compacted_something_does_not_suggest_min_age_0(tmp_path):
    done = invoke("run", str(SAMPLES / "pi"), "--output-dir", str(tmp_path / "out"), "--min-age", "0",
                  "--state", str(tmp_path / "s.db"))
    assert done.exit_code == 0, done.output
    assert "--min-age 0" not in done.stdout


def test_show_counts_in_words(tmp_path):
    """`path of 1 entries`, `context: 1 messages, ~1 tokens`."""
    from factories import Builder

    b = Builder()
    b.user("x")
    path = b.write(tmp_path / "one.jsonl")
    shown = invoke("show", str(path)).stdout.splitlines()
    assert "active leaf: 00000001 (line 2), path of 1 entry" in shown
    assert "context: 1 message, ~1 token" in shown
