"""lifecycle: the workers of `map_in_processes` are armed to die with their parent."""

from __future__ import annotations

import signal
import sys

import pytest

from batchcompact import lifecycle

PR_GET_PDEATHSIG = 2


def _armed_signal(_item: int) -> int:
    """The signal this process gets when its parent ends (0: none)."""
    import ctypes

    value = ctypes.c_int()
    ctypes.CDLL(None, use_errno=True).prctl(PR_GET_PDEATHSIG, ctypes.byref(value), 0, 0, 0)
    return value.value


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="the parent death signal is Linux's prctl")
def test_every_pool_worker_dies_with_its_parent():
    """worker_init arms it with the prctl the parent loaded before forking (the workers inherit it)."""
    got: list[int] = []
    assert lifecycle.map_in_processes(_armed_signal, [1, 2, 3, 4], 2, got.append) == 4
    assert got == [signal.SIGKILL] * 4
    assert lifecycle._prctl() is not None


# ---- _fork_map: forked workers fed through pipes ----

def _slow_square(item: int, offset: int = 0) -> int:
    import time

    time.sleep(0.002 * (item % 3))  # unequal work: results come back out of order
    return item * item + offset


def test_results_come_in_order_whatever_order_the_workers_finish_in():
    got: list[int] = []
    items = list(range(40))
    assert lifecycle.map_in_processes(_slow_square, items, 3, got.append, more=([5] * 40,)) == 40
    assert got == [i * i + 5 for i in items]


def _fails_on_seven(item: int) -> int:
    if item == 7:
        raise ValueError(f"bad item {item}")
    return item


@pytest.fixture
def forks(monkeypatch) -> list[int]:
    """The pids this process forks during the test."""
    import os

    pids: list[int] = []
    real = os.fork

    def fork() -> int:
        pid = real()
        if pid:
            pids.append(pid)
        return pid

    monkeypatch.setattr(os, "fork", fork)
    return pids


def test_an_error_in_a_worker_is_raised_here_in_its_turn_and_no_worker_is_left(forks):
    got: list[int] = []
    with pytest.raises(ValueError, match="bad item 7"):
        lifecycle.map_in_processes(_fails_on_seven, list(range(20)), 2, got.append)
    assert got == list(range(7))
    _assert_reaped(forks)


_PARENT: list[int] = []


def _dies_on_odd_items(item: int) -> int:
    import os

    if os.getpid() not in _PARENT and item % 2:
        os._exit(3)
    return item * 10


def test_the_items_of_workers_that_die_are_done_here(caplog, forks):
    """Every worker dies at its first odd item: what each held, and the rest, are done in this process."""
    import os

    _PARENT[:] = [os.getpid()]
    got: list[int] = []
    with caplog.at_level("WARNING"):
        assert lifecycle.map_in_processes(_dies_on_odd_items, list(range(30)), 2, got.append) == 30
    assert got == [i * 10 for i in range(30)]
    assert "a worker process failed (exit code 3)" in caplog.text
    _assert_reaped(forks)


def test_a_consumer_that_stops_ends_every_worker_at_once(forks):
    def stop(outcome):
        if outcome == 9:
            raise KeyboardInterrupt

    with pytest.raises(KeyboardInterrupt):
        lifecycle.map_in_processes(_slow_square, list(range(1000)), 2, stop)
    _assert_reaped(forks)


def _assert_reaped(pids: list[int], count: int = 2) -> None:
    """All `count` workers forked were ended and reaped: none is left running or as a zombie."""
    import os

    assert len(pids) == count
    for pid in pids:
        with pytest.raises(ChildProcessError):
            os.waitpid(pid, os.WNOHANG)


def test_workers_that_cannot_be_started_leave_the_work_to_those_there_are(monkeypatch, caplog):
    """fork fails (no processes left): the one worker started does everything; with none, the caller."""
    import errno
    import os

    real = os.fork
    started: list[int] = []

    def fork() -> int:
        if started:
            raise OSError(errno.EAGAIN, "Resource temporarily unavailable")
        pid = real()
        if pid:
            started.append(pid)
        return pid

    monkeypatch.setattr(os, "fork", fork)
    got: list[int] = []
    with caplog.at_level("WARNING"):
        assert lifecycle.map_in_processes(_slow_square, list(range(12)), 3, got.append) == 12
    assert got == [i * i for i in range(12)] and len(started) == 1
    assert "could not start a worker process (Resource temporarily unavailable); using 1" in caplog.text
    _assert_reaped(started, count=1)
    started.append(0)  # every fork fails now
    assert lifecycle.map_in_processes(_slow_square, [1, 2], 2, got.append) == 0


def _collector_on(item: int) -> tuple[int, bool]:
    import gc
    import os

    return os.getpid(), gc.isenabled()


def test_the_workers_collect_garbage_when_the_parent_paused_its_collector():
    """`fast_collect._extract_parallel` pauses the collector while this process keeps the rows it receives; the
    workers it forks then must not run a whole archive's extraction with it off."""
    import gc
    import os

    from batchcompact.formats.jsonl import paused_gc

    got: list[tuple[int, bool]] = []
    with paused_gc():
        assert lifecycle.map_in_processes(_collector_on, list(range(8)), 2, got.append) == 8
        assert not gc.isenabled()
    assert gc.isenabled()
    assert all(enabled for _, enabled in got) and os.getpid() not in {pid for pid, _ in got}
