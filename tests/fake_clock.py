"""A virtual clock for the pool's rate limits and retries (tests/test_pool.py, the litellm summarizer's tests):
injected where the pool takes `clock` and `sleep`, so no test sleeps."""

from __future__ import annotations

import asyncio
import heapq


class FakeClock:
    """Virtual time. `sleep(d)` parks the caller until the clock reaches now + d; the clock jumps to the
    next wake-up only after every other task had many chances to run (so refunds and events are seen)."""

    def __init__(self):
        self.now = 0.0
        self.sleeps: list[float] = []
        self._sleepers: list = []
        self._seq = 0
        self._driver = None

    def __call__(self) -> float:
        return self.now

    async def sleep(self, delay: float) -> None:
        self.sleeps.append(delay)
        if delay <= 0:
            await asyncio.sleep(0)
            return
        future = asyncio.get_running_loop().create_future()
        self._seq += 1
        heapq.heappush(self._sleepers, (self.now + delay, self._seq, future))
        if self._driver is None or self._driver.done():
            self._driver = asyncio.ensure_future(self._drive())
        await future

    async def _drive(self) -> None:
        while True:
            for _ in range(50):
                await asyncio.sleep(0)
            while self._sleepers and self._sleepers[0][2].done():
                heapq.heappop(self._sleepers)
            if not self._sleepers:
                return
            wake, _, future = heapq.heappop(self._sleepers)
            self.now = max(self.now, wake)
            future.set_result(None)
