"""/readyz and /metrics tell the truth about the audit trail, with the real writer
(docs/audit.md#readiness-and-metrics)."""

from __future__ import annotations

import errno
from collections.abc import AsyncIterator, Callable, Iterator
from contextlib import AbstractAsyncContextManager, asynccontextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import httpx
import pytest
import respx
from sqlalchemy import text

from audit_support import UNREACHABLE_MYSQL_URL, TcpProxy, mariadb_database, reader, wait_until
from builders import pyrag_body, raw_hit
from lookup_knowledge.app import create_app
from lookup_knowledge.audit import schema
from lookup_knowledge.audit.writer import AuditWriter
from support import PYRAG_SEARCH_URL, PYRAG_TEST_URL, make_settings


@dataclass
class Service:
    client: httpx.AsyncClient
    writer: AuditWriter


@pytest.fixture
def service(tmp_path: Path) -> Callable[..., AbstractAsyncContextManager[Service]]:
    """The app with its real audit writer (lifespan run), and that writer."""

    @asynccontextmanager
    async def open_service(**overrides: Any) -> AsyncIterator[Service]:
        app = create_app(make_settings(tmp_path, **overrides))
        async with app.router.lifespan_context(app):
            transport = httpx.ASGITransport(app=app)
            async with httpx.AsyncClient(transport=transport, base_url="http://lk.test") as client:
                yield Service(client, app.state.resources.audit)

    return open_service


OpenService = Callable[..., AbstractAsyncContextManager[Service]]


def metric(body: str, name: str) -> float:
    [value] = [line.rpartition(" ")[2] for line in body.splitlines() if line.startswith(name + " ")]
    return float(value)


async def lookups(client: httpx.AsyncClient, *queries: str) -> list[int]:
    statuses = []
    for n, query in enumerate(queries):
        response = await client.post(
            "/lookup_knowledge", json={"run_id": "run-r", "tool_call_id": f"c{n}", "query": query}
        )
        statuses.append(response.status_code)
    return statuses


async def audit_check(client: httpx.AsyncClient) -> tuple[int, dict[str, Any]]:
    response = await client.get("/readyz")
    return response.status_code, response.json()["checks"]["audit"]


@pytest.fixture
def pyrag() -> Iterator[respx.MockRouter]:
    with respx.mock(assert_all_called=False) as mock:
        mock.post(PYRAG_SEARCH_URL).respond(200, json=pyrag_body([raw_hit("a#chunk-0", 0.9)]))
        mock.get(f"{PYRAG_TEST_URL}/api/v1/health").respond(200, json={"status": "ok"})
        yield mock


async def test_a_working_audit_is_up_with_its_figures_and_counts_its_rows(
    service: OpenService, pyrag: respx.MockRouter
) -> None:
    async with service() as running:
        client = running.client
        assert await lookups(client, "a", "b", "c") == [200, 200, 200]
        assert running.writer.flush(timeout=20)
        status, audit = await audit_check(client)
        body = (await client.get("/metrics")).text

    assert status == 200
    assert audit["status"] == "up" and audit["backend"] == "sqlite"
    assert (audit["spool_depth"], audit["quarantine_size"], audit["writer_stuck"]) == (0, 0, False)
    assert audit["oldest_unwritten_age_s"] is None
    assert metric(body, "lk_audit_rows_written_total") == 3
    assert 1 <= metric(body, "lk_audit_commits_total") <= 3
    assert metric(body, "lk_audit_spool_depth") == 0
    assert metric(body, "lk_audit_writer_stuck") == 0


async def test_an_audit_database_never_reached_makes_the_service_not_ready_with_the_reason(
    service: OpenService, pyrag: respx.MockRouter
) -> None:
    async with service(audit_database_url=UNREACHABLE_MYSQL_URL) as running:
        statuses = await lookups(running.client, "a")
        status, audit = await audit_check(running.client)

    assert statuses == [200]  # lookups still answer; their rows wait in the spool
    assert status == 503
    assert audit["status"] == "down"
    assert "not reached since start" in audit["error"] and "Can't connect" in audit["error"]
    assert audit["spool_depth"] == 1


