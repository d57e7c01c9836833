"""Benchmark of report verification: one POST /guard/verify against one read per citation.

    python benchmarks/guard_bench.py                       # in-process ledger and a private Redis
    python benchmarks/guard_bench.py --redis redis://HOST:PORT/DB   # an existing Redis instead
    python benchmarks/guard_bench.py --no-redis --iterations 2000

The service runs in this process over `httpx.ASGITransport` (no sockets: the figures are the
service's own cost) with the embedded engine. Ten real lookups fill the ledger of one run; the
report cites two shown documents of each, with a quote: 20 citations across 10 tool calls.
Per ledger backend, side by side:

* `route`: POST /guard/verify, the whole report in one request;
* `per citation`: the old way, GET /ledger/{run}/{call} and `verify_citation` for each citation;
* `library`: `verify_report` alone over entries already read (the pure rules).

The three take turns, so all see the same machine load. Prints wall-clock p50/p95/p99 and the
process's CPU time p50 per call (a figure other processes on the machine barely move), the
ratios of the two ways, and the Redis round trips of one verification counted at the client's
socket writes. Without --redis a throwaway redis-server is started on a
free port (the test suite's helper); the machine's own Redis is never touched. Nothing here is
asserted: machines are noisy.
"""

from __future__ import annotations

import argparse
import asyncio
import importlib.util
import sys
import tempfile
import time
from collections.abc import Awaitable, Callable, Mapping
from contextlib import ExitStack
from pathlib import Path
from typing import Any

import httpx

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "tests"))

# httpx's ASGITransport asks `import sniffio` on every request; when it is not installed, each
# request pays a failed search of sys.path in the measuring client, not in the service. A None
# entry fails that import at once.
if importlib.util.find_spec("sniffio") is None:
    sys.modules["sniffio"] = None  # type: ignore[assignment]

from lookup_knowledge.app import create_app  # noqa: E402
from lookup_knowledge.guard import (  # noqa: E402
    CitationKind,
    GuardReport,
    verify_citation,
    verify_report,
)
from lookup_knowledge.settings import Settings  # noqa: E402
from redis_counting import count_round_trips  # noqa: E402
from redis_servers import redis_server  # noqa: E402

RUN = "bench-run"
QUERIES = [
    "网关超时怎么排查",
    "redis memory usage high",
    "kafka consumer lag growing",
    "Pod 一直 CrashLoopBackOff 怎么排查",
    "TLS 证书过期怎么处理",
    "database connection pool exhausted",
    "JVM long GC pauses causing latency spikes",
    "mysql replication lag",
    "disk full on the host",
    "DNS resolution failures",
]


def percentiles(samples: list[float]) -> tuple[float, float, float]:
    ordered = sorted(samples)

    def at(q: float) -> float:
        return ordered[min(len(ordered) - 1, int(q * len(ordered)))] * 1000

    return at(0.50), at(0.95), at(0.99)


def line(name: str, wall: list[float], cpu: list[float]) -> str:
    p50, p95, p99 = percentiles(wall)
    return (
        f"  {name:<13} wall p50 {p50:7.3f} ms  p95 {p95:7.3f} ms  p99 {p99:7.3f} ms"
        f"   cpu p50 {percentiles(cpu)[0]:7.3f} ms"
    )


async def interleaved(
    n: int, calls: Mapping[str, Callable[[], Awaitable[Any]]]
) -> dict[str, tuple[list[float], list[float]]]:
    """Wall and CPU seconds of each call, taking turns so that all see the same machine load."""
    samples: dict[str, tuple[list[float], list[float]]] = {name: ([], []) for name in calls}
    for _ in range(n):
        for name, call in calls.items():
            wall, cpu = time.perf_counter(), time.process_time()
            await call()
            samples[name][1].append(time.process_time() - cpu)
            samples[name][0].append(time.perf_counter() - wall)
    return samples


