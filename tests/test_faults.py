"""The fault suite of `run` (docs/reliability.md): kills during planning, stop signals, concurrent runs,
preserved modes and links, per-file and run-level problems. Every test is bounded (seconds)."""

from __future__ import annotations

import json
import os
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest
from conftest import cli_invoker

ROOT = Path(__file__).resolve().parent.parent
SAMPLES = ROOT / "sample_sessions"


def _cli(*args: str, env: dict | None = None, timeout: float = 120, **kw) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "batchcompact", *args], capture_output=True, text=True,
                          env={**os.environ, **(env or {})}, timeout=timeout, **kw)


def _archive(folder: Path, copies: int) -> Path:
    """`copies` copies of every sample session (distinct names), a few seconds of planning with --jobs 2."""
    folder.mkdir(parents=True, exist_ok=True)
    sources = sorted(p for p in SAMPLES.rglob("*.jsonl"))
    assert sources
    for n in range(copies):
        for i, src in enumerate(sources):
            sub = folder / src.parent.name
            sub.mkdir(exist_ok=True)
            shutil.copyfile(src, sub / f"c{n:03d}-{i}-{src.name}")
    return folder


def _children(pid: int) -> set[int]:
    """Every live descendant of `pid` (from /proc)."""
    found: set[int] = set()
    frontier = [pid]
    while frontier:
        parent = frontier.pop()
        for entry in os.listdir("/proc"):
            if not entry.isdigit():
                continue
            try:
                stat = Path(f"/proc/{entry}/stat").read_text()
            except OSError:
                continue
            fields = stat.rsplit(")", 1)[1].split()
            if int(fields[1]) == parent and int(entry) not in found:
                found.add(int(entry))
                frontier.append(int(entry))
    return found


def _alive(pid: int) -> bool:
    try:
        state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
    except OSError:
        return False
    return state not in ("Z", "X")


def _wait_for_workers(proc: subprocess.Popen, count: int, limit: float = 60.0) -> set[int]:
    deadline = time.monotonic() + limit
    while time.monotonic() < deadline:
        kids = _children(proc.pid)
        if len(kids) >= count:
            return kids
        if proc.poll() is not None:
            pytest.fail(f"the run ended before its workers started: {proc.stderr.read()}")
        time.sleep(0.05)
    pytest.fail("the planning workers never started")


pytestmark = pytest.mark.skipif(not sys.platform.startswith("linux"), reason="uses /proc and Linux signals")


@pytest.mark.slow
@pytest.mark.parametrize("command", ["run", "plan"])
def test_sigkill_during_planning_leaves_no_worker_and_no_lock(tmp_path, command):
    archive = _archive(tmp_path / "w", 20)
    state = tmp_path / "st" / "s.sqlite"
    args = ["run", str(archive), "--in-place", "--min-age", "0", "--jobs", "2", "--state", str(state)]
    if command == "plan":
        args = ["plan", str(archive), "--jobs", "2"]
    proc = subprocess.Popen([sys.executable, "-m", "batchcompact", *args], stdout=subprocess.DEVNULL,
                            stderr=subprocess.PIPE, text=True)
    workers = _wait_for_workers(proc, 2)
    proc.kill()
    proc.wait()
    deadline = time.monotonic() + 5
    while time.monotonic() < deadline and any(_alive(pid) for pid in workers):
        time.sleep(0.1)
    assert not [pid for pid in workers if _alive(pid)], "workers outlived their killed parent"
    if command == "run":
        rerun = _cli("run", str(archive), "--in-place", "--min-age", "0", "--jobs", "2", "--state", str(state),
                     "--limit", "3")  # the lock is free and the run works; compacting them all proves no more
        assert rerun.returncode == 0, rerun.stderr
        assert "Traceback" not in rerun.stderr


@pytest.mark.slow
@pytest.mark.parametrize("sig", [signal.SIGTERM, signal.SIGINT])
def test_stop_signal_during_planning_reports_every_session(tmp_path, sig):
    import polars as pl

    archive = _archive(tmp_path / "w", 40)
    given = sorted(str(p) for p in archive.rglob("*.jsonl"))
    out, reports = tmp_path / "out", tmp_path / "reports"
    proc = subprocess.Popen([sys.executable, "-m", "batchcompact", "run", str(archive), "--output-dir", str(out),
                             "--min-age", "0", "--jobs", "2", "--state", str(tmp_path / "s.sqlite"),
                             "--report-dir", str(reports)], stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                            text=True)
    workers = _wait_for_workers(proc, 2)
    proc.send_signal(sig)
    stdout, stderr = proc.communicate(timeout=60)
    assert proc.returncode == 0, stderr  # README: a stopped run exits 0; the rest is reported skipped
    assert "Traceback" not in stderr and "Aborted" not in stderr
    assert f"run stopped by {signal.Signals(sig).name}" in stdout + stderr
    time.sleep(0.5)
    assert not [pid for pid in workers if _alive(pid)]
    (report,) = reports.glob("compactions-*.parquet")
    rows = pl.read_parquet(report)
    assert sorted(rows["input_path"].to_list()) == given
    not_reached = rows.filter(pl.col("reason").str.contains(f"stopped by {signal.Signals(sig).name}"))
    assert not_reached.height > 0 and set(not_reached["status"]) == {"skipped"}


# `batchcompact` whose report workers never finish a file: a stop signal always finds the report at work.
HELD_REPORT = """
import sys, time
import batchcompact.lifecycle as lifecycle
real_map = lifecycle.map_in_processes
def held(item, *more):
    time.sleep(3600)
def map_held(function, todo, workers, on_outcome, **kw):
    return real_map(held, todo, workers, on_outcome, **kw)
lifecycle.map_in_processes = map_held  # before the report's modules import it
from batchcompact.cli import main
sys.argv[0] = "batchcompact"
main()
"""


