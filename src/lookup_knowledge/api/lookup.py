"""POST /lookup_knowledge: parse, call the service, send the exact ledgered bytes."""

from __future__ import annotations

from fastapi import APIRouter, Response

from lookup_knowledge.api.deps import ServiceDep
from lookup_knowledge.api.schemas import LookupRequest
from lookup_knowledge.domain.contract import RagToolResult
from lookup_knowledge.service import LookupCommand

router = APIRouter()


@router.post(
    "/lookup_knowledge",
    response_model=RagToolResult,
    response_model_exclude_none=True,
    responses={
        409: {"description": "ids reused with another query, or the call is in flight"},
        502: {"description": "py-rag unreachable, non-2xx, or unreadable"},
        503: {"description": "the evidence ledger cannot be written"},
        504: {"description": "py-rag slower than PYRAG_TIMEOUT_S"},
    },
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
