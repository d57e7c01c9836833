"""What the durable audit path adds to a lookup: the same lookups with a null audit, with the
writer on SQLite and with the writer on the real MariaDB, side by side in one run.

    python benchmarks/audit_bench.py                      # 5 rounds of 300 lookups per variant
    python benchmarks/audit_bench.py --rounds 9 --lookups 500
    python benchmarks/audit_bench.py --mysql ''           # without MariaDB

Each variant is the whole app (lifespan run, in-process ledger) driven over ASGITransport, so
the figures are the service's own latency; py-rag is a fake in a separate process answering 8
hits from fixed bytes over HTTP. The variants run interleaved, round after round, in a new order
each round, so drift on a shared machine spreads over all of them. Reported: p50/p90/p99 of
sequential lookups and p50 at 8 concurrent, per variant, the p50 added over the null audit
(median of the per-round differences), the mean time `submit` took (the audit stage), process
CPU per lookup (the writer thread's included), and for each writer the rows written against
lookups made and the rows per commit. Nothing is asserted.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import random
import statistics
import subprocess
import sys
import tempfile
import textwrap
import time
import uuid
from collections.abc import AsyncIterator, Callable
from contextlib import AsyncExitStack, asynccontextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import httpx
from sqlalchemy import create_engine, make_url, text

from lookup_knowledge.app import create_app
from lookup_knowledge.audit.writer import AuditWriter
from lookup_knowledge.domain.audit import AuditRow, AuditStatus
from lookup_knowledge.settings import Settings

FAKE_PYRAG = textwrap.dedent("""
    import json, sys
    from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
    hits = [{"document_id": f"doc-{i}", "evidence_key": f"doc-{i}#chunk-{i}",
             "source": f"runbooks/doc-{i}.md", "title": f"Doc {i}", "breadcrumb": "Doc > Steps",
             "excerpt": "Check the upstream timeout, then the connection pool. " * 8,
             "quality_score": 0.9 - i * 0.05} for i in range(8)]
    BODY = json.dumps({"query": "q", "mode": "hybrid", "hits": hits,
                       "evidence_status": "supported",
                       "retrieval_trace": {"mode": "hybrid", "recall_count": 8}}).encode()
    class Handler(BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"
        disable_nagle_algorithm = True
        def do_POST(self):
            self.rfile.read(int(self.headers.get("content-length", 0)))
            self.send_response(200)
            self.send_header("content-type", "application/json")
            self.send_header("content-length", str(len(BODY)))
            self.end_headers()
            self.wfile.write(BODY)
        do_GET = do_POST
        def log_message(self, *args): pass
    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    print(server.server_address[1], flush=True)
    server.serve_forever()
""")


class NullAudit:
    """The baseline: an AuditPort that keeps nothing."""

    def submit(self, record: AuditRow) -> None:
        return None

    async def status(self) -> AuditStatus:
        return AuditStatus(status="up", backend="none")


@dataclass
class Variant:
    name: str
    client: httpx.AsyncClient
    writer: AuditWriter | None
    metrics_text: Callable[[], Any]
    sequential: list[list[float]] = field(default_factory=list)  # per round
    concurrent: list[list[float]] = field(default_factory=list)
    cpu_s: float = 0.0  # process CPU over the measured lookups, the writer's work included
    lookups: int = 0


def pct(samples: list[float], q: float) -> float:
    ordered = sorted(samples)
    return ordered[min(len(ordered) - 1, int(q * len(ordered)))] * 1000


async def drive(variant: Variant, count: int, concurrency: int) -> list[float]:
    gate = asyncio.Semaphore(concurrency)
    latencies: list[float] = []

    async def one() -> None:
        body = {"run_id": "bench", "tool_call_id": uuid.uuid4().hex, "query": "网关超时怎么排查"}
        async with gate:
            began = time.perf_counter()
            response = await variant.client.post("/lookup_knowledge", json=body)
            latencies.append(time.perf_counter() - began)
        if response.status_code != 200:
            raise SystemExit(f"{variant.name}: lookup failed {response.status_code}")

    await asyncio.gather(*(one() for _ in range(count)))
    variant.lookups += count
    return latencies


@asynccontextmanager
async def open_variant(
    name: str, settings: Settings, writer: AuditWriter | None
) -> AsyncIterator[Variant]:
    app = create_app(settings, audit=writer or NullAudit())
    async with app.router.lifespan_context(app):
        transport = httpx.ASGITransport(app=app)
        async with httpx.AsyncClient(transport=transport, base_url="http://bench") as client:

            async def metrics_text() -> str:
                return (await client.get("/metrics")).text

            yield Variant(name, client, writer, metrics_text)


def audit_stage(metrics: str) -> tuple[float, float]:
    """Mean ms of the audit stage (`submit`), and the share of lookups where it took over 1 ms."""
    values = {}
    for line in metrics.splitlines():
        for kind in ("sum", "count", 'bucket{le="0.001",'):
            prefix = f"lk_lookup_stage_duration_seconds_{kind}"
            if line.startswith(prefix) and 'stage="audit"' in line:
                values[kind] = float(line.rpartition(" ")[2])
    count = values.get("count", 0.0)
    if not count:
        return float("nan"), float("nan")
    return values["sum"] / count * 1000, 1 - values['bucket{le="0.001",'] / count


async def main(args: argparse.Namespace) -> None:
    workdir = Path(tempfile.mkdtemp(prefix="lk-audit-bench-"))
    fake = subprocess.Popen([sys.executable, "-c", FAKE_PYRAG], stdout=subprocess.PIPE, text=True)
    assert fake.stdout is not None
    port = int(fake.stdout.readline())
    settings = Settings(  # type: ignore[call-arg]
        _env_file=None,
        pyrag_base_url=f"http://127.0.0.1:{port}",
        audit_database_url=f"sqlite:///{workdir}/unused.db",
        audit_spool_dir=workdir / "unused-spool",
        log_level="WARNING",
    )
    database = None
    if args.mysql:
        database = f"lk_bench_audit_{uuid.uuid4().hex[:10]}"
        admin = create_engine(args.mysql, isolation_level="AUTOCOMMIT")
        with admin.connect() as conn:
            conn.execute(text(f"CREATE DATABASE `{database}` CHARACTER SET utf8mb4"))
    writers = {
        "sqlite": f"sqlite:///{workdir}/audit.db",
        **({"mariadb": str(make_url(args.mysql).set(database=database))} if database else {}),
    }
    try:
        async with AsyncExitStack() as stack:
            variants = [await stack.enter_async_context(open_variant("null", settings, None))]
            for name, url in writers.items():
                writer = AuditWriter.open(url, workdir / f"spool-{name}")
                writer.start()
                stack.callback(writer.close, 30)
                variants.append(
                    await stack.enter_async_context(open_variant(name, settings, writer))
                )
            for variant in variants:  # warm-up: connections, caches, the writers' schema
                await drive(variant, 100, 1)
            measured = 0
            for _ in range(args.rounds):
                for variant in random.sample(variants, len(variants)):
                    cpu = time.process_time()
                    variant.sequential.append(await drive(variant, args.lookups, 1))
                    variant.concurrent.append(await drive(variant, args.lookups, 8))
                    if variant.writer is not None:  # its rows written before the next variant
                        variant.writer.flush(60)
                    variant.cpu_s += time.process_time() - cpu
                measured += 2 * args.lookups
            for variant in variants:
                if variant.writer is not None:
                    variant.writer.flush(60)
            report(variants, args, [await v.metrics_text() for v in variants], measured)
    finally:
        fake.terminate()
        if database:
            with admin.connect() as conn:
                conn.execute(text(f"DROP DATABASE IF EXISTS `{database}`"))
            admin.dispose()


def report(
    variants: list[Variant], args: argparse.Namespace, metrics: list[str], measured: int
) -> None:
    null = variants[0]
    print(
        f"{args.rounds} rounds x {args.lookups} lookups per variant, sequential and 8 concurrent;"
        " latency in ms"
    )
    print(
        f"{'audit':<8} {'p50':>7} {'p90':>7} {'p99':>7} {'+p50':>7} {'p50 c8':>8} {'+p50 c8':>8}"
        f" {'submit':>7} {'>1ms':>6} {'cpu/lookup':>10} {'rows/lookups':>13} {'rows/commit':>12}"
    )
    for variant, text_ in zip(variants, metrics, strict=True):
        seq = [x for r in variant.sequential for x in r]
        added = statistics.median(
            pct(v, 0.5) - pct(n, 0.5)
            for v, n in zip(variant.sequential, null.sequential, strict=True)
        )
        added_c8 = statistics.median(
            pct(v, 0.5) - pct(n, 0.5)
            for v, n in zip(variant.concurrent, null.concurrent, strict=True)
        )
        c8 = statistics.median(pct(r, 0.5) for r in variant.concurrent)
        submit_ms, slow = audit_stage(text_)
        rows, per_commit = "-", "-"
        if variant.writer is not None:
            state = variant.writer.snapshot()
            rows = f"{state.rows_written}/{variant.lookups}"
            per_commit = f"{state.rows_written / max(1, state.commits):.1f}"
        print(
            f"{variant.name:<8} {pct(seq, 0.5):7.2f} {pct(seq, 0.9):7.2f} {pct(seq, 0.99):7.2f}"
            f" {added:+7.3f} {c8:8.2f} {added_c8:+8.3f} {submit_ms:7.3f} {slow:6.1%}"
            f" {variant.cpu_s / measured * 1000:10.3f} {rows:>13} {per_commit:>12}"
        )
    print(
        "+p50: median over rounds of (variant p50 - null p50); submit: mean ms in the audit"
        " stage, >1ms: share of lookups where it took longer; cpu/lookup: ms of process CPU"
        " per lookup, writer thread included"
    )
    print(
        json.dumps(
            {"cpus": os.cpu_count(), "load": os.getloadavg(), "python": sys.version.split()[0]}
        )
    )


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--lookups", type=int, default=300, help="per variant and round")
    parser.add_argument(
        "--mysql",
        default="mysql+pymysql://root@127.0.0.1:3306",
        help="MariaDB server URL (a database is created and dropped); '' to skip",
    )
    asyncio.run(main(parser.parse_args()))
