"""Shared fixtures: an app over ASGITransport with its lifespan run, and a recording audit."""

from __future__ import annotations

from collections.abc import AsyncIterator, Callable
from contextlib import AbstractAsyncContextManager, asynccontextmanager
from pathlib import Path
from typing import Any

import httpx
import pytest

from lookup_knowledge.app import create_app
from lookup_knowledge.domain.audit import AuditRecord
from lookup_knowledge.domain.ports import AuditPort, LedgerPort
from lookup_knowledge.settings import Settings

PYRAG_TEST_URL = "http://pyrag.test"
PYRAG_SEARCH_URL = f"{PYRAG_TEST_URL}/api/v1/search"


class RecordingAudit:
    """Audit port that keeps rows in a list, for asserting what the service submits."""

    def __init__(self) -> None:
        self.records: list[AuditRecord] = []

    def submit(self, record: AuditRecord) -> None:
        self.records.append(record)

    def spool_depth(self) -> int:
        return 0

    async def ping(self) -> None:
        return None


def make_settings(tmp_path: Path, **overrides: Any) -> Settings:
    values: dict[str, Any] = {
        "pyrag_base_url": PYRAG_TEST_URL,
        "audit_database_url": f"sqlite:///{tmp_path}/audit.db",
        "audit_spool_dir": tmp_path / "spool",
    }
    values.update(overrides)
    return Settings(_env_file=None, **values)  # type: ignore[call-arg]


OpenClient = Callable[..., AbstractAsyncContextManager[httpx.AsyncClient]]


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
