"""Side by side: the service against a bare pass-through proxy and a hello-world, one run.

    python benchmarks/side_by_side.py                       # 3 reps of 8 s, engine table too
    python benchmarks/side_by_side.py --reps 1 --seconds 5 --scale ''    # quick look
    python benchmarks/side_by_side.py --env PYTHONPATH=/other/checkout/src   # other code

Starts, as real processes:
* a fake py-rag answering 8 hits from fixed bytes at once (benchmarks/fake_pyrag.py);
* FastAPI hello-world and a bare pass-through proxy (benchmarks/bench_apps.py) on the
  service's stack: same uvicorn loop and HTTP implementation, same py-rag client;
* `lookup-knowledge serve` in production shape: Redis ledger on a private redis-server,
  audit in a uniquely named MariaDB database (dropped afterwards), PYRAG_BASE_URL.

Every server is driven by the same load generator (benchmarks/load.py: wrk when installed,
else a bundled asyncio client). With taskset and 2+ cores, the measured server runs on the
last core, everything else (load generator, py-rag, Redis, this script) on core 0.

Prints, from one run: closed-loop throughput (median of reps) as ratios against the
pass-through and the hello-world; CPU per request (from /proc of the server process) against
the pass-through; p50/p99 at half load (the same offered rate for pass-through and service,
in alternating pairs, the median of the pairs);
the audit rows written against the lookups answered; the pure-CPU cost of one lookup
(benchmarks/cpu_bench.py); and the engine scale table (benchmarks/engine_bench.py).
Targets: docs/performance.md. Nothing is asserted.
"""

from __future__ import annotations

import argparse
import os
import shutil
import statistics
import sys
import tempfile
import time
import uuid
from collections.abc import Iterator
from contextlib import ExitStack, contextmanager
from dataclasses import dataclass, field
from pathlib import Path

from drill_support import HERE, Service, free_port, private_redis, process
from load import Load, closed_loop, paced, wrk_available

MYSQL_SERVER_URL = os.environ.get("LK_BENCH_MYSQL_URL", "mysql+pymysql://root@127.0.0.1:3306")


@dataclass
class Measured:
    name: str
    server: Service
    loads: list[Load] = field(default_factory=list)
    cpu_per_request_s: list[float] = field(default_factory=list)

    @property
    def rate(self) -> float:
        return statistics.median(load.rate for load in self.loads)

    @property
    def cpu_s(self) -> float:
        return statistics.median(self.cpu_per_request_s)

    @property
    def failed(self) -> int:
        return sum(load.failed for load in self.loads)


def cores() -> tuple[str | None, str | None]:
    """(server core, load core), or (None, None) when pinning is not possible."""
    count = os.cpu_count() or 1
    if count < 2 or shutil.which("taskset") is None:
        return None, None
    return str(count - 1), "0"


def pinned(args: list[str], core: str | None) -> list[str]:
    return ["taskset", "-c", core, *args] if core is not None else args


@contextmanager
def fake_pyrag(workdir: Path) -> Iterator[str]:
    port = free_port()
    args = [sys.executable, str(HERE / "fake_pyrag.py"), "--port", str(port)]
    args += ["--delay-ms", "0", "--hits", "8"]
    with process(args, env=dict(os.environ), port=port, log=workdir / "pyrag.log"):
        yield f"http://127.0.0.1:{port}"


@contextmanager
def reference(workdir: Path, app: str, pyrag_url: str, core: str | None) -> Iterator[Service]:
    port = free_port()
    args = [sys.executable, str(HERE / "bench_apps.py"), app, "--port", str(port)]
    args += ["--pyrag-url", pyrag_url]
    log = workdir / f"{app}.log"
    with process(pinned(args, core), env=dict(os.environ), port=port, log=log) as child:
        yield Service(port=port, pid=child.pid)


