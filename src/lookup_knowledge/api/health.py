"""Liveness: answers without touching any dependency."""

from __future__ import annotations

from fastapi import APIRouter

router = APIRouter()


@router.get("/healthz")
async def healthz() -> dict[str, str]:
    """Liveness only: the process is up."""
    return {"status": "ok"}
