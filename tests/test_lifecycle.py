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
