"""Test support shared across folders: py-rag test URLs, a recording audit, settings."""

from __future__ import annotations

from collections.abc import Callable
from contextlib import AbstractAsyncContextManager
from pathlib import Path
from typing import Any

import httpx

from lookup_knowledge.domain.audit import AuditRecord, AuditRow, AuditStatus
from lookup_knowledge.domain.guard import GuardOutcome
from lookup_knowledge.settings import Settings

PYRAG_TEST_URL = "http://pyrag.test"
PYRAG_SEARCH_URL = f"{PYRAG_TEST_URL}/api/v1/search"


class RecordingAudit:
    """Audit port that keeps rows in a list, for asserting what the service submits."""

    def __init__(self) -> None:
        self.records: list[AuditRecord] = []  # lookup calls
        self.verifications: list[GuardOutcome] = []  # report verifications

    def submit(self, record: AuditRow) -> None:
        if isinstance(record, GuardOutcome):
            self.verifications.append(record)
        else:
            self.records.append(record)

    async def status(self) -> AuditStatus:
        return AuditStatus(status="up", backend="memory")


def make_settings(tmp_path: Path, **overrides: Any) -> Settings:
    values: dict[str, Any] = {
        "pyrag_base_url": PYRAG_TEST_URL,
        # respx mocks py-rag inside httpx's own transport.
        "pyrag_http_transport": "httpx",
        # Local state (the embedded engine's stored index too) stays in the test's folder.
        "data_dir": tmp_path,
        "audit_database_url": f"sqlite:///{tmp_path}/audit.db",
        "audit_spool_dir": tmp_path / "spool",
    }
    values.update(overrides)
    return Settings(_env_file=None, **values)  # type: ignore[call-arg]


# `open_client(**overrides)` from the `open_client` fixture: an app client with lifespan run.
OpenClient = Callable[..., AbstractAsyncContextManager[httpx.AsyncClient]]