async def fill_ledger(client: httpx.AsyncClient) -> dict[str, Any]:
    """Ten lookups of one run; a report citing two shown documents of each, quoting them."""
    analyses = []
    for i, query in enumerate(QUERIES):
        call = f"call_{i}"
        body = {"run_id": RUN, "tool_call_id": call, "query": query}
        answer = (await client.post("/lookup_knowledge", json=body)).json()
        shown = answer.get("evidence", [])
        if len(shown) < 2:
            raise SystemExit(f"{query!r} showed {len(shown)} items; the report needs 2 per call")
        citations = [
            {
                "tool_call_id": call,
                "kind": "NORMAL",
                "document_id": item["document_id"],
                "quote": item["excerpt"][:60],
            }
            for item in shown[:2]
        ]
        analyses.append({"id": f"a{i}", "text": f"Finding about {query}.", "citations": citations})
    return {
        "analyses": analyses,
        "conclusion": {"text": "Conclusion.", "based_on": [a["id"] for a in analyses]},
        "action_plan": [{"text": "Act.", "based_on": ["a0"]}],
        "limitations": ["Only the bundled knowledge base was searched."],
    }


async def bench_backend(name: str, redis_url: str | None, args: argparse.Namespace) -> None:
    workdir = Path(tempfile.mkdtemp(prefix="lk-guard-bench-"))
    settings = Settings(  # type: ignore[call-arg]
        _env_file=None,
        redis_url=redis_url,
        audit_database_url=f"sqlite:///{workdir}/audit.db",
        audit_spool_dir=workdir / "spool",
    )
    app = create_app(settings)
    async with app.router.lifespan_context(app):
        transport = httpx.ASGITransport(app=app)
        async with httpx.AsyncClient(transport=transport, base_url="http://bench") as client:
            report = await fill_ledger(client)
            request = {"run_id": RUN, "report": report}
            cites = [c for a in report["analyses"] for c in a["citations"]]

            async def route() -> None:
                response = await client.post("/guard/verify", json=request)
                if response.status_code != 200 or not response.json()["ok"]:
                    raise SystemExit(f"verification failed: {response.text[:300]}")

            async def per_citation() -> None:
                for c in cites:
                    served = await client.get(f"/ledger/{RUN}/{c['tool_call_id']}")
                    found = verify_citation(
                        served.content,
                        run_id=RUN,
                        kind=CitationKind.NORMAL,
                        document_id=c["document_id"],
                        tool_call_id=c["tool_call_id"],
                        quote=c["quote"],
                    )
                    if found:
                        raise SystemExit(f"citation refused: {found}")

            ledger = app.state.resources.ledger
            parsed = GuardReport.model_validate(report)
            entries = await ledger.get_many(RUN, parsed.cited_tool_call_ids())

            async def library() -> None:
                verify_report(parsed, run_id=RUN, entries=entries)

            calls = {"route": route, "per citation": per_citation, "library": library}
            await interleaved(max(1, args.iterations // 10), calls)  # warm-up
            with count_round_trips() as trips_route:
                await route()
            with count_round_trips() as trips_old:
                await per_citation()
            results = await interleaved(args.iterations, calls)

    print(f"{name} ledger: {len(cites)} citations across {len(report['analyses'])} tool calls")
    for label, (wall, cpu) in results.items():
        print(line(label, wall, cpu))
    for kind, index in (("wall", 0), ("cpu", 1)):
        route_p50 = percentiles(results["route"][index])[0]
        old_p50 = percentiles(results["per citation"][index])[0]
        print(f"  {kind} p50 per citation / route: {old_p50 / route_p50:5.1f}x")
    if redis_url is not None:
        print(
            f"  Redis round trips of one verification: route {trips_route.count} "
            f"({', '.join(f'{len(b)} {b[0]}' for b in trips_route.batches)}), "
            f"per citation {trips_old.count}"
        )


async def main(args: argparse.Namespace) -> None:
    with ExitStack() as stack:
        redis_url = args.redis
        if redis_url is None and not args.no_redis:
            directory = Path(tempfile.mkdtemp(prefix="lk-guard-bench-redis-"))
            redis_url = stack.enter_context(redis_server(directory))
        print(f"{args.iterations} iterations each, one request at a time")
        await bench_backend("in-process", None, args)
        if redis_url is not None:
            await bench_backend("redis", redis_url, args)


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--iterations", type=int, default=300)
    parser.add_argument("--redis", default=None, help="REDIS_URL of an existing Redis")
    parser.add_argument("--no-redis", action="store_true", help="the in-process ledger only")
    asyncio.run(main(parser.parse_args()))
