"""Connection hygiene on a real socket: idle and slowloris connections, slow bodies, the cap.

See docs/http-api.md#connections. The service runs in uvicorn in this process, with the
connection guard `lookup-knowledge serve` uses and short limits; every test runs on both
HTTP implementations (httptools, the default, and h11).
"""

from __future__ import annotations

import asyncio
import json
from collections.abc import AsyncIterator, Callable, Iterator
from contextlib import AbstractAsyncContextManager, asynccontextmanager
from functools import partial
from pathlib import Path
from typing import ClassVar

import pytest
import uvicorn

from lookup_knowledge.app import create_app
from lookup_knowledge.serving import (
    DEFAULT_PROTOCOL,
    MAX_HEAD_BYTES,
    GuardedH11Protocol,
    GuardedHttpToolsProtocol,
    _intakes,
    uvicorn_options,
)
from support import RecordingAudit, make_settings

CLOSED_WITHIN_S = 10.0  # a generous bound on a 0.3 s limit: "closed", not "how fast"


class QuickH11Guard(GuardedH11Protocol):
    header_timeout_s = 0.3
    max_connections = 4


class QuickHttpToolsGuard(GuardedHttpToolsProtocol):
    header_timeout_s = 0.3
    max_connections = 4


Served = Callable[[], AbstractAsyncContextManager[int]]


@pytest.fixture(params=[QuickHttpToolsGuard, QuickH11Guard], ids=["httptools", "h11"])
def served(request: pytest.FixtureRequest, tmp_path: Path) -> Served:
    """Serve the app with this protocol; the context gives the port."""
    return partial(_served, tmp_path, request.param)


def test_serve_runs_the_httptools_guard_by_default(tmp_path: Path) -> None:
    options = uvicorn_options(make_settings(tmp_path))

    assert DEFAULT_PROTOCOL is GuardedHttpToolsProtocol
    assert options["http"] == "lookup_knowledge.serving:GuardedHttpToolsProtocol"
    assert options["loop"] == "auto"  # uvloop, installed with uvicorn[standard]


@asynccontextmanager
async def _served(tmp_path: Path, protocol: type) -> AsyncIterator[int]:
    app = create_app(make_settings(tmp_path, http_body_timeout_s=0.3), audit=RecordingAudit())
    config = uvicorn.Config(
        app,
        host="127.0.0.1",
        port=0,
        http=protocol,
        timeout_keep_alive=1,
        h11_max_incomplete_event_size=MAX_HEAD_BYTES,  # as `serve` sets it (serving.py)
        log_level="error",
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


async def test_a_connection_that_never_sends_a_request_is_closed(served: Served) -> None:
    async with served() as port:
        reader, writer = await asyncio.open_connection("127.0.0.1", port)
        assert await closed_by_server(reader) == b""
        writer.close()


async def test_a_request_head_trickled_byte_by_byte_is_cut_off(served: Served) -> None:
    async with served() as port:
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
    served: Served,
) -> None:
    async with served() as port:
        reader, writer = await asyncio.open_connection("127.0.0.1", port)
        writer.write(b"GET /healthz HTTP/1.1\r\nHost: x\r\n\r\n")
        first = await reader.readuntil(b'{"status":"ok"}')
        writer.write(b"GET /healthz HTTP/1.1\r\n")  # and then nothing more

        assert first.startswith(b"HTTP/1.1 200")
        assert await closed_by_server(reader) == b""
        writer.close()


async def test_requests_that_come_in_time_are_served_on_one_connection(served: Served) -> None:
    async with served() as port:
        reader, writer = await asyncio.open_connection("127.0.0.1", port)
        for _ in range(3):
            writer.write(b"GET /healthz HTTP/1.1\r\nHost: x\r\n\r\n")
            answer = await reader.readuntil(b'{"status":"ok"}')
            assert answer.startswith(b"HTTP/1.1 200")
            await asyncio.sleep(0.2)  # under the header timeout each time
        writer.close()


async def test_a_body_that_stalls_is_answered_408_and_the_connection_closed(
    served: Served,
) -> None:
    async with served() as port:
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


async def test_connections_past_the_cap_are_answered_overloaded(served: Served) -> None:
    async with served() as port:
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


async def test_malformed_http_gets_the_error_envelope(served: Served) -> None:
    async with served() as port:
        reader, writer = await asyncio.open_connection("127.0.0.1", port)
        writer.write(b"GET /healthz HTTP/1.1\r\nBad Header Line\r\n\r\n")
        answer = await closed_by_server(reader)
        writer.close()

    head, _, body = answer.partition(b"\r\n\r\n")
    assert head.startswith(b"HTTP/1.1 400")
    assert json.loads(body)["error"]["code"] == "INVALID_REQUEST"


