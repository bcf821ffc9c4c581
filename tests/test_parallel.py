"""pipeline.parallel.map_bounded: results in input order, bounded, and no worker idle behind a slow head."""

from __future__ import annotations

import os
import time
from pathlib import Path

import pytest

from batchcompact.pipeline import parallel
from batchcompact.pipeline.parallel import map_bounded

HEAD_WAIT = 30.0  # seconds the head waits for the last item: far more than the items take


def _head_waits_for_the_last(item: tuple[int, str, int]) -> tuple[int, bool]:
    """Item 0 waits until the last item has run (a marker file); the others write their marker at once.
    (index, whether the head saw the last item run while it was still working)."""
    index, folder, last = item
    if index != 0:
        Path(folder, str(index)).write_text(str(os.getpid()))
        return index, True
    deadline = time.monotonic() + HEAD_WAIT
    while time.monotonic() < deadline:
        if Path(folder, str(last)).exists():
            return index, True
        time.sleep(0.01)
    return index, False


def test_a_slow_head_does_not_hold_up_the_items_behind_it(tmp_path):
    """While the first file is still being worked on, the other worker goes through the next ones (up to
    the bound): with a window that waited for the head, the item at the end of the bound never started
    and the head timed out."""
    jobs = 2
    count = parallel.HELD_PER_WORKER * jobs  # every item fits in the bound
    items = [(i, str(tmp_path), count - 1) for i in range(count)]
    results = list(map_bounded(_head_waits_for_the_last, items, jobs))
    assert [index for index, _ in results] == list(range(count))  # input order
    assert results[0] == (0, True), "the last item did not run while the head was working"


def _slow_for_some(item: int) -> int:
    time.sleep(0.003 * (item % 4))
    return item * item


@pytest.mark.parametrize("jobs", [1, 2, 3])
def test_results_come_in_input_order_and_every_item_once(jobs):
    items = list(range(200))  # more than the bound: the window slides
    assert list(map_bounded(_slow_for_some, items, jobs)) == [i * i for i in items]


def _pid(_item: int) -> int:
    return os.getpid()


def _most_taken_ahead(count: int, lookahead: bool) -> int:
    """How far the pool read its input ahead of what the consumer took, at most, over `count` items."""
    taken: list[int] = []

    def items():
        for i in range(count):
            taken.append(i)
            yield i

    ahead = 0
    for consumed, _ in enumerate(map_bounded(_pid, items(), 2, lookahead=lookahead), start=1):
        ahead = max(ahead, len(taken) - consumed)
    assert len(taken) == count
    return ahead


def test_memory_is_bounded_items_are_taken_as_the_consumer_goes():
    """The input is read lazily: never more than the bound ahead of what the consumer took."""
    assert _most_taken_ahead(500, lookahead=True) < parallel.HELD_PER_WORKER * 2


def _fails_on_three(item: int) -> int:
    if item == 3:
        raise ValueError("item 3 is bad")
    return item


def test_an_error_is_raised_in_its_turn():
    results = map_bounded(_fails_on_three, range(10), 2)
    assert [next(results) for _ in range(3)] == [0, 1, 2]
    with pytest.raises(ValueError, match="item 3 is bad"):
        next(results)


def test_without_lookahead_only_the_items_in_flight_are_submitted():
    """For large results (a prepared session with its prompts and lock), the consumer sets the pace."""
    assert _most_taken_ahead(100, lookahead=False) < parallel.BUSY_PER_WORKER * 2
