"""Worker-process lifecycle: workers never outlive the parent, nor hold what the parent locked.

Every process pool batchcompact starts (planning in `pipeline/parallel.py`, extraction in
`report/collect.py`, and any executor added later) uses `pool_kwargs()`:

- `worker_init` asks Linux to kill the worker when its parent dies (`PR_SET_PDEATHSIG`), and exits at once
  when the parent is already gone; workers ignore SIGINT (a Ctrl-C reaches the whole process group: the
  parent decides what happens, and stops its workers itself).
- `forget_in_children(path)` names files whose descriptors must not stay open in a forked child: the run
  lock and the state database (with its `-wal`/`-shm`). After every fork the child closes them, so a worker
  that outlives its parent for a moment still holds no lock.
- `stop_pool(pool)` ends a pool's workers without waiting for queued work (used when the parent stops).

The death signal follows the *thread* that started the worker (prctl(2)): start a pool from a thread that
outlives it (the main thread, or the thread that also consumes its results, as `map_bounded` does).

Signals: `install_stop_signals()` makes SIGTERM behave like SIGINT (KeyboardInterrupt) in the main process,
and `StopSignal.received` tells which one arrived.
"""

from __future__ import annotations

import functools
import os
import signal
import sys
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import Any

_FORGET: set[str] = set()  # real paths; a forked child closes every descriptor open on one of these
_PR_SET_PDEATHSIG = 1


def forget_in_children(path: str | os.PathLike[str]) -> None:
    """After a fork, the child closes descriptors open on `path` (and its `-wal`, `-shm`, `-journal`)."""
    _FORGET.add(os.path.realpath(path))


def remember_in_children(path: str | os.PathLike[str]) -> None:
    _FORGET.discard(os.path.realpath(path))


def _close_forgotten() -> None:
    if not _FORGET:
        return
    try:
        fds = os.listdir("/proc/self/fd")
    except OSError:
        return
    for name in fds:
        try:
            fd = int(name)
            target = os.readlink(f"/proc/self/fd/{name}")
        except (ValueError, OSError):
            continue
        if any(target == p or target.startswith(p + "-") or target == p + ".lock" for p in _FORGET):
            try:
                os.close(fd)
            except OSError:
                pass


if hasattr(os, "register_at_fork"):
    os.register_at_fork(after_in_child=_close_forgotten)


def set_parent_death_signal(sig: int = signal.SIGKILL) -> bool:
    """Linux: the kernel sends `sig` to this process when its parent thread ends. False elsewhere."""
    prctl = _prctl()
    return prctl is not None and prctl(_PR_SET_PDEATHSIG, int(sig), 0, 0, 0) == 0


@functools.cache
def _prctl() -> Callable[..., int] | None:
    """libc's prctl through ctypes (Linux), or None. Loaded once: a parent about to fork workers loads it
    first (`map_in_processes`), so each worker inherits it instead of importing ctypes itself."""
    if not sys.platform.startswith("linux"):
        return None
    try:
        import ctypes

        return ctypes.CDLL(None, use_errno=True).prctl
    except (OSError, AttributeError):
        return None


def worker_init(parent_pid: int) -> None:
    """Initializer of every pool worker (see the module docstring)."""
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    signal.signal(signal.SIGTERM, signal.SIG_DFL)
    set_parent_death_signal()
    if os.getppid() != parent_pid:  # the parent died before the death signal was armed
        os._exit(1)


def pool_kwargs() -> dict[str, Any]:
    """Keyword arguments for ProcessPoolExecutor: the worker initializer above."""
    return {"initializer": worker_init, "initargs": (os.getpid(),)}


def stop_pool(pool: Any) -> None:
    """Cancel queued work and end the workers now (the parent is stopping)."""
    processes = list((getattr(pool, "_processes", None) or {}).values())
    pool.shutdown(wait=False, cancel_futures=True)
    for process in processes:
        try:
            process.terminate()
        except (OSError, AttributeError, ValueError):
            pass
    for process in processes:
        try:
            process.join(timeout=5)
        except (OSError, AttributeError, ValueError, AssertionError):
            pass


@contextmanager
def ending(pool: Any) -> Iterator[Any]:
    """The pool for a block: shut down (its work done) when the block ends, its workers stopped at once
    (`stop_pool`) when anything leaves it early (an error, Ctrl-C, SIGTERM, a generator closed)."""
    try:
        yield pool
    except BaseException:
        stop_pool(pool)
        raise
    pool.shutdown(wait=True)


