"""`create_app(settings)`: the ASGI app; its lifespan opens every client and closes it."""

from __future__ import annotations

import logging
from collections.abc import AsyncIterator
from contextlib import AsyncExitStack, asynccontextmanager

import httpx
from fastapi import FastAPI

from lookup_knowledge import __version__
from lookup_knowledge.adapters.ledger_memory import MemoryLedger
from lookup_knowledge.adapters.pyrag import PyragClient
from lookup_knowledge.api import health, lookup
from lookup_knowledge.api import ledger as ledger_routes
from lookup_knowledge.api.body_limit import BodyLimitMiddleware
from lookup_knowledge.api.deps import Resources
from lookup_knowledge.api.errors import install_error_handlers
from lookup_knowledge.domain.audit import AuditRecord
from lookup_knowledge.domain.ports import AuditPort, LedgerPort
from lookup_knowledge.service import LookupService
from lookup_knowledge.settings import Settings

log = logging.getLogger(__name__)

EMBEDDED_PYRAG_URL = "http://embedded-pyrag"


class NullAudit:
    """Audit port that keeps nothing (placeholder until the SQL audit writer is wired)."""

    def submit(self, record: AuditRecord) -> None:
        log.debug("audit row for %s/%s not stored", record.run_id, record.tool_call_id)

    def spool_depth(self) -> int:
        return 0

    async def ping(self) -> None:
        return None


async def open_pyrag_http(settings: Settings, stack: AsyncExitStack) -> httpx.AsyncClient:
    """One pooled client per process: to PYRAG_BASE_URL, or in memory to the embedded engine."""
    if settings.pyrag_base_url is not None:
        client = httpx.AsyncClient(base_url=settings.pyrag_base_url)
    else:
        from lookup_knowledge.engine.app import create_engine_app

        engine = create_engine_app(settings.pyrag_docs_dir)
        client = httpx.AsyncClient(
            transport=httpx.ASGITransport(app=engine), base_url=EMBEDDED_PYRAG_URL
        )
    return await stack.enter_async_context(client)


async def open_ledger(settings: Settings, stack: AsyncExitStack) -> LedgerPort:
    if settings.redis_url is None:
        return MemoryLedger(
            ttl_s=settings.ledger_ttl_s, pending_ttl_s=settings.ledger_pending_ttl_s
        )
    from lookup_knowledge.adapters.ledger_redis import RedisLedger

    redis_ledger = RedisLedger.from_url(
        settings.redis_url.get_secret_value(),
        ttl_s=settings.ledger_ttl_s,
        pending_ttl_s=settings.ledger_pending_ttl_s,
    )
    stack.push_async_callback(redis_ledger.aclose)
    return redis_ledger


async def open_audit(settings: Settings, stack: AsyncExitStack) -> AuditPort:
    return NullAudit()


async def open_resources(
    settings: Settings,
    stack: AsyncExitStack,
    *,
    ledger: LedgerPort | None = None,
    audit: AuditPort | None = None,
) -> Resources:
    """Open every client in order; `ledger`/`audit` replace the configured stores (tests)."""
    http = await open_pyrag_http(settings, stack)
    search = PyragClient(
        http,
        timeout_s=settings.pyrag_timeout_s,
        top_k=settings.pyrag_top_k,
        mode=settings.pyrag_mode,
    )
    ledger_port = ledger or await open_ledger(settings, stack)
    audit = audit or await open_audit(settings, stack)
    service = LookupService(
        search=search,
        ledger=ledger_port,
        audit=audit,
        limits=settings.pipeline_limits,
        projection_limits=settings.projection_limits,
    )
    return Resources(
        settings=settings, search=search, ledger=ledger_port, audit=audit, service=service
    )


def create_app(
    settings: Settings | None = None,
    *,
    ledger: LedgerPort | None = None,
    audit: AuditPort | None = None,
) -> FastAPI:
    settings = settings or Settings()

    @asynccontextmanager
    async def lifespan(app: FastAPI) -> AsyncIterator[None]:
        async with AsyncExitStack() as stack:
            app.state.resources = await open_resources(settings, stack, ledger=ledger, audit=audit)
            yield

    app = FastAPI(
        title="lookup-knowledge",
        version=__version__,
        summary="Governed, verifiable knowledge-base evidence for LLM agents.",
        lifespan=lifespan,
    )
    install_error_handlers(app)
    app.add_middleware(BodyLimitMiddleware)
    app.include_router(lookup.router)
    app.include_router(ledger_routes.router)
    app.include_router(health.router)
    return app
