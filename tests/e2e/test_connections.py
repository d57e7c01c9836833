"""Connection hygiene on a real socket: idle and slowloris connections, slow bodies, the cap.

See docs/http-api.md#connections. The service runs in uvicorn in this process, with the
connection guard `lookup-knowledge serve` uses and short limits.
"""

from __future__ import annotations

import asyncio
import json
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path

import uvicorn

from lookup_knowledge.app import create_app
from lookup_knowledge.serving import GuardedH11Protocol
from support import RecordingAudit, make_settings

CLOSED_WITHIN_S = 10.0  # a generous bound on a 0.3 s limit: "closed", not "how fast"


class QuickGuard(GuardedH11Protocol):
    header_timeout_s = 0.3
    max_connections = 4


@asynccontextmanager
async def served(tmp_path: Path) -> AsyncIterator[int]:
    app = create_app(make_settings(tmp_path, http_body_timeout_s=0.3), audit=RecordingAudit())
    config = uvicorn.Config(
        app, host="127.0.0.1", port=0, http=QuickGuard, timeout_keep_alive=1, log_level="error"
    )
    server = uvicorn.Server(config)
    task = asyncio.ensure_future(server.serve())
    while not server.started:
        await asyncio.sleep(0.01)
    try:
        yield server.servers[0].sockets[0].getsockname()[1]
    finally:
        server.should_exit = True
        await task


async def closed_by_server(reader: asyncio.StreamReader) -> bytes:
    """Everything the server sends until it closes the connection."""
    return await asyncio.wait_for(reader.read(), timeout=CLOSED_WITHIN_S)


async def test_a_connection_that_never_sends_a_request_is_closed(tmp_path: Path) -> None:
    async with served(tmp_path) as port:
        reader, writer = await asyncio.open_connection("127.0.0.1", port)
        assert await closed_by_server(reader) == b""
        writer.close()


async def test_a_request_head_trickled_byte_by_byte_is_cut_off(tmp_path: Path) -> None:
    async with served(tmp_path) as port:
        reader, writer = await asyncio.open_connection("127.0.0.1", port)

        async def slowloris() -> None:
            writer.write(b"GET /healthz HTTP/1.1\r\nHost: x\r\n")
            while not writer.is_closing():
                writer.write(b"X")
                await writer.drain()
                await asyncio.sleep(0.05)

        trickle = asyncio.ensure_future(slowloris())
        try:
            assert await closed_by_server(reader) == b""
        finally:
            trickle.cancel()
            writer.close()


async def test_a_second_request_trickled_on_a_kept_alive_connection_is_cut_off(
    tmp_path: Path,
) -> None:
    async with served(tmp_path) as port:
        reader, writer = await asyncio.open_connection("127.0.0.1", port)
        writer.write(b"GET /healthz HTTP/1.1\r\nHost: x\r\n\r\n")
        first = await reader.readuntil(b'{"status":"ok"}')
        writer.write(b"GET /healthz HTTP/1.1\r\n")  # and then nothing more

        assert first.startswith(b"HTTP/1.1 200")
        assert await closed_by_server(reader) == b""
        writer.close()


async def test_requests_that_come_in_time_are_served_on_one_connection(tmp_path: Path) -> None:
    async with served(tmp_path) as port:
        reader, writer = await asyncio.open_connection("127.0.0.1", port)
        for _ in range(3):
            writer.write(b"GET /healthz HTTP/1.1\r\nHost: x\r\n\r\n")
            answer = await reader.readuntil(b'{"status":"ok"}')
            assert answer.startswith(b"HTTP/1.1 200")
            await asyncio.sleep(0.2)  # under the header timeout each time
        writer.close()


async def test_a_body_that_stalls_is_answered_408_and_the_connection_closed(
    tmp_path: Path,
) -> None:
    async with served(tmp_path) as port:
        reader, writer = await asyncio.open_connection("127.0.0.1", port)
        writer.write(
            b"POST /lookup_knowledge HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\n"
            b'Content-Length: 100\r\n\r\n{"run_id": '
        )
        answer = await closed_by_server(reader)
        writer.close()

    head, _, body = answer.partition(b"\r\n\r\n")
    assert head.startswith(b"HTTP/1.1 408")
    assert b"connection: close" in head.lower()
    assert json.loads(body)["error"]["code"] == "HTTP_ERROR"


async def test_connections_past_the_cap_are_answered_overloaded(tmp_path: Path) -> None:
    async with served(tmp_path) as port:
        held = [await asyncio.open_connection("127.0.0.1", port) for _ in range(4)]
        reader, writer = await asyncio.open_connection("127.0.0.1", port)
        writer.write(b"GET /healthz HTTP/1.1\r\nHost: x\r\n\r\n")
        answer = await closed_by_server(reader)
        for _, held_writer in held:
            held_writer.close()
        writer.close()

    head, _, body = answer.partition(b"\r\n\r\n")
    assert head.startswith(b"HTTP/1.1 503")
    assert b"retry-after: 1" in head.lower()
    assert json.loads(body)["error"]["code"] == "OVERLOADED"


async def test_malformed_http_gets_the_error_envelope(tmp_path: Path) -> None:
    async with served(tmp_path) as port:
        reader, writer = await asyncio.open_connection("127.0.0.1", port)
        writer.write(b"GET /healthz HTTP/1.1\r\nBad Header Line\r\n\r\n")
        answer = await closed_by_server(reader)
        writer.close()

    head, _, body = answer.partition(b"\r\n\r\n")
    assert head.startswith(b"HTTP/1.1 400")
    assert json.loads(body)["error"]["code"] == "INVALID_REQUEST"
