"""Ordered, bounded parallel map over files in a process pool."""

from __future__ import annotations

from collections import deque
from collections.abc import Callable, Iterable, Iterator
from concurrent.futures import ProcessPoolExecutor
from typing import Any, TypeVar

from batchcompact.lifecycle import ending, pool_kwargs

T = TypeVar("T")


def map_bounded(func: Callable[..., T], items: Iterable[Any], jobs: int, *args: Any) -> Iterator[T]:
    """`func(item, *args)` for each item, results in input order.

    With jobs > 1 a process pool keeps at most 4 x jobs items in flight, so memory does not grow with
    the number of items; `func` must be a module-level function (picklable). Workers die with the parent
    and hold none of its locks (batchcompact/lifecycle.py); when the consumer stops (an exception, Ctrl-C,
    SIGTERM, the generator closed) the workers are ended at once instead of finishing the queued items.
    """
    if jobs <= 1:
        for item in items:
            yield func(item, *args)
        return
    window: deque = deque()
    with ending(ProcessPoolExecutor(max_workers=jobs, **pool_kwargs())) as pool:
        for item in items:
            window.append(pool.submit(func, item, *args))
            if len(window) >= 4 * jobs:
                yield window.popleft().result()
        while window:
            yield window.popleft().result()
