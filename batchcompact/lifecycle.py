"""Worker-process lifecycle: workers never outlive the parent, nor hold what the parent locked.

Every process pool batchcompact starts (planning in `pipeline/parallel.py`, and any executor added later)
uses `pool_kwargs()`; the report's extraction (`map_in_processes`, for `report/collect.py` and
`report/fast_collect.py`) forks its workers itself where the OS forks, with the same initializer:

- `worker_init` asks Linux to kill the worker when its parent dies (`PR_SET_PDEATHSIG`), and exits at once
  when the parent is already gone; workers ignore SIGINT (a Ctrl-C reaches the whole process group: the
  parent decides what happens, and stops its workers itself).
- `forget_in_children(path)` names files whose descriptors must not stay open in a forked child: the run
  lock and the state database (with its `-wal`/`-shm`). After every fork the child closes them, so a worker
  that outlives its parent for a moment still holds no lock.
- `stop_pool(pool)` ends a pool's workers without waiting for queued work (used when the parent stops);
  `map_in_processes` kills and reaps its forked workers the same way.

The death signal follows the *thread* that started the worker (prctl(2)): start a pool from a thread that
outlives it (the main thread, or the thread that also consumes its results, as `map_bounded` does).

Signals: `install_stop_signals()` makes SIGTERM behave like SIGINT (KeyboardInterrupt) in the main process,
and `StopSignal.received` tells which one arrived.
"""

from __future__ import annotations

import functools
import gc
import os
import signal
import sys
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import TYPE_CHECKING, Any, TypedDict, TypeVar

if TYPE_CHECKING:
    import asyncio
    from concurrent.futures import Executor
    from signal import _HANDLER
    from types import FrameType

Pool = TypeVar("Pool", bound="Executor")


class PoolKwargs(TypedDict):
    """`ProcessPoolExecutor`'s keyword arguments for its workers' start (`pool_kwargs`)."""

    initializer: Callable[[int], None]
    initargs: tuple[int]

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


def pool_kwargs() -> PoolKwargs:
    """Keyword arguments for ProcessPoolExecutor: the worker initializer above."""
    return {"initializer": worker_init, "initargs": (os.getpid(),)}


def stop_pool(pool: Executor) -> None:
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
def ending(pool: Pool) -> Iterator[Pool]:
    """The pool for a block: shut down (its work done) when the block ends, its workers stopped at once
    (`stop_pool`) when anything leaves it early (an error, Ctrl-C, SIGTERM, a generator closed)."""
    try:
        yield pool
    except BaseException:
        stop_pool(pool)
        raise
    pool.shutdown(wait=True)


# Any: what `function` returns, handed to `on_outcome` as it is (here and in the helpers below)
def map_in_processes(function: Callable, todo: list, workers: int, on_outcome: Callable[[Any], object], *,
                     more: tuple = (), initializer: Callable | None = None, initargs: tuple = ()) -> int:
    """`function(item, *more_items)` for each item of `todo` in `workers` processes, `on_outcome` called
    here with each result in order. `initializer(parent_pid, *initargs)` replaces `worker_init` (and must
    call it). Where the OS forks, the workers are forked directly (`_fork_map`: no multiprocessing
    machinery to import or start, 10-20 ms of a cold report); elsewhere a "spawn" process pool runs them.

    Returns how many items finished: a worker that dies is logged and the caller does the rest itself
    (forked workers: the items it held are done here, in order, and every item finishes). An exception
    `function` raises in a worker is raised here in its turn. Stopped (Ctrl-C, SIGTERM, an error here or in
    `on_outcome`), the workers end at once, not after the queued items, and the error goes on."""
    start_args = (os.getpid(), *initargs)
    start = initializer or worker_init
    if hasattr(os, "fork"):
        _prctl()  # what worker_init needs, loaded once here for every worker
        return _fork_map(function, todo, min(workers, len(todo)), on_outcome, more, start, start_args)
    return _spawn_map(function, todo, workers, on_outcome, more, start, start_args)