@pytest.mark.slow
def test_sigterm_during_report_exits_143_without_workers(tmp_path):
    archive = _archive(tmp_path / "w", 40)
    proc = subprocess.Popen([sys.executable, "-c", HELD_REPORT, "report", str(archive), "--jobs", "2",
                             "--cache-dir", str(tmp_path / "cache")],
                            stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True,
                            env={**os.environ, "XDG_CACHE_HOME": str(tmp_path / "xdg")})
    workers = _wait_for_workers(proc, 2)
    proc.send_signal(signal.SIGTERM)
    _, stderr = proc.communicate(timeout=60)
    assert proc.returncode == 143, stderr
    assert "Traceback" not in stderr and "Interrupted (SIGTERM)" in stderr
    time.sleep(0.5)
    assert not [pid for pid in workers if _alive(pid)]


def test_lock_of_a_dead_holder_is_named(tmp_path):
    """A lock held by a process the dead run left behind: the message says the holder is gone, and who holds it."""
    from batchcompact.errors import LockHeldError
    from batchcompact.pipeline.state import RunState

    state = tmp_path / "s.sqlite"
    lock = Path(str(state) + ".lock")
    lock.write_text("999999999")  # a pid that does not exist
    holder = subprocess.Popen([sys.executable, "-c",
                               "import fcntl,sys,time\nf=open(sys.argv[1],'a')\nfcntl.flock(f,fcntl.LOCK_EX)\n"
                               "print('ok',flush=True)\ntime.sleep(60)", str(lock)], stdout=subprocess.PIPE, text=True)
    try:
        assert holder.stdout.readline().strip() == "ok"
        with pytest.raises(LockHeldError) as info:
            RunState(state)
        message = str(info.value)
        assert "(pid 999999999) is no longer running" in message
        assert str(holder.pid) in message
    finally:
        holder.kill()
        holder.wait()


def test_forked_children_do_not_hold_the_run_lock(tmp_path):
    from batchcompact.pipeline.parallel import map_bounded
    from batchcompact.pipeline.state import RunState

    state = tmp_path / "s.sqlite"
    with RunState(state):
        pids_fds = list(map_bounded(_open_state_fds, [str(state)] * 4, 2))
    assert pids_fds and all(not fds for _, fds in pids_fds), pids_fds


def _open_state_fds(path: str) -> tuple[int, list[str]]:
    real = os.path.realpath(path)
    fds = []
    for fd in os.listdir("/proc/self/fd"):
        try:
            target = os.readlink(f"/proc/self/fd/{fd}")
        except OSError:
            continue
        if target.startswith(real):
            fds.append(target)
    return os.getpid(), fds


def _bytes_kept(folder: Path, originals: dict[Path, bytes]) -> list[str]:
    """Originals whose bytes exist neither in their file nor in one of its backups."""
    lost = []
    for path, data in originals.items():
        candidates = [path, *path.parent.glob(path.name + ".bak*")]
        if not any(c.is_file() and c.read_bytes() == data for c in candidates):
            lost.append(str(path))
    return lost


@pytest.mark.slow
def test_two_concurrent_in_place_runs_never_lose_an_original(tmp_path):
    """Different state files (so no run lock is shared), one of them pruning: the session locks decide."""
    archive = tmp_path / "w"
    archive.mkdir()
    sources = sorted((SAMPLES / "pi").glob("*.jsonl"))
    for n in range(20):
        for src in sources:
            shutil.copyfile(src, archive / f"{n:02d}-{src.name}")
    originals = {p: p.read_bytes() for p in archive.glob("*.jsonl")}
    base = ["run", str(archive), "--in-place", "--min-age", "0", "--force", "--jobs", "1", "--format", "jsonl"]
    runs = [
        subprocess.Popen([sys.executable, "-m", "batchcompact", *base, "--state", str(tmp_path / "a.sqlite"),
                          "--report-dir", str(tmp_path / "ra")], stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                         text=True),
        subprocess.Popen([sys.executable, "-m", "batchcompact", *base, "--state", str(tmp_path / "b.sqlite"),
                          "--report-dir", str(tmp_path / "rb"), "--prune-tool-outputs", "--keep-recent-tokens",
                          "90000"], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True),
    ]
    results = [proc.communicate(timeout=120) for proc in runs]
    for proc, (_, err) in zip(runs, results, strict=True):
        assert proc.returncode in (0, 1), err
        assert "Traceback" not in err
    assert _bytes_kept(archive, originals) == []
    assert not [p.name for p in archive.iterdir() if ".batchcompact-" in p.name]
    import json

    statuses = [json.loads(line)["status"] for out, _ in results for line in out.splitlines() if line.strip()]
    assert "compacted" in statuses
    assert set(statuses) <= {"compacted", "skipped", "changed_during_run"}, statuses


def test_a_busy_session_is_skipped_as_locked(tmp_path):
    from batchcompact.pipeline.session_lock import lock_session

    archive = tmp_path / "w"
    archive.mkdir()
    src = sorted((SAMPLES / "pi").glob("*.jsonl"))[0]
    session = archive / src.name
    shutil.copyfile(src, session)
    holder = subprocess.Popen([sys.executable, "-c",
                               "import fcntl,sys,time\nf=open(sys.argv[1],'rb')\nfcntl.flock(f,fcntl.LOCK_EX)\n"
                               "print('ok',flush=True)\ntime.sleep(60)", str(session)], stdout=subprocess.PIPE, text=True)
    try:
        assert holder.stdout.readline().strip() == "ok"
        result = _cli("run", str(archive), "--in-place", "--min-age", "0", "--force", "--state",
                      str(tmp_path / "s.sqlite"), "--format", "jsonl")
        assert result.returncode == 0, result.stderr
        assert '"locked by another run"' in result.stdout
        assert session.read_bytes() == src.read_bytes()
    finally:
        holder.kill()
        holder.wait()
    lock = lock_session(session)  # free again
    lock.release()


