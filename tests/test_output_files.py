"""A command's output (-o FILE, --chart FILE, standard output): refused before the work when it cannot be
written, written whole or not at all, and a failure to write it said in one line with its exit code
(batchcompact/outfile.py). Subprocesses where the real standard output matters."""

from __future__ import annotations

import errno
import os
import stat
import subprocess
import sys
from pathlib import Path

import polars as pl
import pytest
from conftest import SAMPLES

from batchcompact.errors import OutputError
from batchcompact.outfile import open_text, replacing

PI_SESSION = SAMPLES / "pi" / "small-fix.jsonl"
FULL = Path("/dev/full")
needs_full = pytest.mark.skipif(not FULL.exists(), reason="no /dev/full on this system")

# Each command that writes results, with what it needs to run (`run` plans and writes the samples).
COMMANDS = {
    "report": ["report", str(SAMPLES), "--no-cache"],
    "plan": ["plan", str(SAMPLES)],
    "validate": ["validate", str(SAMPLES)],
    "eval": ["eval", str(PI_SESSION)],
    "config": ["config"],
    "show": ["show", str(PI_SESSION)],
}


def _cli(*args: str, **kw) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "batchcompact", *args], capture_output=True, text=True,
                          timeout=180, **kw)


def _one_line_error(proc: subprocess.CompletedProcess) -> str:
    lines = [line for line in proc.stderr.splitlines() if line.startswith("Error")]
    assert len(lines) == 1, proc.stderr
    assert "Traceback" not in proc.stderr and "internal error" not in proc.stderr, proc.stderr
    return lines[0]


@pytest.mark.parametrize("command", sorted(COMMANDS))
def test_an_output_file_in_a_missing_folder_is_refused_before_the_work(tmp_path, command):
    target = tmp_path / "missing" / "out.json"
    proc = _cli(*COMMANDS[command], "--format", "json", "-o", str(target))
    assert proc.returncode == 2, proc.stderr
    assert f"the folder {target.parent} does not exist" in _one_line_error(proc)


def test_a_run_whose_results_file_cannot_be_written_does_no_work(tmp_path):
    out = tmp_path / "out"
    proc = _cli("run", str(SAMPLES), "--output-dir", str(out), "--min-age", "0", "--state", str(tmp_path / "s.db"),
                "--format", "csv", "-o", str(tmp_path / "missing" / "rows.csv"))
    assert proc.returncode == 2, proc.stderr
    assert "does not exist" in _one_line_error(proc)
    assert not out.exists()  # refused before any session was planned or written


def test_a_run_may_write_its_results_inside_the_output_dir_it_makes(tmp_path):
    """`run ARCHIVE --output-dir OUT -o OUT/runs/rows.csv` on the first night, OUT not there yet: the run
    makes OUT, and the results' folder inside it."""
    out = tmp_path / "out"
    proc = _cli("run", str(SAMPLES), "--output-dir", str(out), "--min-age", "0", "--state", str(tmp_path / "s.db"),
                "--format", "csv", "-o", str(out / "runs" / "rows.csv"))
    assert proc.returncode == 0, proc.stderr
    rows = (out / "runs" / "rows.csv").read_text().splitlines()
    assert rows[0].startswith("run_id,") and len(rows) == 1 + 9  # a row per sample session


def test_a_chart_in_a_missing_folder_is_refused_before_the_work(tmp_path):
    proc = _cli("report", str(SAMPLES), "--no-cache", "--chart", str(tmp_path / "missing" / "cost.html"))
    assert proc.returncode == 2, proc.stderr
    assert "--chart" in _one_line_error(proc)


@needs_full
@pytest.mark.parametrize("command,fmt", [("report", "csv"), ("report", "parquet"), ("report", "table"),
                                         ("plan", "table"), ("plan", "parquet"), ("validate", "jsonl"),
                                         ("eval", "json"), ("config", "table"), ("show", "json")])
def test_a_full_disk_under_an_output_file_is_one_line_and_exit_3(command, fmt):
    proc = _cli(*COMMANDS[command], "--format", fmt, "-o", str(FULL))
    assert proc.returncode == 3, proc.stderr
    assert _one_line_error(proc) == "Error: /dev/full: cannot write: No space left on device"
    assert stat.S_ISCHR(FULL.stat().st_mode)  # written, never replaced or removed


