"""Benchmark of GET /ledger/{run_id} on a large run: paged summaries against reading it whole.

    python benchmarks/ledger_listing_bench.py                 # 5000 entries of 16 KiB
    python benchmarks/ledger_listing_bench.py --entries 20000 --body-kib 8

Fills a private redis-server with one run, then, in this process, takes the best time of
three runs and the Python allocation peak of a fourth (tracemalloc) of:
- the whole run with every body in one read, as the listing worked before it was paged
  (ZRANGE 0 -1, then HGETALL of every entry), done here directly on Redis;
- the first page of summaries through the route (`GET /ledger/{run}`, ASGI transport);
- every page of summaries, cursor after cursor (`?limit=100`);
- one page with its results (`?limit=100&include=result`).
Prints the figures side by side with ratios. Nothing is asserted.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import tempfile
import time
import tracemalloc
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any

import httpx
import redis.asyncio as aioredis
from drill_support import private_redis

from lookup_knowledge.adapters.ledger_redis import RedisLedger, entry_key, run_index_key
from lookup_knowledge.app import create_app
from lookup_knowledge.domain.ledger import sha256_hex
from lookup_knowledge.settings import Settings

RUN = "run-big"


async def fill(ledger: RedisLedger, entries: int, body_kib: int) -> None:
    pad = "x" * (body_kib * 1024 - 200)
    gate = asyncio.Semaphore(32)

    async def one(i: int) -> None:
        result = {
            "evidence_status": "EVIDENCE_FOUND",
            "tool_call_id": f"call-{i:05d}",
            "query": "q",
            "evidence": [{"document_id": "d#chunk-0", "excerpt": pad}],
            "returned_count": 1,
            "truncated": False,
        }
        body = json.dumps(result, separators=(",", ":")).encode()
        async with gate:
            call = f"call-{i:05d}"
            await ledger.claim(RUN, call, query_sha256=sha256_hex("q"), token="t")
            await ledger.complete(
                RUN,
                call,
                token="t",
                query_sha256=sha256_hex("q"),
                body=body,
                evidence_status="EVIDENCE_FOUND",
            )

    await asyncio.gather(*(one(i) for i in range(entries)))


async def measure(label: str, work: Callable[[], Awaitable[int]]) -> tuple[float, float]:
    """Best time of three plain runs, then the allocation peak of one traced run."""
    times = []
    for _ in range(3):
        started = time.perf_counter()
        count = await work()
        times.append(time.perf_counter() - started)
    tracemalloc.start()
    await work()
    peak_mb = tracemalloc.get_traced_memory()[1] / 2**20
    tracemalloc.stop()
    seconds = min(times)
    print(f"{label:<44} {seconds * 1000:9.1f} ms  peak {peak_mb:8.2f} MB  {count} entries")
    return seconds, peak_mb


async def main(args: argparse.Namespace) -> None:
    workdir = Path(tempfile.mkdtemp(prefix="lk-listing-"))
    with private_redis(workdir) as url:
        ledger = RedisLedger.from_url(url, ttl_s=3600, pending_ttl_s=60)
        await fill(ledger, args.entries, args.body_kib)
        await ledger.aclose()
        raw = aioredis.Redis.from_url(url)
        settings = Settings(  # type: ignore[call-arg]
            _env_file=None,
            redis_url=url,
            pyrag_base_url="http://pyrag.invalid",
            audit_database_url=f"sqlite:///{workdir}/audit.db",
            audit_spool_dir=workdir / "spool",
        )
        app = create_app(settings)
        async with app.router.lifespan_context(app):
            transport = httpx.ASGITransport(app=app)
            async with httpx.AsyncClient(transport=transport, base_url="http://bench") as client:

                async def whole_run_with_bodies() -> int:
                    members = await raw.zrange(run_index_key(RUN), 0, -1)
                    async with raw.pipeline(transaction=False) as pipe:
                        for member in members:
                            pipe.hgetall(entry_key(RUN, member.decode()))
                        rows: list[Any] = await pipe.execute()
                    return len(rows)

                async def first_page() -> int:
                    response = await client.get(f"/ledger/{RUN}")
                    return len(response.json()["entries"])

                async def every_page() -> int:
                    count, cursor = 0, None
                    while True:
                        params: dict[str, Any] = {"limit": 100}
                        if cursor:
                            params["cursor"] = cursor
                        page = (await client.get(f"/ledger/{RUN}", params=params)).json()
                        count += len(page["entries"])
                        cursor = page["next_cursor"]
                        if cursor is None:
                            return count

                async def page_with_results() -> int:
                    params = {"limit": 100, "include": "result"}
                    response = await client.get(f"/ledger/{RUN}", params=params)
                    return len(response.json()["entries"])

                print(f"one run of {args.entries} entries of {args.body_kib} KiB in Redis")
                before = await measure("before: the whole run with bodies", whole_run_with_bodies)
                first = await measure("after: first page of summaries (50)", first_page)
                await measure("after: every page of summaries (100 each)", every_page)
                await measure("after: one page of 100 with results", page_with_results)
                print(
                    f"first page against the whole run: {before[0] / first[0]:.0f}x faster, "
                    f"{before[1] / max(first[1], 1e-6):.0f}x less memory at peak"
                )
        await raw.aclose()


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--entries", type=int, default=5000)
    parser.add_argument("--body-kib", type=int, default=16)
    asyncio.run(main(parser.parse_args()))