def test_backup_never_overwrites_a_different_backup(tmp_path):
    from batchcompact.pipeline.state import fingerprint_file
    from batchcompact.pipeline.writer import make_backup

    original = tmp_path / "s.jsonl"
    original.write_bytes(b'{"a": 1}\n')
    (tmp_path / "s.jsonl.bak").write_bytes(b"older original\n")
    name, created = make_backup(original, original, fingerprint_file(original))
    assert (name, created) == (str(tmp_path / "s.jsonl.bak.1"), True)
    assert (tmp_path / "s.jsonl.bak").read_bytes() == b"older original\n"
    assert Path(name).read_bytes() == original.read_bytes()
    again, created = make_backup(original, original, fingerprint_file(original))  # same bytes: reused
    assert (again, created) == (name, False)


def test_temp_names_are_unique_and_stale_ones_of_dead_runs_go(tmp_path):
    from batchcompact.pipeline.writer import _remove_stale_temps, temp_name

    target = tmp_path / "s.jsonl"
    names = {temp_name(target) for _ in range(50)}
    assert len(names) == 50 and all(str(os.getpid()) in n.name for n in names)
    dead = tmp_path / ".s.jsonl.batchcompact-tmp-999999999-abcd1234"
    mine = temp_name(target)
    dead.write_text("x")
    mine.write_text("x")
    _remove_stale_temps(target)
    assert not dead.exists() and mine.exists()


def test_a_session_named_near_the_file_name_limit_is_compacted(tmp_path):
    """A session whose name leaves no room for a temp name's marks (`.NAME.batchcompact-tmp-PID-...` past
    255 bytes) failed every run after its summaries were paid ("write failed: File name too long"): the temp
    name now cuts NAME, with its hash, and its stale temps are still found."""
    from batchcompact.pipeline.writer import _remove_stale_temps, temp_name

    name = "é" * 100 + "s" * 44 + ".jsonl"  # 250 bytes: the longest a `.bak` beside it still fits
    inputs = tmp_path / "in"
    inputs.mkdir()
    shutil.copyfile(SAMPLES / "pi" / "big-refactor.jsonl", inputs / name)
    for where in (("--output-dir", str(tmp_path / "out")), ("--in-place",)):
        proc = _cli("run", str(inputs), *where, "--min-age", "0", "--state", str(tmp_path / "state.sqlite"),
                    "--format", "jsonl")
        assert proc.returncode == 0, proc.stderr
        assert [json.loads(line)["status"] for line in proc.stdout.splitlines()] == ["compacted"], proc.stdout
    assert (tmp_path / "out" / name).exists() and (inputs / f"{name}.bak").exists()
    assert sorted(p.name for p in inputs.iterdir()) == [name, f"{name}.bak"]  # no temp left
    target = inputs / name
    mine = temp_name(target)
    assert len(mine.name.encode()) <= 255 and mine.name.startswith(".éé")
    dead = target.with_name(mine.name.replace(f"-{os.getpid()}-", "-999999999-"))
    dead.write_text("x")
    mine.write_text("x")
    _remove_stale_temps(target)
    assert not dead.exists() and mine.exists()


def _one_session(folder: Path) -> Path:
    folder.mkdir(parents=True, exist_ok=True)
    src = sorted((SAMPLES / "pi").glob("*.jsonl"))[0]
    path = folder / src.name
    shutil.copyfile(src, path)
    return path


def test_in_place_keeps_mode_and_owner(tmp_path):
    session = _one_session(tmp_path / "w")
    session.chmod(0o600)
    owner = None
    if os.geteuid() == 0:
        owner = (12345, 23456)
        os.chown(session, *owner)
    result = _cli("run", str(session.parent), "--in-place", "--min-age", "0", "--force", "--state",
                  str(tmp_path / "s.sqlite"))
    assert result.returncode == 0, result.stderr
    st = session.stat()
    assert st.st_mode & 0o777 == 0o600
    assert Path(str(session) + ".bak").read_bytes() != session.read_bytes()
    if owner:
        assert (st.st_uid, st.st_gid) == owner


def test_output_dir_mirrors_the_source_mode(tmp_path):
    session = _one_session(tmp_path / "w")
    session.chmod(0o640)
    out = tmp_path / "out"
    result = _cli("run", str(session.parent), "--output-dir", str(out), "--min-age", "0", "--force")
    assert result.returncode == 0, result.stderr
    assert (out / session.name).stat().st_mode & 0o777 == 0o640


def test_in_place_compacts_the_target_of_a_symlink_and_keeps_the_link(tmp_path):
    real = _one_session(tmp_path / "store")
    before = real.read_bytes()
    links = tmp_path / "w"
    links.mkdir()
    link = links / "linked.jsonl"
    link.symlink_to(real)
    result = _cli("run", str(links), "--in-place", "--min-age", "0", "--force", "--state", str(tmp_path / "s.sqlite"))
    assert result.returncode == 0, result.stderr
    assert link.is_symlink() and link.resolve() == real.resolve()
    assert real.read_bytes() != before and real.read_bytes().startswith(before)
    assert Path(str(real) + ".bak").read_bytes() == before


def _odd_archive(folder: Path) -> Path:
    """A good session with a non-UTF-8 name, plus an empty, a gzip, a binary file and a symlink loop."""
    import gzip

    sub = folder / "sub"
    sub.mkdir(parents=True)
    src = sorted((SAMPLES / "pi").glob("*.jsonl"))[0]
    shutil.copyfile(src, os.fsdecode(bytes(sub) + b"/odd\xff\xfe.jsonl"))
    (sub / "empty.jsonl").write_bytes(b"")
    (sub / "gz.jsonl").write_bytes(gzip.compress(src.read_bytes()[:5000]))
    (sub / "bin.jsonl").write_bytes(bytes(range(256)) * 8)
    (sub / "loop.jsonl").symlink_to("loop.jsonl")
    return folder


