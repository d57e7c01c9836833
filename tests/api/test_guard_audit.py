"""Every POST /guard/verify leaves one `guard_verification` row, on the real MariaDB.

See docs/audit.md#guard-verifications: judged reports, reports stopped by the ledger, and
requests refused as not a report each leave a row; requests refused before the body is read
(auth, size, bad JSON) leave none, as for lookups. Metrics count the same outcomes.
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

import httpx
import pytest
import respx

from audit_support import mariadb_database, reader
from builders import pyrag_body, raw_hit
from guard_support import cite, excerpt, report
from lookup_knowledge.adapters.ledger_memory import MemoryLedger
from lookup_knowledge.app import create_app
from lookup_knowledge.audit import schema
from lookup_knowledge.audit.writer import AuditWriter
from lookup_knowledge.domain.errors import LedgerUnavailable
from support import PYRAG_SEARCH_URL, make_settings

pytestmark = pytest.mark.mysql

RUN = "run-g1"
LEDGER_TOKEN = "guard-secret-1"


class BrokenReadLedger(MemoryLedger):
    """A ledger whose batch read fails, as when Redis is away."""

    async def get_many(self, run_id: str, tool_call_ids: Any) -> Any:
        raise LedgerUnavailable("the ledger cannot be read")


@asynccontextmanager
async def served(tmp_path: Path, url: str, ledger: MemoryLedger) -> AsyncIterator[Any]:
    settings = make_settings(tmp_path, audit_database_url=url, ledger_api_tokens=LEDGER_TOKEN)
    app = create_app(settings, ledger=ledger)
    async with app.router.lifespan_context(app), respx.mock(assert_all_called=False) as mock:
        mock.post(PYRAG_SEARCH_URL).respond(
            200, json=pyrag_body([raw_hit("d1#chunk-1", 0.9), raw_hit("d2#chunk-1", 0.8)])
        )
        transport = httpx.ASGITransport(app=app)
        headers = {"Authorization": f"Bearer {LEDGER_TOKEN}"}
        async with httpx.AsyncClient(
            transport=transport, base_url="http://lk.test", headers=headers
        ) as client:
            yield app, client


def flush(app: Any) -> None:
    writer = app.state.resources.audit
    assert isinstance(writer, AuditWriter)
    assert writer.flush(timeout=30)


def guard_rows(url: str) -> list[dict[str, Any]]:
    with reader(url) as db, db.connect() as conn:
        query = schema.guard_verification.select().order_by(schema.guard_verification.c.id)
        return [dict(row._mapping) for row in conn.execute(query)]


def lookup_rows(url: str) -> list[dict[str, Any]]:
    with reader(url) as db, db.connect() as conn:
        query = schema.tool_invocation.select().order_by(schema.tool_invocation.c.id)
        return [dict(row._mapping) for row in conn.execute(query)]


async def test_each_verification_leaves_one_row_with_its_outcome(tmp_path: Path) -> None:
    with mariadb_database() as db_url:
        url = db_url.render_as_string(hide_password=False)
        async with served(tmp_path, url, MemoryLedger(ttl_s=3600, pending_ttl_s=30)) as (
            app,
            client,
        ):
            body = {"run_id": RUN, "tool_call_id": "call_1", "query": "q1"}
            assert (await client.post("/lookup_knowledge", json=body)).status_code == 200
            good = report(cite("call_1", "d1#chunk-1", quote=excerpt("d1#chunk-1")))
            bad = report(
                cite("call_1", "d9#chunk-1"),
                cite("call_1", "d1#chunk-1", quote="not in it"),
                cite("call_404", "d1#chunk-1"),
            )
            answers = [
                await client.post("/guard/verify", json={"run_id": RUN, "report": good}),
                await client.post("/guard/verify", json={"run_id": RUN, "report": bad}),
                # not a report: refused with 422, and still one row naming the run
                await client.post("/guard/verify", json={"run_id": RUN, "report": {}}),
                # refused before the body is judged: no row (as for a lookup)
                await client.post(
                    "/guard/verify",
                    content=b"{not json",
                    headers={"content-type": "application/json"},
                ),
                await client.post(
                    "/guard/verify",
                    json={"run_id": RUN, "report": good},
                    headers={"Authorization": "Bearer wrong"},
                ),
            ]
            metrics = (await client.get("/metrics")).text
            flush(app)
        rows = guard_rows(url)
        calls = lookup_rows(url)

    assert [a.status_code for a in answers] == [200, 200, 422, 400, 401]
    assert answers[1].json()["ok"] is False
    assert [r["outcome"] for r in rows] == ["ok", "violations", "INVALID_REQUEST"]
    assert [r["ok"] for r in rows] == [True, False, False]
    assert {r["run_id"] for r in rows} == {RUN}
    ok, violations, refused = rows
    assert (ok["violation_count"], ok["citation_count"], ok["snapshot_count"]) == (0, 1, 1)
    assert (ok["tool_call_count"], ok["ledger_entry_count"]) == (1, 1)
    assert violations["violation_count"] == len(answers[1].json()["violations"]) == 3
    assert violations["violation_codes"] == "DOCUMENT_NOT_IN_RESULT,NOT_FOUND,QUOTE_NOT_IN_EXCERPT"
    assert [v["path"] for v in violations["violations"]] == [
        v["path"] for v in answers[1].json()["violations"]
    ]
    assert (violations["citation_count"], violations["tool_call_count"]) == (3, 2)
    # the misquoted citation still names a shown document: its item is in the snapshot
    assert (violations["ledger_entry_count"], violations["snapshot_count"]) == (1, 1)
    assert len(ok["report_sha256"]) == 64 and ok["report_sha256"] != violations["report_sha256"]
    assert all(r["duration_ms"] >= 0 for r in rows)
    assert (refused["error_code"], refused["citation_count"]) == ("INVALID_REQUEST", 0)
    # the lookups' table holds only the lookup
    assert [c["tool_call_id"] for c in calls] == ["call_1"]
    assert 'lk_guard_verifications_total{outcome="ok"} 1.0' in metrics
    assert 'lk_guard_verifications_total{outcome="violations"} 1.0' in metrics
    assert 'lk_guard_verifications_total{outcome="INVALID_REQUEST"} 1.0' in metrics
    assert 'lk_guard_violations_total{code="NOT_FOUND"} 1.0' in metrics


async def test_a_verification_the_ledger_stopped_leaves_its_row(tmp_path: Path) -> None:
    with mariadb_database() as db_url:
        url = db_url.render_as_string(hide_password=False)
        async with served(tmp_path, url, BrokenReadLedger(ttl_s=3600, pending_ttl_s=30)) as (
            app,
            client,
        ):
            data = {"run_id": RUN, "report": report(cite("call_1", "d1#chunk-1"))}
            answer = await client.post("/guard/verify", json=data)
            flush(app)
        rows = guard_rows(url)

    assert answer.status_code == 503
    assert answer.json()["error"]["code"] == "LEDGER_UNAVAILABLE"
    assert [(r["outcome"], r["ok"], r["error_code"]) for r in rows] == [
        ("LEDGER_UNAVAILABLE", False, "LEDGER_UNAVAILABLE")
    ]
    assert rows[0]["citation_count"] == 1
