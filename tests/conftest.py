"""Shared fixtures: an app over ASGITransport with its lifespan run, and a recording audit."""

from __future__ import annotations

from collections.abc import AsyncIterator, Iterator
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

import httpx
import pytest

from lookup_knowledge.app import create_app
from lookup_knowledge.domain.ports import AuditPort, LedgerPort
from redis_servers import redis_cluster, redis_server
from support import OpenClient, RecordingAudit, make_settings


@pytest.fixture
def open_client(tmp_path: Path) -> OpenClient:
    """`async with open_client(audit=..., **settings) as client:`, lifespan included."""

    @asynccontextmanager
    async def _open(
        *, audit: AuditPort | None = None, ledger: LedgerPort | None = None, **overrides: Any
    ) -> AsyncIterator[httpx.AsyncClient]:
        app = create_app(make_settings(tmp_path, **overrides), ledger=ledger, audit=audit)
        async with app.router.lifespan_context(app):
            transport = httpx.ASGITransport(app=app)
            async with httpx.AsyncClient(transport=transport, base_url="http://lk.test") as client:
                yield client

    return _open


@pytest.fixture
def audit() -> RecordingAudit:
    return RecordingAudit()


@pytest.fixture(scope="session")
def redis_cluster_url(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    """A three-node Redis Cluster on free local ports for the whole session."""
    with redis_cluster(tmp_path_factory.mktemp("redis-cluster")) as url:
        yield url


@pytest.fixture(scope="session")
def redis_url(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    """A private redis-server on a free local port for the whole session (never the machine's)."""
    with redis_server(tmp_path_factory.mktemp("redis")) as url:
        yield url
