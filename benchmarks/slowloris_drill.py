"""Drill: 1000 idle, slowloris and stalled-body connections against a real service.

    python benchmarks/slowloris_drill.py                  # 1000 bad connections, 40 s at most
    python benchmarks/slowloris_drill.py --bad 1000 --hold-s 40 --env HTTP_HEADER_TIMEOUT_S=5

Starts a private redis-server, a fake py-rag and `lookup-knowledge serve`, then:

1. normal traffic alone: lookups at --rate per second for --phase-s seconds (p50, p99);
2. opens --bad connections at once, a third of each kind, and from 1 s later (once they are
   all open) sends normal traffic again for --phase-s seconds, while they are held:
   - idle: connects and sends nothing;
   - slowloris: sends a request line, then one header byte per second, forever;
   - stalled body: sends a complete head announcing 1000 bytes of body, then 10 bytes;
   and records when the service closed each one (or that it was still open at --hold-s);
3. normal traffic again once they are gone.

Prints, per kind, how many were closed and when (p50, max), and the normal traffic's p50/p99
in each phase. Nothing is asserted.
"""

from __future__ import annotations

import argparse
import asyncio
import collections
import tempfile
import time
from pathlib import Path

from drill_support import (
    Answer,
    Service,
    drill_stack,
    lookup_body,
    one_shot,
    percentile,
)

KINDS = ("idle", "slowloris", "stalled body")


async def normal_traffic(port: int, run_id: str, rate: float, seconds: float) -> list[Answer]:
    """Open-loop lookups at `rate` per second, each on its own connection."""
    calls = []
    started = time.perf_counter()
    i = 0
    while time.perf_counter() - started < seconds:
        calls.append(
            asyncio.ensure_future(
                one_shot(port, "POST", "/lookup_knowledge", lookup_body(run_id, f"n{i}"))
            )
        )
        i += 1
        await asyncio.sleep(max(0.0, started + i / rate - time.perf_counter()))
    return list(await asyncio.gather(*calls))


async def bad_connection(port: int, kind: str, hold_s: float) -> float | None:
    """Seconds until the service closed the connection; None if still open after `hold_s`."""
    try:
        reader, writer = await asyncio.open_connection("127.0.0.1", port)
    except OSError:
        return 0.0  # refused at once
    opened = time.perf_counter()
    if kind == "slowloris":
        writer.write(b"GET /healthz HTTP/1.1\r\nHost: drill\r\n")
    elif kind == "stalled body":
        writer.write(
            b"POST /lookup_knowledge HTTP/1.1\r\nHost: drill\r\n"
            b'Content-Type: application/json\r\nContent-Length: 1000\r\n\r\n{"run_id":'
        )

    async def trickle() -> None:
        while kind == "slowloris":
            await asyncio.sleep(1.0)
            writer.write(b"X")
            await writer.drain()

    dripping = asyncio.ensure_future(trickle())
    try:
        async with asyncio.timeout(hold_s):
            while await reader.read(65536):
                pass  # a 408 may come first; the close is what counts
        return time.perf_counter() - opened
    except TimeoutError:
        return None
    except OSError:
        return time.perf_counter() - opened
    finally:
        dripping.cancel()
        writer.close()


def latency(answers: list[Answer]) -> str:
    ok = [a.latency_s for a in answers if a.status == 200]
    statuses = collections.Counter(a.label for a in answers)
    return (
        f"{len(answers)} lookups {dict(statuses)}, "
        f"p50 {percentile(ok, 0.5) * 1000:.0f} ms, p99 {percentile(ok, 0.99) * 1000:.0f} ms"
    )


async def drill(args: argparse.Namespace, svc: Service) -> None:
    port = svc.port
    stamp = str(int(time.time()))
    await normal_traffic(port, f"warm-{stamp}", args.rate, 2)
    before = await normal_traffic(port, f"before-{stamp}", args.rate, args.phase_s)
    print(f"normal traffic alone:          {latency(before)}")

    kinds = [KINDS[i % 3] for i in range(args.bad)]
    started = time.perf_counter()
    bad = asyncio.gather(*(bad_connection(port, kind, args.hold_s) for kind in kinds))
    await asyncio.sleep(1.0)  # let them all connect: opening 1000 at once has its own cost
    during = await normal_traffic(port, f"during-{stamp}", args.rate, args.phase_s)
    closed = await bad
    print(f"normal traffic among {args.bad} bad: {latency(during)}")
    for kind in KINDS:
        times = [t for k, t in zip(kinds, closed, strict=True) if k == kind and t is not None]
        still = sum(1 for k, t in zip(kinds, closed, strict=True) if k == kind and t is None)
        last = max(times, default=float("nan"))
        print(
            f"  {kind:<13} {len(times):4d} closed by the service "
            f"(p50 {percentile(times, 0.5):5.1f} s, max {last:5.1f} s), "
            f"{still} still open after {args.hold_s:g} s"
        )
    print(f"  all bad connections done {time.perf_counter() - started:.1f} s after they opened")
    after = await normal_traffic(port, f"after-{stamp}", args.rate, args.phase_s)
    print(f"normal traffic afterwards:     {latency(after)}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--bad", type=int, default=1000)
    parser.add_argument("--hold-s", type=float, default=40.0)
    parser.add_argument("--rate", type=float, default=20.0, help="normal lookups per second")
    parser.add_argument("--phase-s", type=float, default=3.5)
    parser.add_argument("--pyrag-delay-ms", type=float, default=50.0)
    parser.add_argument("--env", action="append", default=[], help="KEY=VALUE for the service")
    args = parser.parse_args()
    workdir = Path(tempfile.mkdtemp(prefix="lk-slowloris-"))
    with drill_stack(workdir, pyrag_delay_ms=args.pyrag_delay_ms, extra_env=args.env) as svc:
        asyncio.run(drill(args, svc))


if __name__ == "__main__":
    main()
