"""`lookup-knowledge mcp` as a host runs it: a subprocess spoken to over stdio by the SDK client.

The ledger is a private Redis, so what the stdio process ledgered is read back afterwards
through the HTTP ledger route of a separate app — the sharing docs/integration.md#mcp promises.
"""

from __future__ import annotations

import json
import os
import uuid
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path

import pytest
from mcp import ClientSession, StdioServerParameters, stdio_client

from lookup_knowledge.mcp_server import RUN_ID_META, TOOL_CALL_ID_META
from lookup_knowledge.tool_spec import CATEGORIES_URI
from process import console_script
from support import OpenClient

pytestmark = pytest.mark.process
EXAMPLES = Path(__file__).resolve().parents[2] / "examples"


def server_parameters(tmp_path: Path, **env: str) -> StdioServerParameters:
    command, *args = console_script()
    return StdioServerParameters(
        command=command,
        args=[*args, "mcp"],
        cwd=tmp_path,
        env={"PATH": os.environ.get("PATH", "/usr/bin:/bin"), "LOG_LEVEL": "WARNING", **env},
    )


@asynccontextmanager
async def host_session(
    tmp_path: Path, params: StdioServerParameters
) -> AsyncIterator[ClientSession]:
    """An initialized SDK session on a spawned server; its stderr goes to a file."""
    with (tmp_path / "server-stderr.log").open("w") as errlog:
        async with (
            stdio_client(params, errlog=errlog) as (read, write),
            ClientSession(read, write) as session,
        ):
            await session.initialize()
            yield session


async def test_a_host_lists_calls_and_hits_an_error_and_the_shared_ledger_holds_the_answer(
    tmp_path: Path, redis_url: str, open_client: OpenClient
) -> None:
    run_id = f"run-stdio-{uuid.uuid4().hex[:8]}"
    params = server_parameters(tmp_path, REDIS_URL=redis_url, MCP_RUN_ID=run_id)
    async with host_session(tmp_path, params) as session:
        tools = (await session.list_tools()).tools
        answer = await session.call_tool("lookup_knowledge", {"query": "网关超时怎么排查"})
        refused = await session.call_tool(
            "lookup_knowledge", {"query": "网关超时", "tool_call_id": "call_1"}
        )
        categories = await session.read_resource(CATEGORIES_URI)

    assert [t.name for t in tools] == ["lookup_knowledge"] and tools[0].output_schema
    assert answer.is_error is False
    meta = answer.meta or {}
    assert meta[RUN_ID_META] == run_id
    text = answer.content[0].text  # type: ignore[union-attr]
    assert (answer.structured_content or {})["evidence_status"] == "EVIDENCE_FOUND"
    assert refused.is_error is True
    assert (refused.structured_content or {})["error"]["details"]["field"] == "tool_call_id"
    assert "gateway" in json.loads(categories.contents[0].text)["categories"]  # type: ignore[union-attr]

    async with open_client(redis_url=redis_url) as client:
        entry = await client.get(f"/ledger/{run_id}/{meta[TOOL_CALL_ID_META]}")
        listing = await client.get(f"/ledger/{run_id}")
    assert entry.status_code == 200
    assert entry.json()["status"] == "READY"
    assert json.dumps(entry.json()["result"], ensure_ascii=False, separators=(",", ":")) == text
    assert [e["tool_call_id"] for e in listing.json()["entries"]] == [meta[TOOL_CALL_ID_META]]


async def test_without_a_configured_run_the_process_is_one_run(tmp_path: Path) -> None:
    params = server_parameters(tmp_path)
    async with host_session(tmp_path, params) as session:
        first = await session.call_tool("lookup_knowledge", {"query": "redis memory"})
        second = await session.call_tool("lookup_knowledge", {"query": "kafka lag"})
    first_meta, second_meta = first.meta or {}, second.meta or {}
    assert first_meta[RUN_ID_META] == second_meta[RUN_ID_META]
    assert first_meta[RUN_ID_META].startswith("mcp-")
    assert first_meta[TOOL_CALL_ID_META] != second_meta[TOOL_CALL_ID_META]


async def test_the_claude_desktop_config_in_examples_starts_a_working_server(
    tmp_path: Path, redis_url: str, open_client: OpenClient
) -> None:
    config = json.loads((EXAMPLES / "claude_desktop_config.json").read_text())
    server = config["mcpServers"]["lookup-knowledge"]
    assert (server["command"], server["args"]) == ("lookup-knowledge", ["mcp"])
    assert set(server["env"]) == {"DATA_DIR", "REDIS_URL", "MCP_RUN_ID"}
    # As a host would start it: the command found on PATH, the example's env with local values.
    bin_dir = str(Path(console_script()[0]).parent)
    env = {**server["env"], "DATA_DIR": str(tmp_path / "data"), "REDIS_URL": redis_url}
    params = StdioServerParameters(
        command=server["command"],
        args=server["args"],
        env={"PATH": f"{bin_dir}:{os.environ.get('PATH', '/usr/bin:/bin')}", **env},
        cwd=tmp_path,
    )
    async with host_session(tmp_path, params) as session:
        answer = await session.call_tool("lookup_knowledge", {"query": "kafka consumer lag"})
    meta = answer.meta or {}
    assert meta[RUN_ID_META] == server["env"]["MCP_RUN_ID"]
    async with open_client(redis_url=redis_url) as client:
        entry = await client.get(f"/ledger/{meta[RUN_ID_META]}/{meta[TOOL_CALL_ID_META]}")
    assert entry.status_code == 200 and entry.json()["status"] == "READY"
    assert (tmp_path / "data" / "audit.db").exists()
