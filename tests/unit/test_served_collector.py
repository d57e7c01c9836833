"""The served app collects cycles less often than a plain one (docs/performance.md)."""

from __future__ import annotations

import gc
from pathlib import Path

from lookup_knowledge.app import COLLECTOR_THRESHOLDS, create_app
from support import make_settings

INTERPRETER_DEFAULT = (700, 10, 10)


async def test_the_served_app_relaxes_the_collector_and_a_plain_app_does_not(
    tmp_path: Path,
) -> None:
    before = gc.get_threshold()  # another served app in this process may have relaxed it
    gc.set_threshold(*INTERPRETER_DEFAULT)
    try:
        plain = create_app(make_settings(tmp_path))
        async with plain.router.lifespan_context(plain):
            assert gc.get_threshold() == INTERPRETER_DEFAULT
        served = create_app(make_settings(tmp_path), freeze_heap=True)
        async with served.router.lifespan_context(served):
            assert gc.get_threshold() == COLLECTOR_THRESHOLDS
    finally:
        gc.set_threshold(*before)
        gc.unfreeze()


def test_the_served_collector_keeps_young_collections_short_and_old_ones_as_rare() -> None:
    young, middle, oldest = COLLECTOR_THRESHOLDS
    # The youngest generation's size bounds each collection's pause (about 0.5 µs an object,
    # the event loop stopped): 10,000 held it 5-8 ms (docs/performance.md#half-load-p99).
    assert 700 <= young <= 2_000
    # Per allocation, the middle and oldest generations are collected no more often than
    # with (10_000, 20, 20): fewer, longer walks of what lives longer.
    assert young * middle >= 10_000 * 20
    assert young * middle * oldest >= 10_000 * 20 * 20
