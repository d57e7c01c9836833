"""The ledger read routes EvidenceGuard uses (docs/ledger.md#read-routes)."""

from __future__ import annotations

from typing import Annotated, Literal

from fastapi import APIRouter, Path, Query, Response

from lookup_knowledge.api.deps import LedgerDep
from lookup_knowledge.api.openapi import error_responses
from lookup_knowledge.api.schemas import ID_PATTERN, LedgerEntryOut, RunLedgerPage
from lookup_knowledge.domain.errors import NotFound
from lookup_knowledge.domain.ledger import DEFAULT_PAGE_SIZE, MAX_PAGE_SIZE

router = APIRouter(tags=["ledger"])

RunId = Annotated[str, Path(pattern=ID_PATTERN, min_length=1, max_length=128)]
ToolCallId = Annotated[str, Path(pattern=ID_PATTERN, min_length=1, max_length=128)]
_ERRORS = (401, 403, 422, 503)


@router.get(
    "/ledger/{run_id}/{tool_call_id}",
    operation_id="getLedgerEntry",
    response_model=LedgerEntryOut,
    responses=error_responses(*_ERRORS, 404),
)
async def get_entry(run_id: RunId, tool_call_id: ToolCallId, ledger: LedgerDep) -> Response:
    """One ledger entry, its `result` byte for byte as the agent received it."""
    entry = await ledger.get(run_id, tool_call_id)
    if entry is None:
        raise NotFound(
            "no ledger entry for these ids",
            details={"run_id": run_id, "tool_call_id": tool_call_id},
        )
    return Response(content=entry.to_json_bytes(), media_type="application/json")


@router.get(
    "/ledger/{run_id}",
    operation_id="listRunLedger",
    response_model=RunLedgerPage,
    responses=error_responses(*_ERRORS, 404),
)
async def list_entries(
    run_id: RunId,
    ledger: LedgerDep,
    cursor: Annotated[
        str | None,
        Query(pattern=ID_PATTERN, description="The previous page's `next_cursor`"),
    ] = None,
    limit: Annotated[
        int, Query(ge=1, le=MAX_PAGE_SIZE, description="Entries per page")
    ] = DEFAULT_PAGE_SIZE,
    include: Annotated[
        Literal["result"] | None,
        Query(description="`result`: each entry carries its result, byte for byte"),
    ] = None,
) -> Response:
    """A page of the run's ledger entries in first-write order; `result` only when included."""
    with_bodies = include == "result"
    page = await ledger.list_run(run_id, after=cursor, limit=limit, with_bodies=with_bodies)
    return Response(
        content=page.to_json_bytes(run_id, include_result=with_bodies),
        media_type="application/json",
    )