EXPECTED_REASONS = {
    "empty.jsonl": "empty file: no session entries",
    "gz.jsonl": "gzip-compressed: decompress it first (gunzip), then run again",
    "bin.jsonl": "binary, not",
    "loop.jsonl": "cannot read: Too many levels of symbolic links",
}


def test_odd_files_fail_one_by_one_and_the_run_goes_on(tmp_path):
    import polars as pl

    archive = _odd_archive(tmp_path / "w")
    result = _cli("run", str(archive), "--output-dir", str(tmp_path / "out"), "--min-age", "0", "--force",
                  "--report-dir", str(tmp_path / "r"))
    assert result.returncode == 1, result.stderr
    assert "Traceback" not in result.stderr + result.stdout and "internal error" not in result.stderr
    rows = pl.read_parquet(next((tmp_path / "r").glob("*.parquet")))
    by_name = {Path(p).name: (s, r) for p, s, r in rows.select("input_path", "status", "reason").iter_rows()}
    assert by_name["odd\\xff\\xfe.jsonl"][0] == "compacted"  # stored with \xNN escapes
    for name, reason in EXPECTED_REASONS.items():
        status, why = by_name[name]
        assert status == "failed" and why.startswith(reason), (name, why)
    written = [p for p in (tmp_path / "out").rglob("*.jsonl")]
    assert [os.fsencode(p.name) for p in written] == [b"odd\xff\xfe.jsonl"]
    rerun = _cli("run", str(archive), "--output-dir", str(tmp_path / "out"), "--min-age", "0", "--force")
    assert "Traceback" not in rerun.stderr and rerun.returncode == 1  # the symlink loop fails every time
    assert "3 known_invalid" in rerun.stdout + rerun.stderr  # empty, gzip, binary: reported once
    assert "finished in an earlier run" in _cli(
        "run", str(archive), "--output-dir", str(tmp_path / "out"), "--min-age", "0", "--force", "--format",
        "jsonl").stdout


def test_validate_names_odd_files_without_a_traceback(tmp_path):
    archive = _odd_archive(tmp_path / "w")
    result = _cli("validate", str(archive))
    assert result.returncode == 1
    assert "Traceback" not in result.stderr and "internal error" not in result.stdout + result.stderr
    for name, reason in EXPECTED_REASONS.items():
        assert f"{name}: error: {reason}" in result.stdout + result.stderr, name


SPECIAL_WARNINGS = ("pipe.jsonl: skipped, a named pipe, not a regular file",
                    "to-pipe.jsonl: skipped, a named pipe, not a regular file",
                    "zero.jsonl: skipped, a character device, not a regular file")


def _special_archive(folder: Path) -> Path:
    """One pi session beside a named pipe, a link to it and a link to /dev/zero, all named like sessions:
    opening the pipe waits for a writer that never comes, and /dev/zero never ends."""
    folder.mkdir(parents=True)
    shutil.copyfile(SAMPLES / "pi" / "small-fix.jsonl", folder / "small-fix.jsonl")
    os.mkfifo(folder / "pipe.jsonl")
    (folder / "to-pipe.jsonl").symlink_to(folder / "pipe.jsonl")
    (folder / "zero.jsonl").symlink_to("/dev/zero")
    return folder


@pytest.mark.parametrize("command", ["plan", "validate", "eval", "run", "report"])
def test_pipes_and_devices_named_like_sessions_are_skipped_not_waited_on(tmp_path, command):
    archive = _special_archive(tmp_path / "w")
    extra = {"run": ["--output-dir", str(tmp_path / "out"), "--min-age", "0", "--report-dir", str(tmp_path / "r")],
             "report": ["--cache-dir", str(tmp_path / "cache"), "--format", "json"]}.get(command, [])
    result = _cli(command, str(archive), *extra, timeout=60)  # a pipe opened would hang until the timeout
    assert result.returncode == 0, result.stderr
    warnings = [line for line in result.stderr.splitlines() if "not a regular file" in line]
    assert len(warnings) == 3 and all(any(w in line for line in warnings) for w in SPECIAL_WARNINGS), warnings
    assert all(line.startswith(f"warning: {archive}/") for line in warnings), warnings  # not `WARNING batchcompact.…`
    assert "Traceback" not in result.stderr
    if command == "report":
        import json

        assert json.loads(result.stdout)["totals"]["requests"] > 0  # the session beside them was read
    alone = _cli(command, str(archive / "pipe.jsonl"), *extra, timeout=60)
    assert alone.returncode == 2 and "no session files found" in alone.stderr, alone.stderr


@pytest.mark.parametrize("command", ["plan", "validate", "run", "report"])
def test_a_link_loop_and_a_dangling_link_are_said_alike_by_every_command(tmp_path, command):
    """`plan` said a link loop was "not found on host vm (... every node sees at the same path)" with no
    Ray involved; `validate` and `run` said "Too many levels of symbolic links"."""
    archive = tmp_path / "w"
    archive.mkdir()
    shutil.copyfile(SAMPLES / "pi" / "small-fix.jsonl", archive / "small-fix.jsonl")
    (archive / "a.jsonl").symlink_to("b.jsonl")
    (archive / "b.jsonl").symlink_to("a.jsonl")
    (archive / "dangling.jsonl").symlink_to("nowhere.jsonl")
    extra = {"run": ["--output-dir", str(tmp_path / "out"), "--min-age", "0", "--state", str(tmp_path / "s.db")],
             "report": ["--no-cache"], "plan": ["--format", "jsonl"]}.get(command, [])
    result = _cli(command, str(archive), *extra, timeout=60)
    said = result.stdout + result.stderr
    if command == "plan":
        said = "\n".join(f"{row['path']}: {row['reason']}" for row in map(json.loads, result.stdout.splitlines()))
    for name, why in (("a.jsonl", "cannot read: Too many levels of symbolic links"),
                      ("dangling.jsonl", "cannot read: a symbolic link to nowhere.jsonl, which does not exist")):
        assert f"{archive / name}: {why}" in said.replace(": error: ", ": "), said
    assert "not found on host" not in said and "Errno" not in said and "Traceback" not in said, said


