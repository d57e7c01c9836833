"""Admission control: a bounded number of lookups run at once (docs/http-api.md#overload).

Beyond `limit`, a lookup waits in a bounded FIFO queue for at most `wait_s`, then is refused
with 503 OVERLOADED. The gate is a pure ASGI middleware in front of the route: a refused lookup
never touched the ledger (nothing to release; the same ids can be sent again as they are), and
refusing costs no parsing and no validation, so shedding stays cheap while the process is busy.
A refusal's answer is built once per reason (its message and bytes never change), and a full
queue refuses without raising (docs/performance.md#overload).
"""

from __future__ import annotations

import asyncio
from collections import deque
from collections.abc import AsyncIterator, Callable, Mapping
from contextlib import asynccontextmanager, suppress
from typing import Protocol

from starlette.types import ASGIApp, Receive, Scope, Send

from lookup_knowledge.api.errors import envelope
from lookup_knowledge.domain.errors import Overloaded

RETRY_AFTER_S = 1
REASONS = ("queue_full", "wait_timeout")


class AdmissionObserver(Protocol):
    def admission_changed(self, *, running: int, waiting: int) -> None: ...

    def admission_refused(self, reason: str) -> None: ...


class AdmissionGate:
    """An asyncio semaphore with a bounded, time-limited queue; single event loop only.

    The fast path (a free slot, nobody waiting) takes no lock and creates nothing. A freed
    slot is handed to the oldest waiter directly, so a newcomer cannot overtake the queue.
    """

    def __init__(
        self,
        *,
        limit: int,
        queue_max: int,
        wait_s: float,
        observer: AdmissionObserver | None = None,
    ) -> None:
        self.limit = limit
        self.queue_max = queue_max
        self.wait_s = wait_s
        self._observer = observer
        self._running = 0
        self._waiters: deque[asyncio.Future[None]] = deque()
        # One refusal per reason, never raised: what the middleware answers and audits.
        self.refusals = {reason: self._overloaded(reason) for reason in REASONS}

    @property
    def running(self) -> int:
        return self._running

    @property
    def waiting(self) -> int:
        return len(self._waiters)

    @property
    def full(self) -> bool:
        """A lookup arriving now would be refused at once (`queue_full`)."""
        return self._running >= self.limit and len(self._waiters) >= self.queue_max

    @asynccontextmanager
    async def admit(self) -> AsyncIterator[None]:
        """Hold one slot for the body of the `async with`; raise Overloaded if none comes."""
        await self.acquire()
        try:
            yield
        finally:
            self.release()

    async def acquire(self) -> None:
        """Take a slot, waiting in the queue if need be; raise Overloaded if none comes."""
        if self._running < self.limit and not self._waiters:
            self._running += 1
            self._changed()
            return
        if len(self._waiters) >= self.queue_max:
            raise self._refuse("queue_full")
        loop = asyncio.get_running_loop()
        waiter: asyncio.Future[None] = loop.create_future()
        self._waiters.append(waiter)
        self._changed()
        timer = loop.call_later(self.wait_s, self._expire, waiter)
        try:
            await waiter
        except BaseException:
            if waiter.done() and not waiter.cancelled() and waiter.exception() is None:
                # A slot was handed over just as this caller was cancelled: pass it on.
                self.release()
            with suppress(ValueError):
                self._waiters.remove(waiter)
            self._changed()
            raise
        finally:
            timer.cancel()

    def _expire(self, waiter: asyncio.Future[None]) -> None:
        if not waiter.done():
            waiter.set_exception(self._refuse("wait_timeout"))

    def release(self) -> None:
        """Give the slot back, or straight to the oldest waiter."""
        while self._waiters:
            waiter = self._waiters.popleft()
            if not waiter.done():
                waiter.set_result(None)  # the slot changes hands; `running` stays the same
                self._changed()
                return
        self._running -= 1
        self._changed()

    def refused(self, reason: str) -> None:
        """Count a refusal that was not raised (the middleware's `full` check)."""
        if self._observer is not None:
            self._observer.admission_refused(reason)

    def _refuse(self, reason: str) -> Overloaded:
        self.refused(reason)
        return self._overloaded(reason)

    def _overloaded(self, reason: str) -> Overloaded:
        why = (
            f"{self.queue_max} more are waiting"
            if reason == "queue_full"
            else f"none came free within {self.wait_s:g} s"
        )
        return Overloaded(
            f"this service is running its limit of {self.limit} lookups and {why}; "
            f"retry after {RETRY_AFTER_S} s",
            retry_after_s=RETRY_AFTER_S,
            details={"limit": self.limit, "reason": reason},
        )

    def _changed(self) -> None:
        if self._observer is not None:
            self._observer.admission_changed(running=self._running, waiting=len(self._waiters))


# Told of each refused request with its (already buffered) body, e.g. to audit it.
OnRefused = Callable[[Scope, bytes, Overloaded], None]


class AdmissionMiddleware:
    """Pure ASGI: POSTs to `paths` take a slot of `gate` for their whole handling; a refused
    POST to a path of `on_refused` is handed to that callback with its body before the 503."""

    def __init__(
        self,
        app: ASGIApp,
        *,
        gate: AdmissionGate,
        paths: frozenset[str],
        on_refused: Mapping[str, OnRefused] | None = None,
    ) -> None:
        self.app = app
        self.gate = gate
        self.paths = paths
        self.on_refused = dict(on_refused or {})
        # The 503 of each reason, encoded once: the envelope's bytes and its headers.
        self._answers = {reason: _encoded(refused) for reason, refused in gate.refusals.items()}

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http" or scope["method"] != "POST" or scope["path"] not in self.paths:
            await self.app(scope, receive, send)
            return
        gate = self.gate
        if gate.full:  # the common refusal under a burst: no waiting, no exception
            gate.refused("queue_full")
            await self._refuse(scope, receive, send, gate.refusals["queue_full"])
            return
        try:
            await gate.acquire()
        except Overloaded as refused:
            await self._refuse(scope, receive, send, refused)
            return
        try:
            await self.app(scope, receive, send)
        finally:
            gate.release()

    async def _refuse(
        self, scope: Scope, receive: Receive, send: Send, refused: Overloaded
    ) -> None:
        told = self.on_refused.get(scope["path"])
        if told is not None:
            told(scope, await _body(receive), refused)
        reason = (refused.details or {}).get("reason")
        answer = self._answers.get(reason) if isinstance(reason, str) else None
        if answer is None:  # pragma: no cover - every reason is encoded up front
            answer = _encoded(refused)
        headers, body = answer
        # A fresh list each time: nothing outside may change the prebuilt one in place.
        await send({"type": "http.response.start", "status": 503, "headers": list(headers)})
        await send({"type": "http.response.body", "body": body})


def _encoded(refused: Overloaded) -> tuple[list[tuple[bytes, bytes]], bytes]:
    """The raw headers and body of the refusal's envelope, as `envelope` renders them."""
    response = envelope(
        refused.status_code, refused.code, refused.message, refused.details, refused.headers
    )
    return list(response.raw_headers), bytes(response.body)


async def _body(receive: Receive) -> bytes:
    """The request body; the body limit in front has buffered it, so this does not wait."""
    chunks: list[bytes] = []
    while True:
        message = await receive()
        if message["type"] != "http.request":
            break
        chunks.append(message.get("body", b""))
        if not message.get("more_body", False):
            break
    return b"".join(chunks)