@needs_full
@pytest.mark.parametrize("command", ["report", "plan", "show", "config"])
def test_a_full_standard_output_is_one_line_and_exit_3(command):
    with FULL.open("w") as full:
        proc = subprocess.run([sys.executable, "-m", "batchcompact", *COMMANDS[command]], stdout=full,
                              stderr=subprocess.PIPE, text=True, timeout=180)
    assert proc.returncode == 3, proc.stderr
    assert _one_line_error(proc) == "Error: standard output: cannot write: No space left on device"


@needs_full
def test_a_run_whose_results_cannot_be_written_keeps_its_work_and_exits_3(tmp_path):
    out = tmp_path / "out"
    proc = _cli("run", str(SAMPLES), "--output-dir", str(out), "--min-age", "0", "--state", str(tmp_path / "s.db"),
                "--format", "jsonl", "-o", str(FULL))
    assert proc.returncode == 3, proc.stderr
    assert _one_line_error(proc) == "Error: /dev/full: cannot write: No space left on device"
    assert list(out.rglob("*.jsonl"))  # the sessions were written
    assert list((out / ".batchcompact" / "reports").glob("compactions-*.parquet"))  # and the run's report


@pytest.mark.parametrize("command,fmt,where", [("validate", "json", "glob"), ("validate", "jsonl", "folder"),
                                               ("plan", "json", "folder"), ("plan", "csv", "glob"),
                                               ("report", "json", "folder")])
def test_an_error_puts_nothing_on_standard_output(tmp_path, command, fmt, where):
    """`validate '/nomatch/**/*.jsonl' --format json` printed `{"rows": [` and then the error: a program
    reading the JSON got half of it. Machine formats reach standard output whole or not at all."""
    (tmp_path / "notes").mkdir()
    (tmp_path / "notes" / "readme.txt").write_text("no session here\n")
    path = str(tmp_path / "nomatch" / "**" / "*.jsonl") if where == "glob" else str(tmp_path / "notes")
    proc = _cli(command, path, "--format", fmt)
    assert proc.returncode == 2, proc.stderr
    assert _one_line_error(proc).startswith("Error: no session files found under ")
    assert proc.stdout == ""


@pytest.mark.parametrize("command", ["report", "plan", "validate", "show"])
def test_a_reader_that_left_early_stops_the_command_quietly_with_141(command):
    """`batchcompact ... | head`: once the reader is gone, no traceback and no error line, exit 141 (as a
    program SIGPIPE stopped); the pipe is closed before the command writes a byte."""
    proc = subprocess.Popen([sys.executable, "-m", "batchcompact", *COMMANDS[command], "--format", "jsonl"],
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    proc.stdout.close()
    _, err = proc.communicate(timeout=180)
    assert proc.returncode == 141, err
    assert "Error" not in err and "Traceback" not in err and "Exception" not in err, err


def test_dash_is_standard_output(tmp_path):
    proc = _cli("report", str(SAMPLES), "--no-cache", "--format", "csv", "-o", "-", cwd=tmp_path)
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.startswith("date,")
    assert list(tmp_path.iterdir()) == []  # no file named "-"


def test_output_files_keep_their_mode_their_link_and_devices_stay_devices(tmp_path):
    kept = tmp_path / "kept.csv"
    kept.write_text("old\n")
    kept.chmod(0o640)
    link = tmp_path / "link.csv"
    link.symlink_to(kept.name)
    assert _cli("report", str(SAMPLES), "--no-cache", "--format", "csv", "-o", str(link)).returncode == 0
    assert link.is_symlink() and kept.read_text().startswith("date,")
    assert stat.S_IMODE(kept.stat().st_mode) == 0o640
    # a new file gets the umask's mode, as `>` would give it
    new = tmp_path / "new.parquet"
    proc = _cli("report", str(SAMPLES), "--no-cache", "--format", "parquet", "-o", str(new),
                preexec_fn=lambda: os.umask(0o077))
    assert proc.returncode == 0, proc.stderr
    assert stat.S_IMODE(new.stat().st_mode) == 0o600 and pl.read_parquet(new).height > 0
    # a device is written, never replaced by a file
    assert _cli("plan", str(SAMPLES), "--format", "csv", "-o", os.devnull).returncode == 0
    assert stat.S_ISCHR(os.stat(os.devnull).st_mode)
    assert sorted(p.name for p in tmp_path.iterdir()) == ["kept.csv", "link.csv", "new.parquet"]  # no temp left


def test_config_writes_its_table_to_the_output_file(tmp_path):
    target = tmp_path / "settings.toml"
    proc = _cli("config", "-o", str(target))
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout == "" and target.read_text().startswith("# config file:")


def test_a_failed_write_leaves_the_old_file_and_no_temp(tmp_path):
    target = tmp_path / "report.csv"
    target.write_text("the old report\n")
    with pytest.raises(OutputError, match=r"report.csv: cannot write: No space left on device"):
        with open_text(target) as handle:
            handle.write("half of a new report")
            raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC))
    assert target.read_text() == "the old report\n"
    assert [p.name for p in tmp_path.iterdir()] == ["report.csv"]


