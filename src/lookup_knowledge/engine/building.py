"""Building an index without the cyclic garbage collector looking on.

Parsing and indexing allocate millions of small objects (chunks, term tuples, counters) that
either live as long as the index or die by reference counting: none of them forms a cycle.
Python's cyclic collector still walks the growing heap again and again while they are being
made, which took about a quarter of the CPU of a 10,000-document build
(docs/retrieval.md#speed). The collector is paused for the build and restored after it.
"""

from __future__ import annotations

import gc
from collections.abc import Iterator
from contextlib import contextmanager


@contextmanager
def collector_paused() -> Iterator[None]:
    """Pause the cyclic collector for the block; restore it after, unless it was off."""
    enabled = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if enabled:
            gc.enable()
