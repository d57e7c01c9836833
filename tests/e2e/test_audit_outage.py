"""Lookups through the HTTP app while the audit database is down (docs/audit.md#durability).

The app (ASGITransport, py-rag mocked by respx) audits through the real `AuditWriter` into a
real MariaDB reached through a TCP proxy the test cuts and restores. Lookups must keep
answering promptly; when the database is back every call is in `tool_invocation` exactly once,
in call order, also when the service restarts during the outage.
"""

from __future__ import annotations

import asyncio
import json
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import httpx
import pytest
import respx
from sqlalchemy import Engine

from audit_support import (
    TcpProxy,
    all_rows,
    mariadb_database,
    reader,
    spool_depth,
)
from builders import pyrag_body, raw_hit
from lookup_knowledge.audit.writer import AuditWriter
from support import PYRAG_SEARCH_URL, OpenClient

pytestmark = pytest.mark.mysql

RUN = "run-outage"
# A lookup answers in milliseconds here; a second would mean it waited on the database.
PROMPT_S = 1.0


@dataclass
class Outage:
    proxy: TcpProxy
    url: str  # through the proxy
    db: Engine  # direct, for the test's reads
    spool_dir: Path

    def writer(self) -> AuditWriter:
        writer = AuditWriter.open(self.url, self.spool_dir, retry_initial_s=0.05, retry_max_s=0.3)
        writer.start()
        return writer


@pytest.fixture
def outage(tmp_path: Path) -> Iterator[Outage]:
    with mariadb_database() as url, reader(url) as db:
        proxy = TcpProxy(url.host or "127.0.0.1", url.port or 3306)
        proxy.start()
        try:
            via = url.set(host="127.0.0.1", port=proxy.port).render_as_string(hide_password=False)
            yield Outage(proxy, via, db, tmp_path / "spool")
        finally:
            proxy.stop()


def fake_pyrag(request: httpx.Request) -> httpx.Response:
    """Evidence for most queries; none for 'nothing'; a py-rag failure for 'boom'."""
    query = json.loads(request.content)["query"]
    if query == "boom":
        return httpx.Response(500, text="boom")
    hits = [] if query == "nothing" else [raw_hit("gw#chunk-1", 0.91), raw_hit("gw#chunk-3", 0.6)]
    return httpx.Response(200, json=pyrag_body(hits))


@dataclass
class Calls:
    """The calls made, in order, as (tool_call_id, replayed, error_code) rows should show."""

    expected: list[tuple[str, bool, str | None]]
    slowest_s: float = 0.0

    async def lookup(self, client: httpx.AsyncClient, call: str, query: str = "网关超时") -> None:
        began = time.perf_counter()
        response = await client.post(
            "/lookup_knowledge", json={"run_id": RUN, "tool_call_id": call, "query": query}
        )
        self.slowest_s = max(self.slowest_s, time.perf_counter() - began)
        if query == "boom":
            assert response.status_code == 502, response.text
            self.expected.append((call, False, "UPSTREAM_ERROR"))
        else:
            assert response.status_code == 200, response.text
            replayed = any(c == call for c, _, _ in self.expected)
            self.expected.append((call, replayed, None))

    async def mixed(self, client: httpx.AsyncClient, prefix: str, count: int) -> None:
        """Evidence, a negative observation, a failure and a replay, over and over."""
        for n in range(count):
            call = f"{prefix}_{n}"
            if n % 5 == 3:
                await self.lookup(client, call, "nothing")
            elif n % 5 == 4:
                await self.lookup(client, call, "boom")
            else:
                await self.lookup(client, call)
            if n % 5 == 0:
                await self.lookup(client, call)  # same ids, same query: a replay


def stored(db: Engine) -> list[tuple[str, bool, str | None]]:
    return [(r["tool_call_id"], r["replayed"], r["error_code"]) for r in all_rows(db)]


async def flushed(writer: AuditWriter) -> bool:
    return await asyncio.to_thread(writer.flush, 30)


async def test_lookups_answer_promptly_during_an_outage_and_every_row_arrives_once_after(
    open_client: OpenClient, outage: Outage
) -> None:
    writer = outage.writer()
    calls = Calls([])
    try:
        async with open_client(audit=writer) as client, respx.mock() as mock:
            mock.post(PYRAG_SEARCH_URL).mock(side_effect=fake_pyrag)
            await calls.mixed(client, "before", 5)
            assert await flushed(writer)

            outage.proxy.stop()
            calls.slowest_s = 0.0
            await calls.mixed(client, "during", 20)
            assert calls.slowest_s < PROMPT_S
            assert writer.depth() == len(calls.expected) - 6
            assert stored(outage.db) == calls.expected[:6]

            outage.proxy.start()
            await calls.mixed(client, "after", 5)
            assert await flushed(writer)
    finally:
        await writer.aclose()

    assert stored(outage.db) == calls.expected
    assert writer.depth() == 0
    rows = {(r["tool_call_id"], r["replayed"]): r for r in all_rows(outage.db)}
    negative = rows[("during_3", False)]
    assert negative["evidence_status"] == "NO_EVIDENCE"
    assert negative["retrieval_details"]["evidence_refs"] == [{"raw_path": "$.no_evidence"}]
    found = rows[("during_0", False)]
    assert found["evidence_status"] == "EVIDENCE_FOUND"
    assert found["retrieval_details"]["evidence_refs"][0]["raw_path"] == "$.evidence[0]"
    assert rows[("during_4", False)]["success"] is False


async def test_a_service_restart_during_the_outage_loses_and_duplicates_no_row(
    open_client: OpenClient, outage: Outage
) -> None:
    calls = Calls([])
    first = outage.writer()
    try:
        async with open_client(audit=first) as client, respx.mock() as mock:
            mock.post(PYRAG_SEARCH_URL).mock(side_effect=fake_pyrag)
            await calls.mixed(client, "first", 5)
            assert await flushed(first)
            outage.proxy.stop()
            await calls.mixed(client, "down1", 10)
    finally:
        await first.aclose()  # what the lifespan does at shutdown
    assert spool_depth(outage.spool_dir) == len(calls.expected) - 6

    second = outage.writer()
    try:
        async with open_client(audit=second) as client, respx.mock() as mock:
            mock.post(PYRAG_SEARCH_URL).mock(side_effect=fake_pyrag)
            calls.slowest_s = 0.0
            await calls.mixed(client, "down2", 10)
            assert calls.slowest_s < PROMPT_S
            outage.proxy.start()
            await calls.mixed(client, "back", 5)
            assert await flushed(second)
    finally:
        await second.aclose()

    assert stored(outage.db) == calls.expected
