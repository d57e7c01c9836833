"""Refuse request bodies over 64 KiB, or slower than the body timeout, before anything parses
them (docs/http-api.md#request-limits, docs/http-api.md#connections)."""

from __future__ import annotations

import asyncio

from starlette.types import ASGIApp, Message, Receive, Scope, Send

from lookup_knowledge.api.errors import envelope

MAX_BODY_BYTES = 64 * 1024
BODY_TIMEOUT_S = 10.0
# The rest of a refused body is never read, so the connection cannot serve another request.
_CLOSE = {"Connection": "close"}


class BodyLimitMiddleware:
    """Pure ASGI: checks Content-Length up front, counts streamed (chunked) bodies too, and
    bounds the time the whole body may take to arrive."""

    def __init__(
        self, app: ASGIApp, *, max_bytes: int = MAX_BODY_BYTES, timeout_s: float = BODY_TIMEOUT_S
    ) -> None:
        self.app = app
        self.max_bytes = max_bytes
        self.timeout_s = timeout_s

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        declared = dict(scope["headers"]).get(b"content-length")
        if declared is not None and (not declared.isdigit() or int(declared) > self.max_bytes):
            await self._refuse(scope, receive, send)
            return

        body: list[bytes] = []
        size = 0
        more = True
        try:
            async with asyncio.timeout(self.timeout_s):
                while more and size <= self.max_bytes:
                    message = await receive()
                    if message["type"] != "http.request":
                        break
                    chunk = message.get("body", b"")
                    size += len(chunk)
                    body.append(chunk)
                    more = message.get("more_body", False)
        except TimeoutError:
            response = envelope(
                408,
                "HTTP_ERROR",
                f"the request body did not arrive within {self.timeout_s:g} s",
                headers=_CLOSE,
            )
            await response(scope, receive, send)
            return
        if size > self.max_bytes:
            await self._refuse(scope, receive, send)
            return

        buffered = [{"type": "http.request", "body": b"".join(body), "more_body": False}]

        async def replay() -> Message:
            return buffered.pop() if buffered else await receive()

        await self.app(scope, replay, send)

    async def _refuse(self, scope: Scope, receive: Receive, send: Send) -> None:
        response = envelope(
            413,
            "PAYLOAD_TOO_LARGE",
            f"the request body is over {self.max_bytes} bytes",
            {"max_bytes": self.max_bytes},
            headers=_CLOSE,
        )
        await response(scope, receive, send)
