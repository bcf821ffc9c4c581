"""Ordered, bounded parallel map over files: a process pool here, and the window both executors keep."""

from __future__ import annotations

from collections import deque
from collections.abc import Callable, Iterable, Iterator
from concurrent.futures import FIRST_COMPLETED, Future, wait
from typing import Concatenate, TypeVar

from batchcompact.lifecycle import ending, pool_kwargs

T = TypeVar("T")
H = TypeVar("H")
ItemT = TypeVar("ItemT")  # what one task works on (a file, a session's work): its first argument
# File work: a module-level function of one item and the shared arguments (which the executors only pass on).
Work = Callable[Concatenate[ItemT, ...], T]

BUSY_PER_WORKER = 4  # unfinished items kept submitted per worker: none waits for its next file
HELD_PER_WORKER = 16  # items submitted and not yet handed on, per worker: finished ones wait for their turn


def map_bounded(func: Work[ItemT, T], items: Iterable[ItemT], jobs: int, *args: object,
                lookahead: bool = True) -> Iterator[T]:
    """`func(item, *args)` for each item, results in input order.

    With jobs > 1 a process pool works on the items (`in_order`: `BUSY_PER_WORKER` x jobs unfinished,
    at most `HELD_PER_WORKER` x jobs not yet handed on; without `lookahead`, for large results or items
    that hold a lock until handed on, only the unfinished ones); `func` must be a module-level function
    (picklable). Workers die with the parent and hold none of its locks (batchcompact/lifecycle.py); when
    the consumer stops (an exception, Ctrl-C, SIGTERM, the generator closed) the workers are ended at once
    instead of finishing the queued items.
    """
    if jobs <= 1:
        for item in items:
            yield func(item, *args)
        return
    from concurrent.futures import ProcessPoolExecutor  # not for one process: ~15 ms of a small plan's start

    with ending(ProcessPoolExecutor(max_workers=jobs, **pool_kwargs())) as pool:
        held = (HELD_PER_WORKER if lookahead else BUSY_PER_WORKER) * jobs
        for future in in_order(lambda item: pool.submit(func, item, *args), items, BUSY_PER_WORKER * jobs, held,
                               _finished_futures):
            yield future.result()


def in_order(submit: Callable[[ItemT], H], items: Iterable[ItemT], busy: int, held: int,
             wait_some: Callable[[set[H]], Iterable[H]]) -> Iterator[H]:
    """Each item's handle from `submit(item)`, handed on in input order once it is finished.

    Memory does not grow with the number of items: at most `held` items are submitted and not yet handed
    on, and the items are taken from `items` as that allows. Within that bound no worker waits for the item
    at the head: while a large file holds up the order, the next items keep being submitted (`busy`
    unfinished at a time) and wait for their turn when they finish. `wait_some(running)` blocks until at
    least one of the running handles is finished and returns the finished ones."""
    todo = iter(items)
    window: deque[H] = deque()  # submitted, in input order
    running: set[H] = set()  # of those, the ones not seen finished
    more = True
    while True:
        while more and len(running) < busy and len(window) < held:
            try:
                item = next(todo)
            except StopIteration:
                more = False
                break
            handle = submit(item)
            window.append(handle)
            running.add(handle)
        if not window:
            return
        if window[0] not in running:
            yield window.popleft()
        else:  # the head is not finished: wait for any item, then submit more while the head works
            running.difference_update(wait_some(running))


def _finished_futures(running: set[Future[T]]) -> set[Future[T]]:
    return wait(running, return_when=FIRST_COMPLETED).done

