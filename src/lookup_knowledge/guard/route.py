"""POST /guard/verify: a whole report checked against its run's ledger (docs/guard.md#route).

Guarded by the ledger role (docs/http-api.md#auth), included by `create_app`.
"""

from __future__ import annotations

from typing import Annotated, Any

from fastapi import APIRouter, Depends, Request, Response
from pydantic import BaseModel

from lookup_knowledge.api.deps import Resources, get_resources
from lookup_knowledge.guard.report import VerifyRequest, VerifyResult
from lookup_knowledge.guard.service import verify_in_ledger

router = APIRouter(tags=["guard"])


async def _resources(request: Request) -> Resources:
    """As `ResourcesDep`, read on the event loop: a sync dependency costs a thread hop."""
    return get_resources(request)


class ErrorBody(BaseModel):
    code: str
    message: str
    details: Any = None


class ErrorEnvelope(BaseModel):
    """The error envelope of docs/errors.md (for the OpenAPI description of this route)."""

    error: ErrorBody


def _error(description: str) -> dict[str, Any]:
    return {"model": ErrorEnvelope, "description": description}


@router.post(
    "/guard/verify",
    operation_id="verifyReport",
    response_model=VerifyResult,
    responses={
        400: _error("INVALID_REQUEST: the body is not JSON"),
        401: _error("UNAUTHORIZED: a ledger-role token is required"),
        403: _error("FORBIDDEN: the token is of another role"),
        413: _error("PAYLOAD_TOO_LARGE: the body is over 64 KiB"),
        422: _error("INVALID_REQUEST: not a report, or over a count bound"),
        503: _error("LEDGER_UNAVAILABLE: the ledger could not be read; nothing was judged"),
    },
)
async def verify(
    request: VerifyRequest, resources: Annotated[Resources, Depends(_resources)]
) -> Response:
    """Verify an agent's report against the evidence ledger of its run."""
    result = await verify_in_ledger(
        request.report,
        run_id=request.run_id,
        ledger=resources.ledger,
        outcomes=resources.guard_outcomes,
    )
    # Serialized once, here: a returned model would be validated again against response_model.
    return Response(
        content=result.model_dump_json(exclude_none=True), media_type="application/json"
    )
