"""POST /guard/verify: a whole report checked against its run's ledger (docs/guard.md#route).

Guarded by the ledger role (docs/http-api.md#auth), included by `create_app`.
"""

from __future__ import annotations

from typing import Annotated

from fastapi import APIRouter, Depends, Request, Response

from lookup_knowledge.api.deps import Resources, get_resources
from lookup_knowledge.api.openapi import error_responses
from lookup_knowledge.guard.report import VerifyRequest, VerifyResult
from lookup_knowledge.guard.service import verify_in_ledger

router = APIRouter(tags=["guard"])


async def _resources(request: Request) -> Resources:
    """As `ResourcesDep`, read on the event loop: a sync dependency costs a thread hop."""
    return get_resources(request)


@router.post(
    "/guard/verify",
    operation_id="verifyReport",
    response_model=VerifyResult,
    responses=error_responses(
        400,
        401,
        403,
        408,
        413,
        422,
        503,
        when={
            401: "UNAUTHORIZED: a ledger-role token is required",
            422: "INVALID_REQUEST: not a report, or over a count bound (at most 50 tool calls "
            "cited in all, a bound JSON Schema cannot state)",
            503: "LEDGER_UNAVAILABLE: the ledger could not be read, nothing was judged; or "
            "OVERLOADED, with Retry-After",
        },
    ),
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
