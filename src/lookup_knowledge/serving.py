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
* a request the HTTP parser refuses gets the error envelope, not uvicorn's plain text.

The body is bounded by `BodyLimitMiddleware` (size and `HTTP_BODY_TIMEOUT_S`).
"""

from __future__ import annotations

import asyncio
import importlib.util
import json
from contextlib import suppress
from typing import Any, ClassVar

import h11
from uvicorn.protocols.http.h11_impl import H11Protocol

from lookup_knowledge.settings import Settings

_STATUS = {400: b"Bad Request", 503: b"Service Unavailable"}
# Longest request head (request line and headers) the HTTP parser accepts; longer is a 400.
MAX_HEAD_BYTES = 16 * 1024
HAS_HTTPTOOLS = importlib.util.find_spec("httptools") is not None


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


class _Guard:
    """The rules both protocols share; the limits are class attributes.

    `configure(settings)` sets them once per process (the served app's factory calls it in
    every worker); a subclass may override them (tests).
    """

    header_timeout_s: ClassVar[float] = 5.0
    max_connections: ClassVar[int] = 2048

    # Set by the uvicorn protocol this is mixed into.
    loop: asyncio.AbstractEventLoop
    transport: asyncio.Transport
    connections: set[Any]

    @classmethod
    def configure(cls, settings: Settings) -> None:
        cls.header_timeout_s = settings.http_header_timeout_s
        cls.max_connections = settings.http_max_connections

    def _guard_init(self) -> None:
        self._head_deadline: asyncio.TimerHandle | None = None
        self._refused = False

    def _guard_connection_made(self) -> None:
        if len(self.connections) > self.max_connections:
            self._refused = True  # answered once the client has spoken: see data_received
        self._await_head()

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

    def connection_made(self, transport: asyncio.Transport) -> None:  # type: ignore[override]
        super().connection_made(transport)
        self._guard_connection_made()

    def data_received(self, data: bytes) -> None:
        if self._refused:
            self._refuse_over_capacity()
            return
        cycle = self.cycle
        super().data_received(data)
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

    def connection_made(self, transport: asyncio.Transport) -> None:  # type: ignore[override]
        super().connection_made(transport)
        self._guard_connection_made()

    def data_received(self, data: bytes) -> None:
        if self._refused:
            self._refuse_over_capacity()
            return
        super().data_received(data)

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
