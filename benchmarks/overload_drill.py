"""Drill: 1000 simultaneous lookups at a real service with healthy dependencies.

    python benchmarks/overload_drill.py                      # 1000 at once, py-rag 50 ms
    python benchmarks/overload_drill.py --burst 1000 --pyrag-delay-ms 50 \\
        --env MAX_CONCURRENT_LOOKUPS=32                      # try another admission setting

Starts a private redis-server, a fake py-rag (benchmarks/fake_pyrag.py, healthy: it answers
any number of calls in --pyrag-delay-ms) and `lookup-knowledge serve` as real processes, then:

1. closed loop: C workers each send lookups back to back for a few seconds, for several C;
   the best lookups/s is the closed-loop maximum of this machine and setting;
2. the burst: --burst lookups, each on its own connection, sent at once; prints the
   histogram of answers and the 200s' throughput against the closed-loop maximum. The
   connections are opened first and the clock starts as the first request is written, so the
   burst times the service, not the drill opening a thousand connections (about 0.2 s of a
   small machine, during which no request has arrived yet); --connect-in-burst times it as the
   drill did before, each lookup opening its connection after the clock started;
3. --shed (on by default): every id shed with 503 OVERLOADED is sent again right away, all of
   them, by 8 clients: how many succeed at once (the shed left no claim behind), how fast;
4. every other id that did not get 200 is sent again, sequentially: does it succeed?
   With --rounds N, steps 2 to 4 run N times, each round after a closed loop at the best
   client count of step 1: the ratio of each burst to the maximum measured just before it,
   and their median (the maximum of a shared machine moves between runs a minute apart);
5. right after the burst, --after lookups, one every 2 s: do they succeed, how fast?
6. once the service has stopped, the audit rows against the answers: one row per call, the
   shed ones included (`error_code` OVERLOADED).

Nothing is asserted: the figures are printed for the report.
"""

from __future__ import annotations

import argparse
import asyncio
import collections
import sqlite3
import statistics
import tempfile
import time
from pathlib import Path

from drill_support import (
    Answer,
    Connection,
    Service,
    drill_stack,
    encode_request,
    lookup_body,
    one_shot,
    percentile,
)
from drill_support import burst as open_and_send

LOOKUP = "/lookup_knowledge"


async def closed_loop(
    port: int, run_id: str, workers: int, seconds: float
) -> tuple[float, int, int]:
    """Lookups/s with `workers` keep-alive clients sending back to back; non-200s; lookups."""
    deadline = time.perf_counter() + seconds
    done = 0
    failed = 0
    serial = iter(range(10**9))

    async def worker() -> None:
        nonlocal done, failed
        connection = Connection(port)
        while time.perf_counter() < deadline:
            answer = await connection.request(
                "POST", LOOKUP, lookup_body(run_id, f"c{workers}-{next(serial)}")
            )
            done += 1
            failed += answer.status != 200
        await connection.close()

    started = time.perf_counter()
    await asyncio.gather(*(worker() for _ in range(workers)))
    return done / (time.perf_counter() - started), failed, done


async def burst(
    port: int, run_id: str, size: int, *, connect_in_burst: bool
) -> tuple[list[Answer], float]:
    if connect_in_burst:
        started = time.perf_counter()
        answers = await asyncio.gather(
            *(one_shot(port, "POST", LOOKUP, lookup_body(run_id, f"b{i}")) for i in range(size))
        )
        return list(answers), started
    requests = [encode_request("POST", LOOKUP, lookup_body(run_id, f"b{i}")) for i in range(size)]
    sent = await open_and_send(port, requests)
    print(f"{size} connections opened in {sent.connect_s:.2f} s before the burst's start")
    return sent.answers, sent.started


def histogram(answers: list[Answer]) -> str:
    counts = collections.Counter(a.label for a in answers)
    return ", ".join(f"{n} × {label}" for label, n in counts.most_common())


async def retry_shed(port: int, run_id: str, ids: list[str], clients: int = 8) -> int:
    """Send every shed id again at once, `clients` at a time: a shed call claimed nothing, so
    its retry should run as a fresh lookup and succeed."""
    pending = iter(ids)
    retried: list[Answer] = []
    started = time.perf_counter()

    async def client() -> None:
        connection = Connection(port)
        for call in pending:
            retried.append(await connection.request("POST", LOOKUP, lookup_body(run_id, call)))
        await connection.close()

    await asyncio.gather(*(client() for _ in range(clients)))
    wall = time.perf_counter() - started
    ok = sum(a.status == 200 for a in retried)
    latencies = [a.latency_s for a in retried]
    print(
        f"--shed: {len(retried)} shed ids sent again at once by {clients} clients: "
        f"{histogram(retried)}; {ok}/{len(retried)} succeeded on the first retry, "
        f"in {wall:.2f} s; latency p50 {percentile(latencies, 0.5) * 1000:.0f} ms, "
        f"p99 {percentile(latencies, 0.99) * 1000:.0f} ms"
    )
    return len(retried)


