"""Ordered, bounded parallel map over files in a process pool."""

from __future__ import annotations

from collections import deque
from collections.abc import Callable, Iterable, Iterator
from concurrent.futures import ProcessPoolExecutor
from typing import Any, TypeVar

T = TypeVar("T")


def map_bounded(func: Callable[..., T], items: Iterable[Any], jobs: int, *args: Any) -> Iterator[T]:
    """`func(item, *args)` for each item, results in input order.

    With jobs > 1 a process pool keeps at most 4 x jobs items in flight, so memory does not grow with
    the number of items; `func` must be a module-level function (picklable).
    """
    if jobs <= 1:
        for item in items:
            yield func(item, *args)
        return
    window: deque = deque()
    with ProcessPoolExecutor(max_workers=jobs) as pool:
        for item in items:
            window.append(pool.submit(func, item, *args))
            if len(window) >= 4 * jobs:
                yield window.popleft().result()
        while window:
            yield window.popleft().result()
