"""The audit writer's thread hands the GIL back to the event loop between short slices of work.

The writer turns a batch of rows into one statement in Python (docs/audit.md#durability). A
thread that holds the GIL keeps the event loop waiting until CPython's switch interval (5 ms)
forces a hand-over; a batch of a hundred rows is several such intervals of lookups waiting. So
the loops that build a batch's statement let go of the GIL once per `SLICE_S` of work:
`time.sleep(0)` releases it, and a thread waiting for it (the event loop's) takes it first. The
loop then waits at most about one slice for the writer (docs/performance.md#half-load-p99).
"""

from __future__ import annotations

import time
from collections.abc import Iterable, Iterator
from typing import TypeVar

T = TypeVar("T")
SLICE_S = 0.0005


def in_slices(items: Iterable[T], slice_s: float | None = None) -> Iterator[T]:
    """`items`, letting go of the GIL whenever `slice_s` (default `SLICE_S`, read at each call)
    of work has passed since the last time."""
    if slice_s is None:
        slice_s = SLICE_S
    clock = time.perf_counter
    due = clock() + slice_s
    for item in items:
        yield item
        if clock() >= due:
            time.sleep(0)
            due = clock() + slice_s
