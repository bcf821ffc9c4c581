"""Ordered, bounded parallel map over files in a process pool."""

from __future__ import annotations

from collections import deque
from collections.abc import Callable, Iterable, Iterator
from concurrent.futures import FIRST_COMPLETED, Future, wait
from typing import Any, TypeVar

from batchcompact.lifecycle import ending, pool_kwargs

T = TypeVar("T")

BUSY_PER_WORKER = 4  # unfinished items kept submitted per worker: none waits for its next file
HELD_PER_WORKER = 16  # items submitted and not yet handed on, per worker: finished ones wait for their turn


def map_bounded(func: Callable[..., T], items: Iterable[Any], jobs: int, *args: Any) -> Iterator[T]:
    """`func(item, *args)` for each item, results in input order.

    With jobs > 1 a process pool works on the items; `func` must be a module-level function (picklable).
    Memory does not grow with the number of items: at most `HELD_PER_WORKER` x jobs items are submitted
    and not yet handed on. Within that bound the workers never wait for the item at the head: while a
    large file holds up the order, the next items keep being submitted (`BUSY_PER_WORKER` x jobs
    unfinished at a time) and their results wait for their turn. Workers die with the parent and hold
    none of its locks (batchcompact/lifecycle.py); when the consumer stops (an exception, Ctrl-C,
    SIGTERM, the generator closed) the workers are ended at once instead of finishing the queued items.
    """
    if jobs <= 1:
        for item in items:
            yield func(item, *args)
        return
    from concurrent.futures import ProcessPoolExecutor  # not for one process: ~15 ms of a small plan's start

    busy, held = BUSY_PER_WORKER * jobs, HELD_PER_WORKER * jobs
    todo = iter(items)
    window: deque[Future] = deque()  # submitted, in input order
    running: set[Future] = set()  # of those, the ones not known to be finished
    more = True
    with ending(ProcessPoolExecutor(max_workers=jobs, **pool_kwargs())) as pool:
        while True:
            while more and len(running) < busy and len(window) < held:
                item = next(todo, _END)
                if item is _END:
                    more = False
                    break
                future = pool.submit(func, item, *args)
                window.append(future)
                running.add(future)
            if not window:
                return
            head = window[0]
            if head.done():
                window.popleft()
                running.discard(head)
                yield head.result()
            else:  # the head is not finished: wait for any item, then submit more while the head works
                running = wait(running, return_when=FIRST_COMPLETED).not_done


_END = object()
