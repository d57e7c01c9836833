"""Scaling out: replicas share nothing but Redis and MySQL, so any replica serves any call."""

from __future__ import annotations

import concurrent.futures
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest
import redis
from sqlalchemy import text

from audit_support import mariadb_database, reader
from process import free_port, running_service
from stub_pyrag import StubPyrag

pytestmark = [pytest.mark.process, pytest.mark.redis, pytest.mark.mysql]


@pytest.fixture
def shared_stores(redis_url: str) -> Iterator[dict[str, str]]:
    """The session's private Redis (flushed) and a uniquely named MariaDB database."""
    with redis.Redis.from_url(redis_url) as r, mariadb_database() as database:
        r.flushdb()
        yield {
            "REDIS_URL": redis_url,
            "AUDIT_DATABASE_URL": database.render_as_string(hide_password=False),
        }
        r.flushdb()


@pytest.fixture
def stub_pyrag() -> Iterator[StubPyrag]:
    server = StubPyrag.start(delay_s=0.3)
    yield server
    server.shutdown()


def test_two_replicas_share_the_ledger_and_the_audit_table(
    tmp_path: Path, shared_stores: dict[str, str], stub_pyrag: StubPyrag
) -> None:
    ports = [free_port(), free_port()]
    base_env = {**shared_stores, "PYRAG_BASE_URL": stub_pyrag.url}
    (tmp_path / "a").mkdir()
    (tmp_path / "b").mkdir()
    with (
        running_service(
            ["serve"], cwd=tmp_path / "a", env={**base_env, "PORT": str(ports[0])}, port=ports[0]
        ) as a,
        running_service(
            ["serve"], cwd=tmp_path / "b", env={**base_env, "PORT": str(ports[1])}, port=ports[1]
        ) as b,
    ):
        body = {"run_id": "run-scale", "tool_call_id": "call-1", "query": "网关超时怎么排查"}
        first = httpx.post(f"{a}/lookup_knowledge", json=body, timeout=30)
        replay = httpx.post(f"{b}/lookup_knowledge", json=body, timeout=30)
        entry = httpx.get(f"{b}/ledger/run-scale/call-1", timeout=30)

        # the same new ids sent to both replicas at once: exactly one lookup wins
        race = {"run_id": "run-scale", "tool_call_id": "call-race", "query": "redis"}
        with concurrent.futures.ThreadPoolExecutor(8) as pool:
            answers = list(
                pool.map(
                    lambda i: httpx.post(
                        f"{(a, b)[i % 2]}/lookup_knowledge", json=race, timeout=30
                    ),
                    range(8),
                )
            )
    assert first.status_code == 200 and replay.status_code == 200
    assert replay.content == first.content
    assert replay.headers.get("x-ledger-replayed") == "true"
    assert entry.status_code == 200 and entry.json()["result"] == first.json()
    statuses = sorted(r.status_code for r in answers)
    assert statuses.count(409) >= 1 and set(statuses) <= {200, 409}
    winners = {r.content for r in answers if r.status_code == 200}
    assert len(winners) == 1
    assert stub_pyrag.calls == 2  # call-1 once, call-race once

    with reader(shared_stores["AUDIT_DATABASE_URL"]) as db, db.connect() as conn:
        rows = conn.execute(
            text(
                "SELECT tool_call_id, replayed, success, error_code FROM tool_invocation "
                "WHERE run_id = 'run-scale' ORDER BY id"
            )
        ).all()
    assert len(rows) == 2 + 8  # every call of both replicas, replays and conflicts included
    assert sum(1 for r in rows if r[1]) >= 1


def test_several_workers_serve_with_redis_and_aggregate_metrics(
    tmp_path: Path, shared_stores: dict[str, str], stub_pyrag: StubPyrag
) -> None:
    port = free_port()
    env = {**shared_stores, "PORT": str(port), "WORKERS": "2", "PYRAG_BASE_URL": stub_pyrag.url}
    with running_service(["serve"], cwd=tmp_path, env=env, port=port) as base:
        for i in range(6):
            response = httpx.post(
                f"{base}/lookup_knowledge",
                timeout=30,
                json={"run_id": "run-w", "tool_call_id": f"call-{i}", "query": "gateway timeout"},
            )
            assert response.status_code == 200
        metrics = httpx.get(f"{base}/metrics", timeout=30).text
    total = sum(
        float(line.rpartition(" ")[2])
        for line in metrics.splitlines()
        if line.startswith("lk_lookups_total{")
    )
    assert total == 6  # aggregated across both worker processes
