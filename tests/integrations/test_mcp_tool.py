"""The MCP tool through the SDK's in-process client, py-rag mocked by respx at the boundary.

See docs/integration.md#mcp. The transports are exercised for real in the stdio and HTTP tests.
"""

from __future__ import annotations

import json
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

import httpx
import pytest
import respx
from mcp import Client
from mcp.server import Server
from mcp.shared.exceptions import MCPError

from builders import pyrag_body, raw_hit
from lookup_knowledge.api.deps import Resources
from lookup_knowledge.app import create_app
from lookup_knowledge.domain.contract import RagToolResult
from lookup_knowledge.domain.ledger import sha256_hex
from lookup_knowledge.mcp_server import RUN_ID_META, STEP_ID_META, TOOL_CALL_ID_META, build_server
from lookup_knowledge.tool_spec import CATEGORIES_URI, DESCRIPTION, output_schema
from support import PYRAG_SEARCH_URL, PYRAG_TEST_URL, RecordingAudit, make_settings

HITS = [raw_hit("gw#chunk-1", 0.9), raw_hit("gw#chunk-3", 0.8)]


@asynccontextmanager
async def mcp_client(
    tmp_path: Path, audit: RecordingAudit, **overrides: Any
) -> AsyncIterator[tuple[Client, Resources]]:
    """An SDK client on the tool server, over the resources a real app opened."""
    app = create_app(make_settings(tmp_path, **overrides), audit=audit)
    async with app.router.lifespan_context(app):
        resources: Resources = app.state.resources

        @asynccontextmanager
        async def shared(_: Server[Resources]) -> AsyncIterator[Resources]:
            yield resources

        server = build_server(shared, process_run_id="run-process")
        async with Client(server, mode="legacy") as client:
            yield client, resources


async def test_a_call_answers_the_ledgered_bytes_as_text_and_structured_content(
    tmp_path: Path, audit: RecordingAudit
) -> None:
    async with mcp_client(tmp_path, audit) as (client, resources):
        with respx.mock() as mock:
            route = mock.post(PYRAG_SEARCH_URL).respond(200, json=pyrag_body(HITS))
            result = await client.call_tool(
                "lookup_knowledge", {"query": "  网关超时怎么排查 ", "filters": {"category": "gw"}}
            )
        meta = result.meta or {}
        entry = await resources.ledger.get(meta[RUN_ID_META], meta[TOOL_CALL_ID_META])
    assert result.is_error is False
    text = result.content[0].text  # type: ignore[union-attr]
    assert entry is not None and entry.body == text.encode("utf-8")
    assert entry.result_sha256 == sha256_hex(text.encode("utf-8"))
    assert result.structured_content == json.loads(text)
    RagToolResult.model_validate_json(text)
    assert meta[RUN_ID_META] == "run-process"
    assert meta[TOOL_CALL_ID_META].startswith("mcp-")
    assert meta["lookup-knowledge/replayed"] is False
    sent = json.loads(route.calls.last.request.content)
    assert sent["query"] == "网关超时怎么排查" and sent["filters"] == {"category": "gw"}
    assert [r.run_id for r in audit.records] == ["run-process"]


async def test_the_tool_listing_carries_the_shared_description_and_the_output_schema(
    tmp_path: Path, audit: RecordingAudit
) -> None:
    async with mcp_client(tmp_path, audit, max_query_chars=300) as (client, _):
        tools = (await client.list_tools()).tools
    assert [t.name for t in tools] == ["lookup_knowledge"]
    tool = tools[0]
    assert tool.description == DESCRIPTION
    assert tool.output_schema == output_schema()
    assert tool.input_schema["properties"]["query"]["maxLength"] == 300
    assert set(tool.input_schema["properties"]) == {"query", "filters"}


async def test_runtime_ids_in_meta_make_a_repeated_call_a_ledger_replay(
    tmp_path: Path, audit: RecordingAudit
) -> None:
    ids = {RUN_ID_META: "run-7", TOOL_CALL_ID_META: "toolu_01", STEP_ID_META: "step 3"}
    async with mcp_client(tmp_path, audit) as (client, _):
        with respx.mock() as mock:
            route = mock.post(PYRAG_SEARCH_URL).respond(200, json=pyrag_body(HITS))
            first = await client.session.call_tool("lookup_knowledge", {"query": "q"}, meta=ids)  # type: ignore[arg-type]
            second = await client.session.call_tool("lookup_knowledge", {"query": "q"}, meta=ids)  # type: ignore[arg-type]
            other = await client.session.call_tool("lookup_knowledge", {"query": "p"}, meta=ids)  # type: ignore[arg-type]
    assert route.call_count == 1
    assert first.content == second.content
    assert (second.meta or {})["lookup-knowledge/replayed"] is True
    assert (first.meta or {})[TOOL_CALL_ID_META] == "toolu_01"
    assert other.is_error and (other.structured_content or {})["error"]["code"] == "CONFLICT"
    assert [r.step_id for r in audit.records][:1] == ["step 3"]