def audit_rows(database: Path) -> collections.Counter[str]:
    """Rows of the audit database by outcome ("ok" or the error code)."""
    with sqlite3.connect(database) as conn:
        rows = conn.execute(
            "SELECT COALESCE(error_code, 'ok'), COUNT(*) FROM tool_invocation GROUP BY 1"
        ).fetchall()
    return collections.Counter({code: count for code, count in rows})


async def drill(args: argparse.Namespace, svc: Service) -> int:
    """Run the parts; returns how many lookups were sent (each should leave an audit row)."""
    port = svc.port
    sent = 30
    stamp = str(int(time.time()))
    for i in range(30):  # warm-up: imports, pools, scripts
        await one_shot(port, "POST", LOOKUP, lookup_body(f"warm-{stamp}", f"w{i}"))

    best, best_workers = 0.0, args.closed_loop[0]
    for workers in args.closed_loop:
        rate, done = await measured_loop(svc, f"loop-{stamp}", workers, args.loop_seconds)
        sent += done
        if rate > best:
            best, best_workers = rate, workers
    print(f"closed-loop maximum: {best:.1f} lookups/s ({best_workers} clients)")
    if args.burst == 0:
        return sent

    ratios = []
    for round_no in range(args.rounds):
        if round_no:
            # Each later round measures the maximum again right before its burst: on a shared
            # machine the maximum moves between runs a minute apart.
            print(f"\nround {round_no + 1} of {args.rounds}")
            best, done = await measured_loop(
                svc, f"loop-{stamp}-{round_no}", best_workers, args.loop_seconds
            )
            sent += done
        ratio, done = await burst_round(args, svc, f"burst-{stamp}-{round_no}", best)
        sent += done
        if ratio is not None:
            ratios.append(ratio)
    if len(ratios) > 1:
        listed = ", ".join(f"{100 * r:.0f}%" for r in ratios)
        print(
            f"\n200s from each burst's start against the closed-loop maximum measured just "
            f"before it: {listed}; median {100 * statistics.median(ratios):.0f}%"
        )

    after = []
    for i in range(args.after):
        after.append(await one_shot(port, "POST", LOOKUP, lookup_body(f"after-{stamp}", f"a{i}")))
        if i < args.after - 1:
            await asyncio.sleep(args.after_gap_s)
    latencies = ", ".join(f"{a.latency_s * 1000:.0f}" for a in after)
    print(
        f"after the burst, {args.after} lookups {args.after_gap_s:g} s apart: "
        f"{histogram(after)}; latencies ms: {latencies}"
    )
    return sent + len(after)


async def measured_loop(
    svc: Service, run_id: str, workers: int, seconds: float
) -> tuple[float, int]:
    """One closed loop, printed with the service's CPU: (lookups/s, lookups sent)."""
    cpu = svc.cpu_seconds()
    rate, failed, done = await closed_loop(svc.port, run_id, workers, seconds)
    used = (svc.cpu_seconds() - cpu) / seconds
    print(
        f"closed loop, {workers:3d} clients: {rate:7.1f} lookups/s  ({failed} not 200), "
        f"service CPU {100 * used:.0f}% of a core"
    )
    return rate, done


