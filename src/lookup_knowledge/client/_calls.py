"""The HTTP calls, as plain data and parsers shared by the sync and async clients."""

from __future__ import annotations

import json
import re
import uuid
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any, Generic, TypeVar
from urllib.parse import quote

import httpx

from lookup_knowledge.client.errors import InvalidRequest, PayloadTooLarge, ServerError
from lookup_knowledge.client.models import (
    LedgerEntry,
    LookupResponse,
    RagToolResult,
    RunLedger,
    ToolOutput,
)
from lookup_knowledge.domain.errors import InvalidRequest as DomainInvalidRequest
from lookup_knowledge.guard.report import GuardReport, VerifyResult
from lookup_knowledge.tool_spec import parse_arguments

T = TypeVar("T")
_ID = re.compile(r"^[A-Za-z0-9_.-]{1,128}$")


@dataclass(frozen=True, slots=True)
class Call(Generic[T]):
    """One request, rebuilt identically for every attempt, and how to read its success."""

    method: str
    path: str
    ledger_role: bool
    parse: Callable[[httpx.Response, int], T]
    json: Mapping[str, Any] | None = None
    params: Mapping[str, Any] | None = None


def new_tool_call_id() -> str:
    return "lk-" + uuid.uuid4().hex


def lookup_call(
    query: str,
    *,
    run_id: str,
    tool_call_id: str | None,
    filters: Mapping[str, str] | None,
    step_id: str | None,
) -> Call[LookupResponse]:
    """`POST /lookup_knowledge`; a missing tool_call_id is generated once, for every attempt."""
    call_id = tool_call_id or new_tool_call_id()
    body: dict[str, Any] = {"run_id": run_id, "tool_call_id": call_id, "query": query}
    if step_id is not None:
        body["step_id"] = step_id
    if filters:
        body["filters"] = dict(filters)

    def parse(response: httpx.Response, attempts: int) -> LookupResponse:
        return LookupResponse(
            result=RagToolResult.model_validate_json(response.content),
            body=response.content,
            run_id=run_id,
            tool_call_id=call_id,
            replayed=response.headers.get("x-ledger-replayed") == "true",
            attempts=attempts,
        )

    return Call("POST", "/lookup_knowledge", ledger_role=False, parse=parse, json=body)


def tool_arguments(arguments: str | Mapping[str, Any] | None) -> tuple[str, dict[str, str] | None]:
    """A model's arguments (JSON text or an object) → query and filters; InvalidRequest if bad."""
    if isinstance(arguments, str):
        try:
            arguments = json.loads(arguments) if arguments.strip() else None
        except ValueError:
            raise DomainInvalidRequest(
                "the arguments are not valid JSON", details={"field": "arguments"}
            ) from None
    return parse_arguments(arguments, max_query_chars=None)


def error_output(error: Exception) -> ToolOutput | None:
    """What the model is told when its call failed in a way it can act on; None: raise."""
    if isinstance(error, DomainInvalidRequest):
        envelope = {"code": error.code, "message": error.message, "details": error.details}
        return ToolOutput(text=json.dumps({"error": envelope}, ensure_ascii=False), is_error=True)
    if isinstance(error, InvalidRequest | PayloadTooLarge | ServerError):
        if error.response is not None and error.response.content:
            return ToolOutput(text=error.response.text, is_error=True)
        envelope = {"code": error.code, "message": error.message, "details": error.details}
        return ToolOutput(text=json.dumps({"error": envelope}, ensure_ascii=False), is_error=True)
    return None


def verify_call(report: GuardReport | Mapping[str, Any], *, run_id: str) -> Call[VerifyResult]:
    """`POST /guard/verify` (docs/guard.md#route): a pure check, so safe to send again."""
    body = report.model_dump(mode="json") if isinstance(report, GuardReport) else dict(report)
    return Call(
        "POST",
        "/guard/verify",
        ledger_role=True,
        parse=lambda r, _: VerifyResult.model_validate_json(r.content),
        json={"run_id": run_id, "report": body},
    )


def entry_call(run_id: str, tool_call_id: str) -> Call[LedgerEntry]:
    path = f"/ledger/{_segment(run_id)}/{_segment(tool_call_id)}"
    return Call("GET", path, ledger_role=True, parse=lambda r, _: LedgerEntry.from_bytes(r.content))


def run_call(run_id: str, *, cursor: str | None, limit: int | None) -> Call[RunLedger]:
    params = {k: v for k, v in (("cursor", cursor), ("limit", limit)) if v is not None}
    return Call(
        "GET",
        f"/ledger/{_segment(run_id)}",
        ledger_role=True,
        parse=lambda r, _: RunLedger.model_validate_json(r.content),
        params=params or None,
    )


def _segment(value: str) -> str:
    # The service refuses other ids anyway; quoting keeps a bad one from changing the route.
    return value if _ID.fullmatch(value) else quote(value, safe="")
