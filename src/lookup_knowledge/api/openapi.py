"""What /openapi.json says beyond the routes themselves: the error envelope on every error
status, and rules that depend on settings (docs/http-api.md#openapi).

Routers describe their errors with `error_responses(...)`, so every router (this service's and
any added later) documents the same envelope the one error handler sends (api/errors.py).
"""

from __future__ import annotations

from typing import Any

from fastapi import FastAPI
from fastapi.openapi.utils import get_openapi
from pydantic import BaseModel, ConfigDict, Field

from lookup_knowledge.settings import Settings


class ErrorBody(BaseModel):
    model_config = ConfigDict(extra="forbid")

    code: str = Field(
        description="Stable, for programs (docs/errors.md): INVALID_REQUEST, UNAUTHORIZED, "
        "FORBIDDEN, NOT_FOUND, METHOD_NOT_ALLOWED, CONFLICT, PAYLOAD_TOO_LARGE, HTTP_ERROR, "
        "UPSTREAM_ERROR, UPSTREAM_TIMEOUT, LEDGER_UNAVAILABLE, OVERLOADED, INTERNAL_ERROR, "
        "PROJECTION_OVER_BUDGET.",
        examples=["CONFLICT"],
    )
    message: str = Field(description="For humans; may change.")
    details: Any = Field(description="Structured context, or null.")


class ErrorEnvelope(BaseModel):
    """Every error answer of this service."""

    model_config = ConfigDict(extra="forbid")

    error: ErrorBody


_WHEN = {
    400: "the body is not JSON, or the HTTP request is malformed (INVALID_REQUEST)",
    401: "a bearer token is required and is missing or wrong (UNAUTHORIZED)",
    403: "the token is valid for the other role (FORBIDDEN)",
    404: "no such ledger entry, or the cursor is not an entry of the run (NOT_FOUND)",
    408: "the request body did not arrive within HTTP_BODY_TIMEOUT_S (HTTP_ERROR)",
    409: "the ids were used with another query, or the call is in flight (CONFLICT)",
    413: "the request body is over 64 KiB (PAYLOAD_TOO_LARGE)",
    422: "the request does not match the schema, or the query is blank or too long after "
    "trimming (INVALID_REQUEST)",
    500: "an unexpected error (INTERNAL_ERROR), or an answer that cannot fit the byte budget "
    "(PROJECTION_OVER_BUDGET)",
    502: "py-rag unreachable, non-2xx, or its body unreadable (UPSTREAM_ERROR)",
    503: "this process is at its own limit (OVERLOADED, with Retry-After), or the evidence "
    "ledger cannot be used (LEDGER_UNAVAILABLE)",
    504: "py-rag did not answer in time (UPSTREAM_TIMEOUT)",
}
_HEADERS: dict[int, dict[str, Any]] = {
    401: {
        "WWW-Authenticate": {
            "description": "Bearer",
            "schema": {"type": "string"},
            "required": True,
        }
    },
    503: {
        "Retry-After": {
            "description": "Seconds to wait before retrying; set with OVERLOADED",
            "schema": {"type": "integer", "minimum": 0},
        }
    },
}


def error_responses(
    *statuses: int, when: dict[int, str] | None = None
) -> dict[int | str, dict[str, Any]]:
    """`responses=` for a route: the envelope on each of `statuses`, and on 500; `when` says
    what a status means on this route, where it means more than the service-wide text."""
    responses: dict[int | str, dict[str, Any]] = {}
    for status in sorted({*statuses, 500}):
        description = (when or {}).get(status, _WHEN[status])
        response: dict[str, Any] = {"model": ErrorEnvelope, "description": description}
        if status in _HEADERS:
            response["headers"] = _HEADERS[status]
        responses[status] = response
    return responses


# What str.strip() strips (str.isspace), spelled out: regex engines disagree on \s (Python's
# re, Rust's regex, ECMAScript and hypothesis each draw its edges differently).
_SPACE = r"\t\n\x0b\x0c\r\x1c-\x20\x85\xa0\u1680\u2000-\u200a\u2028\u2029\u202f\u205f\u3000"


def query_pattern(max_chars: int) -> str:
    """A string of 1..`max_chars` characters once leading and trailing whitespace is trimmed."""
    space, text = f"[{_SPACE}]*", f"[^{_SPACE}]"
    middle = rf"(?:[\s\S]{{0,{max_chars - 2}}}{text})?" if max_chars > 1 else ""
    return f"^{space}{text}{middle}{space}$"


def install_openapi(app: FastAPI, settings: Settings) -> None:
    """Generate the schema once, then state the rules that come from settings: the query's
    length, and which roles are open (an open role's routes need no token)."""

    def openapi() -> dict[str, Any]:
        if app.openapi_schema is not None:
            return app.openapi_schema
        schema = get_openapi(
            title=app.title,
            version=app.version,
            summary=app.summary,
            description=app.description,
            routes=app.routes,
        )
        query = schema["components"]["schemas"]["LookupRequest"]["properties"]["query"]
        query["pattern"] = query_pattern(settings.max_query_chars)
        query["description"] = (
            f"1..{settings.max_query_chars} characters once leading and trailing whitespace "
            "is trimmed; the trimmed query is what is searched and ledgered."
        )
        open_schemes = {
            name
            for name, tokens in (
                ("lookupToken", settings.lookup_tokens),
                ("ledgerToken", settings.ledger_tokens),
            )
            if not tokens
        }
        for operations in schema["paths"].values():
            for operation in operations.values():
                _errors_as_json(operation)
                required = operation.get("security", [])
                if any(open_schemes & requirement.keys() for requirement in required):
                    del operation["security"]
                    operation.get("responses", {}).pop("401", None)
                    operation.get("responses", {}).pop("403", None)
        app.openapi_schema = schema
        return schema

    app.openapi = openapi  # type: ignore[method-assign]


_ENVELOPE_REF = "#/components/schemas/ErrorEnvelope"


def _errors_as_json(operation: dict[str, Any]) -> None:
    """Errors are JSON even on a route whose success is not (FastAPI files them under the
    route's own media type)."""
    for status, response in operation.get("responses", {}).items():
        content = response.get("content", {})
        if status[:1] not in {"4", "5"} or "application/json" in content:
            continue
        for media in list(content):
            if content[media].get("schema", {}).get("$ref") == _ENVELOPE_REF:
                content["application/json"] = content.pop(media)
