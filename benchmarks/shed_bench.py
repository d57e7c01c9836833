"""CPU of one lookup shed by admission control, through the app's whole ASGI stack.

    python benchmarks/shed_bench.py [--sheds 2000] [--batches 5] [--token] [--log-level INFO]

Builds the served app in this process (embedded defaults, the SQLite audit and its spool in a
temporary directory, no Redis), runs its lifespan, holds the only lookup slot
(`MAX_CONCURRENT_LOOKUPS=1`, `LOOKUP_QUEUE_MAX=0`) and sends `--sheds` lookups straight to
the ASGI app, each answered 503 OVERLOADED with its audit row appended to the spool: what
the event loop pays per shed, without the HTTP parsing of the server in front
(docs/performance.md#overload). CPU is the process's (all threads: the spool's syncer and the
audit writer inserting the rows count too); each figure is the lowest of `--batches` batches.
At the end every shed row is counted in the audit database.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import logging
import sqlite3
import tempfile
import time
from pathlib import Path
from typing import Any

from lookup_knowledge.api.admission import AdmissionMiddleware
from lookup_knowledge.app import create_app
from lookup_knowledge.observability.logs import configure_logging
from lookup_knowledge.settings import Settings

TOKEN = "bench-lookup-token-0123456789"


def find_gate(app: Any) -> AdmissionMiddleware:
    layer = app.middleware_stack
    while not isinstance(layer, AdmissionMiddleware):
        layer = layer.app
    return layer


async def shed_batch(
    app: Any, count: int, batch: int, *, token: bool
) -> tuple[float, float, float]:
    """Wall, event-loop thread CPU and process CPU seconds of `count` sheds, one by one."""
    headers = [(b"host", b"bench"), (b"content-type", b"application/json")]
    if token:
        headers.append((b"authorization", f"Bearer {TOKEN}".encode()))
    statuses: list[int] = []

    async def send(message: dict[str, Any]) -> None:
        if message["type"] == "http.response.start":
            statuses.append(message["status"])

    wall, loop, cpu = time.perf_counter(), time.thread_time(), time.process_time()
    for i in range(count):
        body = json.dumps(
            {"run_id": f"shed-{batch}", "tool_call_id": f"c{i}", "query": "网关超时怎么排查"}
        ).encode()
        scope = {
            "type": "http",
            "asgi": {"version": "3.0"},
            "http_version": "1.1",
            "method": "POST",
            "scheme": "http",
            "path": "/lookup_knowledge",
            "raw_path": b"/lookup_knowledge",
            "query_string": b"",
            "root_path": "",
            "headers": [*headers, (b"content-length", str(len(body)).encode())],
            "client": ("127.0.0.1", 40000 + i % 20000),
            "server": ("127.0.0.1", 8080),
            "state": {},
        }
        sent = [{"type": "http.request", "body": body, "more_body": False}]

        async def receive(sent: list[dict[str, Any]] = sent) -> dict[str, Any]:
            return sent.pop() if sent else {"type": "http.disconnect"}

        await app(scope, receive, send)
    wall, loop = time.perf_counter() - wall, time.thread_time() - loop
    cpu = time.process_time() - cpu
    if set(statuses) != {503}:
        raise SystemExit(f"expected only 503s, got {sorted(set(statuses))}")
    return wall, loop, cpu


async def bench(args: argparse.Namespace, workdir: Path) -> None:
    settings = Settings(
        _env_file=None,  # type: ignore[call-arg]
        audit_database_url=f"sqlite:///{workdir}/audit.db",
        audit_spool_dir=workdir / "spool",
        max_concurrent_lookups=1,
        lookup_queue_max=0,
        lookup_api_tokens=TOKEN if args.token else None,
        log_level=args.log_level,
    )
    configure_logging(settings.log_level, settings.log_format)
    app = create_app(settings, freeze_heap=True)
    async with app.router.lifespan_context(app):
        app.middleware_stack = app.build_middleware_stack()
        gate = find_gate(app).gate
        await gate.acquire()  # the only slot: every lookup below is shed
        await shed_batch(app, 200, -1, token=args.token)  # warm-up
        best = [float("inf")] * 3
        for batch in range(args.batches):
            figures = await shed_batch(app, args.sheds, batch, token=args.token)
            best = [min(b, f) for b, f in zip(best, figures, strict=True)]
            print(f"batch {batch}: {args.sheds} sheds, " + per_shed(figures, args.sheds))
        gate.release()
    logging.shutdown()
    with sqlite3.connect(workdir / "audit.db") as conn:
        (rows,) = conn.execute(
            "SELECT COUNT(*) FROM tool_invocation WHERE error_code = 'OVERLOADED'"
        ).fetchone()
    sent = args.sheds * args.batches + 200
    print(
        f"lowest of {args.batches}: {per_shed(best, args.sheds)}; "
        f"audit rows OVERLOADED: {rows} of {sent} expected"
    )


def per_shed(figures: list[float] | tuple[float, ...], count: int) -> str:
    wall, loop, cpu = (seconds / count * 1e6 for seconds in figures)
    return f"{wall:.0f} µs wall, {loop:.0f} µs event-loop CPU, {cpu:.0f} µs process CPU per shed"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sheds", type=int, default=2000)
    parser.add_argument("--batches", type=int, default=5)
    parser.add_argument(
        "--token",
        action=argparse.BooleanOptionalAction,
        default=True,
        help="LOOKUP_API_TOKENS set and sent (else the lookup role is open)",
    )
    parser.add_argument("--log-level", default="WARNING")
    args = parser.parse_args()
    asyncio.run(bench(args, Path(tempfile.mkdtemp(prefix="lk-shed-"))))


if __name__ == "__main__":
    main()
