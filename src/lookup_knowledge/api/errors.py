"""The one place that turns errors into the envelope of docs/errors.md#envelope."""

from __future__ import annotations

import logging
from typing import Any

from fastapi import FastAPI, Request
from fastapi.exceptions import RequestValidationError
from fastapi.responses import JSONResponse
from starlette.exceptions import HTTPException as StarletteHTTPException

from lookup_knowledge.domain.errors import LookupKnowledgeError
from lookup_knowledge.guard.service import refused as guard_refused

log = logging.getLogger(__name__)

_HTTP_CODES = {
    400: "INVALID_REQUEST",
    401: "UNAUTHORIZED",
    403: "FORBIDDEN",
    404: "NOT_FOUND",
    405: "METHOD_NOT_ALLOWED",
    409: "CONFLICT",
    413: "PAYLOAD_TOO_LARGE",
    422: "INVALID_REQUEST",
}


def envelope(
    status: int,
    code: str,
    message: str,
    details: Any = None,
    headers: dict[str, str] | None = None,
) -> JSONResponse:
    return JSONResponse(
        status_code=status,
        content={"error": {"code": code, "message": message, "details": details}},
        headers=headers,
    )


async def _domain_error(_: Request, exc: Exception) -> JSONResponse:
    assert isinstance(exc, LookupKnowledgeError)
    return domain_error_response(exc)


def domain_error_response(exc: LookupKnowledgeError) -> JSONResponse:
    if exc.status_code >= 500:
        log.warning("lookup failed: %s %s", exc.code, exc.message)
    return envelope(exc.status_code, exc.code, exc.message, exc.details, exc.headers)


async def _validation_error(request: Request, exc: Exception) -> JSONResponse:
    assert isinstance(exc, RequestValidationError)
    problems = [
        {"loc": list(err.get("loc", ())), "msg": err.get("msg", ""), "type": err.get("type", "")}
        for err in exc.errors()
    ]
    if any(p["type"] == "json_invalid" for p in problems):
        return envelope(400, "INVALID_REQUEST", "the request body is not valid JSON", problems)
    message = "the request does not match the schema"
    _audit_refused_lookup(request, exc.body, message, problems)
    return envelope(422, "INVALID_REQUEST", message, problems)


def _audit_refused_lookup(
    request: Request, body: Any, message: str, problems: list[dict[str, Any]]
) -> None:
    """A lookup or a report verification refused at the edge still leaves its audit row
    (docs/audit.md); a body that is not a JSON object names no call, so it leaves none."""
    path = getattr(request.scope.get("route"), "path", None)
    resources = getattr(request.app.state, "resources", None)
    if not isinstance(body, dict) or resources is None:
        return
    if path == "/lookup_knowledge":
        resources.service.refused(body, message=message, problems=problems)
    elif path == "/guard/verify":
        guard_refused(body, outcomes=resources.guard_outcomes)


async def _http_error(_: Request, exc: Exception) -> JSONResponse:
    assert isinstance(exc, StarletteHTTPException)
    code = _HTTP_CODES.get(
        exc.status_code, "INTERNAL_ERROR" if exc.status_code >= 500 else "HTTP_ERROR"
    )
    # The framework's own headers stay: `Allow` on a 405, for one; a path that takes GET takes
    # HEAD too (api/head.py).
    headers = dict(exc.headers) if exc.headers else None
    allow = headers.get("Allow") if headers else None
    if headers and allow and "GET" in allow.split(", ") and "HEAD" not in allow:
        headers["Allow"] = allow + ", HEAD"
    return envelope(exc.status_code, code, str(exc.detail), headers=headers)


async def _unexpected(_: Request, exc: Exception) -> JSONResponse:
    log.exception("unexpected error", exc_info=exc)
    return envelope(500, "INTERNAL_ERROR", "internal error")


def install_error_handlers(app: FastAPI) -> None:
    app.add_exception_handler(LookupKnowledgeError, _domain_error)
    app.add_exception_handler(RequestValidationError, _validation_error)
    app.add_exception_handler(StarletteHTTPException, _http_error)
    app.add_exception_handler(Exception, _unexpected)