# Any: what `function` returns (map_in_processes)
def _spawn_map(function: Callable, todo: list, workers: int, on_outcome: Callable[[Any], object], more: tuple,
               initializer: Callable, initargs: tuple) -> int:
    """`map_in_processes` through a "spawn" ProcessPoolExecutor (where the OS does not fork)."""
    import logging
    import multiprocessing
    from concurrent.futures import ProcessPoolExecutor
    from concurrent.futures.process import BrokenProcessPool

    done = 0
    try:
        with ending(ProcessPoolExecutor(max_workers=workers, mp_context=multiprocessing.get_context("spawn"),
                                        initializer=initializer, initargs=initargs)) as pool:
            # many small files: bigger chunks save a round trip per file; few: small chunks keep all busy
            chunk = max(1, min(32, len(todo) // (16 * workers)))
            for outcome in pool.map(function, todo, *more, chunksize=chunk):
                on_outcome(outcome)
                done += 1
    except BrokenProcessPool as exc:
        logging.getLogger(__name__).warning(
            "worker processes failed (%s); parsing the remaining %d files here", exc, len(todo) - done)
    return done


_FRAME = 8  # an item number, or a result's length before its pickle (index, ok, value)
_AHEAD = 2  # items a worker holds: the next is there when it finishes one


# Any: what `function` returns (map_in_processes)
def _fork_map(function: Callable, todo: list, workers: int, on_outcome: Callable[[Any], object], more: tuple,
              initializer: Callable, initargs: tuple) -> int:
    """`map_in_processes` with forked workers, each fed item numbers through its own pipe (`_AHEAD` at a
    time, the next as each result comes back: a large file does not hold up the rest) and answering
    through another. The items of a worker that ends before answering for them are done here at once;
    when no worker is left, so is the rest. Results wait for their turn (at most `_AHEAD` per worker)."""
    import logging
    import select

    children: dict[int, _Child] = {}  # by their results pipe
    results: dict[int, tuple[bool, Any]] = {}  # Any: (True, what `function` returned) or (False, its error)
    queue = iter(range(len(todo)))
    emitted = 0

    def here(index: int) -> None:
        results[index] = (True, function(todo[index], *(values[index] for values in more)))

    try:
        for _ in range(max(workers, 1)):
            try:
                child = _Child.fork(function, todo, more, initializer, initargs, list(children.values()))
            except OSError as exc:  # no more processes (EAGAIN, ENOMEM): those there are do the work
                logging.getLogger(__name__).warning("could not start a worker process (%s); using %d",
                                                    exc.strerror or exc, len(children))
                break
            children[child.results] = child
        if not children:
            return 0  # the caller does it all itself
        for child in list(children.values()):
            for _ in range(_AHEAD):
                child.give(next(queue, None))
        while children:
            for fd in select.select(list(children), [], [])[0]:
                child = children[fd]
                answer = child.receive()
                if answer is None:  # the worker ended: what it still held is done here
                    del children[fd]
                    child.close()
                    if child.held:
                        logging.getLogger(__name__).warning(
                            "a worker process failed (%s); parsing its %d files here", child.ended(), len(child.held))
                    for index in child.held:
                        here(index)
                    continue
                results[answer[0]] = answer[1:]
                child.give(next(queue, None))
            while emitted in results:
                emitted = _emit(results, emitted, on_outcome)
        for index in queue:  # no worker left (each one failed)
            here(index)
        while emitted in results:
            emitted = _emit(results, emitted, on_outcome)
        return emitted
    finally:
        for child in children.values():
            child.kill()


# Any: (True, what `function` returned) or (False, the error it raised), as `_fork_map` keeps them
def _emit(results: dict[int, tuple[bool, Any]], index: int, on_outcome: Callable[[Any], object]) -> int:
    """Hand result `index` on (or raise the error a worker met there); the next index."""
    ok, value = results.pop(index)
    if not ok:
        raise value
    on_outcome(value)
    return index + 1


class _Child:
    """One forked worker of `_fork_map`: its pid, the pipe it reads item numbers from (-1: stop), the pipe
    it answers through, and the items it holds."""

    def __init__(self, pid: int, tasks: int, results: int) -> None:
        self.pid, self.tasks, self.results = pid, tasks, results
        self.held: list[int] = []
        self.stopped = False
        self.code: int | None = None

    @classmethod
    def fork(cls, function: Callable, todo: list, more: tuple, initializer: Callable, initargs: tuple,
             siblings: list[_Child]) -> _Child:
        tasks_read, tasks_write = os.pipe()
        results_read, results_write = os.pipe()
        try:
            pid = os.fork()
        except OSError:
            for fd in (tasks_read, tasks_write, results_read, results_write):
                os.close(fd)
            raise
        if pid == 0:  # the worker: it never returns into the caller's code
            code = 1
            try:
                for fd in (tasks_write, results_read, *(f for s in siblings for f in (s.tasks, s.results))):
                    os.close(fd)
                gc.enable()  # a worker collects its own garbage, whatever the parent paused for its bulk work
                initializer(*initargs)
                _serve(function, todo, more, tasks_read, results_write)
                code = 0
            finally:
                os._exit(code)
        os.close(tasks_read)
        os.close(results_write)
        return cls(pid, tasks_write, results_read)

    def give(self, index: int | None) -> None:
        """Send item `index`; None: nothing more to give (the stop goes once the worker holds nothing)."""
        if self.stopped or (index is None and self.held):
            return
        if index is None:
            self.stopped = True
        else:
            self.held.append(index)
        try:
            os.write(self.tasks, (-1 if index is None else index).to_bytes(_FRAME, "little", signed=True))
        except OSError:  # the worker is gone: its results pipe ends, and what it held is done here
            self.stopped = True

    def receive(self) -> tuple[int, bool, Any] | None:  # Any: an unpickled outcome or error (`_emit`)
        """The worker's next answer, or None when it ended (an answer torn by its end counts as none)."""
        import pickle

        head = _read_exact(self.results, _FRAME)
        body = _read_exact(self.results, int.from_bytes(head, "little")) if len(head) == _FRAME else b""
        try:
            index, ok, value = pickle.loads(body)
        except Exception:  # nothing, or a torn answer
            return None
        self.held.remove(index)
        return index, ok, value

    def ended(self) -> str:
        """How the worker ended, once reaped."""
        code = self.code if self.code is not None else 0
        return f"killed by signal {-code}" if code < 0 else f"exit code {code}"

    def close(self) -> None:
        """Close the pipes and reap the worker (which has ended, or been killed)."""
        for fd in (self.tasks, self.results):
            try:
                os.close(fd)
            except OSError:
                pass
        if self.code is None:
            self.code = os.waitstatus_to_exitcode(os.waitpid(self.pid, 0)[1])

    def kill(self) -> None:
        """End the worker now (this process is stopping) and reap it."""
        try:
            os.kill(self.pid, signal.SIGKILL)
        except OSError:
            pass
        self.close()


def _read_exact(fd: int, size: int) -> bytes:
    """`size` bytes from a pipe, fewer only at its end."""
    chunks = []
    while size > 0:
        chunk = os.read(fd, min(size, 1 << 20))
        if not chunk:
            break
        chunks.append(chunk)
        size -= len(chunk)
    return b"".join(chunks)


def _serve(function: Callable, todo: list, more: tuple, tasks: int, results: int) -> None:
    """A forked worker's loop: read an item number, answer (index, ok, value), until -1 or the pipe ends.
    An exception `function` raises is the answer (raised in the parent in its turn); SIGINT is ignored."""
    import pickle

    while True:
        raw = _read_exact(tasks, _FRAME)
        index = int.from_bytes(raw, "little", signed=True) if len(raw) == _FRAME else -1
        if index < 0:
            return
        try:
            body = pickle.dumps((index, True, function(todo[index], *(values[index] for values in more))),
                                protocol=pickle.HIGHEST_PROTOCOL)
        except Exception as exc:
            try:
                body = pickle.dumps((index, False, exc), protocol=pickle.HIGHEST_PROTOCOL)
            except Exception:  # an exception that does not pickle: its type and words
                body = pickle.dumps((index, False, RuntimeError(f"{type(exc).__name__}: {exc}")))
        _write_all(results, len(body).to_bytes(_FRAME, "little") + body)


def _write_all(fd: int, data: bytes) -> None:
    view = memoryview(data)
    while view:
        view = view[os.write(fd, view):]


class StopSignal:
    """Which stop signal arrived last (None: none)."""

    received: int | None = None


def _raise_interrupt(signum: int, _frame: FrameType | None) -> None:
    StopSignal.received = signum
    raise KeyboardInterrupt


_COMMAND_PROCESS = False


def mark_command_process() -> None:
    """The command line's entry point says: this process ends with its command (no library caller goes on
    using what it loaded; `pipeline/runreport/write.py` then loads pyarrow without numpy)."""
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


def saved_stop_handlers() -> dict[int, _HANDLER]:
    """The SIGINT and SIGTERM handlers now (empty off the main thread), for `restore_stop_handlers`."""
    try:
        return {sig: signal.getsignal(sig) for sig in (signal.SIGINT, signal.SIGTERM)}
    except ValueError:
        return {}


def restore_stop_handlers(handlers: dict[int, _HANDLER]) -> None:
    """Give back handlers an event loop replaced (asyncio leaves SIGTERM at its default: die)."""
    for sig, handler in handlers.items():
        if handler is None:
            continue
        try:
            signal.signal(sig, handler)
        except (ValueError, OSError):  # not the main thread
            pass


def add_loop_stop_handlers(loop: asyncio.AbstractEventLoop, on_signal: Callable[[int], object]) -> None:
    """SIGINT and SIGTERM call `on_signal(signum)` in `loop` (nothing off the main thread, e.g. in tests)."""
    try:
        loop.add_signal_handler(signal.SIGINT, on_signal, signal.SIGINT)
        loop.add_signal_handler(signal.SIGTERM, on_signal, signal.SIGTERM)
    except (NotImplementedError, RuntimeError, ValueError):  # not the main thread (tests)
        pass


def remove_loop_stop_handlers(loop: asyncio.AbstractEventLoop) -> None:
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
