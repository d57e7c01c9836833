"""How late the event loop runs while the audit writer's thread builds a batch statement.

    python benchmarks/writer_gil_bench.py [--rows 80] [--seconds 6]

A thread builds the MySQL statement of a batch of `--rows` audit rows (the bench's lookup of
cpu_bench.py, `record_to_row` and the literal insert), again every 50 ms, as the writer does
under load; the event loop meanwhile wakes every millisecond and does a little work. Printed:
how late the loop's wake-ups were (p50, p99, max), with the writer's loops let go of the GIL
every slice (audit/gil.py) and with no slicing, alternating, each twice. Pin it to one core
(`taskset -c 1`) so that the two threads share one, as in the service. Nothing is asserted
(docs/performance.md#half-load-p99).
"""

from __future__ import annotations

import argparse
import asyncio
import threading
import time

from sqlalchemy.dialects import mysql

from lookup_knowledge.audit import gil, sql
from lookup_knowledge.audit.row import AuditDraft
from lookup_knowledge.audit.schema import tool_invocation
from lookup_knowledge.domain.audit import AuditRecord


def bench_record() -> AuditRecord:
    from cpu_bench import QUERY, upstream_body

    from lookup_knowledge.adapters.pyrag import parse_search_body
    from lookup_knowledge.pipeline.run import run_pipeline
    from lookup_knowledge.settings import Settings

    settings = Settings(_env_file=None)  # type: ignore[call-arg]
    outcome = parse_search_body(upstream_body())
    output = run_pipeline(
        QUERY,
        outcome,
        tool_call_id="call-1",
        limits=settings.pipeline_limits,
        projection_limits=settings.projection_limits,
    )
    draft = AuditDraft(run_id="run-1", tool_call_id="call-1", query=QUERY, step_id=None)
    draft.succeeded(
        outcome=outcome,
        lookup=output.lookup,
        result=output.projection.result,
        projection=output.projection.summary,
        body=output.projection.body,
    )
    return draft.finish()


def lateness(records: list[AuditRecord], seconds: float, slice_s: float) -> list[float]:
    dialect = mysql.dialect()
    stop = threading.Event()

    def batch() -> None:
        rows = [sql.record_to_row(r) for r in gil.in_slices(records)]
        insert = sql._literal_insert(dialect, tool_invocation, tuple(rows[0]))
        assert insert is not None
        for _ in insert.statements(rows):
            pass

    def writer() -> None:
        while not stop.is_set():
            batch()
            time.sleep(0.05)

    async def loop() -> list[float]:
        late: list[float] = []
        end = time.perf_counter() + seconds
        while time.perf_counter() < end:
            due = time.perf_counter() + 0.001
            await asyncio.sleep(0.001)
            sum(range(2000))  # a little of a lookup's Python
            late.append(time.perf_counter() - due)
        return late

    saved = gil.SLICE_S
    gil.SLICE_S = slice_s  # every loop of the writer, the statement's too
    thread = threading.Thread(target=writer, daemon=True)
    thread.start()
    try:
        return sorted(asyncio.run(loop()))
    finally:
        stop.set()
        thread.join()
        gil.SLICE_S = saved


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rows", type=int, default=80)
    parser.add_argument("--seconds", type=float, default=6.0)
    args = parser.parse_args()
    records = [bench_record()] * args.rows
    print(f"loop wake-ups every 1 ms while a thread builds {args.rows}-row batches every 50 ms")
    for slice_s in (gil.SLICE_S, float("inf")) * 2:
        late = lateness(records, args.seconds, slice_s)
        name = "no slicing" if slice_s == float("inf") else f"slices of {slice_s * 1000:g} ms"
        print(
            f"  {name:<20} lateness p50 {late[len(late) // 2] * 1000:5.2f} ms"
            f"   p99 {late[int(len(late) * 0.99)] * 1000:5.2f} ms   max {late[-1] * 1000:5.2f} ms"
        )


if __name__ == "__main__":
    main()