@pytest.mark.mysql
async def test_a_database_lost_after_start_is_degraded_but_ready_with_depth_and_age(
    service: OpenService, pyrag: respx.MockRouter
) -> None:
    with mariadb_database() as url:
        proxy = TcpProxy(url.host or "127.0.0.1", url.port or 3306)
        proxy.start()
        via = url.set(port=proxy.port).render_as_string(hide_password=False)
        try:
            async with service(audit_database_url=via, audit_writer_stuck_s=0.2) as running:
                client = running.client
                assert (await audit_check(client))[1]["status"] == "up"
                proxy.stop()
                assert await lookups(client, "a", "b") == [200, 200]
                wait_until(lambda: running.writer.snapshot().writer_stuck)
                wait_until(lambda: "Can't connect" in (running.writer.snapshot().error or ""))
                status, audit = await audit_check(client)
                body = (await client.get("/metrics")).text
        finally:
            proxy.stop()

    assert status == 200
    assert audit["status"] == "degraded" and "Can't connect" in audit["error"]
    assert (audit["spool_depth"], audit["writer_stuck"]) == (2, True)
    assert audit["oldest_unwritten_age_s"] > 0
    assert metric(body, "lk_audit_spool_depth") == 2
    assert metric(body, "lk_audit_oldest_unwritten_age_seconds") > 0
    assert metric(body, "lk_audit_writer_stuck") == 1


@pytest.mark.mysql
async def test_a_database_that_does_not_exist_is_misconfigured_and_not_ready(
    service: OpenService, pyrag: respx.MockRouter
) -> None:
    url = "mysql+pymysql://root@127.0.0.1:3306/lk_test_audit_no_such_database"
    async with service(audit_database_url=url) as running:
        status, audit = await audit_check(running.client)
    assert status == 503
    assert audit["status"] == "down"
    assert audit["error"].startswith("misconfigured: ") and "Unknown database" in audit["error"]


async def test_a_refused_row_is_counted_in_readyz_and_metrics(
    service: OpenService, pyrag: respx.MockRouter, tmp_path: Path
) -> None:
    url = f"sqlite:///{tmp_path}/audit.db"
    with reader(url) as engine:
        schema.ensure_schema(engine)
        with engine.begin() as conn:
            conn.execute(
                text(
                    "CREATE TRIGGER refuse_poison BEFORE INSERT ON tool_invocation "
                    "WHEN NEW.query = 'poison' BEGIN SELECT RAISE(ABORT, 'poison row'); END"
                )
            )
    async with service(audit_database_url=url) as running:
        client = running.client
        assert await lookups(client, "fine", "poison", "fine too") == [200, 200, 200]
        assert running.writer.flush(timeout=20)
        status, audit = await audit_check(client)
        body = (await client.get("/metrics")).text

    assert (status, audit["status"], audit["quarantine_size"]) == (200, "up", 1)
    assert metric(body, "lk_audit_quarantine_rows") == 1
    assert metric(body, "lk_audit_rows_quarantined_total") == 1
    assert metric(body, "lk_audit_rows_written_total") == 2


async def test_a_spool_that_cannot_be_written_is_down_yet_lookups_answer_and_rows_arrive(
    service: OpenService, pyrag: respx.MockRouter, monkeypatch: pytest.MonkeyPatch
) -> None:
    def disk_full(fd: int, data: bytes) -> None:
        raise OSError(errno.ENOSPC, "No space left on device")

    async with service() as running:
        monkeypatch.setattr("lookup_knowledge.audit.spool.write_all", disk_full)
        statuses = await lookups(running.client, "a", "b")
        writer = running.writer
        assert writer.flush(timeout=20)
        status, audit = await audit_check(running.client)

    assert statuses == [200, 200]
    assert status == 503
    assert audit["status"] == "down" and "spool not writable" in audit["error"]
    assert writer.snapshot().rows_written == 2  # straight to the database, held in memory
