"""The writer's loops let go of the GIL once per slice of work (audit/gil.py)."""

from __future__ import annotations

import pytest

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
