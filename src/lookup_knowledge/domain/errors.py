"""The one error tree of the service; `api.errors` maps it to the envelope of docs/errors.md.

LookupKnowledgeError                 500 INTERNAL_ERROR
├── InvalidRequest                   400/422 INVALID_REQUEST
├── Unauthorized                     401 UNAUTHORIZED
├── Forbidden                        403 FORBIDDEN
├── NotFound                         404 NOT_FOUND
├── Conflict                         409 CONFLICT
├── PayloadTooLarge                  413 PAYLOAD_TOO_LARGE
├── UpstreamError                    502 UPSTREAM_ERROR   (py-rag unreachable, non-2xx, bad body)
│   └── UpstreamTimeout              504 UPSTREAM_TIMEOUT
├── LedgerUnavailable                503 LEDGER_UNAVAILABLE
├── Overloaded                       503 OVERLOADED       (Retry-After; blames no dependency)
└── ProjectionOverBudget             500 PROJECTION_OVER_BUDGET (fail closed)

Fail closed: docs/pipeline.md#byte-budget.
"""

from __future__ import annotations

from typing import Any


class LookupKnowledgeError(Exception):
    status_code = 500
    code = "INTERNAL_ERROR"
    headers: dict[str, str] | None = None

    def __init__(self, message: str, *, details: Any = None) -> None:
        super().__init__(message)
        self.message = message
        self.details = details


class InvalidRequest(LookupKnowledgeError):
    status_code = 422
    code = "INVALID_REQUEST"

    def __init__(self, message: str, *, details: Any = None, status_code: int = 422) -> None:
        super().__init__(message, details=details)
        self.status_code = status_code


class Unauthorized(LookupKnowledgeError):
    status_code = 401
    code = "UNAUTHORIZED"
    headers: dict[str, str] | None = {"WWW-Authenticate": "Bearer"}  # noqa: RUF012


class Forbidden(LookupKnowledgeError):
    status_code = 403
    code = "FORBIDDEN"


class NotFound(LookupKnowledgeError):
    status_code = 404
    code = "NOT_FOUND"


class Conflict(LookupKnowledgeError):
    status_code = 409
    code = "CONFLICT"


class PayloadTooLarge(LookupKnowledgeError):
    status_code = 413
    code = "PAYLOAD_TOO_LARGE"


class UpstreamError(LookupKnowledgeError):
    """py-rag could not give a usable answer; `kind` names why (for metrics and the audit)."""

    status_code = 502
    code = "UPSTREAM_ERROR"

    def __init__(self, message: str, *, kind: str, details: Any = None) -> None:
        super().__init__(message, details=details)
        self.kind = kind


class UpstreamTimeout(UpstreamError):
    status_code = 504
    code = "UPSTREAM_TIMEOUT"

    def __init__(self, message: str, *, details: Any = None) -> None:
        super().__init__(message, kind="timeout", details=details)


class LedgerUnavailable(LookupKnowledgeError):
    status_code = 503
    code = "LEDGER_UNAVAILABLE"


class Overloaded(LookupKnowledgeError):
    """This process is at a limit of its own (lookups in flight, a connection pool); see
    docs/errors.md#overloaded. Never a dependency's fault, so never blamed on one."""

    status_code = 503
    code = "OVERLOADED"

    def __init__(self, message: str, *, retry_after_s: int = 1, details: Any = None) -> None:
        super().__init__(message, details=details)
        self.headers = {"Retry-After": str(retry_after_s)}


class ProjectionOverBudget(LookupKnowledgeError):
    code = "PROJECTION_OVER_BUDGET"