@pytest.mark.parametrize(
    ("arguments", "field"),
    [
        ({}, "query"),
        ({"query": 42}, "query"),
        ({"query": "   "}, "query"),
        ({"query": "x" * 4001}, "query"),
        ({"query": "q", "run_id": "run-1"}, "run_id"),
        ({"query": "q", "tool_call_id": "c"}, "tool_call_id"),
        ({"query": "q", "filters": {"category": 1}}, "filters"),
        ({"query": "q", "filters": "gateway"}, "filters"),
    ],
)
async def test_bad_arguments_are_a_tool_error_naming_the_field_and_leave_no_trace(
    tmp_path: Path, audit: RecordingAudit, arguments: dict[str, Any], field: str
) -> None:
    async with mcp_client(tmp_path, audit) as (client, resources):
        with respx.mock(assert_all_called=False) as mock:
            route = mock.post(PYRAG_SEARCH_URL).respond(200, json=pyrag_body(HITS))
            result = await client.call_tool("lookup_knowledge", arguments)
        listed = (
            await resources.ledger.list_run("run-process", after=None, limit=100, with_bodies=False)
        ).entries
    assert result.is_error is True
    error = (result.structured_content or {})["error"]
    assert error["code"] == "INVALID_REQUEST"
    assert error["details"]["field"] == field
    assert json.loads(result.content[0].text) == result.structured_content  # type: ignore[union-attr]
    assert route.call_count == 0 and listed == () and audit.records == []


async def test_an_id_in_meta_outside_the_charset_is_refused_before_the_ledger(
    tmp_path: Path, audit: RecordingAudit
) -> None:
    async with mcp_client(tmp_path, audit) as (client, _):
        result = await client.session.call_tool(
            "lookup_knowledge",
            {"query": "q"},
            meta={RUN_ID_META: "run 42"},  # type: ignore[typeddict-unknown-key]
        )
    assert result.is_error
    assert (result.structured_content or {})["error"]["details"]["field"] == RUN_ID_META
    assert audit.records == []


@pytest.mark.parametrize(
    ("answer", "code"),
    [
        (httpx.Response(500), "UPSTREAM_ERROR"),
        (httpx.ConnectError("refused"), "UPSTREAM_ERROR"),
    ],
)
async def test_a_service_failure_is_a_tool_error_with_the_envelope_code(
    tmp_path: Path, audit: RecordingAudit, answer: Any, code: str
) -> None:
    async with mcp_client(tmp_path, audit) as (client, resources):
        with respx.mock() as mock:
            route = mock.post(PYRAG_SEARCH_URL)
            if isinstance(answer, Exception):
                route.side_effect = answer
            else:
                route.mock(return_value=answer)
            result = await client.call_tool("lookup_knowledge", {"query": "q"})
        meta = result.meta or {}
        entry = await resources.ledger.get(meta[RUN_ID_META], meta[TOOL_CALL_ID_META])
    assert result.is_error
    assert (result.structured_content or {})["error"]["code"] == code
    assert entry is not None and entry.status.value == "FAILED" and entry.error == code


async def test_an_unknown_tool_is_a_protocol_error(tmp_path: Path, audit: RecordingAudit) -> None:
    async with mcp_client(tmp_path, audit) as (client, _):
        with pytest.raises(MCPError, match="unknown tool"):
            await client.call_tool("lookup_everything", {"query": "q"})


async def test_a_remote_py_rag_without_a_category_list_is_said_plainly(
    tmp_path: Path, audit: RecordingAudit
) -> None:
    async with mcp_client(tmp_path, audit) as (client, _):
        listed = (await client.list_resources()).resources
        with respx.mock() as mock:
            mock.get(f"{PYRAG_TEST_URL}/api/v1/categories").respond(404)
            unknown = await client.read_resource(CATEGORIES_URI)
            mock.get(f"{PYRAG_TEST_URL}/api/v1/categories").respond(
                200, json={"categories": ["gateway", "redis"]}
            )
            known = await client.read_resource(CATEGORIES_URI)
    assert [str(r.uri) for r in listed] == [CATEGORIES_URI]
    assert json.loads(unknown.contents[0].text)["categories"] is None  # type: ignore[union-attr]
    assert json.loads(known.contents[0].text)["categories"] == ["gateway", "redis"]  # type: ignore[union-attr]