def test_show_refuses_a_pipe_instead_of_waiting_on_it(tmp_path):
    archive = _special_archive(tmp_path / "w")
    for name, kind in (("pipe.jsonl", "a named pipe"), ("to-pipe.jsonl", "a named pipe"), ("zero.jsonl", "a character device")):
        result = _cli("show", str(archive / name), timeout=60)
        assert result.returncode == 2, result.stderr
        assert result.stderr.strip().splitlines() == [f"Error: {archive / name}: {kind}, not a regular file"]


DEPTH = 1_100  # past Python's recursion limit (1,000): a walk or a mkdir that recurses per folder fails


def _deep_tree(top: Path) -> Path:
    """`top/d/d/.../d` DEPTH folders deep, made one by one (os.makedirs recurses); the deepest folder."""
    folder = top
    for _ in range(DEPTH):
        folder = folder / "d"
        folder.mkdir()
    return folder


def _remove_deep(top: Path) -> None:
    """Remove a tree made by `_deep_tree` without recursion (shutil.rmtree recurses per folder)."""
    folders, stack = [], [top]
    while stack:
        folder = stack.pop()
        folders.append(folder)
        for entry in os.scandir(folder):
            if entry.is_dir(follow_symlinks=False):
                stack.append(Path(entry.path))
            else:
                os.unlink(entry.path)
    for folder in reversed(folders):
        folder.rmdir()


def test_a_folder_deeper_than_the_recursion_limit_is_walked_and_written(tmp_path):
    archive = tmp_path / "w"
    archive.mkdir()
    bottom = _deep_tree(archive)
    try:
        shutil.copyfile(SAMPLES / "pi" / "big-refactor.jsonl", bottom / "deep.jsonl")
        shutil.copyfile(SAMPLES / "pi" / "small-fix.jsonl", archive / "top.jsonl")
        for command, extra in (("plan", ["--format", "json"]), ("validate", ["--format", "json"]),
                               ("report", ["--no-cache", "--format", "json"]),
                               ("run", ["--output-dir", str(tmp_path / "out"), "--min-age", "0", "--force",
                                        "--report-dir", str(tmp_path / "r")])):
            result = _cli(command, str(archive), *extra)
            assert result.returncode == 0, (command, result.stderr[-500:])
            assert "internal error" not in result.stderr and "Traceback" not in result.stderr
            if command in ("plan", "validate"):
                import json

                assert len(json.loads(result.stdout)["rows"]) == 2, command  # the deep session and the top one
        written = (tmp_path / "out").joinpath(*["d"] * DEPTH, "deep.jsonl")
        assert b'"type":"compaction"' in written.read_bytes()  # compacted (pi appends its compaction)
    finally:
        _remove_deep(archive)
        if (tmp_path / "out").exists():
            _remove_deep(tmp_path / "out")


# -- run-level problems and disk full, in process (monkeypatch injects the faults) ---------------------
@pytest.fixture
def bc(capsys, monkeypatch):
    """`batchcompact ARGS...` through `batchcompact.cli:main`: (exit code, stdout + stderr)."""
    run = cli_invoker(capsys, monkeypatch)

    def invoke(*args: object) -> tuple[int, str]:
        code, out, err = run(*args)
        return code, out + err

    yield invoke
    signal.signal(signal.SIGTERM, signal.SIG_DFL)  # main() installed its stop handlers
    signal.signal(signal.SIGINT, signal.default_int_handler)


def _enospc(*_args, **_kwargs):
    import errno

    raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC))


def _pi_pair(folder: Path) -> dict[Path, bytes]:
    folder.mkdir(parents=True, exist_ok=True)
    originals = {}
    for src in sorted((SAMPLES / "pi").glob("*.jsonl"))[:2]:
        shutil.copyfile(src, folder / src.name)
        originals[folder / src.name] = src.read_bytes()
    return originals


def _litter(folder: Path) -> list[str]:
    return [p.name for p in folder.rglob("*") if ".batchcompact-" in p.name or p.name.endswith(".tmp")]


def test_corrupt_state_is_moved_aside_and_rebuilt(tmp_path, bc):
    _pi_pair(tmp_path / "w")
    state = tmp_path / "st" / "s.sqlite"
    state.parent.mkdir()
    garbage = os.urandom(4096)
    state.write_bytes(garbage)
    code, text = bc("run", tmp_path / "w", "--output-dir", tmp_path / "out", "--min-age", "0", "--force",
                    "--state", state)
    assert code == 0, text
    (aside,) = state.parent.glob("s.sqlite.corrupt-*")
    assert aside.read_bytes() == garbage
    assert f"moved aside to {aside}" in text and "Traceback" not in text
    code, text = bc("run", tmp_path / "w", "--output-dir", tmp_path / "out", "--min-age", "0", "--force",
                    "--state", state)
    assert code == 0 and "2 finished in an earlier run" in text, text  # the new state is used


def test_unusable_state_exit_3_and_report_folder_exit_2_in_one_line(tmp_path, bc):
    _pi_pair(tmp_path / "w")
    blocker = tmp_path / "a-file"
    blocker.write_text("not a folder")
    code, text = bc("run", tmp_path / "w", "--output-dir", tmp_path / "out", "--min-age", "0", "--force",
                    "--state", blocker / "s.sqlite")
    assert code == 3 and "cannot use the run state" in text and f"({blocker})" in text, text
    assert "Traceback" not in text
    code, text = bc("run", tmp_path / "w", "--output-dir", tmp_path / "out", "--min-age", "0", "--force",
                    "--state", tmp_path / "s.sqlite", "--report-dir", blocker / "reports")
    assert code == 2 and f"Error: --report-dir {blocker / 'reports'}: {blocker} is not a folder" in text, text
    assert not (tmp_path / "out").exists()  # refused before any session was planned, bought or written


