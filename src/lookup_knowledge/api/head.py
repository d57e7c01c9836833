"""HEAD answers like GET, without the body (RFC 9110 section 9.3.2; docs/http-api.md#head).

FastAPI routes declared for GET do not take HEAD, so probes and caches that send HEAD to
`/healthz`, `/readyz` or `/ledger/...` would get 405. This pure ASGI middleware runs a HEAD as
the GET of the same path and drops the body: same status, same headers (`Content-Length`
included), and, on a path without GET, the same 405 and `Allow` a GET gets.
"""

from __future__ import annotations

from starlette.types import ASGIApp, Message, Receive, Scope, Send


class HeadAsGetMiddleware:
    def __init__(self, app: ASGIApp, *, exclude: frozenset[str] = frozenset()) -> None:
        self.app = app
        self.exclude = exclude  # paths whose GET is no plain read (an event stream)

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http" or scope["method"] != "HEAD" or scope["path"] in self.exclude:
            await self.app(scope, receive, send)
            return

        async def headers_only(message: Message) -> None:
            if message["type"] == "http.response.body":
                if message.get("more_body", False):
                    return
                message = {"type": "http.response.body", "body": b"", "more_body": False}
            await send(message)

        await self.app({**scope, "method": "GET"}, receive, headers_only)