@contextmanager
def mariadb_database() -> Iterator[str]:
    """A uniquely named database on the shared MariaDB, dropped afterwards."""
    from sqlalchemy import create_engine, make_url, text

    name = f"lk_bench_{uuid.uuid4().hex[:12]}"
    admin = create_engine(MYSQL_SERVER_URL, isolation_level="AUTOCOMMIT")
    try:
        with admin.connect() as conn:
            conn.execute(text(f"CREATE DATABASE `{name}` CHARACTER SET utf8mb4"))
        yield make_url(MYSQL_SERVER_URL).set(database=name).render_as_string(False)
    finally:
        with admin.connect() as conn:
            conn.execute(text(f"DROP DATABASE IF EXISTS `{name}`"))
        admin.dispose()


def audit_rows(database_url: str) -> int:
    from sqlalchemy import create_engine, text

    engine = create_engine(database_url)
    try:
        with engine.connect() as conn:
            return int(conn.execute(text("SELECT COUNT(*) FROM tool_invocation")).scalar_one())
    finally:
        engine.dispose()


@contextmanager
def production(
    workdir: Path,
    pyrag_url: str,
    redis_url: str,
    database_url: str,
    core: str | None,
    extra_env: dict[str, str] | None = None,
) -> Iterator[Service]:
    port = free_port()
    env = {k: v for k, v in os.environ.items() if k in {"PATH", "HOME", "LANG"}}
    env.update(
        {
            "PORT": str(port),
            "PYRAG_BASE_URL": pyrag_url,
            "REDIS_URL": redis_url,
            "AUDIT_DATABASE_URL": database_url,
            "AUDIT_SPOOL_DIR": str(workdir / "spool"),
            # Production logging: INFO, a JSON line per lookup (to a file here).
        }
    )
    env.update(extra_env or {})
    script = Path(sys.executable).with_name("lookup-knowledge")
    args = [str(script), "serve"] if script.exists() else [sys.executable, "-m", "lookup_knowledge"]
    args += [] if script.exists() else ["serve"]
    with process(pinned(args, core), env=env, port=port, log=workdir / "service.log") as child:
        yield Service(port=port, pid=child.pid)


def measure(target: Measured, args: argparse.Namespace, load_core: str | None) -> None:
    before = target.server.cpu_seconds()
    load = closed_loop(
        target.server.port,
        connections=args.connections,
        seconds=args.seconds,
        cpu=load_core,
        use_wrk=args.wrk,
    )
    time.sleep(0.5)  # what the server finishes after the last answer (audit rows) counts too
    target.loads.append(load)
    target.cpu_per_request_s.append((target.server.cpu_seconds() - before) / max(1, load.requests))


def ms(seconds: float) -> str:
    return f"{seconds * 1000:.2f} ms"


def signed_ms(seconds: float) -> str:
    return f"{seconds * 1000:+.2f} ms"


def report(hello: Measured, proxy: Measured, service: Measured, generator: str) -> None:
    print(f"\nclosed loop: {generator}, median of {len(service.loads)} reps")
    print(f"  {'server':<28}{'req/s':>10}{'CPU/request':>14}{'failed':>8}")
    for target in (hello, proxy, service):
        print(f"  {target.name:<28}{target.rate:>10.0f}{ms(target.cpu_s):>14}{target.failed:>8}")
    print("\nratios (targets: docs/performance.md)")
    ratio("throughput, service / pass-through", service.rate / proxy.rate, ">= 0.8x")
    ratio("throughput, service / hello-world", service.rate / hello.rate, ">= 0.15x")
    ratio("CPU per request, service / pass-through", service.cpu_s / proxy.cpu_s, "<= 1.3x")


def ratio(what: str, value: float, target: str) -> None:
    print(f"  {what + ':':<42}{value:6.2f}x  (target {target})")


