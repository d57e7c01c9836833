"""The ledger's transition scripts on a standalone Redis, without redis-py's command path.

A lookup runs two scripts (claim, complete). Through redis-py each cost about 110 µs of CPU
here (its pool's lock and condition, a socket check on each checkout, its command packing,
retry and timeout wrappers); the same EVALSHA over a bare asyncio protocol with hiredis'
reply parser costs under 40 µs (docs/performance.md#redis). Everything else the ledger does
(reads, listings, pings, Redis Cluster) stays on redis-py.

The semantics are redis-py's as the ledger configures it (docs/ledger.md#timeouts), raised as
redis-py's own exceptions so the ledger maps them the same way: a connect timeout and a reply
timeout are `TimeoutError`, a refused or dropped connection is `ConnectionError`, either one
retried once on a fresh connection; a bounded pool whose wait times out is
`MaxConnectionsError`, never retried; an error reply is `ResponseError`; a script the server
does not know (NOSCRIPT) is sent once in full. A connection whose call did not end cleanly
(a timeout, a cancellation, a dropped link) is closed, never reused.
"""

from __future__ import annotations

import asyncio
import hashlib
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any, Self, cast
from urllib.parse import unquote, urlsplit

import hiredis
from redis.exceptions import ConnectionError as RedisConnectionError
from redis.exceptions import MaxConnectionsError, ResponseError
from redis.exceptions import TimeoutError as RedisTimeoutError

Arg = str | bytes | int


@dataclass(frozen=True, slots=True)
class Script:
    source: bytes
    sha: bytes = field(init=False)

    def __post_init__(self) -> None:
        object.__setattr__(self, "sha", hashlib.sha1(self.source).hexdigest().encode())

    @classmethod
    def of(cls, source: str) -> Self:
        return cls(source.encode())


def pack(parts: Sequence[Arg]) -> bytes:
    """One RESP command (an array of bulk strings), as redis-py encodes str, bytes and int."""
    out = [b"*%d\r\n" % len(parts)]
    for part in parts:
        if isinstance(part, str):
            data = part.encode()
        elif isinstance(part, int):
            data = b"%d" % part
        else:
            data = part
        out.append(b"$%d\r\n%s\r\n" % (len(data), data))
    return b"".join(out)


@dataclass(frozen=True, slots=True)
class Endpoint:
    host: str
    port: int
    db: int
    username: str | None
    password: str | None

    @classmethod
    def from_url(cls, url: str) -> Self | None:
        """A plain `redis://[user:password@]host[:port][/db]`; None for anything else (TLS, a
        Unix socket, query options), which stays with redis-py."""
        parts = urlsplit(url)
        if parts.scheme != "redis" or parts.query or parts.fragment or not parts.hostname:
            return None
        path = parts.path.strip("/")
        if path and not path.isdigit():
            return None
        return cls(
            host=parts.hostname,
            port=parts.port or 6379,
            db=int(path) if path else 0,
            username=unquote(parts.username) if parts.username else None,
            password=unquote(parts.password) if parts.password else None,
        )


class _Connection(asyncio.Protocol):
    """One connection, one request in flight at a time."""

    def __init__(self) -> None:
        self._reader = hiredis.Reader(replyError=ResponseError)
        self._transport: asyncio.WriteTransport | None = None
        self._waiter: asyncio.Future[Any] | None = None
        self.usable = True

    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        # uvloop's transports are not asyncio.Transport instances; they write all the same.
        self._transport = cast(asyncio.WriteTransport, transport)

    def data_received(self, data: bytes) -> None:
        self._reader.feed(data)
        reply = self._reader.gets()
        if reply is False:
            return
        waiter, self._waiter = self._waiter, None
        if waiter is None or waiter.done() or self._reader.gets() is not False:
            self.close()  # a reply nobody asked for: this connection is out of step
            return
        waiter.set_result(reply)

    def connection_lost(self, exc: Exception | None) -> None:
        self.usable = False
        waiter, self._waiter = self._waiter, None
        if waiter is not None and not waiter.done():
            waiter.set_exception(RedisConnectionError("Connection closed by server."))

    async def request(self, command: bytes, timeout_s: float) -> Any:
        assert self._transport is not None and self._waiter is None
        waiter = asyncio.get_running_loop().create_future()
        self._waiter = waiter
        self._transport.write(command)
        try:
            async with asyncio.timeout(timeout_s):
                return await waiter
        except TimeoutError:
            raise RedisTimeoutError("Timeout reading from socket") from None

    def close(self) -> None:
        self.usable = False
        if self._transport is not None:
            self._transport.close()


