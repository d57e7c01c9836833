"""Operator endpoints: liveness, readiness and metrics (open; see README "Operating")."""

from __future__ import annotations

import asyncio
import time
from collections.abc import Awaitable, Callable
from dataclasses import asdict
from typing import Any

from fastapi import APIRouter, Request, Response
from fastapi.responses import JSONResponse, PlainTextResponse

from lookup_knowledge.api.deps import Resources, ResourcesDep
from lookup_knowledge.api.openapi import error_responses
from lookup_knowledge.api.schemas import Health, Readiness

router = APIRouter(tags=["operations"])

CHECK_TIMEOUT_S = 2.0


@router.get("/healthz", operation_id="healthz", response_model=Health, responses=error_responses())
async def healthz() -> dict[str, str]:
    """Liveness only: the process is up; no dependency is called."""
    return {"status": "ok"}


@router.get(
    "/readyz",
    operation_id="readyz",
    response_model=Readiness,
    responses={
        **error_responses(),
        503: {"model": Readiness, "description": "a dependency is not usable"},
    },
)
async def readyz(resources: ResourcesDep) -> JSONResponse:
    """Readiness: ledger and py-rag, each with a short timeout, and the audit trail's state."""
    settings = resources.settings
    ledger, audit, pyrag = await asyncio.gather(
        _check(resources.ledger.ping),
        _audit_check(resources),
        _check(resources.search.ping),
    )
    ledger["backend"] = "redis" if settings.redis_url is not None else "memory"
    pyrag["backend"] = "remote" if settings.pyrag_base_url is not None else "embedded"
    checks = {"ledger": ledger, "audit": audit, "pyrag": pyrag}
    ready = all(check["status"] in {"up", "degraded"} for check in checks.values())
    return JSONResponse(
        status_code=200 if ready else 503,
        content={"status": "ready" if ready else "not_ready", "checks": checks},
    )


@router.get(
    "/metrics",
    operation_id="metrics",
    response_class=PlainTextResponse,
    responses=error_responses(),
)
async def metrics(request: Request, resources: ResourcesDep) -> Response:
    """Prometheus metrics in the text exposition format."""
    body = request.app.state.metrics.render(audit=await resources.audit.status())
    return Response(content=body, media_type="text/plain; version=0.0.4; charset=utf-8")


async def _check(probe: Callable[[], Awaitable[None]]) -> dict[str, Any]:
    started = time.perf_counter()
    try:
        async with asyncio.timeout(CHECK_TIMEOUT_S):
            await probe()
    except TimeoutError:
        result: dict[str, Any] = {"status": "down", "error": f"no answer in {CHECK_TIMEOUT_S} s"}
    except Exception as exc:  # a readiness probe reports, it never raises
        result = {"status": "down", "error": type(exc).__name__ + ": " + str(exc)[:200]}
    else:
        result = {"status": "up"}
    result["latency_ms"] = round((time.perf_counter() - started) * 1000, 2)
    return result


async def _audit_check(resources: Resources) -> dict[str, Any]:
    """The writer's own account (docs/audit.md#readiness-and-metrics): `degraded` is ready —
    rows wait on disk and lookups succeed; `down` is not."""
    started = time.perf_counter()
    state = await resources.audit.status()
    result = asdict(state)
    for total in ("rows_written", "commits", "rows_quarantined"):  # /metrics carries those
        del result[total]
    if result["error"] is None:
        del result["error"]
    result["latency_ms"] = round((time.perf_counter() - started) * 1000, 2)
    return result
