"""Typed Python clients for the lookup-knowledge HTTP API (docs/integration.md#python-client).

    from lookup_knowledge.client import LookupClient

    with LookupClient("http://127.0.0.1:8080", token="...") as lk:
        answer = lk.lookup("gateway 504 after deploy", run_id="run-42", tool_call_id="call_1")
        for item in answer.result.evidence:
            print(item.document_id, item.excerpt[:80])

`AsyncLookupClient` is the same over `httpx.AsyncClient`. Errors are the typed tree of
`lookup_knowledge.client.errors`; retries follow `lookup_knowledge.client.retry`.
"""

from lookup_knowledge.client.clients import AsyncLookupClient, LookupClient
from lookup_knowledge.client.errors import (
    ApiError,
    ConflictError,
    Forbidden,
    HttpError,
    InternalError,
    InvalidRequest,
    LedgerUnavailable,
    LookupKnowledgeClientError,
    MethodNotAllowed,
    NotFound,
    Overloaded,
    PayloadTooLarge,
    ServerError,
    TransportError,
    Unauthorized,
    UpstreamError,
    UpstreamTimeout,
)
from lookup_knowledge.client.models import (
    LedgerEntry,
    LookupResponse,
    RagEvidenceItem,
    RagToolResult,
    RunLedger,
    ToolOutput,
)
from lookup_knowledge.client.retry import NO_RETRY, RetryPolicy
from lookup_knowledge.guard.report import GuardReport, VerifyResult

__all__ = [
    "NO_RETRY",
    "ApiError",
    "AsyncLookupClient",
    "ConflictError",
    "Forbidden",
    "GuardReport",
    "HttpError",
    "InternalError",
    "InvalidRequest",
    "LedgerEntry",
    "LedgerUnavailable",
    "LookupClient",
    "LookupKnowledgeClientError",
    "LookupResponse",
    "MethodNotAllowed",
    "NotFound",
    "Overloaded",
    "PayloadTooLarge",
    "RagEvidenceItem",
    "RagToolResult",
    "RetryPolicy",
    "RunLedger",
    "ServerError",
    "ToolOutput",
    "TransportError",
    "Unauthorized",
    "UpstreamError",
    "UpstreamTimeout",
    "VerifyResult",
]
