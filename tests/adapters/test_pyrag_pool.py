"""The py-rag client's timeouts and connection pool, against a real local py-rag.

See docs/pyrag-api.md#timeouts. respx would bypass the pool, so these tests use
tests/pyrag_server.py. Each runs on both transports (PYRAG_HTTP_TRANSPORT): aiohttp, the
default, and httpx's own.
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator, Iterator
from contextlib import asynccontextmanager, suppress
from contextvars import ContextVar
from typing import Literal

import pytest

from lookup_knowledge.adapters.pyrag import MAX_BODY_BYTES, PyragClient, pyrag_http_client
from lookup_knowledge.domain.errors import Overloaded, UpstreamError, UpstreamTimeout
from process import free_port
from pyrag_server import PyragServer, pyrag_server


@pytest.fixture(params=["aiohttp", "httpx"], autouse=True)
def transport(request: pytest.FixtureRequest) -> Iterator[None]:
    """The transport every `client_for` in the test uses."""
    token = TRANSPORT.set(request.param)
    yield
    TRANSPORT.reset(token)


TRANSPORT: ContextVar[Literal["aiohttp", "httpx"]] = ContextVar("transport", default="aiohttp")


@asynccontextmanager
async def client_for(
    url: PyragServer | str,
    *,
    timeout_s: float = 2.0,
    pool_timeout_s: float = 2.0,
    pool: int = 4,
    max_body_bytes: int = MAX_BODY_BYTES,
) -> AsyncIterator[PyragClient]:
    http = pyrag_http_client(
        url if isinstance(url, str) else url.url,
        connect_timeout_s=1.0,
        timeout_s=timeout_s,
        pool_timeout_s=pool_timeout_s,
        max_connections=pool,
        transport=TRANSPORT.get(),
    )
    async with http:
        client = PyragClient(http, top_k=20, mode="hybrid", max_body_bytes=max_body_bytes)
        yield client
        await client.aclose()


async def test_a_py_rag_slower_than_the_timeout_is_an_upstream_timeout() -> None:
    async with pyrag_server(delay_s=2.0) as server, client_for(server, timeout_s=0.1) as pyrag:
        with pytest.raises(UpstreamTimeout) as caught:
            await pyrag.search("q", filters=None)
    assert "0.1 s" in caught.value.message


async def test_waiting_too_long_for_a_pooled_connection_is_overload_not_a_py_rag_fault() -> None:
    async with (
        pyrag_server(delay_s=0.5) as server,
        client_for(server, pool=1, pool_timeout_s=0.05) as pyrag,
    ):
        first, second = await asyncio.gather(
            pyrag.search("a", filters=None), pyrag.search("b", filters=None), return_exceptions=True
        )
    outcomes = sorted([type(first).__name__, type(second).__name__])
    assert outcomes == ["Overloaded", "SearchOutcome"]
    refused = first if isinstance(first, Overloaded) else second
    assert isinstance(refused, Overloaded) and refused.headers == {"Retry-After": "1"}


async def test_callers_timing_out_while_waiting_for_a_connection_leave_the_pool_usable() -> None:
    async with pyrag_server(delay_s=0.3) as server, client_for(server, pool=2) as pyrag:

        async def impatient_caller(query: str) -> None:
            with suppress(TimeoutError):
                async with asyncio.timeout(0.1):  # two calls hold the connections, eight wait
                    await pyrag.search(query, filters=None)

        for burst in range(3):
            await asyncio.gather(*(impatient_caller(f"q{burst}-{i}") for i in range(10)))
        server.delay_s = 0.0
        outcomes = await asyncio.gather(*(pyrag.search("after", filters=None) for _ in range(4)))
    assert [o.hit_count for o in outcomes] == [1, 1, 1, 1]


async def test_a_search_answers_and_its_connection_is_reused() -> None:
    async with pyrag_server() as server, client_for(server, pool=1) as pyrag:
        outcomes = [await pyrag.search(f"q{i}", filters=None) for i in range(3)]
        await pyrag.ping()
    assert [o.hit_count for o in outcomes] == [1, 1, 1]
    assert server.searches == 3
    assert server.connections == 1


async def test_a_refused_connection_is_an_unreachable_py_rag() -> None:
    async with client_for(f"http://127.0.0.1:{free_port()}") as pyrag:
        with pytest.raises(UpstreamError) as caught:
            await pyrag.search("q", filters=None)
    assert caught.value.kind == "unreachable"


async def test_a_body_over_the_cap_is_refused_on_a_real_connection() -> None:
    async with pyrag_server() as server, client_for(server, max_body_bytes=64) as pyrag:
        with pytest.raises(UpstreamError) as caught:
            await pyrag.search("q", filters=None)
    assert caught.value.kind == "too_large"
