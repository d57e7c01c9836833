"""How `lookup-knowledge serve` runs uvicorn, and its connection guard.

See docs/http-api.md#connections. `serve` runs on uvloop and httptools when they are installed
(the default install has them: docs/performance.md), else on asyncio and h11.

uvicorn closes a kept-alive connection that stays silent after a response
(`timeout_keep_alive`), but nothing bounds a connection that never completes a request: one
that sends nothing, or trickles its headers a byte at a time (slowloris). uvicorn holds those
forever. `GuardedHttpToolsProtocol` and `GuardedH11Protocol` are uvicorn's own HTTP/1.1
protocols plus these rules:

* a request head must be complete within `header_timeout_s` of the connection opening, or of
  the previous response ending; else the connection is closed;
* a request head over `MAX_HEAD_BYTES` is a 400;
* past `max_connections` open connections, a new one is answered 503 OVERLOADED and closed;
* a request the HTTP parser refuses gets the error envelope, not uvicorn's plain text;
* new requests are taken in at most `INTAKE_PER_TICK` per turn of the event loop (`_Intake`).

The body is bounded by `BodyLimitMiddleware` (size and `HTTP_BODY_TIMEOUT_S`).

Why the intake is paced: when a thousand requests arrive at once, the event loop would parse
all of them, start all their tasks, and shed or queue them in one turn of a few hundred
milliseconds, while the lookups already admitted wait for their next step (a Redis reply, py-rag's
answer) behind it. Taking in a bounded number per turn lets those lookups go on between the
slices; the intake itself costs the same CPU, spread over turns in which the loop would
otherwise wait for py-rag (docs/performance.md#overload). A connection waiting its turn has
its reading paused, so its bytes wait in the kernel, not in this process.
"""

from __future__ import annotations

import asyncio
import importlib.util
import json
import weakref
from collections import deque
from contextlib import suppress
from typing import Any, ClassVar

import h11
from uvicorn.protocols.http.h11_impl import H11Protocol

from lookup_knowledge.settings import Settings

_STATUS = {400: b"Bad Request", 503: b"Service Unavailable"}
# Longest request head (request line and headers) the HTTP parser accepts; longer is a 400.
MAX_HEAD_BYTES = 16 * 1024
HAS_HTTPTOOLS = importlib.util.find_spec("httptools") is not None
# New requests taken in per turn of the event loop, at most (docs/performance.md#overload).
INTAKE_PER_TICK = 16


def canned_response(status: int, code: str, message: str, *, retry_after_s: int | None) -> bytes:
    """A complete HTTP/1.1 error answer with the envelope, closing the connection."""
    body = json.dumps(
        {"error": {"code": code, "message": message, "details": None}}, separators=(",", ":")
    ).encode()
    head = [
        b"HTTP/1.1 %d %s" % (status, _STATUS[status]),
        b"content-type: application/json",
        b"content-length: %d" % len(body),
        b"connection: close",
    ]
    if retry_after_s is not None:
        head.append(b"retry-after: %d" % retry_after_s)
    return b"\r\n".join(head) + b"\r\n\r\n" + body


class _Intake:
    """Per event loop: lets at most `per_tick` new requests in per turn of the loop, in order
    of arrival; the rest wait their turn with their connection's reading paused."""

    def __init__(self, loop: asyncio.AbstractEventLoop, per_tick: int) -> None:
        self.loop = loop
        self.per_tick = per_tick
        self.taken = 0  # requests let in since the turn began
        self.waiting: deque[_Guard] = deque()
        self._turn_marked = False
        self._pumping = False

    def may_start(self) -> bool:
        """Count one new request in this turn; False when it must wait for a later turn."""
        if not self._turn_marked:
            # Runs once the loop is past what woke it: the next requests are a new turn's.
            self._turn_marked = True
            self.loop.call_soon(self._new_turn)
        if self.waiting or self.taken >= self.per_tick:
            return False
        self.taken += 1
        return True

    def wait(self, connection: _Guard) -> None:
        self.waiting.append(connection)
        if not self._pumping:
            self._pumping = True
            self.loop.call_soon(self._pump)

    def _new_turn(self) -> None:
        self._turn_marked = False
        self.taken = 0

    def _pump(self) -> None:
        """Let the next `per_tick` waiting requests in; come back next turn for the rest."""
        let_in = 0
        while self.waiting and let_in < self.per_tick:
            connection = self.waiting.popleft()
            if connection.transport.is_closing():
                continue  # closed while it waited (by its client, or its head deadline)
            let_in += 1
            connection._take_in()
        if self.waiting:
            self.loop.call_soon(self._pump)
        else:
            self._pumping = False


