"""Requests-per-minute and tokens-per-minute limits with reserve-then-refund.

`WindowLimiter` keeps the reservations of the last `window` seconds. Invariant: the sum of the amounts of
reservations made within any `window`-long interval never exceeds `limit` (a classic token bucket may
allow up to 2x in a window when it starts full; a provider counting per minute would see that as a 429).
A single reservation larger than `limit` is clamped to `limit` so that it can still go through alone.
Waiting is one computed sleep until enough old reservations expire, never a polling loop.
"""

from __future__ import annotations

import asyncio
import collections
from collections.abc import Awaitable, Callable
from dataclasses import dataclass


@dataclass(eq=False)
class Reservation:
    time: float
    amount: float


class WindowLimiter:
    """At most `limit` units per `window` seconds. `clock` and `sleep` are injected for tests."""

    def __init__(
        self,
        limit: float,
        clock: Callable[[], float],
        sleep: Callable[[float], Awaitable[None]],
        window: float = 60.0,
    ):
        if limit <= 0:
            raise ValueError("limit must be positive")
        self.limit = float(limit)
        self.window = window
        self.clock = clock
        self.sleep = sleep
        self._log: collections.deque[Reservation] = collections.deque()
        self._used = 0.0
        self._lock = asyncio.Lock()  # FIFO: earlier waiters are served first

    def _expire(self, now: float) -> None:
        while self._log and self._log[0].time <= now - self.window:
            self._used -= self._log.popleft().amount

    def _wait_time(self, amount: float, now: float) -> float:
        """Seconds until `amount` fits, given the current log (0 when it fits now)."""
        excess = self._used + amount - self.limit
        if excess <= 1e-9:
            return 0.0
        freed = 0.0
        for item in self._log:
            freed += item.amount
            if freed >= excess - 1e-9:
                return max(item.time + self.window - now, 0.0)
        return 0.0  # unreachable while amount <= limit

    def clamp(self, amount: float) -> float:
        return min(max(float(amount), 0.0), self.limit)

    def wait_time(self, amount: float, now: float) -> float:
        self._expire(now)
        return self._wait_time(self.clamp(amount), now)

    def reserve(self, amount: float, now: float) -> Reservation:
        reservation = Reservation(now, self.clamp(amount))
        self._log.append(reservation)
        self._used += reservation.amount
        return reservation

    async def acquire(self, amount: float) -> Reservation:
        async with self._lock:
            while (wait := self.wait_time(amount, self.clock())) > 0:
                await self.sleep(wait)
            return self.reserve(amount, self.clock())

    def settle(self, reservation: Reservation, actual: float) -> None:
        """Replace a reservation's estimate by what was really used (refund or top up)."""
        actual = min(max(float(actual), 0.0), self.limit)
        if any(item is reservation for item in self._log):
            self._used += actual - reservation.amount
        reservation.amount = actual


class RateLimits:
    """The pool's rpm and tpm limiters (either may be absent), reserved together at the same instant.

    Reserving both at once matters: reserving the request first and then waiting for tokens would date
    the request reservation earlier than the real send, and two sends could then share a window.
    """

    def __init__(
        self,
        rpm: float | None,
        tpm: float | None,
        clock: Callable[[], float],
        sleep: Callable[[float], Awaitable[None]],
    ):
        self.requests = WindowLimiter(rpm, clock, sleep) if rpm else None
        self.tokens = WindowLimiter(tpm, clock, sleep) if tpm else None
        self.clock = clock
        self.sleep = sleep
        self._lock = asyncio.Lock()
        self._refunded = asyncio.Event()  # wakes a waiter early when a call used less than it reserved

    async def _wait(self, seconds: float) -> None:
        """Sleep `seconds`, or less if a refund frees room first."""
        self._refunded.clear()
        sleeper = asyncio.ensure_future(self.sleep(seconds))
        refund = asyncio.ensure_future(self._refunded.wait())
        try:
            await asyncio.wait({sleeper, refund}, return_when=asyncio.FIRST_COMPLETED)
        finally:
            for task in (sleeper, refund):
                task.cancel()
            await asyncio.gather(sleeper, refund, return_exceptions=True)

    async def acquire(self, tokens: int) -> Reservation | None:
        """Wait until one request and `tokens` fit, then reserve both; returns the token reservation."""
        if self.requests is None and self.tokens is None:
            return None
        async with self._lock:
            while True:
                now = self.clock()
                wait = max(
                    self.requests.wait_time(1, now) if self.requests else 0.0,
                    self.tokens.wait_time(tokens, now) if self.tokens else 0.0,
                )
                if wait <= 0:
                    break
                await self._wait(wait)
            if self.requests is not None:
                self.requests.reserve(1, now)
            return self.tokens.reserve(tokens, now) if self.tokens is not None else None

    def settle(self, reservation: Reservation | None, actual_tokens: int) -> None:
        if reservation is not None and self.tokens is not None:
            refund = actual_tokens < reservation.amount
            self.tokens.settle(reservation, actual_tokens)
            if refund:
                self._refunded.set()