def map_in_processes(function: Callable, todo: list, workers: int, on_outcome: Callable[[Any], object], *,
                     more: tuple = (), initializer: Callable | None = None, initargs: tuple = (),
                     meanwhile: Callable[[], object] | None = None) -> int:
    """`function(item, *more_items)` for each item of `todo` in `workers` processes ("fork" where the OS has
    it: "spawn" would re-import the caller's main module), `on_outcome` called here with each result in
    order. `initializer(parent_pid, *initargs)` replaces `worker_init` (and must call it); `meanwhile` runs
    once every task is submitted (the workers are forked then), before the results.

    Returns how many items finished: a pool that breaks (a worker killed) is logged and the caller does
    the rest itself. Stopped (Ctrl-C, SIGTERM, an error here or in `on_outcome`), the workers end at once,
    not after the queued items, and the error goes on."""
    import logging
    import multiprocessing
    from concurrent.futures import ProcessPoolExecutor
    from concurrent.futures.process import BrokenProcessPool

    methods = multiprocessing.get_all_start_methods()
    context = multiprocessing.get_context("fork" if "fork" in methods else "spawn")
    if "fork" in methods:
        _prctl()  # what worker_init needs, loaded once here for every worker
    start = pool_kwargs()
    if initializer is not None:
        start = {"initializer": initializer, "initargs": (*start["initargs"], *initargs)}
    done = 0
    try:
        with ending(ProcessPoolExecutor(max_workers=workers, mp_context=context, **start)) as pool:
            # many small files: bigger chunks save a round trip per file; few: small chunks keep all busy
            chunk = max(1, min(32, len(todo) // (16 * workers)))
            outcomes = pool.map(function, todo, *more, chunksize=chunk)
            if meanwhile is not None:
                meanwhile()
            for outcome in outcomes:
                on_outcome(outcome)
                done += 1
    except BrokenProcessPool as exc:
        logging.getLogger(__name__).warning(
            "worker processes failed (%s); parsing the remaining %d files here", exc, len(todo) - done)
    return done


class StopSignal:
    """Which stop signal arrived last (None: none)."""

    received: int | None = None


def _raise_interrupt(signum: int, _frame: Any) -> None:
    StopSignal.received = signum
    raise KeyboardInterrupt


_COMMAND_PROCESS = False


def mark_command_process() -> None:
    """The command line's entry point says: this process ends with its command (no library caller goes on
    using what it loaded; `pipeline/runreport.py` then loads pyarrow without numpy)."""
    global _COMMAND_PROCESS
    _COMMAND_PROCESS = True


def is_command_process() -> bool:
    return _COMMAND_PROCESS


def install_stop_signals() -> None:
    """SIGTERM (cron timeouts, `kill`) stops the process the way Ctrl-C does: as a KeyboardInterrupt."""
    signal.signal(signal.SIGTERM, _raise_interrupt)
    previous = signal.getsignal(signal.SIGINT)
    if previous is signal.default_int_handler:
        signal.signal(signal.SIGINT, _raise_interrupt)


def saved_stop_handlers() -> dict[int, Any]:
    """The SIGINT and SIGTERM handlers now (empty off the main thread), for `restore_stop_handlers`."""
    try:
        return {sig: signal.getsignal(sig) for sig in (signal.SIGINT, signal.SIGTERM)}
    except ValueError:
        return {}


def restore_stop_handlers(handlers: dict[int, Any]) -> None:
    """Give back handlers an event loop replaced (asyncio leaves SIGTERM at its default: die)."""
    for sig, handler in handlers.items():
        if handler is None:
            continue
        try:
            signal.signal(sig, handler)
        except (ValueError, OSError):  # not the main thread
            pass


def add_loop_stop_handlers(loop: Any, on_signal: Any) -> None:
    """SIGINT and SIGTERM call `on_signal(signum)` in `loop` (nothing off the main thread, e.g. in tests)."""
    try:
        loop.add_signal_handler(signal.SIGINT, on_signal, signal.SIGINT)
        loop.add_signal_handler(signal.SIGTERM, on_signal, signal.SIGTERM)
    except (NotImplementedError, RuntimeError, ValueError):  # not the main thread (tests)
        pass


def remove_loop_stop_handlers(loop: Any) -> None:
    try:
        loop.remove_signal_handler(signal.SIGINT)
        loop.remove_signal_handler(signal.SIGTERM)
    except (NotImplementedError, RuntimeError):
        pass


def interrupted_exit_code() -> int:
    """128 + the signal, as shells report it (130 Ctrl-C, 143 SIGTERM)."""
    return 128 + (StopSignal.received or signal.SIGINT)


def stop_signal_name(signum: int | None = None) -> str:
    """SIGINT / SIGTERM: the stop signal `signum` (default: the last one received) by name."""
    return signal.Signals(signum or StopSignal.received or signal.SIGINT).name


def pid_alive(pid: int) -> bool:
    """Whether a process with this pid exists (another user's counts as alive)."""
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except OSError:  # alive, owned by someone else
        return True
    return True
