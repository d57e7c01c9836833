"""CPU per lookup of the service on two checkouts, interleaved, against the bare pass-through.

    python benchmarks/cpu_ab.py --before /other/checkout/src            # 16 rounds of 4 s
    python benchmarks/cpu_ab.py --before /a/src --after /b/src --rounds 10
    python benchmarks/cpu_ab.py --before /a/src --paced 300 --seconds 10  # latency, not CPU

With `--paced RATE` each round offers every server the same open-loop rate instead (`load.py`
`paced`: latency counts from the moment each request was due) and prints p50 and p99 per
server, the p99 each service adds over the pass-through in each round, and their medians:
the half-load latency of side_by_side.py, before and after, side by side.

`side_by_side.py --env PYTHONPATH=...` compares two checkouts one run after the other; on a
shared machine the other work moves between those runs, and a 5% change drowns. This bench
starts, once: the fake py-rag (8 hits), a private redis-server, the bare pass-through
(`bench_apps.py passthrough`), and `lookup-knowledge serve` twice in production shape (the
Redis ledger, each its own MariaDB database, INFO logs), one on the `--before` code and one
on the `--after` code (default: this checkout). Then, round after round, each of the three
gets the same closed loop (`load.py`, 16 connections) in turn, the order reversed every other
round, and its CPU per request is read from `/proc` (the audit writer thread included).

Prints per server the median and range over the rounds, the CPU ratio of each service to the
pass-through, and the after − before difference of every round (each pair measured within
seconds of each other), with their median. The audit rows stored are counted against the
lookups answered. Servers run on the last core, everything else on core 0, as in
side_by_side.py. Nothing is asserted.
"""

from __future__ import annotations

import argparse
import os
import statistics
import tempfile
import time
from contextlib import ExitStack
from pathlib import Path

from drill_support import Service, private_redis
from load import Load, closed_loop, paced, wrk_available
from side_by_side import audit_rows, cores, fake_pyrag, mariadb_database, production, reference

SRC = Path(__file__).resolve().parent.parent / "src"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--before", required=True, help="PYTHONPATH of the code before")
    parser.add_argument("--after", default=str(SRC), help="PYTHONPATH of the code after")
    parser.add_argument("--rounds", type=int, default=16)
    parser.add_argument("--seconds", type=float, default=4.0, help="per closed loop")
    parser.add_argument("--connections", type=int, default=16)
    parser.add_argument("--no-wrk", dest="wrk", action="store_false", help="asyncio client")
    parser.add_argument(
        "--paced", type=float, default=0.0, metavar="RATE", help="open loop at RATE req/s"
    )
    args = parser.parse_args()
    use_wrk = args.wrk and wrk_available()
    server_core, load_core = cores()
    if load_core is not None:
        os.sched_setaffinity(0, {int(load_core)})
    with ExitStack() as stack:
        workdir = Path(stack.enter_context(tempfile.TemporaryDirectory(prefix="lk-cpu-ab-")))
        pyrag_url = stack.enter_context(fake_pyrag(workdir))
        redis_url = stack.enter_context(private_redis(workdir))
        servers: dict[str, Service] = {
            "pass-through": stack.enter_context(
                reference(workdir, "passthrough", pyrag_url, server_core)
            )
        }
        databases: dict[str, str] = {}
        for name, path in (("before", args.before), ("after", args.after)):
            databases[name] = stack.enter_context(mariadb_database())
            (workdir / name).mkdir()
            servers[name] = stack.enter_context(
                production(
                    workdir / name,
                    pyrag_url,
                    redis_url,
                    databases[name],
                    server_core,
                    {"PYTHONPATH": path},
                )
            )

        def loop(server: Service, seconds: float) -> tuple[float, int]:
            before = server.cpu_seconds()
            load = closed_loop(
                server.port,
                connections=args.connections,
                seconds=seconds,
                cpu=load_core,
                use_wrk=use_wrk,
            )
            time.sleep(0.4)  # the audit rows written after the last answer count too
            return (server.cpu_seconds() - before) / max(1, load.requests), load.requests

        answered = dict.fromkeys(servers, 0)
        for name, server in servers.items():  # warm-up: connections, pools, first-call imports
            answered[name] += loop(server, 2)[1]
        if args.paced:
            latency_rounds(servers, args.paced, args.rounds, args.seconds)
            return
        cpu: dict[str, list[float]] = {name: [] for name in servers}
        for index in range(args.rounds):
            names = list(servers) if index % 2 == 0 else list(reversed(servers))
            for name in names:
                seconds_per_request, requests = loop(servers[name], args.seconds)
                cpu[name].append(seconds_per_request)
                answered[name] += requests
        time.sleep(1.0)
        rows = {name: audit_rows(url) for name, url in databases.items()}

    generator = "wrk, 1 thread" if use_wrk else "bundled asyncio client"
    print(f"{args.rounds} rounds of {args.seconds:g} s, {generator}, {args.connections} conn.")
    print(f"  before: {args.before}\n  after:  {args.after}")
    for name, samples in cpu.items():
        ms = [s * 1000 for s in samples]
        print(
            f"  {name:<14} CPU per request: median {statistics.median(ms):.3f} ms"
            f" ({min(ms):.3f}-{max(ms):.3f})"
        )
    base = statistics.median(cpu["pass-through"])
    for name in ("before", "after"):
        print(f"  CPU ratio, {name} / pass-through: {statistics.median(cpu[name]) / base:.2f}x")
    deltas = [(a - b) * 1e6 for b, a in zip(cpu["before"], cpu["after"], strict=True)]
    print(
        "  after - before, each round (µs): "
        + " ".join(f"{d:+.0f}" for d in deltas)
        + f"; median {statistics.median(deltas):+.0f} µs"
    )
    for name in ("before", "after"):
        print(f"  audit rows, {name}: {rows[name]} for {answered[name]} lookups answered")


def latency_rounds(servers: dict[str, Service], rate: float, rounds: int, seconds: float) -> None:
    """Each round, every server gets `rate` req/s for `seconds`, in turn (the order reversed
    every other round); p50 and p99 per server, and what each service adds over the
    pass-through within the same round."""
    samples: dict[str, list[Load]] = {name: [] for name in servers}
    for index in range(rounds):
        names = list(servers) if index % 2 == 0 else list(reversed(servers))
        for name in names:
            samples[name].append(paced(servers[name].port, rate=rate, seconds=seconds))
    print(f"{rounds} rounds of {seconds:g} s at {rate:g} req/s offered, bundled asyncio client")
    for name, loads in samples.items():
        p50 = statistics.median(load.p50_s * 1000 for load in loads)
        p99s = " ".join(f"{load.p99_s * 1000:.1f}" for load in loads)
        failed = sum(load.failed for load in loads)
        print(f"  {name:<14} p50 median {p50:.2f} ms; p99 per round (ms): {p99s}; failed {failed}")
    base = samples["pass-through"]
    for name in ("before", "after"):
        added = [
            (ours.p99_s - theirs.p99_s) * 1000
            for ours, theirs in zip(samples[name], base, strict=True)
        ]
        print(
            f"  p99 added over the pass-through, {name}: "
            + " ".join(f"{a:+.1f}" for a in added)
            + f"; median {statistics.median(added):+.1f} ms"
        )


if __name__ == "__main__":
    main()
