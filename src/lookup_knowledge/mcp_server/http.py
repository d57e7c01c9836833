"""`/mcp`: MCP over streamable HTTP inside the service's own app (docs/integration.md#mcp).

Behind the lookup role's bearer tokens (docs/http-api.md#auth), answered with the service's
error envelope. The handlers use the app's `Resources` — the same service, engine, ledger and
audit as `POST /lookup_knowledge`; nothing is opened twice.

Stateless: every request stands alone, so any worker of any instance can answer it (an SDK
session would live in one worker's memory). JSON responses: the tool sends no progress
notifications that would need an event stream.

The SDK is loaded on the first authorized `/mcp` request, in a worker thread, not at start:
importing it is a third of the service's start-up (docs/performance.md#start-up).
"""

from __future__ import annotations

import asyncio
import importlib
from collections.abc import AsyncIterator, Callable
from contextlib import asynccontextmanager
from typing import TYPE_CHECKING

from starlette.requests import Request
from starlette.types import Receive, Scope, Send

from lookup_knowledge.api.auth import Role, authorize, bearer_token
from lookup_knowledge.api.deps import Resources
from lookup_knowledge.api.errors import envelope
from lookup_knowledge.domain.errors import LookupKnowledgeError

if TYPE_CHECKING:
    from mcp.server import Server
    from mcp.server.streamable_http_manager import StreamableHTTPSessionManager

MCP_PATH = "/mcp"


class McpHttpEndpoint:
    """An ASGI app for `MCP_PATH`; `run()` belongs in the app's lifespan, after the resources."""

    def __init__(self, resources: Callable[[], Resources]) -> None:
        self._resources = resources
        self._manager: StreamableHTTPSessionManager | None = None
        self._serving = False
        self._lock: asyncio.Lock | None = None
        self._stop: asyncio.Event | None = None
        self._task: asyncio.Task[None] | None = None

    @asynccontextmanager
    async def run(self) -> AsyncIterator[None]:
        """Serve MCP until the app stops; the SDK manager starts on the first request, a
        fresh one per app start."""
        self._lock, self._stop, self._serving = asyncio.Lock(), asyncio.Event(), True
        try:
            yield
        finally:
            self._serving = False
            self._stop.set()
            task, self._task = self._task, None
            if task is not None:
                await task

    async def _started_manager(self) -> StreamableHTTPSessionManager:
        """The running SDK manager, started now if this is the first request.

        The manager holds a task group for its whole life, and a task group must be left in
        the task that entered it. A lifespan may be entered and left in different tasks (an
        embedding app's or a test's fixtures), so the manager lives in a task of its own.
        """
        assert self._lock is not None and self._stop is not None
        async with self._lock:
            if self._manager is not None:
                return self._manager
            sdk = await asyncio.to_thread(
                importlib.import_module, "mcp.server.streamable_http_manager"
            )
            from lookup_knowledge.mcp_server.server import build_server

            @asynccontextmanager
            async def shared(_: Server[Resources]) -> AsyncIterator[Resources]:
                yield self._resources()

            manager: StreamableHTTPSessionManager = sdk.StreamableHTTPSessionManager(
                app=build_server(shared), json_response=True, stateless=True
            )
            started, stop = asyncio.Event(), self._stop

            async def serve() -> None:
                async with manager.run():
                    self._manager = manager
                    started.set()
                    try:
                        await stop.wait()
                    finally:
                        self._manager = None

            task = asyncio.create_task(serve(), name="mcp-session-manager")
            ready = asyncio.create_task(started.wait())
            await asyncio.wait({task, ready}, return_when=asyncio.FIRST_COMPLETED)
            if not started.is_set():
                ready.cancel()
                await task  # raises why the manager could not start
            self._task = task
            return manager

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if not self._serving:
            response = envelope(500, "INTERNAL_ERROR", "the MCP endpoint is not running")
            await response(scope, receive, send)
            return
        try:
            settings = self._resources().settings
            authorize(settings, Role.LOOKUP, bearer_token(Request(scope)))
        except LookupKnowledgeError as exc:
            response = envelope(exc.status_code, exc.code, exc.message, exc.details, exc.headers)
            await response(scope, receive, send)
            return
        manager = await self._started_manager()
        await manager.handle_request(scope, receive, send)