async def test_a_request_head_over_the_size_limit_is_refused(served: Served) -> None:
    async with served() as port:
        reader, writer = await asyncio.open_connection("127.0.0.1", port)
        writer.write(b"GET /healthz HTTP/1.1\r\nHost: x\r\n")
        writer.write(b"X-Filler: " + b"a" * MAX_HEAD_BYTES + b"\r\n")
        await writer.drain()
        await asyncio.sleep(0.1)  # h11 judges the size of a head still incomplete
        writer.write(b"\r\n")
        answer = await closed_by_server(reader)
        writer.close()

    head, _, body = answer.partition(b"\r\n\r\n")
    assert head.startswith(b"HTTP/1.1 400")
    assert json.loads(body)["error"]["code"] == "INVALID_REQUEST"


async def test_a_request_head_under_the_size_limit_is_served(served: Served) -> None:
    async with served() as port:
        reader, writer = await asyncio.open_connection("127.0.0.1", port)
        writer.write(b"GET /healthz HTTP/1.1\r\nHost: x\r\n")
        writer.write(b"X-Filler: " + b"a" * (MAX_HEAD_BYTES // 2) + b"\r\n\r\n")
        answer = await reader.readuntil(b'{"status":"ok"}')
        writer.close()

    assert answer.startswith(b"HTTP/1.1 200")


class PacedH11Guard(GuardedH11Protocol):
    intake_per_tick = 2
    waited: ClassVar[list[int]] = []  # for each connection let in late: how many waited then

    def _take_in(self) -> None:
        self.waited.append(len(_intakes[self.loop].waiting))
        super()._take_in()


class PacedHttpToolsGuard(GuardedHttpToolsProtocol):
    intake_per_tick = 2
    waited: ClassVar[list[int]] = []

    def _take_in(self) -> None:
        self.waited.append(len(_intakes[self.loop].waiting))
        super()._take_in()


@pytest.fixture(params=[PacedHttpToolsGuard, PacedH11Guard], ids=["httptools", "h11"])
def paced(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[tuple[Served, list[int]]]:
    """Serve with an intake of 2 new requests per turn of the loop; the list records, for each
    connection let in after waiting its turn, how many were still waiting behind it."""
    protocol = request.param
    protocol.waited.clear()
    _intakes.clear()  # the loop's intake takes its size from the first protocol it meets
    yield partial(_served, tmp_path, protocol), protocol.waited
    _intakes.clear()


async def test_a_burst_of_requests_is_taken_in_a_few_per_turn_and_all_answered(
    paced: tuple[Served, list[int]],
) -> None:
    served, waited = paced
    async with served() as port:
        streams = [await asyncio.open_connection("127.0.0.1", port) for _ in range(20)]
        for _, writer in streams:  # all at once: one turn of the loop
            writer.write(b"GET /healthz HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n")
        answers = [await closed_by_server(reader) for reader, _ in streams]
        for _, writer in streams:
            writer.close()

    assert all(a.startswith(b"HTTP/1.1 200") and a.endswith(b'{"status":"ok"}') for a in answers)
    assert len(waited) >= 16  # 2 (or 4) let in at once, the others in later turns
    assert waited == sorted(waited, reverse=True)  # in order, the queue only shrinking


async def test_a_connection_closed_while_it_waits_its_turn_is_skipped(
    paced: tuple[Served, list[int]],
) -> None:
    served, waited = paced
    request = b"GET /healthz HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n"
    async with served() as port:
        streams = [await asyncio.open_connection("127.0.0.1", port) for _ in range(12)]
        for _, writer in streams:
            writer.write(request)
        for _, writer in streams[4:8]:  # gone before the server got to them
            writer.transport.abort()
        kept = streams[:4] + streams[8:]
        answers = [await closed_by_server(reader) for reader, _ in kept]
        for _, writer in kept:
            writer.close()
        # The server still takes in and answers new requests afterwards.
        reader, writer = await asyncio.open_connection("127.0.0.1", port)
        writer.write(request)
        after = await closed_by_server(reader)
        writer.close()

    assert all(a.startswith(b"HTTP/1.1 200") for a in [*answers, after])
    assert waited  # some of them waited their turn


async def test_kept_alive_connections_are_paced_between_requests_and_keep_their_order(
    paced: tuple[Served, list[int]],
) -> None:
    served, waited = paced
    async with served() as port:
        streams = [await asyncio.open_connection("127.0.0.1", port) for _ in range(6)]
        for round_ in range(3):
            for _, writer in streams:
                writer.write(b"GET /healthz HTTP/1.1\r\nHost: x\r\n\r\n")
            for reader, _ in streams:
                answer = await asyncio.wait_for(reader.readuntil(b'{"status":"ok"}'), 10)
                assert answer.startswith(b"HTTP/1.1 200"), round_
        # Two requests in one write: the second waits in the connection, answered in turn.
        reader, writer = streams[0]
        writer.write(b"GET /healthz HTTP/1.1\r\nHost: x\r\n\r\n" * 2)
        first = await asyncio.wait_for(reader.readuntil(b'{"status":"ok"}'), 10)
        second = await asyncio.wait_for(reader.readuntil(b'{"status":"ok"}'), 10)
        for _, writer in streams:
            writer.close()

    assert first.startswith(b"HTTP/1.1 200") and b"HTTP/1.1 200" in second
    assert waited  # some of them waited their turn
