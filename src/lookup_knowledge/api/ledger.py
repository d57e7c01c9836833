"""The ledger read routes EvidenceGuard uses (docs/ledger.md#read-routes)."""

from __future__ import annotations

import re

from fastapi import APIRouter, Response

from lookup_knowledge.api.deps import LedgerDep
from lookup_knowledge.api.schemas import ID_PATTERN
from lookup_knowledge.domain.errors import InvalidRequest, NotFound

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


@router.get("/ledger/{run_id}")
async def list_entries(run_id: str, ledger: LedgerDep) -> dict[str, object]:
    """The run's ledger entries, without `result`."""
    _check_id("run_id", run_id)
    entries = await ledger.list_run(run_id)
    return {"run_id": run_id, "entries": [entry.to_summary() for entry in entries]}


def _check_id(name: str, value: str) -> None:
    if not _ID.fullmatch(value):
        raise InvalidRequest(f"{name} must match {_ID.pattern}", details={"field": name})
