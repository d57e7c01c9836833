"""The py-rag client's transport options, side by side: CPU per call and calls/s.

    python benchmarks/transport_bench.py [--calls 3000] [--concurrency 16]

Against the fake py-rag (8 hits, no delay) in its own process, in one uvloop process, each
option sends the same search POSTs through an httpx.AsyncClient (the adapter's API), except
the last row, raw aiohttp, which shows the floor. httpx-aiohttp is measured when installed
(it is not a dependency: its error mapping reports a pool wait as a connect timeout).
"""

from __future__ import annotations

import argparse
import asyncio
import os
import sys
import tempfile
import time
from collections.abc import Awaitable, Callable
from pathlib import Path

import httpx
import uvloop
from drill_support import HERE, free_port, process

from lookup_knowledge.adapters.pyrag import SEARCH_PATH, pyrag_http_client

BODY = b'{"query":"gateway timeout","top_k":20,"mode":"hybrid"}'


async def measure(call: Callable[[], Awaitable[None]], calls: int, concurrency: int) -> str:
    gate = asyncio.Semaphore(concurrency)

    async def one() -> None:
        async with gate:
            await call()

    await asyncio.gather(*(one() for _ in range(200)))  # warm: connections open
    cpu, wall = time.process_time(), time.perf_counter()
    await asyncio.gather(*(one() for _ in range(calls)))
    cpu, wall = time.process_time() - cpu, time.perf_counter() - wall
    return f"{cpu / calls * 1e6:8.0f} µs {calls / wall:10.0f}"


def via(client: httpx.AsyncClient) -> Callable[[], Awaitable[None]]:
    async def call() -> None:
        response = await client.post(SEARCH_PATH, content=BODY)
        await response.aread()

    return call


async def main(url: str, calls: int, concurrency: int) -> None:
    print(f"{'transport':<34}{'CPU/call':>11}{'calls/s':>11}")
    options = dict(connect_timeout_s=2.0, timeout_s=5.0, pool_timeout_s=1.0, max_connections=32)
    for name in ("httpx", "aiohttp"):
        async with pyrag_http_client(url, transport=name, **options) as client:  # type: ignore[arg-type]
            label = "httpx's own (httpcore)" if name == "httpx" else "httpx over ours (aiohttp)"
            print(f"{label:<34}{await measure(via(client), calls, concurrency)}")
    try:
        from httpx_aiohttp import AiohttpTransport
    except ImportError:
        print(f"{'httpx-aiohttp':<34}   (not installed)")
    else:
        async with httpx.AsyncClient(base_url=url, transport=AiohttpTransport()) as client:
            print(f"{'httpx-aiohttp':<34}{await measure(via(client), calls, concurrency)}")
    import aiohttp

    async with aiohttp.ClientSession(url) as session:

        async def raw() -> None:
            async with session.post(SEARCH_PATH, data=BODY) as response:
                await response.read()

        print(f"{'raw aiohttp (no httpx)':<34}{await measure(raw, calls, concurrency)}")


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--calls", type=int, default=3000)
    parser.add_argument("--concurrency", type=int, default=16)
    args = parser.parse_args()
    if (os.cpu_count() or 1) > 1:
        os.sched_setaffinity(0, {1})  # the fake py-rag stays on core 0
    with tempfile.TemporaryDirectory() as tmp:
        port = free_port()
        command = [sys.executable, str(HERE / "fake_pyrag.py"), "--port", str(port)]
        command += ["--delay-ms", "0", "--hits", "8"]
        pinned = ["taskset", "-c", "0", *command] if (os.cpu_count() or 1) > 1 else command
        with process(pinned, env=dict(os.environ), port=port, log=Path(tmp) / "pyrag.log"):
            uvloop.run(main(f"http://127.0.0.1:{port}", args.calls, args.concurrency))
