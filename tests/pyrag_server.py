"""A real py-rag stand-in on a local port, served by asyncio in the test's own event loop.

Unlike respx, it lets the service's real connection pool open, reuse and lose connections;
`delay_s` can be changed while it runs (a py-rag that is slow for a while, then healthy).
"""

from __future__ import annotations

import asyncio
import json
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager, suppress

from builders import pyrag_body, raw_hit


class PyragServer:
    def __init__(self, delay_s: float) -> None:
        self.delay_s = delay_s
        self.searches = 0
        self.connections = 0  # opened by clients so far
        self.port = 0
        self._body = json.dumps(pyrag_body([raw_hit("gw#chunk-1", 0.9)])).encode()

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    async def _serve(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        self.connections += 1
        with suppress(OSError, asyncio.IncompleteReadError, asyncio.CancelledError):
            while True:
                head = await reader.readuntil(b"\r\n\r\n")
                length = 0
                for line in head.split(b"\r\n"):
                    name, _, value = line.partition(b":")
                    if name.strip().lower() == b"content-length":
                        length = int(value)
                await reader.readexactly(length)
                if head.startswith(b"POST"):
                    self.searches += 1
                    await asyncio.sleep(self.delay_s)
                writer.write(
                    b"HTTP/1.1 200 OK\r\ncontent-type: application/json\r\n"
                    + f"content-length: {len(self._body)}\r\n\r\n".encode()
                    + self._body
                )
                await writer.drain()
        writer.close()


@asynccontextmanager
async def pyrag_server(delay_s: float = 0.0) -> AsyncIterator[PyragServer]:
    stub = PyragServer(delay_s)
    server = await asyncio.start_server(stub._serve, "127.0.0.1", 0, backlog=1024)
    stub.port = server.sockets[0].getsockname()[1]
    async with server:
        yield stub
        server.close()
