"""POST /lookup_knowledge: parse, call the service, send the exact ledgered bytes."""

from __future__ import annotations

from fastapi import APIRouter, Response

from lookup_knowledge.api.deps import ServiceDep
from lookup_knowledge.api.openapi import error_responses
from lookup_knowledge.api.schemas import LookupRequest
from lookup_knowledge.domain.contract import RagToolResult
from lookup_knowledge.service import LookupCommand

router = APIRouter(tags=["lookup"])


@router.post(
    "/lookup_knowledge",
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
    headers = {"X-Ledger-Replayed": "true"} if answer.replayed else None
    return Response(content=answer.body, media_type="application/json", headers=headers)
