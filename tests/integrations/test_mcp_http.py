"""`/mcp` on a really served app: the SDK's streamable HTTP client, both protocol eras, auth.

See docs/integration.md#mcp.
"""

from __future__ import annotations

import asyncio
import json
from collections.abc import Iterator
from pathlib import Path

import httpx
import httpx2
import pytest
from mcp import Client, ClientSession
from mcp.client.streamable_http import streamable_http_client

from lookup_knowledge.app import create_app
from lookup_knowledge.mcp_server import RUN_ID_META, TOOL_CALL_ID_META
from process import Running, free_port, running_service
from support import RecordingAudit, make_settings

pytestmark = pytest.mark.process

AGENT = {"Authorization": "Bearer lk-agent"}
GUARD = {"Authorization": "Bearer lk-guard"}


@pytest.fixture(scope="module")
def service(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Running]:
    port = free_port()
    env = {"PORT": str(port), "LOOKUP_API_TOKENS": "lk-agent", "LEDGER_API_TOKENS": "lk-guard"}
    cwd = tmp_path_factory.mktemp("mcp-http")
    with running_service(["serve"], cwd=cwd, env=env, port=port) as base:
        yield base


async def test_a_handshake_client_lists_calls_and_hits_an_error_and_the_ledger_has_it(
    service: Running,
) -> None:
    async with (
        httpx2.AsyncClient(headers=AGENT) as http,
        streamable_http_client(f"{service}/mcp", http_client=http) as (read, write),
        ClientSession(read, write) as session,
    ):
        await session.initialize()
        tools = (await session.list_tools()).tools
        answer = await session.call_tool("lookup_knowledge", {"query": "redis memory"})
        refused = await session.call_tool("lookup_knowledge", {"query": ""})

    assert [t.name for t in tools] == ["lookup_knowledge"]
    assert answer.is_error is False
    meta = answer.meta or {}
    run_id, call_id = meta[RUN_ID_META], meta[TOOL_CALL_ID_META]
    entry = httpx.get(f"{service}/ledger/{run_id}/{call_id}", headers=GUARD, timeout=10)
    assert entry.status_code == 200 and entry.json()["status"] == "READY"
    assert entry.json()["result"] == json.loads(answer.content[0].text)  # type: ignore[union-attr]
    assert refused.is_error
    assert (refused.structured_content or {})["error"]["details"]["field"] == "query"


async def test_a_client_on_the_sessionless_protocol_gets_the_same_tool(service: Running) -> None:
    async with httpx2.AsyncClient(headers=AGENT) as http:
        transport = streamable_http_client(f"{service}/mcp", http_client=http)
        async with Client(transport, mode="auto") as client:
            version = client.session.protocol_version
            answer = await client.call_tool("lookup_knowledge", {"query": "kafka consumer lag"})
    assert version == "2026-07-28"  # the per-request protocol: no initialize, no session
    assert answer.is_error is False
    assert (answer.structured_content or {})["evidence_status"] in {"EVIDENCE_FOUND", "NO_EVIDENCE"}
    assert (answer.meta or {})[RUN_ID_META].startswith("mcp-")


@pytest.mark.parametrize(
    ("headers", "status", "code"),
    [
        ({}, 401, "UNAUTHORIZED"),
        (GUARD, 403, "FORBIDDEN"),
        ({"Authorization": "Bearer x"}, 401, "UNAUTHORIZED"),
    ],
)
def test_mcp_needs_a_token_of_the_lookup_role(
    service: Running, headers: dict[str, str], status: int, code: str
) -> None:
    body = {"jsonrpc": "2.0", "id": 1, "method": "tools/list", "params": {}}
    response = httpx.post(f"{service}/mcp", json=body, headers=headers, timeout=10)
    assert response.status_code == status
    assert response.json()["error"]["code"] == code


def test_mcp_stays_out_of_the_openapi_schema(service: Running) -> None:
    paths = httpx.get(f"{service}/openapi.json", timeout=10).json()["paths"]
    assert "/mcp" not in paths and "/lookup_knowledge" in paths


async def test_the_app_lifespan_may_end_in_another_task_than_it_began(tmp_path: Path) -> None:
    """Embedders and test fixtures enter and leave a lifespan in different tasks."""
    app = create_app(make_settings(tmp_path), audit=RecordingAudit())
    lifespan = app.router.lifespan_context(app)
    await asyncio.create_task(lifespan.__aenter__())
    try:
        transport = httpx.ASGITransport(app=app)
        async with httpx.AsyncClient(transport=transport, base_url="http://lk.test") as client:
            response = await client.post(
                "/mcp",
                json={"jsonrpc": "2.0", "id": 1, "method": "tools/list", "params": {}},
                headers={"Accept": "application/json, text/event-stream"},
            )
    finally:
        await asyncio.create_task(lifespan.__aexit__(None, None, None))
    assert response.status_code == 200, response.text
    assert [t["name"] for t in response.json()["result"]["tools"]] == ["lookup_knowledge"]
