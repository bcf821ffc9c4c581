"""Sums of USD amounts that do not depend on the order of their terms.

Float addition is not associative: the same costs added in another order (files finishing in another
order, another number of workers, another executor) can differ in the last digits (68.7837046 vs
68.78370460000001). Every sum of costs therefore goes through whole picodollars: each amount is
rounded once to an integer number of 1e-12 USD, the integers are added (exact, any order), and the
total is turned back into the nearest float. A request's cost is far above a picodollar, so the
rounding changes no digit anyone reads; it only makes the last one the same every time.

The rounding is written once (`pico`): on a float here, and on a polars expression in
`report/aggregate.py` (`pico_usd`), so the two agree to the bit.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Iterable
from typing import Any

PICO_PER_USD = 10**12


# Any: a float (`to_pico`) or a polars expression (report/aggregate.py): the same operations on either
def pico(usd: Any, floor: Callable[[Any], Any] = math.floor) -> Any:
    """`usd` as whole picodollars, halves rounded up: floor(x * 1e12 + 0.5). The same operations on a float
    (`floor=math.floor`) and on a polars expression (`floor=pl.Expr.floor`)."""
    return floor(usd * float(PICO_PER_USD) + 0.5)


def to_pico(usd: float) -> int:
    """`usd` as whole picodollars (`pico` of a float)."""
    return pico(usd)


def from_pico(pico: int) -> float:
    """The float nearest to `pico` picodollars (Python's int / int is correctly rounded)."""
    return pico / PICO_PER_USD


def sum_usd(amounts: Iterable[float | None]) -> float:
    """The sum of the amounts (None skipped), the same whatever their order."""
    return from_pico(sum(to_pico(a) for a in amounts if a is not None))
