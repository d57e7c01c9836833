"""How `lookup-knowledge serve` runs uvicorn, and its connection guard.

See docs/http-api.md#connections. uvicorn closes a kept-alive connection that stays silent
after a response (`timeout_keep_alive`), but nothing bounds a connection that never completes
a request: one that sends nothing, or trickles its headers a byte at a time (slowloris).
uvicorn holds those forever. `GuardedH11Protocol` is uvicorn's own HTTP/1.1 protocol plus
three rules:

* a request head must be complete within `header_timeout_s` of the connection opening, or of
  the previous response ending; else the connection is closed;
* past `max_connections` open connections, a new one is answered 503 OVERLOADED and closed;
* a request the HTTP parser refuses gets the error envelope, not uvicorn's plain text.

The body is bounded by `BodyLimitMiddleware` (size and `HTTP_BODY_TIMEOUT_S`).
"""

from __future__ import annotations

import asyncio
import json
from contextlib import suppress
from typing import Any, ClassVar

import h11
from uvicorn.protocols.http.h11_impl import H11Protocol

from lookup_knowledge.settings import Settings

_STATUS = {400: b"Bad Request", 503: b"Service Unavailable"}
# Longest request head (request line and headers) the HTTP parser accepts; longer is a 400.
MAX_HEAD_BYTES = 16 * 1024


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


class GuardedH11Protocol(H11Protocol):
    """uvicorn's h11 protocol with a request-head deadline and a connection cap.

    The limits are class attributes: `configure(settings)` sets them once per process (the
    served app's factory calls it in every worker); a subclass may override them (tests).
    """

    header_timeout_s: ClassVar[float] = 5.0
    max_connections: ClassVar[int] = 2048

    @classmethod
    def configure(cls, settings: Settings) -> None:
        cls.header_timeout_s = settings.http_header_timeout_s
        cls.max_connections = settings.http_max_connections

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self._head_deadline: asyncio.TimerHandle | None = None
        self._refused = False

    def connection_made(self, transport: asyncio.Transport) -> None:  # type: ignore[override]
        super().connection_made(transport)
        if len(self.connections) > self.max_connections:
            self._refused = True  # answered once the client has spoken: see data_received
        self._await_head()

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
        self._head_arrived()
        self.transport.write(
            canned_response(400, "INVALID_REQUEST", f"malformed HTTP: {msg}", retry_after_s=None)
        )
        self.transport.close()

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
            if self.conn.our_state is not h11.ERROR:
                with suppress(h11.LocalProtocolError):
                    self.conn.send(h11.ConnectionClosed())
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


def uvicorn_options(settings: Settings) -> dict[str, Any]:
    """The uvicorn settings `serve` runs with, from HTTP_* settings."""
    return {
        "http": "lookup_knowledge.serving:GuardedH11Protocol",
        "timeout_keep_alive": settings.http_keepalive_timeout_s,
        "h11_max_incomplete_event_size": MAX_HEAD_BYTES,
    }
