"""The audit threads give way to the event loop: the GIL between short slices, the core by nice.

The writer turns a batch of rows into one statement in Python (docs/audit.md#durability). A
thread that holds the GIL keeps the event loop waiting until CPython's switch interval (5 ms)
forces a hand-over; a batch of a hundred rows is several such intervals of lookups waiting. So
the loops that build a batch's statement let go of the GIL once per `SLICE_S` of work:
`time.sleep(0)` releases it, and a thread waiting for it (the event loop's) takes it first. The
loop then waits at most about one slice for the writer (docs/performance.md#half-load-p99).

The writer's batch and the spool's flush also take CPU on the core the event loop runs on. On
Linux each of these two threads raises its own nice (`lower_this_thread`, `AUDIT_THREAD_NICE`,
10 by default) so the kernel runs the loop first when both are ready; under a saturating load a
thread at nice 10 still gets about a tenth of a shared core, more than the writer needs, and the
rows it has not written yet wait in the spool, on disk.
"""

from __future__ import annotations

import logging
import os
import sys
import threading
import time
from collections.abc import Iterable, Iterator
from typing import TypeVar

log = logging.getLogger(__name__)

T = TypeVar("T")
SLICE_S = 0.0005
MAX_NICE = 19


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


def lower_this_thread(increment: int) -> int | None:
    """Raise the calling thread's nice by `increment` (at most to 19); its new nice, or None
    where that is not done: 0, not Linux (only there is a thread's native id a scheduling
    target of `setpriority`; elsewhere it could name another process), or refused."""
    if increment <= 0 or not sys.platform.startswith("linux"):
        return None
    tid = threading.get_native_id()
    try:
        nice = min(MAX_NICE, os.getpriority(os.PRIO_PROCESS, tid) + increment)
        os.setpriority(os.PRIO_PROCESS, tid, nice)
    except OSError as exc:
        log.warning("thread %s keeps its priority: %s", threading.current_thread().name, exc)
        return None
    return nice