class LeanScripts:
    """EVALSHA on a bounded pool of raw connections to one standalone Redis."""

    def __init__(
        self,
        endpoint: Endpoint,
        *,
        connect_timeout_s: float,
        socket_timeout_s: float,
        pool_timeout_s: float,
        max_connections: int,
    ) -> None:
        self._endpoint = endpoint
        self._connect_timeout_s = connect_timeout_s
        self._socket_timeout_s = socket_timeout_s
        self._pool_timeout_s = pool_timeout_s
        self._slots = asyncio.Semaphore(max_connections)
        self._idle: list[_Connection] = []
        self._closed = False

    @classmethod
    def for_url(cls, url: str, **options: Any) -> Self | None:
        endpoint = Endpoint.from_url(url)
        return cls(endpoint, **options) if endpoint is not None else None

    async def run(self, script: Script, keys: Sequence[Arg], args: Sequence[Arg]) -> Any:
        """The script's reply; the server is sent the whole script once if it does not know it."""
        reply = await self._call(pack([b"EVALSHA", script.sha, len(keys), *keys, *args]))
        if isinstance(reply, ResponseError) and str(reply).startswith("NOSCRIPT"):
            reply = await self._call(pack([b"EVAL", script.source, len(keys), *keys, *args]))
        if isinstance(reply, ResponseError):
            raise reply
        return reply

    async def aclose(self) -> None:
        self._closed = True
        while self._idle:
            self._idle.pop().close()

    async def _call(self, command: bytes) -> Any:
        await self._take_slot()
        try:
            try:
                return await self._round_trip(command)
            except (RedisConnectionError, RedisTimeoutError):
                return await self._round_trip(command)  # once more, on a fresh connection
        finally:
            self._slots.release()

    async def _take_slot(self) -> None:
        if not self._slots.locked():
            await self._slots.acquire()  # free: returns at once
            return
        try:
            async with asyncio.timeout(self._pool_timeout_s):
                await self._slots.acquire()
        except TimeoutError:
            raise MaxConnectionsError("No connection available.") from None

    async def _round_trip(self, command: bytes) -> Any:
        connection = await self._connection()
        clean = False
        try:
            reply = await connection.request(command, self._socket_timeout_s)
            clean = True
            return reply
        finally:
            if clean and connection.usable and not self._closed:
                self._idle.append(connection)
            else:
                connection.close()

    async def _connection(self) -> _Connection:
        while self._idle:
            connection = self._idle.pop()
            if connection.usable:
                return connection
        return await self._connect()

    async def _connect(self) -> _Connection:
        endpoint = self._endpoint
        loop = asyncio.get_running_loop()
        try:
            async with asyncio.timeout(self._connect_timeout_s):
                _, connection = await loop.create_connection(
                    _Connection, endpoint.host, endpoint.port
                )
        except TimeoutError:
            raise RedisTimeoutError("Timeout connecting to server") from None
        except OSError as exc:
            raise RedisConnectionError(f"Error connecting: {type(exc).__name__}") from exc
        try:
            await self._hello(connection)
        except BaseException:
            connection.close()
            raise
        return connection

    async def _hello(self, connection: _Connection) -> None:
        endpoint = self._endpoint
        steps: list[list[Arg]] = []
        if endpoint.password is not None:
            login = [endpoint.username] if endpoint.username else []
            steps.append(["AUTH", *login, endpoint.password])
        if endpoint.db:
            steps.append(["SELECT", endpoint.db])
        for step in steps:
            reply = await connection.request(pack(step), self._connect_timeout_s)
            if isinstance(reply, ResponseError):
                raise RedisConnectionError(f"{step[0]!s} failed: {reply}")
