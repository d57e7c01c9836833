"""`build_server`: the MCP request handlers over a `LookupService` (docs/integration.md#mcp).

A tool call is validated here (query, filters, nothing else), then handed to the same
`LookupService.lookup` as `POST /lookup_knowledge`. Bad input is answered before the service
runs, so it leaves nothing in the ledger. Failures come back as tool errors (`isError`, as
the MCP spec asks for input validation too, so the model can correct itself) whose text and
`structuredContent` are the error envelope of docs/errors.md#envelope.
"""

from __future__ import annotations

import json
import logging
import re
import uuid
from collections.abc import Callable, Mapping
from contextlib import AbstractAsyncContextManager
from typing import Any

import mcp_types as types
from mcp.server import Server, ServerRequestContext
from mcp.shared.exceptions import MCPError

from lookup_knowledge import __version__
from lookup_knowledge.api.deps import Resources
from lookup_knowledge.api.schemas import ID_PATTERN
from lookup_knowledge.domain.errors import InvalidRequest, LookupKnowledgeError
from lookup_knowledge.domain.ports import CategorySource
from lookup_knowledge.service import LookupAnswer, LookupCommand
from lookup_knowledge.tool_spec import (
    CATEGORIES_URI,
    SERVER_INSTRUCTIONS,
    TOOL_NAME,
    parse_arguments,
    render,
)

log = logging.getLogger(__name__)

META_PREFIX = "lookup-knowledge/"
RUN_ID_META = META_PREFIX + "run_id"
TOOL_CALL_ID_META = META_PREFIX + "tool_call_id"
STEP_ID_META = META_PREFIX + "step_id"
REPLAYED_META = META_PREFIX + "replayed"
MAX_STEP_ID_CHARS = 128
_ID = re.compile(ID_PATTERN)

Lifespan = Callable[[Server[Resources]], AbstractAsyncContextManager[Resources]]
Context = ServerRequestContext[Resources, Any]


def new_id() -> str:
    """A fresh id in the contract's charset: `mcp-` and 32 hex digits."""
    return "mcp-" + uuid.uuid4().hex


def build_server(lifespan: Lifespan, *, process_run_id: str | None = None) -> Server[Resources]:
    """The low-level MCP server; `lifespan` yields the `Resources` the handlers use.

    `process_run_id` is the run of a whole stdio process; None on HTTP (one run per call,
    unless the runtime or MCP_RUN_ID names it).
    """

    async def list_tools(
        ctx: Context, params: types.PaginatedRequestParams | None
    ) -> types.ListToolsResult:
        settings = ctx.lifespan_context.settings
        tool = types.Tool.model_validate(render("mcp", max_query_chars=settings.max_query_chars))
        return types.ListToolsResult(tools=[tool])

    async def call_tool(ctx: Context, params: types.CallToolRequestParams) -> types.CallToolResult:
        if params.name != TOOL_NAME:
            raise MCPError(types.INVALID_PARAMS, f"unknown tool {params.name!r}")
        resources = ctx.lifespan_context
        meta: Mapping[str, Any] = params.meta or {}
        ids: dict[str, Any] = {}
        try:
            query, filters = parse_arguments(
                params.arguments, max_query_chars=resources.settings.max_query_chars
            )
            ids[RUN_ID_META] = _meta_id(meta, RUN_ID_META) or _run_id(ctx, process_run_id)
            ids[TOOL_CALL_ID_META] = _meta_id(meta, TOOL_CALL_ID_META) or new_id()
            step_id = _step_id(meta)
            answer = await resources.service.lookup(
                LookupCommand(
                    run_id=ids[RUN_ID_META],
                    tool_call_id=ids[TOOL_CALL_ID_META],
                    query=query,
                    step_id=step_id,
                    filters=filters,
                )
            )
        except LookupKnowledgeError as exc:
            return error_result(exc, meta=ids)
        except Exception:
            log.exception("MCP tool call failed unexpectedly")
            return error_result(LookupKnowledgeError("internal error"), meta=ids)
        return answer_result(answer, meta=ids)

    async def list_resources(
        ctx: Context, params: types.PaginatedRequestParams | None
    ) -> types.ListResourcesResult:
        categories = types.Resource(
            uri=CATEGORIES_URI,
            name="categories",
            title="Knowledge-base categories",
            description='The values the filter {"category": ...} can take.',
            mime_type="application/json",
        )
        return types.ListResourcesResult(resources=[categories])

    async def read_resource(
        ctx: Context, params: types.ReadResourceRequestParams
    ) -> types.ReadResourceResult:
        if params.uri != CATEGORIES_URI:
            raise MCPError(types.INVALID_PARAMS, f"unknown resource {params.uri!r}")
        body = await categories_document(ctx.lifespan_context)
        text = json.dumps(body, ensure_ascii=False, separators=(",", ":"))
        contents = types.TextResourceContents(
            uri=CATEGORIES_URI, mime_type="application/json", text=text
        )
        return types.ReadResourceResult(contents=[contents])

    return Server(
        "lookup-knowledge",
        version=__version__,
        title="lookup-knowledge",
        instructions=SERVER_INSTRUCTIONS,
        lifespan=lifespan,
        on_list_tools=list_tools,
        on_call_tool=call_tool,
        on_list_resources=list_resources,
        on_read_resource=read_resource,
    )


def answer_result(answer: LookupAnswer, *, meta: Mapping[str, Any]) -> types.CallToolResult:
    """The ledgered bytes, verbatim as text and parsed as `structuredContent`."""
    text = answer.body.decode("utf-8")
    return types.CallToolResult(
        content=[types.TextContent(text=text)],
        structured_content=json.loads(text),
        meta={**meta, REPLAYED_META: answer.replayed},
    )


def error_result(exc: LookupKnowledgeError, *, meta: Mapping[str, Any]) -> types.CallToolResult:
    """A tool error whose text and structured content are the error envelope."""
    envelope = {"error": {"code": exc.code, "message": exc.message, "details": exc.details}}
    text = json.dumps(envelope, ensure_ascii=False, separators=(",", ":"), default=str)
    return types.CallToolResult(
        content=[types.TextContent(text=text)],
        structured_content=json.loads(text),
        is_error=True,
        meta=dict(meta) or None,
    )


async def categories_document(resources: Resources) -> dict[str, Any]:
    """What the categories resource says; honest about a py-rag that does not list them."""
    search = resources.search
    names = await search.categories() if isinstance(search, CategorySource) else None
    if names is not None:
        return {"filter": "category", "categories": names}
    return {
        "filter": "category",
        "categories": None,
        "note": "this py-rag does not list its categories; filters are passed to it unchecked",
    }


def _meta_id(meta: Mapping[str, Any], key: str) -> str | None:
    value = meta.get(key)
    if value is None:
        return None
    if not isinstance(value, str) or not _ID.fullmatch(value):
        raise InvalidRequest(f"_meta {key} must match {ID_PATTERN}", details={"field": key})
    return value


def _step_id(meta: Mapping[str, Any]) -> str | None:
    value = meta.get(STEP_ID_META)
    if value is None:
        return None
    if not isinstance(value, str) or len(value) > MAX_STEP_ID_CHARS:
        raise InvalidRequest(
            f"_meta {STEP_ID_META} must be a string of at most {MAX_STEP_ID_CHARS} characters",
            details={"field": STEP_ID_META},
        )
    return value


def _run_id(ctx: Context, process_run_id: str | None) -> str:
    configured = ctx.lifespan_context.settings.mcp_run_id
    return configured or process_run_id or new_id()
