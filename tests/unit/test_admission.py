"""The admission gate on its own: slots, the bounded queue, its deadline, cancellation.

See docs/http-api.md#overload.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable

import pytest

from lookup_knowledge.api.admission import AdmissionGate
from lookup_knowledge.domain.errors import Overloaded


class Holder:
    """A lookup that holds its slot until told to finish."""

    def __init__(self, gate: AdmissionGate, name: str, log: list[str]) -> None:
        self.finish = asyncio.Event()
        self.then: Callable[[], object] = lambda: None  # runs right after the slot is freed
        self.task = asyncio.ensure_future(self._run(gate, name, log))

    async def _run(self, gate: AdmissionGate, name: str, log: list[str]) -> None:
        async with gate.admit():
            log.append(name)
            await self.finish.wait()
        self.then()


async def settle() -> None:
    for _ in range(5):
        await asyncio.sleep(0)


async def test_lookups_under_the_limit_are_admitted_at_once() -> None:
    gate = AdmissionGate(limit=2, queue_max=0, wait_s=1)
    log: list[str] = []
    a, b = Holder(gate, "a", log), Holder(gate, "b", log)
    await settle()
    assert log == ["a", "b"] and gate.running == 2 and gate.waiting == 0
    a.finish.set()
    b.finish.set()
    await asyncio.gather(a.task, b.task)
    assert gate.running == 0


async def test_a_lookup_over_the_limit_waits_and_runs_in_arrival_order() -> None:
    gate = AdmissionGate(limit=1, queue_max=5, wait_s=5)
    log: list[str] = []
    first = Holder(gate, "first", log)
    await settle()
    second, third = Holder(gate, "second", log), Holder(gate, "third", log)
    await settle()
    assert log == ["first"] and gate.waiting == 2
    first.finish.set()
    await settle()
    late = Holder(gate, "late", log)  # arrives after a slot was freed: it still queues
    await settle()
    assert log == ["first", "second"] and gate.running == 1
    for holder in (second, third, late):
        holder.finish.set()
    await asyncio.gather(first.task, second.task, third.task, late.task)
    assert log == ["first", "second", "third", "late"]
    assert (gate.running, gate.waiting) == (0, 0)


async def test_a_full_queue_refuses_at_once_with_retry_after() -> None:
    gate = AdmissionGate(limit=1, queue_max=1, wait_s=5)
    log: list[str] = []
    holder, waiter = Holder(gate, "a", log), Holder(gate, "b", log)
    await settle()
    with pytest.raises(Overloaded) as refused:
        async with gate.admit():
            pass
    assert refused.value.status_code == 503 and refused.value.code == "OVERLOADED"
    assert refused.value.headers == {"Retry-After": "1"}
    assert refused.value.details == {"limit": 1, "reason": "queue_full"}
    holder.finish.set()
    waiter.finish.set()
    await asyncio.gather(holder.task, waiter.task)


async def test_a_lookup_that_waits_too_long_is_refused_and_leaves_the_queue() -> None:
    gate = AdmissionGate(limit=1, queue_max=5, wait_s=0.05)
    holder = Holder(gate, "a", [])
    await settle()
    with pytest.raises(Overloaded) as refused:
        async with gate.admit():
            pass
    assert refused.value.details["reason"] == "wait_timeout"
    assert gate.waiting == 0
    holder.finish.set()
    await holder.task
    assert gate.running == 0


async def test_a_waiter_cancelled_just_as_it_gets_a_slot_passes_the_slot_on() -> None:
    gate = AdmissionGate(limit=1, queue_max=5, wait_s=5)
    log: list[str] = []
    first = Holder(gate, "first", log)
    await settle()
    cancelled, next_in_line = Holder(gate, "cancelled", log), Holder(gate, "next", log)
    await settle()
    first.then = cancelled.task.cancel  # the slot went to `cancelled`, which has not run yet
    first.finish.set()
    await settle()
    assert cancelled.task.cancelled()
    assert log == ["first", "next"] and gate.running == 1
    next_in_line.finish.set()
    await next_in_line.task
    assert (gate.running, gate.waiting) == (0, 0)


async def test_a_waiter_cancelled_in_the_queue_leaves_it() -> None:
    gate = AdmissionGate(limit=1, queue_max=5, wait_s=5)
    holder = Holder(gate, "a", [])
    await settle()
    waiter = Holder(gate, "b", [])
    await settle()
    waiter.task.cancel()
    await settle()
    assert gate.waiting == 0
    holder.finish.set()
    await holder.task
    assert gate.running == 0