@pytest.mark.parametrize("option", ["--report-dir", "--output-dir"])
def test_a_read_only_report_or_output_folder_is_refused_before_any_work(tmp_path, bc, monkeypatch, option):
    """A read-only --report-dir was found only after every session was written and paid for (exit 3); it
    is checked while the options are parsed, as -o FILE is (exit 2). Root may write anywhere, so the
    filesystem's answer for the folder is the one a read-only mount gives."""
    _pi_pair(tmp_path / "w")
    locked = tmp_path / "locked"
    locked.mkdir()
    access = os.access
    monkeypatch.setattr(os, "access", lambda p, mode, **kw: False if str(p) == str(locked) else access(p, mode, **kw))
    where = {"--report-dir": ["--output-dir", tmp_path / "out", "--report-dir", locked / "reports"],
             "--output-dir": ["--output-dir", locked / "out", "--report-dir", tmp_path / "r"]}[option]
    code, text = bc("run", tmp_path / "w", *where, "--min-age", "0", "--force", "--state", tmp_path / "s.sqlite")
    assert code == 2, text
    assert f"Error: {option} {locked}/" in text and f": cannot write in the folder {locked} (" in text, text
    assert not (tmp_path / "out").exists() and not (tmp_path / "s.sqlite").exists()  # no work at all


def test_disk_full_while_writing_a_session_fails_that_session_only(tmp_path, bc, monkeypatch):
    from batchcompact.pipeline import writer

    originals = _pi_pair(tmp_path / "w")
    monkeypatch.setattr(writer, "dumps_line", _enospc)
    code, text = bc("run", tmp_path / "w", "--in-place", "--min-age", "0", "--force", "--state",
                    tmp_path / "s.sqlite")
    assert code == 1, text
    assert text.count("write failed: No space left on device") >= 2 and "Traceback" not in text
    assert {p: p.read_bytes() for p in originals} == originals
    assert _litter(tmp_path / "w") == [] and not list((tmp_path / "w").glob("*.bak*"))


def test_disk_full_while_backing_up_leaves_no_partial_backup(tmp_path, bc, monkeypatch):
    import errno

    from batchcompact.pipeline import writer

    originals = _pi_pair(tmp_path / "w")

    def no_links(*_args, **_kwargs):
        raise OSError(errno.EXDEV, "no hard links here")

    real_copy = writer._copy_prefix

    def copy_then_full(source, out, fingerprint, **how):
        if getattr(out, "backup", False):
            out.write(b"partial")
            _enospc()
        return real_copy(source, out, fingerprint, **how)

    real_fdopen = os.fdopen

    def fdopen(fd, *args, **kwargs):
        handle = real_fdopen(fd, *args, **kwargs)
        if ".bak" in os.readlink(f"/proc/self/fd/{fd}"):
            handle = _Tagged(handle)
        return handle

    monkeypatch.setattr(writer.os, "link", no_links)
    monkeypatch.setattr(writer, "_copy_prefix", copy_then_full)
    monkeypatch.setattr(writer.os, "fdopen", fdopen)
    code, text = bc("run", tmp_path / "w", "--in-place", "--min-age", "0", "--force", "--state",
                    tmp_path / "s.sqlite")
    assert code == 1 and "write failed: No space left on device" in text, text
    assert {p: p.read_bytes() for p in originals} == originals
    assert _litter(tmp_path / "w") == [] and not list((tmp_path / "w").glob("*.bak*"))
    monkeypatch.undo()
    monkeypatch.setattr(writer.os, "link", no_links)  # the copy fallback itself works
    code, text = bc("run", tmp_path / "w", "--in-place", "--min-age", "0", "--force", "--state",
                    tmp_path / "s2.sqlite")
    assert code == 0, text
    for path, data in originals.items():
        assert Path(f"{path}.bak").read_bytes() == data and path.read_bytes().startswith(data)
        assert Path(f"{path}.bak").stat().st_nlink == 1


class _Tagged:
    backup = True

    def __init__(self, handle):
        self._handle = handle

    def __getattr__(self, name):
        return getattr(self._handle, name)

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self._handle.close()


def test_disk_full_for_the_report_or_the_state_is_exit_3_without_traceback(tmp_path, bc, monkeypatch):
    import sqlite3

    import pyarrow.parquet as pq

    from batchcompact.pipeline.state import RunState

    _pi_pair(tmp_path / "w")
    monkeypatch.setattr(pq, "write_table", _enospc)
    code, text = bc("run", tmp_path / "w", "--output-dir", tmp_path / "out", "--min-age", "0", "--force",
                    "--state", tmp_path / "s.sqlite", "--report-dir", tmp_path / "r")
    assert code == 3 and "the report could not be written" in text and "No space left on device" in text, text
    assert list((tmp_path / "r").iterdir()) == []
    monkeypatch.undo()

    def full(*_args, **_kwargs):
        raise sqlite3.OperationalError("database or disk is full")

    monkeypatch.setattr(RunState, "record", full)
    code, text = bc("run", tmp_path / "w", "--output-dir", tmp_path / "out2", "--min-age", "0", "--force",
                    "--state", tmp_path / "s2.sqlite", "--report-dir", tmp_path / "r2")
    assert code == 3 and "could not be updated: database or disk is full" in text, text
    assert "Traceback" not in text and len(list((tmp_path / "r2").glob("*.parquet"))) == 1


