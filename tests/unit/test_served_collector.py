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