async def burst_round(
    args: argparse.Namespace, svc: Service, run_id: str, best: float
) -> tuple[float | None, int]:
    """One burst, its shed ids retried and its other failures retried; prints the figures.

    Returns the 200s' rate from the burst's start as a share of `best` (None without a 200)
    and how many lookups were sent."""
    port = svc.port
    cpu = svc.cpu_seconds()
    own_cpu = time.process_time()
    answers, started = await burst(port, run_id, args.burst, connect_in_burst=args.connect_in_burst)
    sent = len(answers)
    burst_cpu = svc.cpu_seconds() - cpu
    own_cpu = time.process_time() - own_cpu
    print(f"\nburst of {args.burst}: {histogram(answers)}")
    ok = sorted(a.done_at for a in answers if a.status == 200)
    # Is the drill itself the bottleneck? When its requests were all written, and its CPU.
    sent_at = sorted(a.sent_at - started for a in answers if a.sent_at)
    if sent_at:
        half = len(sent_at) // 2
        print(
            f"the drill had written {half} requests {sent_at[half - 1]:.2f} s after the burst's "
            f"start, all {len(sent_at)} after {sent_at[-1]:.2f} s; the drill's own CPU over "
            f"the burst: {own_cpu:.2f} s"
        )
    ratio = None
    if ok:
        shed_done = sorted(a.done_at - started for a in answers if a.code == "OVERLOADED")
        print(
            f"first 200 {ok[0] - started:.2f} s after the burst's start"
            + (f"; last 503 OVERLOADED after {shed_done[-1]:.2f} s" if shed_done else "")
        )
        span = ok[-1] - started
        rate = len(ok) / span
        ratio = rate / best
        print(
            f"200s: {len(ok)} in {span:.2f} s from the burst's start = {rate:.1f} lookups/s, "
            f"{100 * ratio:.0f}% of the closed-loop maximum"
        )
        if len(ok) > 1:
            steady = (len(ok) - 1) / (ok[-1] - ok[0])
            print(
                f"     between the first and the last 200: {steady:.1f} lookups/s, "
                f"{100 * steady / best:.0f}% of the closed-loop maximum"
            )
        latencies = [a.latency_s for a in answers if a.status == 200]
        print(
            f"     latency of the 200s: p50 {percentile(latencies, 0.5) * 1000:.0f} ms, "
            f"p99 {percentile(latencies, 0.99) * 1000:.0f} ms"
        )
    shed = [a for a in answers if a.status == 503 and a.code == "OVERLOADED"]
    if shed:
        after = collections.Counter(a.headers.get("retry-after") for a in shed)
        print(f"Retry-After on OVERLOADED: {dict(after)}")
    wall = max(a.done_at for a in answers) - started
    print(f"whole burst answered in {wall:.2f} s, service CPU {burst_cpu:.2f} s")

    shed_ids = [f"b{i}" for i, a in enumerate(answers) if a.code == "OVERLOADED"]
    if args.shed and shed_ids:
        sent += await retry_shed(port, run_id, shed_ids)
    failed_ids = [
        f"b{i}"
        for i, a in enumerate(answers)
        if a.status != 200 and not (args.shed and f"b{i}" in shed_ids)
    ]
    if failed_ids:
        retried = []
        for call in failed_ids[: args.retries]:
            retried.append(await one_shot(port, "POST", LOOKUP, lookup_body(run_id, call)))
        sent += len(retried)
        print(
            f"retry at once of {len(retried)} ids that did not get 200: {histogram(retried)}; "
            f"p50 {percentile([a.latency_s for a in retried], 0.5) * 1000:.0f} ms"
        )
    return ratio, sent


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--burst", type=int, default=1000, help="0: the closed loop only")
    parser.add_argument("--pyrag-delay-ms", type=float, default=50.0)
    parser.add_argument(
        "--connect-in-burst",
        action="store_true",
        help="each burst lookup opens its connection after the clock started (the old timing)",
    )
    parser.add_argument("--closed-loop", type=int, nargs="*", default=[4, 8, 16, 32, 64])
    parser.add_argument("--loop-seconds", type=float, default=4.0)
    parser.add_argument(
        "--shed",
        action=argparse.BooleanOptionalAction,
        default=True,
        help="retry every id shed with 503 OVERLOADED right after the burst",
    )
    parser.add_argument("--retries", type=int, default=50, help="other failed ids retried")
    parser.add_argument(
        "--rounds",
        type=int,
        default=1,
        help="bursts, each after a closed loop at the best client count: the median ratio",
    )
    parser.add_argument("--after", type=int, default=10)
    parser.add_argument("--after-gap-s", type=float, default=2.0)
    parser.add_argument("--env", action="append", default=[], help="KEY=VALUE for the service")
    args = parser.parse_args()
    workdir = Path(tempfile.mkdtemp(prefix="lk-overload-"))
    with drill_stack(workdir, pyrag_delay_ms=args.pyrag_delay_ms, extra_env=args.env) as svc:
        answers = asyncio.run(drill(args, svc))
    rows = audit_rows(workdir / "audit.db")
    print(
        f"\naudit after the stop: {sum(rows.values())} rows for {answers} answers sent; "
        + ", ".join(f"{n} × {code}" for code, n in rows.most_common())
    )


if __name__ == "__main__":
    main()