def test_stale_temps_of_dead_runs_are_swept_at_start(tmp_path, bc):
    originals = _pi_pair(tmp_path / "w")
    out = tmp_path / "out"
    out.mkdir()
    name = next(iter(originals)).name
    dead_in = tmp_path / "w" / f".{name}.batchcompact-tmp-999999999"
    dead_out = out / f".{name}.batchcompact-tmp-999999998-0a1b2c3d"
    old_bak = tmp_path / "w" / f"{name}.bak.batchcompact-tmp"  # an older version's name: no pid
    fresh_bak = tmp_path / "w" / "other.jsonl.bak.batchcompact-tmp"
    live = tmp_path / "w" / f".{name}.batchcompact-tmp-{os.getppid()}-ffffffff"  # a live process's
    for path in (dead_in, dead_out, old_bak, fresh_bak, live):
        path.write_text("partial")
    two_hours_ago = time.time() - 7200
    os.utime(old_bak, (two_hours_ago, two_hours_ago))
    code, text = bc("run", tmp_path / "w", "--output-dir", out, "--min-age", "0", "--limit", "0")
    assert code == 0, text
    assert not dead_in.exists() and not dead_out.exists() and not old_bak.exists()
    assert fresh_bak.exists() and live.exists()


def test_relative_and_absolute_output_dir_are_the_same_settings(tmp_path, bc, monkeypatch):
    _pi_pair(tmp_path / "w")
    monkeypatch.chdir(tmp_path)
    code, text = bc("run", "w", "--output-dir", "out", "--min-age", "0", "--force", "--format", "jsonl")
    assert code == 0 and text.count('"compacted"') == 2, text
    code, text = bc("run", tmp_path / "w", "--output-dir", tmp_path / "out", "--min-age", "0", "--force",
                    "--format", "jsonl")
    assert code == 0 and text.count('"reason": "finished in an earlier run (compacted)"') == 2, text


