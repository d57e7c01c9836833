"""What the MCP face costs on top of a lookup: REST vs MCP (in memory) vs MCP over HTTP.

    python benchmarks/mcp_bench.py                 # 300 lookups per path
    python benchmarks/mcp_bench.py --requests 1000

One app with embedded defaults; the three paths run side by side in one process, one call at
a time, each call with fresh ids (no replays), over no sockets (`ASGITransport` for HTTP, the
SDK's in-memory transport for plain MCP). Prints p50/p95 per path and each path's ratio to
REST. Nothing is asserted: machines are noisy.
"""

from __future__ import annotations

import argparse
import asyncio
import statistics
import tempfile
import time
import uuid
from collections.abc import AsyncIterator, Awaitable, Callable
from contextlib import asynccontextmanager
from pathlib import Path

import httpx
import httpx2
from mcp import Client
from mcp.client.streamable_http import streamable_http_client
from mcp.server import Server

from lookup_knowledge.api.deps import Resources
from lookup_knowledge.app import create_app
from lookup_knowledge.mcp_server import build_server
from lookup_knowledge.settings import Settings

QUERIES = [
    "网关超时怎么排查",
    "redis memory usage high",
    "kafka consumer lag growing",
    "Pod 一直 CrashLoopBackOff 怎么排查",
    "qwzx plorf vindle",
]


async def timed(n: int, call: Callable[[str], Awaitable[object]]) -> list[float]:
    for query in QUERIES:  # warm up
        await call(query)
    samples = []
    for i in range(n):
        started = time.perf_counter()
        await call(QUERIES[i % len(QUERIES)])
        samples.append((time.perf_counter() - started) * 1000)
    return samples


async def main(requests: int) -> None:
    data = Path(tempfile.mkdtemp(prefix="lk-mcp-bench-"))
    settings = Settings(_env_file=None, data_dir=data, log_level="WARNING")  # type: ignore[call-arg]
    app = create_app(settings)
    async with app.router.lifespan_context(app):
        resources: Resources = app.state.resources

        @asynccontextmanager
        async def shared(_: Server[Resources]) -> AsyncIterator[Resources]:
            yield resources

        rest = httpx.AsyncClient(transport=httpx.ASGITransport(app=app), base_url="http://lk")

        async def via_rest(query: str) -> object:
            body = {"run_id": "bench", "tool_call_id": uuid.uuid4().hex, "query": query}
            return (await rest.post("/lookup_knowledge", json=body)).raise_for_status()

        results: dict[str, list[float]] = {"REST": await timed(requests, via_rest)}
        async with Client(build_server(shared), mode="legacy") as memory:
            results["MCP, in memory"] = await timed(
                requests, lambda q: memory.call_tool("lookup_knowledge", {"query": q})
            )
        http = httpx2.AsyncClient(transport=httpx2.ASGITransport(app=app))
        transport = streamable_http_client("http://lk/mcp", http_client=http)
        async with Client(transport, mode="auto") as remote:
            results["MCP, streamable HTTP"] = await timed(
                requests, lambda q: remote.call_tool("lookup_knowledge", {"query": q})
            )
        await rest.aclose()

    base = statistics.median(results["REST"])
    print(f"{requests} lookups per path, one at a time, embedded defaults")
    print(f"{'path':<22} {'p50 ms':>8} {'p95 ms':>8} {'p50 / REST':>11}")
    for name, samples in results.items():
        p50 = statistics.median(samples)
        p95 = statistics.quantiles(samples, n=20)[18]
        print(f"{name:<22} {p50:>8.2f} {p95:>8.2f} {p50 / base:>10.2f}x")


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--requests", type=int, default=300)
    asyncio.run(main(parser.parse_args().requests))
