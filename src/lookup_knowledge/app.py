"""`create_app(settings)`: the ASGI app; its lifespan opens every client and closes it."""

from __future__ import annotations

import gc
import logging
from collections.abc import AsyncIterator
from contextlib import AsyncExitStack, asynccontextmanager

import httpx
from fastapi import FastAPI
from fastapi_offline import FastAPIOffline
from starlette.routing import Route

from lookup_knowledge import __version__, serving
from lookup_knowledge.adapters.ledger_memory import MemoryLedger
from lookup_knowledge.adapters.pyrag import PyragClient, pyrag_http_client
from lookup_knowledge.api import health, lookup
from lookup_knowledge.api import ledger as ledger_routes
from lookup_knowledge.api.admission import AdmissionGate, AdmissionMiddleware
from lookup_knowledge.api.auth import Role, require
from lookup_knowledge.api.body_limit import BodyLimitMiddleware
from lookup_knowledge.api.deps import Resources
from lookup_knowledge.api.errors import install_error_handlers
from lookup_knowledge.api.head import HeadAsGetMiddleware
from lookup_knowledge.api.openapi import install_openapi
from lookup_knowledge.api.shed_audit import ShedAudit
from lookup_knowledge.domain.ports import AuditPort, GuardOutcomePort, LedgerPort
from lookup_knowledge.guard import route as guard_route
from lookup_knowledge.mcp_server.http import MCP_PATH, McpHttpEndpoint
from lookup_knowledge.observability.guard_telemetry import GuardTelemetry
from lookup_knowledge.observability.http import RequestContextMiddleware
from lookup_knowledge.observability.logs import configure_logging
from lookup_knowledge.observability.metrics import Metrics
from lookup_knowledge.observability.telemetry import LookupTelemetry
from lookup_knowledge.service import LookupService
from lookup_knowledge.settings import Settings

log = logging.getLogger(__name__)

EMBEDDED_PYRAG_URL = "http://embedded-pyrag"
# Graceful shutdown: how long a clean stop waits for queued audit rows to be written.
AUDIT_FLUSH_TIMEOUT_S = 10.0


def remote_pyrag_client(settings: Settings) -> httpx.AsyncClient:
    """The pooled client to PYRAG_BASE_URL, with the configured timeouts, pool and transport."""
    assert settings.pyrag_base_url is not None
    return pyrag_http_client(
        settings.pyrag_base_url,
        connect_timeout_s=settings.pyrag_connect_timeout_s,
        timeout_s=settings.pyrag_timeout_s,
        pool_timeout_s=settings.pyrag_pool_timeout_s,
        max_connections=settings.pool_connections,
        transport=settings.pyrag_http_transport,
    )


async def open_pyrag_http(settings: Settings, stack: AsyncExitStack) -> httpx.AsyncClient:
    """One pooled client per process: to PYRAG_BASE_URL, or in memory to the embedded engine."""
    if settings.pyrag_base_url is not None:
        client = remote_pyrag_client(settings)
    else:
        from lookup_knowledge.engine.app import create_engine_app

        engine = create_engine_app(settings.pyrag_docs_dir, settings.index_store_dir)
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
        cluster=settings.redis_cluster,
        connect_timeout_s=settings.redis_connect_timeout_s,
        socket_timeout_s=settings.redis_socket_timeout_s,
        pool_timeout_s=settings.redis_pool_timeout_s,
        max_connections=settings.pool_connections,
    )
    stack.push_async_callback(redis_ledger.aclose)
    return redis_ledger


async def open_audit(settings: Settings, stack: AsyncExitStack) -> AuditPort:
    """The spool adopts what a stopped process left and the writer thread starts; closing
    writes what the database takes in time, the rest waits in the spool (docs/audit.md)."""
    from lookup_knowledge.audit.writer import AuditWriter

    writer = AuditWriter.open(
        settings.audit_database_url.get_secret_value(),
        settings.audit_spool_dir,
        timeout_s=settings.audit_db_timeout_s,
        fsync_interval_s=settings.audit_spool_fsync_ms / 1000,
        thread_nice=settings.audit_thread_nice,
        details_max_depth=settings.audit_details_max_depth,
        details_max_bytes=settings.audit_details_max_bytes,
        stuck_after_s=settings.audit_writer_stuck_s,
    )
    writer.start()
    stack.push_async_callback(writer.aclose, AUDIT_FLUSH_TIMEOUT_S)
    return writer


async def open_resources(
    settings: Settings,
    stack: AsyncExitStack,
    *,
    metrics: Metrics | None = None,
    ledger: LedgerPort | None = None,
    audit: AuditPort | None = None,
    guard_outcomes: GuardOutcomePort | None = None,
) -> Resources:
    """Open every client in order; `ledger`/`audit`/`guard_outcomes` replace the defaults."""
    http = await open_pyrag_http(settings, stack)
    search = PyragClient(
        http,
        top_k=settings.pyrag_top_k,
        mode=settings.pyrag_mode,
        max_body_bytes=settings.pyrag_max_body_bytes,
        # The trace is kept for the audit only; it sits one level inside retrieval_details.
        trace_max_depth=settings.audit_details_max_depth - 1,
        trace_max_bytes=settings.audit_details_max_bytes // 2,
    )
    stack.push_async_callback(search.aclose)
    ledger_port = ledger or await open_ledger(settings, stack)
    audit_port = audit or await open_audit(settings, stack)
    service = LookupService(
        search=search,
        ledger=ledger_port,
        audit=audit_port,
        limits=settings.pipeline_limits,
        projection_limits=settings.projection_limits,
        observer=LookupTelemetry(metrics),
        max_query_chars=settings.max_query_chars,
    )
    return Resources(
        settings=settings,
        search=search,
        ledger=ledger_port,
        audit=audit_port,
        service=service,
        guard_outcomes=guard_outcomes or GuardTelemetry(metrics, audit_port),
    )


