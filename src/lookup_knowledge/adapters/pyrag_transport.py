"""httpx over aiohttp: the py-rag client's default transport (docs/performance.md#py-rag-client).

httpx stays the API the adapter speaks; only the connection pool and the HTTP/1.1 wire work
move to aiohttp, whose pool costs a small constant per request where httpcore's checks every
pooled connection's socket on every request. The timeouts keep their httpx meaning
(docs/pyrag-api.md#timeouts), and so do their exceptions:

* pool: the wait for one of `max_connections` slots (`httpx.PoolTimeout`), kept here by a
  semaphore, so that it is never confused with the connect timeout;
* connect: the TCP connection (`httpx.ConnectTimeout`);
* read: each read of the answer (`httpx.ReadTimeout`);
* a refused or failed connection is `httpx.ConnectError`, a broken answer `httpx.ReadError`.

A slot is held until the response is closed, as httpx's own pool does.
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator, Iterator
from contextlib import contextmanager

import aiohttp
import httpx

CHUNK_BYTES = 64 * 1024


@contextmanager
def _httpx_errors(request: httpx.Request) -> Iterator[None]:
    try:
        yield
    except aiohttp.ConnectionTimeoutError as exc:
        raise httpx.ConnectTimeout(str(exc) or "connect timeout", request=request) from exc
    except (aiohttp.SocketTimeoutError, aiohttp.ServerTimeoutError, TimeoutError) as exc:
        raise httpx.ReadTimeout(str(exc) or "read timeout", request=request) from exc
    except aiohttp.ClientConnectorError as exc:
        raise httpx.ConnectError(str(exc), request=request) from exc
    except (aiohttp.ClientPayloadError, aiohttp.ClientConnectionError) as exc:
        raise httpx.ReadError(str(exc) or type(exc).__name__, request=request) from exc
    except aiohttp.ClientError as exc:
        raise httpx.TransportError(str(exc) or type(exc).__name__, request=request) from exc


class _ResponseStream(httpx.AsyncByteStream):
    def __init__(
        self, response: aiohttp.ClientResponse, request: httpx.Request, slot: asyncio.Semaphore
    ) -> None:
        self._response = response
        self._request = request
        self._slot: asyncio.Semaphore | None = slot

    async def __aiter__(self) -> AsyncIterator[bytes]:
        with _httpx_errors(self._request):
            async for chunk in self._response.content.iter_chunked(CHUNK_BYTES):
                yield chunk

    async def aclose(self) -> None:
        try:
            self._response.release()
        finally:
            if self._slot is not None:
                self._slot.release()
                self._slot = None


class AiohttpTransport(httpx.AsyncBaseTransport):
    """An httpx transport on one aiohttp session, opened on first use in the running loop."""

    def __init__(self, *, max_connections: int, keepalive_expiry_s: float = 5.0) -> None:
        self._max_connections = max_connections
        # An idle connection is closed after this, as httpx's own pool does (5 s by default),
        # before a server's own keep-alive timeout is likely to close it under a request.
        self._keepalive_expiry_s = keepalive_expiry_s
        self._slots = asyncio.Semaphore(max_connections)
        self._session: aiohttp.ClientSession | None = None

    def _open(self) -> aiohttp.ClientSession:
        if self._session is None:
            connector = aiohttp.TCPConnector(
                limit=self._max_connections,
                limit_per_host=0,
                keepalive_timeout=self._keepalive_expiry_s,
            )
            self._session = aiohttp.ClientSession(
                connector=connector,
                auto_decompress=False,  # httpx decodes, as with its own transport
                skip_auto_headers=("User-Agent", "Accept", "Accept-Encoding", "Content-Type"),
            )
        return self._session

    async def handle_async_request(self, request: httpx.Request) -> httpx.Response:
        timeout = request.extensions.get("timeout", {})
        try:
            async with asyncio.timeout(timeout.get("pool")):
                await self._slots.acquire()
        except TimeoutError as exc:
            raise httpx.PoolTimeout("no connection free in the pool", request=request) from exc
        try:
            with _httpx_errors(request):
                response = await self._open().request(
                    request.method,
                    str(request.url),
                    headers=request.headers.multi_items(),
                    data=request.content or None,
                    allow_redirects=False,
                    timeout=aiohttp.ClientTimeout(
                        total=None,
                        sock_connect=timeout.get("connect"),
                        sock_read=timeout.get("read"),
                    ),
                )
        except BaseException:
            self._slots.release()
            raise
        return httpx.Response(
            status_code=response.status,
            headers=response.raw_headers,
            stream=_ResponseStream(response, request, self._slots),
            request=request,
            extensions={"http_version": b"HTTP/1.1"},
        )

    async def aclose(self) -> None:
        if self._session is not None:
            session, self._session = self._session, None
            await session.close()
