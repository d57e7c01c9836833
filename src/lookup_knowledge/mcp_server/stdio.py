"""`lookup-knowledge mcp`: the MCP server over stdio, for desktop hosts (docs/integration.md#mcp).

It runs the service in-process rather than proxying to a running HTTP service: a host can
start it with nothing else running, and it is governed exactly like `serve` — same settings,
pipeline, ledger and audit. With `REDIS_URL` set, its answers land in the ledger the HTTP
service (and EvidenceGuard) reads; without it the ledger lives and dies with this process.

Stdout carries only JSON-RPC: the SDK points fd 1 at stderr while serving, and the engine is
built inside the server's lifespan, so nothing it prints can reach the wire. Logs go to stderr.
"""

from __future__ import annotations

import argparse
from collections.abc import AsyncIterator, Sequence
from contextlib import AsyncExitStack, asynccontextmanager

import anyio
from mcp.server import Server
from mcp.server.stdio import stdio_server

from lookup_knowledge.api.deps import Resources
from lookup_knowledge.mcp_server.server import build_server, new_id
from lookup_knowledge.settings import Settings


async def serve_stdio(settings: Settings) -> None:
    """Serve one host connection on stdin/stdout until it closes."""

    @asynccontextmanager
    async def in_process(_: Server[Resources]) -> AsyncIterator[Resources]:
        from lookup_knowledge.app import open_resources

        async with AsyncExitStack() as stack:
            yield await open_resources(settings, stack)

    server = build_server(in_process, process_run_id=settings.mcp_run_id or new_id())
    async with stdio_server() as (read_stream, write_stream):
        await server.run(read_stream, write_stream, server.create_initialization_options())


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="lookup-knowledge mcp",
        description="Serve the lookup_knowledge tool to an MCP host over stdio "
        "(settings from env/.env; MCP_RUN_ID names the run).",
    )
    parser.parse_args(argv)
    from lookup_knowledge.cli import _settings_or_exit
    from lookup_knowledge.observability.logs import configure_logging

    settings = _settings_or_exit(bind=False)  # stdio listens on no port
    configure_logging(settings.log_level, settings.log_format)
    anyio.run(serve_stdio, settings)
    return 0
