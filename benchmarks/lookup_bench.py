"""Benchmark of a whole lookup through the service: latency per stage, throughput, memory.

    python benchmarks/lookup_bench.py                          # embedded defaults
    python benchmarks/lookup_bench.py --redis redis://127.0.0.1:6379/14 \\
        --audit mysql+pymysql://root@127.0.0.1:3306/lk_bench   # the deployed stores
    python benchmarks/lookup_bench.py --requests 2000 --concurrency 16

Drives `POST /lookup_knowledge` over `httpx.ASGITransport` (no sockets, so the figures are the
service's own cost), each call with fresh ids so nothing is a replay, then replays them once.
Prints p50/p95/p99 latency of fresh lookups and replays, throughput, the per-stage histograms
from /metrics, and the process's peak RSS. Nothing here is asserted: machines are noisy.
"""

from __future__ import annotations

import argparse
import asyncio
import resource
import statistics
import tempfile
import time
from pathlib import Path

import httpx

from lookup_knowledge.app import create_app
from lookup_knowledge.settings import Settings

QUERIES = [
    "网关超时怎么排查",
    "redis memory usage high",
    "kafka consumer lag growing",
    "Pod 一直 CrashLoopBackOff 怎么排查",
    "TLS 证书过期怎么处理",
    "database connection pool exhausted",
    "JVM long GC pauses causing latency spikes",
    "qwzx plorf vindle",
]


def percentiles(samples: list[float]) -> str:
    ordered = sorted(samples)

    def at(q: float) -> float:
        return ordered[min(len(ordered) - 1, int(q * len(ordered)))] * 1000

    return f"p50 {at(0.50):7.2f} ms  p95 {at(0.95):7.2f} ms  p99 {at(0.99):7.2f} ms"


async def drive(
    client: httpx.AsyncClient, bodies: list[dict[str, str]], concurrency: int
) -> tuple[list[float], float]:
    gate = asyncio.Semaphore(concurrency)
    latencies: list[float] = []

    async def one(body: dict[str, str]) -> None:
        async with gate:
            started = time.perf_counter()
            response = await client.post("/lookup_knowledge", json=body)
            latencies.append(time.perf_counter() - started)
            if response.status_code != 200:
                raise SystemExit(f"lookup failed: {response.status_code} {response.text}")

    started = time.perf_counter()
    await asyncio.gather(*(one(body) for body in bodies))
    return latencies, time.perf_counter() - started


async def main(args: argparse.Namespace) -> None:
    workdir = Path(tempfile.mkdtemp(prefix="lk-bench-"))
    settings = Settings(  # type: ignore[call-arg]
        _env_file=None,
        redis_url=args.redis,
        audit_database_url=args.audit or f"sqlite:///{workdir}/audit.db",
        audit_spool_dir=workdir / "spool",
    )
    app = create_app(settings)
    async with app.router.lifespan_context(app):
        transport = httpx.ASGITransport(app=app)
        async with httpx.AsyncClient(transport=transport, base_url="http://bench") as client:
            bodies = [
                {
                    "run_id": f"bench-{int(time.time())}",
                    "tool_call_id": f"call-{i}",
                    "query": QUERIES[i % len(QUERIES)],
                }
                for i in range(args.requests)
            ]
            await drive(client, bodies[: min(50, len(bodies))], args.concurrency)  # warm-up
            fresh, fresh_s = await drive(client, bodies[50:], args.concurrency)
            replays, replay_s = await drive(client, bodies[50:], args.concurrency)
            metrics = (await client.get("/metrics")).text

    audit = settings.audit_database_url.get_secret_value().split(":")[0]
    ledger = "redis" if args.redis else "in-process"
    print(f"ledger {ledger}, audit {audit}, {len(fresh)} lookups, concurrency {args.concurrency}")
    print(f"fresh lookups  {percentiles(fresh)}  {len(fresh) / fresh_s:8.1f} lookups/s")
    print(f"replays        {percentiles(replays)}  {len(replays) / replay_s:8.1f} lookups/s")
    print(f"mean fresh {statistics.mean(fresh) * 1000:.2f} ms")
    for line in metrics.splitlines():
        if line.startswith("lk_lookup_stage_duration_seconds_sum"):
            stage = line.split('stage="')[1].split('"')[0]
            total = float(line.rpartition(" ")[2])
            prefix = f'lk_lookup_stage_duration_seconds_count{{stage="{stage}"}}'
            count_line = next(x for x in metrics.splitlines() if x.startswith(prefix))
            count = float(count_line.rpartition(" ")[2])
            print(f"stage {stage:<9} mean {total / count * 1000:7.3f} ms over {int(count)}")
    peak_mb = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    print(f"peak RSS {peak_mb:.0f} MB")


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--requests", type=int, default=1050)
    parser.add_argument("--concurrency", type=int, default=8)
    parser.add_argument("--redis", default=None, help="REDIS_URL (default: in-process ledger)")
    parser.add_argument("--audit", default=None, help="AUDIT_DATABASE_URL (default: SQLite)")
    asyncio.run(main(parser.parse_args()))