def _summarizing_run(tmp_path, llm_server, sessions: int = 8):
    """A run summarizing through the loopback server (slow answers), started as a subprocess."""
    from llm_server import Answer
    from run_cli import write_session

    llm_server.default = Answer(text="## Goal\nsummary", delay=0.5)
    inputs = tmp_path / "in"
    for i in range(sessions):
        write_session(inputs / "p" / f"s{i:02d}.jsonl", f"s{i:02d}", turns=20, chars=4000)
    env = {**os.environ, "BATCHCOMPACT_TEST_API_BASE": llm_server.api_base,
           "PYTHONPATH": str(Path(__file__).resolve().parent)}
    env.pop("BATCHCOMPACT_MODEL", None)
    command = [sys.executable, "-m", "batchcompact", "run", str(inputs), "--in-place", "--min-age", "0",
               "--jobs", "2", "--force", "--keep-recent-tokens", "3000", "--concurrency", "1",
               "--state", str(tmp_path / "s.sqlite"), "--report-dir", str(tmp_path / "r"),
               "--summarizer", "test_run_crash:LoopbackSummarizer"]
    originals = {p: p.read_bytes() for p in inputs.rglob("*.jsonl")}
    proc = subprocess.Popen(command, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    deadline = time.monotonic() + 60
    while not llm_server.requests and time.monotonic() < deadline and proc.poll() is None:
        time.sleep(0.02)
    assert llm_server.requests, "no summary was ever requested"
    return proc, command, env, originals


@pytest.mark.slow
def test_sigterm_while_summarizing_reports_every_session(tmp_path, llm_server):
    import polars as pl

    proc, _, _, originals = _summarizing_run(tmp_path, llm_server)
    proc.send_signal(signal.SIGTERM)
    out, err = proc.communicate(timeout=60)
    assert proc.returncode == 0, err
    assert "run stopped by SIGTERM" in out + err and "Traceback" not in err
    rows = pl.read_parquet(next((tmp_path / "r").glob("*.parquet")))
    assert sorted(rows["input_path"].to_list()) == sorted(str(p) for p in originals)
    skipped = rows.filter(pl.col("status") == "skipped")
    assert skipped.height > 0 and all("stopped by SIGTERM" in r for r in skipped["reason"])
    assert _bytes_kept(tmp_path / "in" / "p", originals) == []


@pytest.mark.slow
def test_sigkill_while_summarizing_leaves_nothing_running_and_the_rerun_finishes(tmp_path, llm_server):
    from llm_server import Answer

    proc, command, env, originals = _summarizing_run(tmp_path, llm_server)
    family = _children(proc.pid)
    proc.kill()
    proc.communicate(timeout=30)
    deadline = time.monotonic() + 5
    while time.monotonic() < deadline and any(_alive(pid) for pid in family):
        time.sleep(0.1)
    assert not [pid for pid in family if _alive(pid)]
    assert _bytes_kept(tmp_path / "in" / "p", originals) == []
    llm_server.default = Answer(text="## Goal\nsummary")
    rerun = subprocess.run(command, env=env, capture_output=True, text=True, timeout=120)
    assert rerun.returncode == 0, rerun.stderr
    assert _bytes_kept(tmp_path / "in" / "p", originals) == []
    assert _litter(tmp_path / "in") == []


def test_an_unreadable_file_fails_alone(tmp_path):
    """As a non-root user (root reads everything: the test then runs the CLI as `nobody`)."""
    import tempfile

    folder = Path(tempfile.mkdtemp(prefix="bc-perm-"))
    try:
        folder.chmod(0o777)
        work = folder / "w"
        _pi_pair(work)
        secret = work / "secret.jsonl"
        shutil.copyfile(sorted((SAMPLES / "pi").glob("*.jsonl"))[0], secret)
        secret.chmod(0o000)
        for path in [work, *work.iterdir()]:
            if path != secret:
                path.chmod(0o777 if path.is_dir() else 0o644)
        user = {}
        if os.geteuid() == 0:
            user = {"user": 65534, "group": 65534}
        out = folder / "out"
        try:
            proc = subprocess.run([sys.executable, "-m", "batchcompact", "run", str(work), "--output-dir",
                                   str(out), "--min-age", "0", "--force"], capture_output=True, text=True,
                                  timeout=120, env={**os.environ, "HOME": str(folder)}, **user)
        except PermissionError as exc:
            pytest.skip(f"`nobody` cannot run this Python ({exc}); test_an_unreadable_file_fails_alone_injected "
                        "covers the same path")
        if proc.returncode != 1 and "Permission denied" in proc.stderr and "secret" not in proc.stdout:
            pytest.skip(f"the CLI cannot run as an unprivileged user here: {proc.stderr[-300:]}")
        assert proc.returncode == 1, proc.stdout + proc.stderr
        assert f"failed: {secret}: cannot read: Permission denied" in proc.stdout + proc.stderr
        assert "Traceback" not in proc.stderr
        assert len(list(out.glob("*.jsonl"))) == 2
    finally:
        for path in folder.rglob("*"):
            try:
                path.chmod(0o777)
            except OSError:
                pass
        shutil.rmtree(folder, ignore_errors=True)


def test_an_unreadable_file_fails_alone_injected(tmp_path, bc, monkeypatch):
    """The same as above where no unprivileged user can run the CLI: the read raises EACCES."""
    import errno

    from batchcompact.pipeline import session_task

    _pi_pair(tmp_path / "w")
    secret = tmp_path / "w" / "secret.jsonl"
    shutil.copyfile(sorted((SAMPLES / "pi").glob("*.jsonl"))[0], secret)
    real = session_task.fingerprint_file

    def fingerprint(path):
        if str(path).endswith("secret.jsonl"):
            raise PermissionError(errno.EACCES, os.strerror(errno.EACCES), str(path))
        return real(path)

    real_detect = session_task._reads_with_digest

    def reads_with_digest(path):  # what it answers when it cannot open the file to detect its format
        return False if str(path).endswith("secret.jsonl") else real_detect(path)

    monkeypatch.setattr(session_task, "fingerprint_file", fingerprint)
    monkeypatch.setattr(session_task, "_reads_with_digest", reads_with_digest)
    code, text = bc("run", tmp_path / "w", "--output-dir", tmp_path / "out", "--min-age", "0", "--force",
                    "--jobs", "1")
    assert code == 1 and f"failed: {secret}: cannot read: Permission denied" in text, text
    assert len(list((tmp_path / "out").glob("*.jsonl"))) == 2


@pytest.mark.slow
def test_a_second_run_skips_the_sessions_a_summarizing_run_holds(tmp_path, llm_server):
    """Run A (in place, slow loopback summaries) holds the lock of each session from its read to its rename;
    run B (another state file, pruning, built-in summaries) meanwhile skips those and compacts the rest."""
    import json

    proc, _, env, originals = _summarizing_run(tmp_path, llm_server)
    other = subprocess.run([sys.executable, "-m", "batchcompact", "run", str(tmp_path / "in"), "--in-place",
                            "--min-age", "0", "--force", "--keep-recent-tokens", "3000", "--prune-tool-outputs",
                            "--state", str(tmp_path / "b.sqlite"), "--report-dir", str(tmp_path / "rb"),
                            "--format", "jsonl"], capture_output=True, text=True, timeout=120, env=env)
    first_out, first_err = proc.communicate(timeout=120)
    assert other.returncode == 0, other.stderr
    rows = [json.loads(line) for line in other.stdout.splitlines() if line.startswith("{")]
    assert any(r["reason"] == "locked by another run" for r in rows), [r["reason"] for r in rows]
    assert proc.returncode in (0, 1) and "Traceback" not in first_err + other.stderr
    assert _bytes_kept(tmp_path / "in" / "p", originals) == []
    assert _litter(tmp_path / "in") == []


def test_a_file_replaced_during_the_backup_keeps_the_original_somewhere(tmp_path, bc, monkeypatch):
    """The race two lockless writers ran into: right after our last check, another writer backs the original
    up as NAME.bak and renames its own output into place. Our backup must not replace that NAME.bak, and our
    write must not happen: the original survives in NAME.bak."""
    from batchcompact.pipeline import writer

    originals = _pi_pair(tmp_path / "w")
    real_check = writer._check_appended  # the check before the backup (an appended output's)
    raced: set[str] = set()

    def check_then_race(path, tmp, fingerprint):
        real_check(path, tmp, fingerprint)
        if path not in raced:
            raced.add(path)
            os.link(path, f"{path}.bak")  # the other writer's backup: the original's bytes
            other = Path(f"{path}.other")
            other.write_bytes(b'{"other writer": true}\n')
            os.replace(other, path)

    monkeypatch.setattr(writer, "_check_appended", check_then_race)
    code, text = bc("run", tmp_path / "w", "--in-place", "--min-age", "0", "--force", "--state",
                    tmp_path / "s.sqlite", "--format", "jsonl")
    assert text.count('"changed_during_run"') == 2, text
    assert _bytes_kept(tmp_path / "w", originals) == []
    for path, data in originals.items():
        assert Path(f"{path}.bak").read_bytes() == data
        assert not Path(f"{path}.bak.1").exists()  # ours was made aside, then removed: no write happened


def test_temp_files_of_another_host_are_swept_by_age_not_by_pid(tmp_path):
    """On a shared filesystem a temp file may belong to a live writer on another node, whose pid means
    nothing here: it is left alone until it is an hour old."""
    from batchcompact.pipeline.writer import sweep_stale_temps, temp_name

    ours = temp_name(tmp_path / "s.jsonl")
    assert ours.name.startswith(f".s.jsonl.batchcompact-tmp-{os.getpid()}-")
    host = ours.name.rsplit("-", 1)[1]
    dead_here = tmp_path / f".s.jsonl.batchcompact-tmp-999999999-abcd1234-{host}"
    elsewhere = tmp_path / ".s.jsonl.batchcompact-tmp-999999999-abcd1234-0badc0de"
    old_elsewhere = tmp_path / ".t.jsonl.batchcompact-tmp-999999999-abcd1234-0badc0de"
    for path in (dead_here, elsewhere, old_elsewhere):
        path.write_text("partial")
    hour_ago = time.time() - 3700
    os.utime(old_elsewhere, (hour_ago, hour_ago))
    removed = set(sweep_stale_temps([tmp_path]))
    assert removed == {dead_here, old_elsewhere}
    assert elsewhere.exists()
