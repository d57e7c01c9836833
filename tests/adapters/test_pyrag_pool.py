"""The py-rag client's timeouts and connection pool, against a real local py-rag.

See docs/pyrag-api.md#timeouts. respx would bypass the pool, so these tests use
tests/pyrag_server.py.
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager, suppress

import pytest

from lookup_knowledge.adapters.pyrag import PyragClient, pyrag_http_client
from lookup_knowledge.domain.errors import Overloaded, UpstreamTimeout
from pyrag_server import PyragServer, pyrag_server


@asynccontextmanager
async def client_for(
    server: PyragServer, *, timeout_s: float = 2.0, pool_timeout_s: float = 2.0, pool: int = 4
) -> AsyncIterator[PyragClient]:
    http = pyrag_http_client(
        server.url,
        connect_timeout_s=1.0,
        timeout_s=timeout_s,
        pool_timeout_s=pool_timeout_s,
        max_connections=pool,
    )
    async with http:
        client = PyragClient(http, top_k=20, mode="hybrid")
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