_intakes: weakref.WeakKeyDictionary[asyncio.AbstractEventLoop, _Intake] = (
    weakref.WeakKeyDictionary()
)


class _Guard:
    """The rules both protocols share; the limits are class attributes.

    `configure(settings)` sets them once per process (the served app's factory calls it in
    every worker); a subclass may override them (tests).
    """

    header_timeout_s: ClassVar[float] = 5.0
    max_connections: ClassVar[int] = 2048
    intake_per_tick: ClassVar[int] = INTAKE_PER_TICK

    # Set by the uvicorn protocol this is mixed into.
    loop: asyncio.AbstractEventLoop
    transport: asyncio.Transport
    connections: set[Any]
    flow: Any  # uvicorn's FlowControl
    cycle: Any  # the current request's RequestResponseCycle, if any

    @classmethod
    def configure(cls, settings: Settings) -> None:
        cls.header_timeout_s = settings.http_header_timeout_s
        cls.max_connections = settings.http_max_connections

    def _guard_init(self) -> None:
        self._head_deadline: asyncio.TimerHandle | None = None
        self._refused = False
        self._held: bytes | None = None  # what arrived while this connection waited its turn

    def _paced(self, data: bytes) -> bool:
        """True when `data` is held for a later turn (docs: the module's)."""
        if self._held is not None:  # still waiting: keep what comes after, in order
            self._held += data
            return True
        cycle = self.cycle
        if cycle is not None and not cycle.response_complete:
            return False  # the rest of a request already taken in (its body)
        intake = _intakes.get(self.loop)
        if intake is None:
            intake = _intakes[self.loop] = _Intake(self.loop, self.intake_per_tick)
        if intake.may_start():
            return False
        self._held = data
        self.flow.pause_reading()
        intake.wait(self)
        return True

    def _take_in(self) -> None:
        data, self._held = self._held, None
        self.flow.resume_reading()
        if data:
            self._feed(data)

    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        super().connection_made(transport)  # type: ignore[misc]
        if len(self.connections) > self.max_connections:
            self._refused = True  # answered once the client has spoken: see data_received
        self._await_head()

    def data_received(self, data: bytes) -> None:
        if self._refused:
            self._refuse_over_capacity()
            return
        if not self._paced(data):
            self._feed(data)

    def _feed(self, data: bytes) -> None:
        """The protocol's own data_received."""
        super().data_received(data)  # type: ignore[misc]

    def _await_head(self) -> None:
        self._head_arrived()
        self._head_deadline = self.loop.call_later(self.header_timeout_s, self._head_overdue)

    def _head_arrived(self) -> None:
        if self._head_deadline is not None:
            self._head_deadline.cancel()
            self._head_deadline = None

    def _head_overdue(self) -> None:
        self._head_deadline = None
        if not self.transport.is_closing():
            self._close_silently()

    def _close_silently(self) -> None:
        self.transport.close()

    def _send_400(self, msg: str) -> None:
        self._head_arrived()
        self.transport.write(
            canned_response(400, "INVALID_REQUEST", f"malformed HTTP: {msg}", retry_after_s=None)
        )
        self.transport.close()

    def _refuse_over_capacity(self) -> None:
        self._head_arrived()
        if not self.transport.is_closing():
            self.transport.write(
                canned_response(
                    503,
                    "OVERLOADED",
                    f"this process holds its limit of {self.max_connections} connections",
                    retry_after_s=1,
                )
            )
            self.transport.close()