def test_an_interrupted_write_leaves_the_old_file_and_no_temp(tmp_path):
    target = tmp_path / "report.parquet"
    target.write_bytes(b"old")
    with pytest.raises(KeyboardInterrupt):
        with replacing(target) as where:
            Path(where).write_bytes(b"half")
            raise KeyboardInterrupt
    assert target.read_bytes() == b"old"
    assert [p.name for p in tmp_path.iterdir()] == ["report.parquet"]


def test_another_files_error_is_not_called_an_output_error(tmp_path):
    """An OSError of another file met while the rows are made (a bug there) keeps its own name."""
    with pytest.raises(FileNotFoundError) as caught:
        with open_text(tmp_path / "out.csv"):
            open(tmp_path / "some-session.jsonl", "rb")
    assert not isinstance(caught.value, OutputError)
    assert [p.name for p in tmp_path.iterdir()] == []


@pytest.mark.parametrize("command", ["plan", "report", "validate", "run"])
def test_results_are_never_written_over_a_session(tmp_path, command):
    """`plan ARCHIVE -o ARCHIVE/s.jsonl` (a slip of the keyboard) would replace a session with rows: an
    existing -o FILE that is a session transcript is refused before the work (exit 2), its bytes kept.
    A results file of an earlier run is written over as before."""
    session = tmp_path / "s.jsonl"
    session.write_bytes(PI_SESSION.read_bytes())
    extra = ["--output-dir", str(tmp_path / "out"), "--min-age", "0", "--state", str(tmp_path / "st.db")] \
        if command == "run" else []
    args = [command, str(SAMPLES), *extra, "--format", "jsonl", "-o"]

    proc = _cli(*args, str(session))

    assert proc.returncode == 2, proc.stderr
    assert "that is a pi session transcript" in _one_line_error(proc)
    assert session.read_bytes() == PI_SESSION.read_bytes() and not (tmp_path / "out").exists()
    rows = tmp_path / "rows.jsonl"
    for _ in range(2):  # the second time, over the first one's rows
        assert _cli(*args, str(rows)).returncode == 0
    assert rows.read_text().count("\n") > 0


@pytest.mark.parametrize("command", [["report", str(SAMPLES), "--no-cache", "--by", "session"],
                                     ["report", str(SAMPLES), "--no-cache", "--by", "block"],
                                     ["run", str(SAMPLES / "pi"), "--min-age", "0"]])
def test_times_have_one_form_in_csv_and_json(tmp_path, command):
    """CSV times ended `+0000` (the report's) or `2026-… 13:29:32…` (run's rows), JSON times `+00:00`:
    every machine format writes ISO 8601 with `+00:00`."""
    import csv
    import io
    import json
    import re

    def run(fmt: str, n: int) -> str:
        extra = ["--output-dir", str(tmp_path / f"out{n}"), "--state", str(tmp_path / f"s{n}.db")] \
            if command[0] == "run" else []
        proc = _cli(*command, *extra, "--format", fmt)
        assert proc.returncode == 0, proc.stderr
        return proc.stdout

    iso = re.compile(r"^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d(\.\d{6})?\+00:00$")
    rows = list(csv.DictReader(io.StringIO(run("csv", 1))))
    times = [v for row in rows for k, v in row.items() if k.endswith(("_at", "timestamp", "_start", "_end")) and v]
    assert times and all(iso.match(t) for t in times), times[:4]
    doc = run("json", 2)
    found = [v for row in json.loads(doc)["rows"] for k, v in row.items()
             if k.endswith(("_at", "timestamp", "_start", "_end")) and v]
    assert found and all(iso.match(t) for t in found), found[:4]
