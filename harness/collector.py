"""Holding Python's cycle collector off while large, acyclic data is built.

Reading a run or a test set makes objects by the hundred thousand (records, items,
their dicts and tuples) that never form reference cycles. The collector, triggered
again and again by those allocations, walks everything kept so far each time: at
100,000 items that is about a fifth of what loading, replaying and scoring cost.
"""

from __future__ import annotations

import contextlib
import gc
from collections.abc import Iterator


@contextlib.contextmanager
def cycle_collector_held() -> Iterator[None]:
    """Hold the cycle collector off for the block (a replay, a test set's load, scoring).

    Only around work that builds acyclic data and ends: a controller's run keeps it on.
    It is turned back on only if it was on (another thread may be holding it off).
    """
    collecting = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if collecting:
            gc.enable()