class GuardedH11Protocol(_Guard, H11Protocol):
    """uvicorn's h11 protocol with the guard (asyncio and h11, when httptools is absent)."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self._guard_init()

    def _feed(self, data: bytes) -> None:
        cycle = self.cycle
        super()._feed(data)
        if self.cycle is not cycle:
            self._head_arrived()

    def on_response_complete(self) -> None:
        cycle = self.cycle
        self._await_head()
        super().on_response_complete()
        if self.cycle is not cycle or self.transport.is_closing():
            self._head_arrived()  # a pipelined request was already waiting

    def connection_lost(self, exc: Exception | None) -> None:
        self._head_arrived()
        super().connection_lost(exc)

    def send_400_response(self, msg: str) -> None:
        self._send_400(msg)

    def _close_silently(self) -> None:
        if self.conn.our_state is not h11.ERROR:
            with suppress(h11.LocalProtocolError):
                self.conn.send(h11.ConnectionClosed())
        self.transport.close()


if HAS_HTTPTOOLS:
    from uvicorn.protocols.http.httptools_impl import HttpToolsProtocol
else:  # pragma: no cover - the default install has httptools
    HttpToolsProtocol = H11Protocol  # type: ignore[misc,assignment]


class GuardedHttpToolsProtocol(_Guard, HttpToolsProtocol):
    """uvicorn's httptools protocol with the guard: what `serve` runs by default.

    llhttp has no limit of its own on the head's size: the parser callbacks count it.
    """

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self._guard_init()
        self._head_bytes = 0

    def on_message_begin(self) -> None:
        self._head_bytes = 0
        super().on_message_begin()

    def on_url(self, url: bytes) -> None:
        self._count_head(len(url))
        super().on_url(url)

    def on_header(self, name: bytes, value: bytes) -> None:
        self._count_head(len(name) + len(value) + 4)
        super().on_header(name, value)

    def on_headers_complete(self) -> None:
        self._head_arrived()
        super().on_headers_complete()

    def on_response_complete(self) -> None:
        pipelined = bool(self.pipeline)  # a queued request's head is already in
        super().on_response_complete()
        if not pipelined and not self.transport.is_closing():
            self._await_head()

    def connection_lost(self, exc: Exception | None) -> None:
        self._head_arrived()
        super().connection_lost(exc)

    def send_400_response(self, msg: str) -> None:
        self._send_400(msg)

    def _count_head(self, size: int) -> None:
        self._head_bytes += size
        if self._head_bytes > MAX_HEAD_BYTES:
            # Raised inside a parser callback: httptools turns it into a parser error, which
            # uvicorn answers with send_400_response.
            raise ValueError(f"request head over {MAX_HEAD_BYTES} bytes")


DEFAULT_PROTOCOL: type[_Guard] = GuardedHttpToolsProtocol if HAS_HTTPTOOLS else GuardedH11Protocol


def configure(settings: Settings) -> None:
    """Set the guard's limits for this process, whichever protocol serves it."""
    GuardedH11Protocol.configure(settings)
    GuardedHttpToolsProtocol.configure(settings)


def uvicorn_options(settings: Settings) -> dict[str, Any]:
    """The uvicorn settings `serve` runs with, from HTTP_* settings."""
    protocol = DEFAULT_PROTOCOL
    return {
        "loop": "auto",  # uvloop when installed
        "http": f"{protocol.__module__}:{protocol.__qualname__}",
        "timeout_keep_alive": settings.http_keepalive_timeout_s,
        "h11_max_incomplete_event_size": MAX_HEAD_BYTES,
    }
