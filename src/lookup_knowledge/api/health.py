"""Operator endpoints: liveness, readiness and metrics (open; see README "Operating")."""

from __future__ import annotations

import asyncio
import os
import time
from collections.abc import Awaitable, Callable
from typing import Any

from fastapi import APIRouter, Request, Response
from fastapi.responses import JSONResponse

from lookup_knowledge.api.deps import ResourcesDep

router = APIRouter(tags=["operations"])

CHECK_TIMEOUT_S = 2.0


@router.get("/healthz")
async def healthz() -> dict[str, str]:
    """Liveness only: the process is up; no dependency is called."""
    return {"status": "ok"}


@router.get("/readyz", responses={503: {"description": "a dependency is not usable"}})
async def readyz(resources: ResourcesDep) -> JSONResponse:
    """Readiness: ledger, audit database (or its spool) and py-rag, each with a short timeout."""
    settings = resources.settings
    ledger, audit, pyrag = await asyncio.gather(
        _check(resources.ledger.ping),
        _check(resources.audit.ping),
        _check(resources.search.ping),
    )
    ledger["backend"] = "redis" if settings.redis_url is not None else "memory"
    pyrag["backend"] = "remote" if settings.pyrag_base_url is not None else "embedded"
    audit["spool_depth"] = resources.audit.spool_depth()
    if audit["status"] == "down" and _writable(settings.audit_spool_dir):
        # Lookups still succeed and nothing is lost: rows wait in the spool.
        audit["status"] = "degraded"
    checks = {"ledger": ledger, "audit": audit, "pyrag": pyrag}
    ready = all(check["status"] in {"up", "degraded"} for check in checks.values())
    return JSONResponse(
        status_code=200 if ready else 503,
        content={"status": "ready" if ready else "not_ready", "checks": checks},
    )


@router.get("/metrics", response_class=Response)
async def metrics(request: Request, resources: ResourcesDep) -> Response:
    """Prometheus metrics in the text exposition format."""
    body = request.app.state.metrics.render(spool_depth=resources.audit.spool_depth())
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


def _writable(directory: os.PathLike[str]) -> bool:
    path = os.fspath(directory)
    while not os.path.exists(path):
        parent = os.path.dirname(os.path.abspath(path))
        if parent == os.path.abspath(path):
            return False
        path = parent
    return os.path.isdir(path) and os.access(path, os.W_OK)