def half_load(proxy: Measured, service: Measured, seconds: float, reps: int) -> None:
    """p50 and p99 at half load, the pass-through then the service, `reps` times: a pair is
    measured within seconds of each other, and the added p99 is the median of the pairs' (one
    run of 10 s swings by tens of ms on a shared machine)."""
    rate = 0.5 * min(proxy.rate, service.rate)
    print(
        f"\nhalf load: {rate:.0f} req/s offered to each, {seconds:g} s, asyncio client, "
        f"{reps} pair(s)"
    )
    added_p50: list[float] = []
    added_p99: list[float] = []
    for _ in range(reps):
        base = paced(proxy.server.port, rate=rate, seconds=seconds)
        ours = paced(service.server.port, rate=rate, seconds=seconds)
        for name, load in ((proxy.name, base), (service.name, ours)):
            print(
                f"  {name:<28} p50 {ms(load.p50_s):>10}   p99 {ms(load.p99_s):>10}"
                f"   failed {load.failed}"
            )
        added_p50.append(ours.p50_s - base.p50_s)
        added_p99.append(ours.p99_s - base.p99_s)
    spread = f" (pairs {', '.join(signed_ms(a) for a in added_p99)})" if len(added_p99) > 1 else ""
    print(
        f"  added by the service, median of the pairs: p50 "
        f"{signed_ms(statistics.median(added_p50))}, p99 "
        f"{signed_ms(statistics.median(added_p99))}{spread}  (target p99 <= +3 ms)"
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--reps", type=int, default=3)
    parser.add_argument("--seconds", type=float, default=8.0, help="per closed-loop rep")
    parser.add_argument("--connections", type=int, default=16)
    parser.add_argument("--half-seconds", type=float, default=10.0)
    parser.add_argument("--half-reps", type=int, default=3, help="half-load pairs")
    parser.add_argument("--no-wrk", dest="wrk", action="store_false", help="asyncio client")
    parser.add_argument("--scale", default="2000,10000", help="engine table sizes ('' = none)")
    parser.add_argument("--no-cpu", dest="cpu", action="store_false", help="skip pure CPU")
    parser.add_argument(
        "--env", action="append", default=[], metavar="NAME=VALUE", help="for the service"
    )
    args = parser.parse_args()
    extra_env = dict(item.split("=", 1) for item in args.env)
    args.wrk = args.wrk and wrk_available()
    server_core, load_core = cores()
    if load_core is not None:
        os.sched_setaffinity(0, {int(load_core)})
    generator = "wrk, 1 thread" if args.wrk else "bundled asyncio client"
    print(
        f"machine: {os.cpu_count()} cores, {platform_line()}; servers on core {server_core}, "
        f"load generator, py-rag and Redis on core {load_core}; {args.connections} connections"
    )
    with ExitStack() as stack:
        workdir = Path(stack.enter_context(tempfile.TemporaryDirectory(prefix="lk-sbs-")))
        pyrag_url = stack.enter_context(fake_pyrag(workdir))
        redis_url = stack.enter_context(private_redis(workdir))
        database_url = stack.enter_context(mariadb_database())
        hello = Measured(
            "FastAPI hello-world",
            stack.enter_context(reference(workdir, "hello", pyrag_url, server_core)),
        )
        proxy = Measured(
            "bare pass-through",
            stack.enter_context(reference(workdir, "passthrough", pyrag_url, server_core)),
        )
        service = Measured(
            "service (Redis, MariaDB)",
            stack.enter_context(
                production(workdir, pyrag_url, redis_url, database_url, server_core, extra_env)
            ),
        )
        targets = (hello, proxy, service)
        for target in targets:  # warm-up: connections, pools, first-call imports
            closed_loop(
                target.server.port,
                connections=args.connections,
                seconds=2,
                cpu=load_core,
                use_wrk=args.wrk,
            )
        for _ in range(args.reps):
            for target in targets:
                measure(target, args, load_core)
        report(hello, proxy, service, generator)
        half_load(proxy, service, args.half_seconds, args.half_reps)
        time.sleep(1.0)
        print(f"\naudit rows in MariaDB: {audit_rows(database_url)} (one per lookup)")
    if args.cpu:
        from cpu_bench import print_cpu_table

        print_cpu_table()
    sizes = [int(size) for size in args.scale.split(",") if size.strip()]
    if sizes:
        from engine_bench import _scale_table

        print()
        _scale_table(sizes)


def platform_line() -> str:
    import platform

    model = ""
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                model = line.split(":", 1)[1].strip()
                break
    except OSError:
        pass
    return f"{model or platform.machine()}, Python {platform.python_version()}"


if __name__ == "__main__":
    main()
