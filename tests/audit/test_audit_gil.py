"""The audit threads give way to the event loop (audit/gil.py): the writer's loops let go of
the GIL once per slice of work, and the writer and the syncer run at a higher nice."""

from __future__ import annotations

import os
import sys
import threading
from contextlib import AsyncExitStack
from pathlib import Path

import pytest

from audit_support import UNREACHABLE_MYSQL_URL, wait_until
from lookup_knowledge.audit import gil


class Clock:
    def __init__(self, step: float) -> None:
        self.now = 0.0
        self.step = step

    def __call__(self) -> float:
        self.now += self.step
        return self.now


def test_every_item_comes_through_in_order_with_a_yield_per_slice(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    sleeps: list[float] = []
    monkeypatch.setattr(gil.time, "perf_counter", Clock(step=0.0002))
    monkeypatch.setattr(gil.time, "sleep", sleeps.append)

    assert list(gil.in_slices(range(50), slice_s=0.001)) == list(range(50))

    # One clock reading per item, 0.2 ms apart: a slice of 1 ms ends every fifth item or so,
    # and the GIL is let go with sleep(0), never a real pause.
    assert sleeps and set(sleeps) == {0}
    assert 7 <= len(sleeps) <= 13


def test_quick_work_never_yields(monkeypatch: pytest.MonkeyPatch) -> None:
    sleeps: list[float] = []
    monkeypatch.setattr(gil.time, "perf_counter", Clock(step=1e-7))
    monkeypatch.setattr(gil.time, "sleep", sleeps.append)

    assert list(gil.in_slices("abc")) == ["a", "b", "c"]
    assert sleeps == []


def test_the_batch_statement_is_built_in_slices(monkeypatch: pytest.MonkeyPatch) -> None:
    from lookup_knowledge.audit import literal

    seen: list[object] = []

    def spy(items: object, slice_s: float | None = None) -> object:
        seen.append(items)
        return gil.in_slices(items, slice_s)  # type: ignore[arg-type]

    monkeypatch.setattr(literal, "in_slices", spy)
    rows = [{"a": 1}]
    insert = literal.LiteralInsert("INSERT INTO t (a) VALUES ", "(%(a)s)", "", {"a": None})
    assert list(insert.statements(rows)) == ["INSERT INTO t (a) VALUES (1)"]
    assert seen == [rows]


def test_the_slice_is_read_at_each_call(monkeypatch: pytest.MonkeyPatch) -> None:
    sleeps: list[float] = []
    monkeypatch.setattr(gil.time, "perf_counter", Clock(step=0.0002))
    monkeypatch.setattr(gil.time, "sleep", sleeps.append)
    monkeypatch.setattr(gil, "SLICE_S", float("inf"))

    assert list(gil.in_slices(range(50))) == list(range(50))
    assert sleeps == []


# --- the audit threads' nice (Linux: a thread's native id is a setpriority target) ---

linux_only = pytest.mark.skipif(not sys.platform.startswith("linux"), reason="per-thread nice")


def nice_of(tid: int) -> int:
    return os.getpriority(os.PRIO_PROCESS, tid)


def run_in_thread(increment: int) -> tuple[int | None, int, int]:
    """lower_this_thread(increment) in a new thread: (its result, nice before, nice after)."""
    seen: list[tuple[int | None, int, int]] = []

    def body() -> None:
        tid = threading.get_native_id()
        before = nice_of(tid)
        seen.append((gil.lower_this_thread(increment), before, nice_of(tid)))

    thread = threading.Thread(target=body)
    thread.start()
    thread.join()
    return seen[0]


@linux_only
def test_a_thread_raises_its_own_nice_and_no_other_threads() -> None:
    main_before = nice_of(threading.get_native_id())
    result, before, after = run_in_thread(3)

    expected = min(gil.MAX_NICE, before + 3)
    assert (result, after) == (expected, expected)
    assert nice_of(threading.get_native_id()) == main_before


@linux_only
def test_nice_is_capped_at_19() -> None:
    result, _, after = run_in_thread(50)
    assert result == after == gil.MAX_NICE


def test_an_increment_of_0_leaves_the_thread_as_it_is() -> None:
    result, before, after = run_in_thread(0)
    assert result is None
    assert after == before


@linux_only
def test_a_refused_change_is_logged_and_the_thread_goes_on(
    monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    def refuse(*args: int) -> None:
        raise PermissionError(1, "Operation not permitted")

    monkeypatch.setattr(gil.os, "setpriority", refuse)
    result, before, after = run_in_thread(5)
    assert result is None and after == before
    assert "keeps its priority" in caplog.text


@linux_only
@pytest.mark.parametrize("configured", [10, 0])
async def test_the_services_audit_threads_run_at_the_configured_nice(
    tmp_path: Path, configured: int
) -> None:
    """Through the settings the service starts with: the writer and the spool's syncer."""
    from lookup_knowledge.app import open_audit
    from lookup_knowledge.settings import Settings

    base = nice_of(threading.get_native_id())
    expected = min(gil.MAX_NICE, base + configured)
    settings = Settings(
        audit_database_url=UNREACHABLE_MYSQL_URL,
        audit_spool_dir=tmp_path / "spool",
        audit_thread_nice=configured,
    )
    async with AsyncExitStack() as stack:
        writer = await open_audit(settings, stack)
        threads = [writer._thread, writer.spool._syncer]
        tids = [t.native_id for t in threads if t is not None and t.native_id is not None]
        assert len(tids) == 2
        wait_until(lambda: all(nice_of(tid) == expected for tid in tids), timeout=5)
        assert nice_of(threading.get_native_id()) == base  # the event loop's is untouched
