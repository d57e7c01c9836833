"""An outage of the real MariaDB while rows keep coming (docs/audit.md#durability).

The writer reaches MariaDB through a TCP proxy the test cuts (connections refused and reset, as
when the database is killed), freezes (a blackhole: the database hangs) and restores; the test
reads the database directly, past the proxy.
"""

from __future__ import annotations

import asyncio
import json
import time
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest
from sqlalchemy import Engine
from sqlalchemy.engine import URL

from audit_support import (
    TcpProxy,
    make_record,
    mariadb_database,
    reader,
    spool_depth,
    stored_ids,
    wait_until,
)
from lookup_knowledge.audit.segments import SEGMENT_GLOB
from lookup_knowledge.audit.writer import AuditWriter
from lookup_knowledge.domain.audit import AuditRecord

pytestmark = pytest.mark.mysql

OpenWriter = Callable[..., AuditWriter]


@pytest.fixture
def mariadb() -> Iterator[URL]:
    with mariadb_database() as url:
        yield url


@pytest.fixture
def db(mariadb: URL) -> Iterator[Engine]:
    with reader(mariadb) as engine:
        yield engine


@pytest.fixture
def proxy(mariadb: URL) -> Iterator[TcpProxy]:
    proxy = TcpProxy(mariadb.host or "127.0.0.1", mariadb.port or 3306)
    proxy.start()
    yield proxy
    proxy.stop()


@pytest.fixture
def writers() -> Iterator[list[AuditWriter]]:
    opened: list[AuditWriter] = []
    yield opened
    for writer in opened:
        writer.close(timeout=10)


@pytest.fixture
def open_writer(
    writers: list[AuditWriter], mariadb: URL, proxy: TcpProxy, tmp_path: Path
) -> OpenWriter:
    def open_writer(**options: float) -> AuditWriter:
        url = mariadb.set(host="127.0.0.1", port=proxy.port)
        writer = AuditWriter.open(
            url.render_as_string(hide_password=False),
            tmp_path / "spool",
            retry_initial_s=0.05,
            retry_max_s=0.3,
            **options,
        )
        writers.append(writer)
        writer.start()
        return writer

    return open_writer


def batch(first: int, count: int) -> list[AuditRecord]:
    return [make_record(n) for n in range(first, first + count)]


def ids(rows: list[AuditRecord]) -> list[str]:
    return [r.invocation_id for r in rows]


async def submit_paced(writer: AuditWriter, rows: list[AuditRecord]) -> float:
    """Submit from the event loop like the service does; the slowest submit in seconds."""
    slowest = 0.0
    for n, record in enumerate(rows):
        began = time.perf_counter()
        writer.submit(record)
        slowest = max(slowest, time.perf_counter() - began)
        if n % 10 == 9:
            await asyncio.sleep(0.005)
    return slowest


async def loop_lag_while(work: asyncio.Future[float] | asyncio.Task[float]) -> float:
    """The longest the event loop went without running a 5 ms heartbeat while `work` ran."""
    worst = 0.0
    while not work.done():
        began = time.perf_counter()
        await asyncio.sleep(0.005)
        worst = max(worst, time.perf_counter() - began - 0.005)
    return worst


async def test_rows_submitted_during_an_outage_arrive_exactly_once_in_order_afterwards(
    open_writer: OpenWriter, proxy: TcpProxy, db: Engine
) -> None:
    writer = open_writer()
    before, during, after = batch(0, 50), batch(50, 200), batch(250, 50)
    await submit_paced(writer, before)
    assert writer.flush(timeout=30)

    proxy.stop()
    work = asyncio.ensure_future(submit_paced(writer, during))
    lag = await loop_lag_while(work)
    slowest = await work
    await asyncio.to_thread(wait_until, lambda: writer.snapshot().status == "degraded")

    assert slowest < 0.05
    assert lag < 0.1
    assert writer.depth() == len(during)
    assert stored_ids(db) == ids(before)

    proxy.start()
    await submit_paced(writer, after)
    assert await asyncio.to_thread(writer.flush, 30)

    assert stored_ids(db) == ids(before + during + after)
    assert writer.snapshot().status == "up"


async def test_an_outage_spanning_a_writer_restart_loses_and_duplicates_nothing(
    open_writer: OpenWriter, proxy: TcpProxy, db: Engine, tmp_path: Path
) -> None:
    first = open_writer()
    before, down_first, down_second, after = (
        batch(0, 30),
        batch(30, 70),
        batch(100, 50),
        batch(150, 30),
    )
    await submit_paced(first, before)
    assert first.flush(timeout=30)

    proxy.stop()
    await submit_paced(first, down_first)
    first.close(timeout=10)  # the service stops during the outage
    assert spool_depth(tmp_path / "spool") == len(down_first)

    second = open_writer()
    await submit_paced(second, down_second)
    assert second.depth() == len(down_first) + len(down_second)
    assert stored_ids(db) == ids(before)

    proxy.start()
    await submit_paced(second, after)
    assert await asyncio.to_thread(second.flush, 30)

    assert stored_ids(db) == ids(before + down_first + down_second + after)


async def test_a_database_that_hangs_holds_no_row_in_memory_and_loses_none(
    open_writer: OpenWriter, proxy: TcpProxy, db: Engine, tmp_path: Path
) -> None:
    writer = open_writer(timeout_s=1, stuck_after_s=0.5)
    before, frozen, after = batch(0, 10), batch(10, 40), batch(50, 10)
    await submit_paced(writer, before)
    assert writer.flush(timeout=30)

    proxy.freeze()
    slowest = await submit_paced(writer, frozen)

    assert slowest < 0.05
    # Every row is in the spool file the moment submit returned, however long the database hangs.
    lines = [
        line
        for s in (tmp_path / "spool").glob(SEGMENT_GLOB)
        for line in s.read_bytes().splitlines()
    ]
    assert {r.invocation_id for r in frozen} <= {
        json.loads(line)["invocation_id"] for line in lines
    }
    await asyncio.to_thread(wait_until, lambda: writer.snapshot().writer_stuck)
    status = await writer.status()
    assert (status.status, status.spool_depth) == ("degraded", len(frozen))
    assert status.oldest_unwritten_age_s is not None and status.oldest_unwritten_age_s > 0.5

    proxy.thaw()
    await submit_paced(writer, after)
    assert await asyncio.to_thread(writer.flush, 30)

    assert stored_ids(db) == ids(before + frozen + after)
    assert (await writer.status()).writer_stuck is False
