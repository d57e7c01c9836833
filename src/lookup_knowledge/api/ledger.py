"""The ledger read routes EvidenceGuard uses (docs/ledger.md#read-routes)."""

from __future__ import annotations

import re
from typing import Annotated, Literal

from fastapi import APIRouter, Query, Response

from lookup_knowledge.api.deps import LedgerDep
from lookup_knowledge.api.schemas import ID_PATTERN
from lookup_knowledge.domain.errors import InvalidRequest, NotFound
from lookup_knowledge.domain.ledger import DEFAULT_PAGE_SIZE, MAX_PAGE_SIZE

_ID = re.compile(ID_PATTERN)

router = APIRouter(tags=["ledger"])


@router.get("/ledger/{run_id}/{tool_call_id}", response_class=Response)
async def get_entry(run_id: str, tool_call_id: str, ledger: LedgerDep) -> Response:
    """One ledger entry, its `result` byte for byte as the agent received it."""
    _check_id("run_id", run_id)
    _check_id("tool_call_id", tool_call_id)
    entry = await ledger.get(run_id, tool_call_id)
    if entry is None:
        raise NotFound(
            "no ledger entry for these ids",
            details={"run_id": run_id, "tool_call_id": tool_call_id},
        )
    return Response(content=entry.to_json_bytes(), media_type="application/json")


@router.get("/ledger/{run_id}", response_class=Response)
async def list_entries(
    run_id: str,
    ledger: LedgerDep,
    cursor: Annotated[str | None, Query(pattern=ID_PATTERN)] = None,
    limit: Annotated[int, Query(ge=1, le=MAX_PAGE_SIZE)] = DEFAULT_PAGE_SIZE,
    include: Annotated[Literal["result"] | None, Query()] = None,
) -> Response:
    """A page of the run's ledger entries in first-write order; `result` only when included."""
    _check_id("run_id", run_id)
    with_bodies = include == "result"
    page = await ledger.list_run(run_id, after=cursor, limit=limit, with_bodies=with_bodies)
    return Response(
        content=page.to_json_bytes(run_id, include_result=with_bodies),
        media_type="application/json",
    )


def _check_id(name: str, value: str) -> None:
    if not _ID.fullmatch(value):
        raise InvalidRequest(f"{name} must match {_ID.pattern}", details={"field": name})