def warn_about_open_roles(settings: Settings) -> None:
    if not settings.lookup_tokens:
        log.warning("LOOKUP_API_TOKENS is unset: POST /lookup_knowledge is open to anyone")
    if not settings.ledger_tokens:
        log.warning(
            "LEDGER_API_TOKENS is unset: the /ledger routes and /guard/verify are open to anyone"
        )


def create_app(
    settings: Settings | None = None,
    *,
    ledger: LedgerPort | None = None,
    audit: AuditPort | None = None,
    guard_outcomes: GuardOutcomePort | None = None,
    freeze_heap: bool = False,
) -> FastAPI:
    settings = settings or Settings()
    metrics = Metrics()
    mcp_endpoint = McpHttpEndpoint(lambda: app.state.resources)

    @asynccontextmanager
    async def lifespan(app: FastAPI) -> AsyncIterator[None]:
        warn_about_open_roles(settings)
        async with AsyncExitStack() as stack:
            app.state.resources = await open_resources(
                settings,
                stack,
                metrics=metrics,
                ledger=ledger,
                audit=audit,
                guard_outcomes=guard_outcomes,
            )
            await stack.enter_async_context(mcp_endpoint.run())
            if freeze_heap:
                freeze_start_up_heap()
                relax_collector()
            yield

    # Swagger UI and ReDoc come from fastapi-offline's vendored assets: /docs works offline.
    app = FastAPIOffline(
        title="lookup-knowledge",
        version=__version__,
        summary="Governed, verifiable knowledge-base evidence for LLM agents.",
        lifespan=lifespan,
        redirect_slashes=False,
    )
    install_openapi(app, settings)
    app.state.metrics = metrics
    install_error_handlers(app)
    gate = AdmissionGate(
        limit=settings.max_concurrent_lookups,
        queue_max=settings.lookup_queue_max,
        wait_s=settings.lookup_queue_timeout_s,
        observer=metrics,
    )
    # From the outside in (each add wraps the ones before): request id and metrics, the body
    # cap, admission, HEAD served as GET, then the lookup's fast path — so a slow body never
    # holds a lookup slot, and a refused lookup costs no validation. Lookups arrive by POST
    # /lookup_knowledge and as MCP tool calls on /mcp: one limit for both.
    # Innermost: a plainly valid lookup is served without FastAPI's routing (api/lookup.py).
    app.add_middleware(lookup.LookupFastPath)
    app.add_middleware(HeadAsGetMiddleware, exclude=frozenset({MCP_PATH}))
    app.add_middleware(
        AdmissionMiddleware,
        gate=gate,
        paths=frozenset({"/lookup_knowledge", MCP_PATH}),
        # A shed lookup still leaves its audit row (docs/audit.md).
        on_refused={"/lookup_knowledge": ShedAudit(lambda: getattr(app.state, "resources", None))},
    )
    app.add_middleware(BodyLimitMiddleware, timeout_s=settings.http_body_timeout_s)
    app.add_middleware(RequestContextMiddleware, metrics=metrics)
    app.include_router(lookup.router, dependencies=[require(Role.LOOKUP)])
    app.include_router(ledger_routes.router, dependencies=[require(Role.LEDGER)])
    # The guard reads what the ledger role may read, for the same consumer: docs/guard.md#auth.
    app.include_router(guard_route.router, dependencies=[require(Role.LEDGER)])
    app.include_router(health.router)
    # MCP over streamable HTTP, guarded by the lookup role (docs/integration.md#mcp).
    app.router.routes.append(Route(MCP_PATH, mcp_endpoint, include_in_schema=False))
    return app


def freeze_start_up_heap() -> None:
    """Move what start-up built (modules, the app, clients, an embedded index) out of the cyclic
    collector's sight: it lives as long as the process, and walking it again in every full
    collection cost a burst tens of milliseconds at a time (docs/performance.md#overload)."""
    gc.collect()
    gc.freeze()


# The cyclic collector's thresholds in a served process: (700, 10, 10) by default. A lookup
# allocates thousands of objects, nearly all freed by reference counting; collecting the
# youngest generation every 700 of them cost 4% of a lookup's CPU
# (docs/performance.md#hot-path). A collection walks what it holds, about 0.5 µs an object,
# with the event loop stopped: 10,000 held it 5-8 ms at a time, a stall of every lookup in
# flight; 2,000 holds it about 1 ms for the same collection time per second. The older
# generations are collected as often as before per allocation: every 200,000, 4,000,000
# (docs/performance.md#half-load-p99).
COLLECTOR_THRESHOLDS = (2_000, 100, 20)


def relax_collector() -> None:
    gc.set_threshold(*COLLECTOR_THRESHOLDS)


def create_served_app() -> FastAPI:
    """The factory `lookup-knowledge serve` hands to uvicorn (once per worker process)."""
    settings = Settings()
    configure_logging(settings.log_level, settings.log_format)
    serving.configure(settings)
    return create_app(settings, freeze_heap=True)
