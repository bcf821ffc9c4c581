"""Where file-level work runs: one small interface, a local process pool or a Ray cluster.

File-level work (read + plan one session, extract one file's usage, write one compacted session) is a
module-level function of one item plus shared arguments. Callers submit a stream of it with
`executor.map(func, items, *args)` and consume the results in input order, or one item with
`executor.submit(func, item, *args)` and wait on the future (a session whose summaries just came back);
they never branch on which executor runs it. `map` keeps a bounded number of items in flight, so the
caller's memory does not grow with the archive; callers of `submit` bound their own (the model pool's
concurrency).

The run state, the lock, the budget, the model pool and the report stay in the calling process: only
pure, idempotent file work is submitted (a task repeated after a lost node gives the same result).
The local pool's ordered map is `pipeline.parallel`; its workers' lifecycle, `batchcompact/lifecycle.py`.
"""

from __future__ import annotations

import os
from collections.abc import Iterable, Iterator
from concurrent.futures import Future
from typing import TYPE_CHECKING, Any, Protocol, TypeVar

from batchcompact.errors import BatchCompactError, RunAborted, UsageError

if TYPE_CHECKING:
    from concurrent.futures import Executor as FuturesExecutor

    from ray import ObjectRef

    from batchcompact.pipeline.parallel import Work

T = TypeVar("T")
ItemT = TypeVar("ItemT")  # what one task works on (a file, a session's work)

LOCAL = "local"
RAY = "ray"
EXECUTORS = (LOCAL, RAY)
IN_FLIGHT_PER_WORKER = 4  # Ray tasks running or queued per cluster CPU
HELD_PER_IN_FLIGHT = 4  # tasks submitted and not yet handed on, per task in flight (results wait for their turn)
RAY_TASK_RETRIES = 3  # a task lost with its node is run again elsewhere (file work is idempotent)


class ExecutorLost(RunAborted):
    """The executor could not run a task at all (Ray: its node was lost more often than it is retried)."""


class Executor(Protocol):
    name: str

    def map(self, func: Work[ItemT, T], items: Iterable[ItemT], *args: object, lookahead: bool = True) -> Iterator[T]:
        """`func(item, *args)` for each item, results in input order, bounded work in flight. With
        `lookahead` (small results) items behind a long one keep being worked on and wait for their turn;
        without (large results, or items that hold a lock until handed on) no more are submitted than are
        in flight: the consumer sets the pace."""
        ...

    def submit(self, func: Work[ItemT, T], item: ItemT, *args: object) -> Future[T]:
        """`func(item, *args)` on its own; its future (for asyncio: `asyncio.wrap_future`)."""
        ...

    def close(self) -> None: ...


class LocalExecutor:
    """Today's behaviour: `jobs` worker processes on this machine (one: in this process)."""

    name = LOCAL

    def __init__(self, jobs: int = 1) -> None:
        self.jobs = max(1, jobs)
        self._pool: FuturesExecutor | None = None  # for `submit`: made on first use

    def map(self, func: Work[ItemT, T], items: Iterable[ItemT], *args: object, lookahead: bool = True) -> Iterator[T]:
        from batchcompact.pipeline.parallel import map_bounded

        return map_bounded(func, items, self.jobs, *args, lookahead=lookahead)

    def submit(self, func: Work[ItemT, T], item: ItemT, *args: object) -> Future[T]:
        """In a worker process (jobs > 1), else in a thread of this process (the caller's loop stays free)."""
        if self._pool is None:
            if self.jobs > 1:
                from concurrent.futures import ProcessPoolExecutor

                from batchcompact.lifecycle import pool_kwargs

                self._pool = ProcessPoolExecutor(max_workers=self.jobs, **pool_kwargs())
            else:
                from concurrent.futures import ThreadPoolExecutor

                self._pool = ThreadPoolExecutor(max_workers=1, thread_name_prefix="batchcompact-file")
        return self._pool.submit(func, item, *args)

    def close(self) -> None:
        """End the workers `submit` started (at once: what was asked of them is done or given up)."""
        pool, self._pool = self._pool, None
        if pool is None:
            return
        from concurrent.futures import ProcessPoolExecutor

        if isinstance(pool, ProcessPoolExecutor):
            from batchcompact.lifecycle import stop_pool

            stop_pool(pool)
        else:
            pool.shutdown(wait=True, cancel_futures=True)


def resolve_ray_address(address: str | None) -> str:
    """--ray-address, else RAY_ADDRESS, else `auto` (the cluster this machine belongs to)."""
    return address or os.environ.get("RAY_ADDRESS") or "auto"


