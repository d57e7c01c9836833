"""POST /lookup_knowledge: parse, call the service, send the exact ledgered bytes.

Two ways in, one answer. `LookupFastPath` (a pure ASGI middleware just outside FastAPI's
router) takes the common case: an authorized JSON body that is plainly valid. It parses it
once with orjson and checks it by hand against `LookupRequest`, accepting only what that model
accepts as it is. Anything else (a body that is not clean UTF-8 JSON, a field that is off, a
token that does not pass) goes on untouched to the FastAPI route below, which answers it as
it always has: the same 400/401/403/422 envelopes and details, and the refused call's audit
row. The route also stays what /openapi.json describes (docs/performance.md#hot-path).
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import Any

import orjson
from fastapi import APIRouter, Response
from fastapi.routing import APIRoute
from starlette.types import ASGIApp, Message, Receive, Scope, Send

from lookup_knowledge.api.auth import Role, bearer_token_from, token_matches, tokens_for
from lookup_knowledge.api.deps import Resources, ServiceDep
from lookup_knowledge.api.errors import domain_error_response
from lookup_knowledge.api.openapi import error_responses
from lookup_knowledge.api.schemas import ID_PATTERN, LookupRequest
from lookup_knowledge.domain.contract import RagToolResult
from lookup_knowledge.domain.errors import LookupKnowledgeError
from lookup_knowledge.service import LookupAnswer, LookupCommand

PATH = "/lookup_knowledge"
router = APIRouter(tags=["lookup"])


@router.post(
    PATH,
    operation_id="lookupKnowledge",
    response_model=RagToolResult,
    response_description="The evidence, exactly as ledgered (docs/agent-contract.md)",
    responses=error_responses(400, 401, 403, 408, 409, 413, 422, 502, 503, 504),
)
async def lookup_knowledge(request: LookupRequest, service: ServiceDep) -> Response:
    """Look up governed evidence for an agent's query."""
    command = LookupCommand(
        run_id=request.run_id,
        tool_call_id=request.tool_call_id,
        query=request.query,
        step_id=request.step_id,
        filters=request.filters,
    )
    answer = await service.lookup(command)  # admitted already (api/admission.py)
    return answer_response(answer)


def answer_response(answer: LookupAnswer) -> Response:
    headers = {"X-Ledger-Replayed": "true"} if answer.replayed else None
    return Response(content=answer.body, media_type="application/json", headers=headers)


_ID = re.compile(ID_PATTERN.removeprefix("^").removesuffix("$"))
_STEP_ID_MAX = 128


def _aliased(data: Mapping[str, Any], name: str, camel: str) -> Any:
    """What pydantic's AliasChoices(name, camel) reads: the first of the two that is present."""
    if name in data:
        return data[name]
    return data.get(camel, _MISSING)


_MISSING = object()


def plainly_valid(data: Any) -> LookupCommand | None:
    """The command when `LookupRequest` accepts `data` as it is, else None (the route decides).

    Strings from orjson are valid Unicode (it refuses lone surrogates), so the model's
    surrogate check has nothing to find here.
    """
    if type(data) is not dict:
        return None
    run_id = _aliased(data, "run_id", "runId")
    tool_call_id = _aliased(data, "tool_call_id", "toolCallId")
    query = data.get("query")
    step_id = _aliased(data, "step_id", "stepId")
    filters = data.get("filters")
    if (
        type(run_id) is not str
        or type(tool_call_id) is not str
        or type(query) is not str
        or not query
        or _ID.fullmatch(run_id) is None
        or _ID.fullmatch(tool_call_id) is None
    ):
        return None
    if step_id is _MISSING:
        step_id = None
    elif step_id is not None and (type(step_id) is not str or len(step_id) > _STEP_ID_MAX):
        return None
    if filters is not None and (
        type(filters) is not dict or any(type(v) is not str for v in filters.values())
    ):
        return None
    return LookupCommand(
        run_id=run_id, tool_call_id=tool_call_id, query=query, step_id=step_id, filters=filters
    )


def _json_content_type(headers: list[tuple[bytes, bytes]]) -> bool:
    """The first Content-Type is application/json (FastAPI parses that as JSON too)."""
    for name, value in headers:
        if name == b"content-type":
            media = value.split(b";", 1)[0].strip().lower()
            return media == b"application/json"
    return False


class LookupFastPath:
    """Pure ASGI, the innermost middleware: serves a plainly valid, authorized lookup without
    FastAPI's routing, dependency solving and model validation; hands anything else, with its
    body, to the app behind it. Runs inside admission and the body limit, like the route."""

    def __init__(self, app: ASGIApp) -> None:
        self.app = app
        self._route: APIRoute | None = None

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http" or scope["method"] != "POST" or scope["path"] != PATH:
            await self.app(scope, receive, send)
            return
        messages = await _request_messages(receive)
        command = None
        if len(messages) == 1 and messages[0]["type"] == "http.request":
            command = self._command(scope, messages[0].get("body", b""))
        if command is None:
            await self.app(scope, _replay(messages, receive), send)
            return
        resources: Resources = scope["app"].state.resources
        scope["route"] = self._lookup_route()  # the metrics' route template
        response: Response
        try:
            answer = await resources.service.lookup(command)
        except LookupKnowledgeError as exc:
            response = domain_error_response(exc)
        else:
            response = answer_response(answer)
        await response(scope, receive, send)

    def _command(self, scope: Scope, body: bytes) -> LookupCommand | None:
        state = getattr(scope.get("app"), "state", None)
        resources: Resources | None = getattr(state, "resources", None)
        if resources is None or not _json_content_type(scope["headers"]):
            return None
        allowed = tokens_for(resources.settings, Role.LOOKUP)
        if allowed:
            presented = bearer_token_from(scope["headers"])
            if presented is None or not token_matches(presented, allowed):
                return None
        try:
            data = orjson.loads(body)
        except orjson.JSONDecodeError:
            return None
        return plainly_valid(data)

    def _lookup_route(self) -> APIRoute | None:
        if self._route is None:
            for route in router.routes:
                methods = getattr(route, "methods", None) or ()
                if isinstance(route, APIRoute) and route.path == PATH and "POST" in methods:
                    self._route = route
                    break
        return self._route


async def _request_messages(receive: Receive) -> list[Message]:
    """The body's messages up to the last (or up to anything else, which is kept too); the
    body limit in front has buffered the body into one message, so this does not wait."""
    messages: list[Message] = []
    while True:
        message = await receive()
        messages.append(message)
        if message["type"] != "http.request" or not message.get("more_body", False):
            return messages


def _replay(messages: list[Message], receive: Receive) -> Receive:
    """`receive` as the app behind sees it: the messages read here first, in order."""
    buffered = messages[::-1]

    async def replay() -> Message:
        return buffered.pop() if buffered else await receive()

    return replay
