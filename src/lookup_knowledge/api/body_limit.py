"""Refuse request bodies over 64 KiB before anything parses them (docs/http-api.md)."""

from __future__ import annotations

from starlette.types import ASGIApp, Message, Receive, Scope, Send

from lookup_knowledge.api.errors import envelope

MAX_BODY_BYTES = 64 * 1024


class BodyLimitMiddleware:
    """Pure ASGI: checks Content-Length up front and counts streamed (chunked) bodies too."""

    def __init__(self, app: ASGIApp, *, max_bytes: int = MAX_BODY_BYTES) -> None:
        self.app = app
        self.max_bytes = max_bytes

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
        while more:
            message = await receive()
            if message["type"] != "http.request":
                break
            chunk = message.get("body", b"")
            size += len(chunk)
            if size > self.max_bytes:
                await self._refuse(scope, receive, send)
                return
            body.append(chunk)
            more = message.get("more_body", False)

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
        )
        await response(scope, receive, send)