class RayExecutor:
    """Ray tasks over a cluster; the driver (this process) keeps `in_flight` tasks running or queued, and at
    most `HELD_PER_IN_FLIGHT` x `in_flight` submitted and not yet handed on (`parallel.in_order`: a long task
    at the head of the order does not leave the cluster idle).

    `address` is a Ray address (`auto`, `ray://host:10001`, `host:6379`) or `local` to start a Ray
    instance on this machine. An already initialised Ray (tests, notebooks) is used as it is.
    Inputs and outputs must be on a filesystem every node sees at the same path.
    """

    name = RAY

    def __init__(self, address: str | None = None, in_flight: int | None = None) -> None:
        try:
            import ray
        except ImportError:
            raise UsageError("--executor ray needs Ray: pip install 'batchcompact[ray]'") from None
        self._ray = ray
        self._started = False
        if not ray.is_initialized():
            target = resolve_ray_address(address)
            try:
                ray.init(
                    address=target,  # "local" starts a new instance here
                    include_dashboard=False,
                    log_to_driver=False,
                    configure_logging=False,
                )
            except (ConnectionError, RuntimeError, ValueError) as exc:
                first = str(exc).strip().splitlines()[0] if str(exc).strip() else type(exc).__name__
                raise UsageError(f"cannot connect to Ray at {target!r}: {first} "
                                 "(start a cluster with `ray start`, or pass --ray-address)") from None
            self._started = True
        cpus = int(ray.cluster_resources().get("CPU", 1))
        self.in_flight = in_flight or max(2, IN_FLIGHT_PER_WORKER * cpus)
        # Any: Ray's remote function of a generic function, after `.options()` (its types lose `_on_node`'s)
        self._remote: Any = ray.remote(_on_node).options(max_retries=RAY_TASK_RETRIES, retry_exceptions=False)

    def map(self, func: Work[ItemT, T], items: Iterable[ItemT], *args: object, lookahead: bool = True) -> Iterator[T]:
        from batchcompact.pipeline.parallel import in_order

        ray = self._ray
        shared = ray.put(args) if args else None  # shipped once, not with every task

        def finished(running: set[object]) -> list[object]:
            return ray.wait(list(running), num_returns=1)[0]

        for ref in in_order(lambda item: self._remote.remote(func, item, shared), items, self.in_flight,
                            (HELD_PER_IN_FLIGHT if lookahead else 1) * self.in_flight, finished):
            yield self._get(ref)

    def submit(self, func: Work[ItemT, T], item: ItemT, *args: object) -> Future[T]:
        ours: Future[T] = Future()

        def settle(theirs: Future[T]) -> None:
            error = theirs.exception()
            if error is None:
                ours.set_result(theirs.result())
            else:
                ours.set_exception(self._raised(error) if isinstance(error, self._ray.exceptions.RayError) else error)

        self._remote.remote(func, item, args or None).future().add_done_callback(settle)
        return ours

    # Any: a task's result, whatever the work returns (Ray's ObjectRef[T] is untyped where ray is not installed)
    def _get(self, ref: ObjectRef) -> Any:
        try:
            return self._ray.get(ref)
        except self._ray.exceptions.RayError as error:
            raise self._raised(error) from None

    def _raised(self, error: BaseException) -> BaseException:
        """What a Ray error stands for: an error a task raised on purpose (a `BatchCompactError`, such as an
        input the report must not go on without) is that error, as it would be locally; else the task was lost."""
        cause = getattr(error, "cause", None)
        if isinstance(error, self._ray.exceptions.RayTaskError) and isinstance(cause, BatchCompactError):
            return cause
        return self._lost(error)

    @staticmethod
    def _lost(error: BaseException) -> ExecutorLost:
        """Our tasks never raise: a Ray error means the task itself was lost (a node, a worker, the cluster)."""
        text = str(error).strip()
        first = text.splitlines()[0] if text else type(error).__name__
        return ExecutorLost(f"Ray lost a task after {RAY_TASK_RETRIES} retries: {first}")

    def close(self) -> None:
        if self._started:
            self._ray.shutdown()
            self._started = False


def _on_node(func: Work[ItemT, T], item: ItemT, shared: tuple[object, ...] | None) -> T:
    """Runs on a Ray worker: `shared` arrives resolved (Ray passes top-level object refs by value)."""
    return func(item, *(shared or ()))


def make_executor(kind: str = LOCAL, *, jobs: int = 1, ray_address: str | None = None) -> Executor:
    if kind == LOCAL:
        return LocalExecutor(jobs)
    if kind == RAY:
        return RayExecutor(ray_address)
    raise UsageError(f"unknown executor {kind!r}; choose one of {', '.join(EXECUTORS)}")
