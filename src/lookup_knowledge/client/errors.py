"""Typed errors of `lookup_knowledge.client`: one class per code of the envelope (docs/errors.md).

LookupKnowledgeClientError
├── TransportError                no answer at all (connect, read, write), after the retries
└── ApiError                      the service answered an error envelope; .status .code .details
    ├── InvalidRequest            400/422 INVALID_REQUEST
    ├── Unauthorized              401 UNAUTHORIZED
    ├── Forbidden                 403 FORBIDDEN
    ├── NotFound                  404 NOT_FOUND
    ├── MethodNotAllowed          405 METHOD_NOT_ALLOWED       .allow
    ├── ConflictError             409 CONFLICT                 .reason
    ├── PayloadTooLarge           413 PAYLOAD_TOO_LARGE
    ├── HttpError                 4xx HTTP_ERROR (e.g. 408: the body stalled)
    └── ServerError               5xx
        ├── UpstreamError         502 UPSTREAM_ERROR
        │   └── UpstreamTimeout   504 UPSTREAM_TIMEOUT
        ├── LedgerUnavailable     503 LEDGER_UNAVAILABLE
        ├── Overloaded            503 OVERLOADED                .retry_after
        └── InternalError         500 INTERNAL_ERROR, PROJECTION_OVER_BUDGET

An unknown code falls back to the class of its status, so a newer service never breaks an
older client.
"""

from __future__ import annotations

import json
from typing import Any

import httpx


class LookupKnowledgeClientError(Exception):
    """Base of every error this client raises."""


class TransportError(LookupKnowledgeClientError):
    """The service could not be reached or did not answer; `__cause__` is the httpx error."""


class ApiError(LookupKnowledgeClientError):
    """The service answered with an error envelope."""

    def __init__(
        self,
        message: str,
        *,
        status: int,
        code: str,
        details: Any = None,
        response: httpx.Response | None = None,
    ) -> None:
        super().__init__(f"{status} {code}: {message}")
        self.status = status
        self.code = code
        self.message = message
        self.details = details
        self.response = response


class InvalidRequest(ApiError):
    pass


class Unauthorized(ApiError):
    pass


class Forbidden(ApiError):
    pass


class NotFound(ApiError):
    pass


class MethodNotAllowed(ApiError):
    """405: the path exists, not with this method; `allow` lists the methods it takes."""

    @property
    def allow(self) -> list[str]:
        value = self.response.headers.get("allow", "") if self.response is not None else ""
        return [method.strip() for method in value.split(",") if method.strip()]


class HttpError(ApiError):
    """A framework-level 4xx (HTTP_ERROR), such as 408 for a request body that stalled."""


class ConflictError(ApiError):
    """409: `reason` is `query_mismatch`, `in_flight`, `completed_first` or `not_replayable`."""

    @property
    def reason(self) -> str | None:
        reason = self.details.get("reason") if isinstance(self.details, dict) else None
        return reason if isinstance(reason, str) else None

    @property
    def retryable(self) -> bool:
        """Whether sending the very same call again can succeed (it then replays)."""
        return self.reason in ("in_flight", "completed_first")


class PayloadTooLarge(ApiError):
    pass


class ServerError(ApiError):
    pass


class UpstreamError(ServerError):
    pass


class UpstreamTimeout(UpstreamError):
    pass


class LedgerUnavailable(ServerError):
    pass


class Overloaded(ServerError):
    """503 OVERLOADED: nothing was recorded; the same call may be sent after `retry_after` s."""

    @property
    def retry_after(self) -> float | None:
        value = self.response.headers.get("retry-after") if self.response is not None else None
        try:
            return max(0.0, float(value)) if value is not None else None
        except ValueError:
            return None


class InternalError(ServerError):
    pass


_BY_CODE: dict[str, type[ApiError]] = {
    "INVALID_REQUEST": InvalidRequest,
    "UNAUTHORIZED": Unauthorized,
    "FORBIDDEN": Forbidden,
    "NOT_FOUND": NotFound,
    "METHOD_NOT_ALLOWED": MethodNotAllowed,
    "CONFLICT": ConflictError,
    "PAYLOAD_TOO_LARGE": PayloadTooLarge,
    "HTTP_ERROR": HttpError,
    "UPSTREAM_ERROR": UpstreamError,
    "UPSTREAM_TIMEOUT": UpstreamTimeout,
    "LEDGER_UNAVAILABLE": LedgerUnavailable,
    "OVERLOADED": Overloaded,
    "INTERNAL_ERROR": InternalError,
    "PROJECTION_OVER_BUDGET": InternalError,
}
_BY_STATUS: dict[int, type[ApiError]] = {
    400: InvalidRequest,
    401: Unauthorized,
    403: Forbidden,
    404: NotFound,
    405: MethodNotAllowed,
    409: ConflictError,
    413: PayloadTooLarge,
    422: InvalidRequest,
    500: InternalError,
    502: UpstreamError,
    504: UpstreamTimeout,
}


def error_from_response(response: httpx.Response) -> ApiError:
    """The typed error for a non-2xx answer (an answer without an envelope keeps its status)."""
    code, message, details = f"HTTP_{response.status_code}", response.reason_phrase, None
    try:
        error = json.loads(response.content)["error"]
        code = str(error["code"])
        message = str(error.get("message") or message)
        details = error.get("details")
    except (ValueError, KeyError, TypeError):
        pass
    cls = _BY_CODE.get(code)
    if cls is None:
        status = response.status_code
        cls = _BY_STATUS.get(status, ServerError if status >= 500 else ApiError)
    return cls(message, status=response.status_code, code=code, details=details, response=response)
