"""What the drills share: private processes (Redis, fake py-rag, the service) and a raw client.

The client speaks HTTP/1.1 over asyncio streams, one small request at a time: a thousand of
them cost the drill little CPU, which matters on a small machine where the drill and the
service share the cores. `burst` is lighter still, for the moment the drill itself is busiest:
a bare asyncio protocol per connection, all connections open before the clock starts, every
request encoded before it, each answer timed when its last byte is read.
"""

from __future__ import annotations

import asyncio
import json
import os
import shutil
import socket
import subprocess
import sys
import time
from collections.abc import Iterator
from contextlib import contextmanager, suppress
from dataclasses import dataclass, field
from pathlib import Path

HERE = Path(__file__).resolve().parent


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port: int = sock.getsockname()[1]
        return port


def wait_for_port(port: int, timeout_s: float = 60.0) -> None:
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        with socket.socket() as sock:
            if sock.connect_ex(("127.0.0.1", port)) == 0:
                return
        time.sleep(0.1)
    raise RuntimeError(f"nothing listens on port {port}")


@contextmanager
def private_redis(workdir: Path) -> Iterator[str]:
    """A redis-server on a free port, no persistence; shut down afterwards."""
    server, cli = shutil.which("redis-server"), shutil.which("redis-cli")
    if server is None or cli is None:
        raise SystemExit("the drill needs redis-server and redis-cli")
    port = free_port()
    subprocess.run(
        [
            *(server, "--port", str(port), "--bind", "127.0.0.1", "--save", ""),
            *("--appendonly", "no", "--daemonize", "yes"),
            *("--dir", str(workdir), "--logfile", "redis.log"),
        ],
        check=True,
    )
    try:
        wait_for_port(port)
        yield f"redis://127.0.0.1:{port}/0"
    finally:
        subprocess.run([cli, "-p", str(port), "shutdown", "nosave"], capture_output=True)


@contextmanager
def process(
    args: list[str], *, env: dict[str, str], port: int, log: Path
) -> Iterator[subprocess.Popen[bytes]]:
    """Start a process, wait until it listens on `port`, stop it afterwards."""
    with log.open("wb") as out:
        child = subprocess.Popen(args, env=env, stdout=out, stderr=subprocess.STDOUT)
        try:
            wait_for_port(port)
            yield child
        finally:
            child.terminate()
            try:
                child.wait(timeout=30)
            except subprocess.TimeoutExpired:
                child.kill()


@contextmanager
def fake_pyrag(workdir: Path, *, delay_ms: float) -> Iterator[str]:
    port = free_port()
    args = [sys.executable, str(HERE / "fake_pyrag.py"), "--port", str(port)]
    args += ["--delay-ms", str(delay_ms)]
    with process(args, env=dict(os.environ), port=port, log=workdir / "pyrag.log"):
        yield f"http://127.0.0.1:{port}"


@dataclass(slots=True)
class Service:
    port: int
    pid: int

    def cpu_seconds(self) -> float:
        """User + system CPU time the service process has used so far (Linux)."""
        fields = Path(f"/proc/{self.pid}/stat").read_text().rsplit(")", 1)[1].split()
        return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


@contextmanager
def service(workdir: Path, env: dict[str, str]) -> Iterator[Service]:
    """`lookup-knowledge serve` with a clean environment plus `env`."""
    port = free_port()
    clean = {k: v for k, v in os.environ.items() if k in {"PATH", "HOME", "LANG"}}
    clean.update(
        {
            "PORT": str(port),
            "AUDIT_DATABASE_URL": f"sqlite:///{workdir}/audit.db",
            "AUDIT_SPOOL_DIR": str(workdir / "spool"),
            "LOG_LEVEL": "WARNING",
        }
    )
    clean.update(env)
    script = Path(sys.executable).with_name("lookup-knowledge")
    args = [str(script), "serve"] if script.exists() else [sys.executable, "-m", "lookup_knowledge"]
    with process(
        args + ([] if script.exists() else ["serve"]),
        env=clean,
        port=port,
        log=workdir / f"service-{port}.log",
    ) as child:
        yield Service(port=port, pid=child.pid)


@contextmanager
def drill_stack(workdir: Path, *, pyrag_delay_ms: float, extra_env: list[str]) -> Iterator[Service]:
    """A private Redis, a fake py-rag and the service on them (`extra_env`: KEY=VALUE items).

    The drill's own process is reniced once the service is up: the load generator yields the
    CPU to what it measures, as remote clients would.
    """
    with (
        private_redis(workdir) as redis_url,
        fake_pyrag(workdir, delay_ms=pyrag_delay_ms) as pyrag_url,
    ):
        env = {"REDIS_URL": redis_url, "PYRAG_BASE_URL": pyrag_url}
        env.update(dict(item.split("=", 1) for item in extra_env))
        print(f"service env: {env}; workdir {workdir}")
        with service(workdir, env) as svc:
            os.nice(10)
            yield svc


@dataclass(slots=True)
class Answer:
    status: int  # 0 = no HTTP answer (connection refused, reset or timed out)
    code: str | None = None  # the error envelope's code
    latency_s: float = 0.0
    done_at: float = 0.0  # time.perf_counter() at the end
    sent_at: float = 0.0  # time.perf_counter() once the request was written (0: never)
    headers: dict[str, str] = field(default_factory=dict)
    body: bytes = b""

    @property
    def label(self) -> str:
        if self.status == 0:
            return "no answer"
        return f"{self.status} {self.code}" if self.code else str(self.status)


class Connection:
    """One keep-alive HTTP/1.1 connection; requests go one after another."""

    def __init__(self, port: int) -> None:
        self.port = port
        self._streams: tuple[asyncio.StreamReader, asyncio.StreamWriter] | None = None

    async def request(
        self,
        method: str,
        path: str,
        payload: object | None = None,
        *,
        timeout_s: float = 120.0,
        close: bool = False,
    ) -> Answer:
        started = time.perf_counter()
        try:
            async with asyncio.timeout(timeout_s):
                answer = await self._exchange(method, path, payload, close=close)
        except (OSError, TimeoutError, asyncio.IncompleteReadError, ValueError):
            await self.close()
            answer = Answer(status=0)
        answer.done_at = time.perf_counter()
        answer.latency_s = answer.done_at - started
        return answer

    async def _exchange(
        self, method: str, path: str, payload: object | None, *, close: bool
    ) -> Answer:
        if self._streams is None:
            self._streams = await asyncio.open_connection("127.0.0.1", self.port)
        reader, writer = self._streams
        body = b"" if payload is None else json.dumps(payload).encode()
        head = f"{method} {path} HTTP/1.1\r\nHost: drill\r\nContent-Length: {len(body)}\r\n"
        if payload is not None:
            head += "Content-Type: application/json\r\n"
        if close:
            head += "Connection: close\r\n"
        writer.write(head.encode() + b"\r\n" + body)
        await writer.drain()
        sent_at = time.perf_counter()
        raw = await reader.readuntil(b"\r\n\r\n")
        status, headers = _head(raw)
        content = await reader.readexactly(int(headers.get("content-length", "0")))
        if close or headers.get("connection", "").lower() == "close":
            await self.close()
        code = _error_code(status, content)
        return Answer(status=status, code=code, headers=headers, body=content, sent_at=sent_at)

    async def close(self) -> None:
        if self._streams is not None:
            writer = self._streams[1]
            self._streams = None
            writer.close()
            with suppress(OSError):
                await writer.wait_closed()


async def one_shot(
    port: int, method: str, path: str, payload: object | None = None, **kwargs: float
) -> Answer:
    """One request on its own connection."""
    connection = Connection(port)
    try:
        return await connection.request(method, path, payload, close=True, **kwargs)
    finally:
        await connection.close()


class _Exchange(asyncio.Protocol):
    """One request on an open connection: its answer, timed when its last byte arrives."""

    def __init__(self) -> None:
        self.transport: asyncio.Transport | None = None
        self.answered: asyncio.Future[Answer] = asyncio.get_running_loop().create_future()
        self.sent_at = 0.0
        self._buffer = bytearray()
        self._need: int | None = None  # head and body, once the head is in

    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        assert isinstance(transport, asyncio.Transport)
        self.transport = transport

    def send(self, request: bytes) -> None:
        assert self.transport is not None
        self.transport.write(request)
        self.sent_at = time.perf_counter()

    def data_received(self, data: bytes) -> None:
        self._buffer += data
        if self._need is None:
            end = self._buffer.find(b"\r\n\r\n")
            if end < 0:
                return
            length = 0
            for line in bytes(self._buffer[:end]).split(b"\r\n")[1:]:
                name, _, value = line.partition(b":")
                if name.strip().lower() == b"content-length":
                    length = int(value)
            self._need = end + 4 + length
        if len(self._buffer) >= self._need and not self.answered.done():
            done_at = time.perf_counter()
            self.answered.set_result(_parse(bytes(self._buffer[: self._need]), done_at))
            assert self.transport is not None
            self.transport.close()

    def connection_lost(self, exc: Exception | None) -> None:
        if not self.answered.done():
            self.answered.set_result(Answer(status=0, done_at=time.perf_counter()))


def _parse(raw: bytes, done_at: float) -> Answer:
    head, _, content = raw.partition(b"\r\n\r\n")
    status, headers = _head(head)
    code = _error_code(status, content)
    return Answer(status=status, code=code, headers=headers, body=content, done_at=done_at)


def _head(raw: bytes) -> tuple[int, dict[str, str]]:
    """The status and the headers (lower-cased names) of an answer's head."""
    lines = raw.decode("latin-1").split("\r\n")
    headers = {}
    for line in lines[1:]:
        if ":" in line:
            name, _, value = line.partition(":")
            headers[name.strip().lower()] = value.strip()
    return int(lines[0].split(" ")[1]), headers


def _error_code(status: int, content: bytes) -> str | None:
    """The envelope's error code of an error answer ("?" when it has none)."""
    if status < 400:
        return None
    try:
        return str(json.loads(content)["error"]["code"])
    except (ValueError, KeyError, TypeError):
        return "?"


def encode_request(method: str, path: str, payload: object | None = None) -> bytes:
    """One HTTP/1.1 request that closes its connection."""
    body = b"" if payload is None else json.dumps(payload).encode()
    head = f"{method} {path} HTTP/1.1\r\nHost: drill\r\nContent-Length: {len(body)}\r\n"
    if payload is not None:
        head += "Content-Type: application/json\r\n"
    return (head + "Connection: close\r\n\r\n").encode() + body


async def burst(port: int, requests: list[bytes], *, timeout_s: float = 120.0) -> Burst:
    """Open one connection per request, then write every request at once; the clock starts
    just before the first write. An answer's latency counts from its own write."""
    loop = asyncio.get_running_loop()
    opening = time.perf_counter()
    opened = await asyncio.gather(
        *(loop.create_connection(_Exchange, "127.0.0.1", port) for _ in requests),
        return_exceptions=True,
    )
    exchanges = [item[1] if isinstance(item, tuple) else None for item in opened]
    started = time.perf_counter()
    for exchange, request in zip(exchanges, requests, strict=True):
        if exchange is not None:
            exchange.send(request)

    async def answer(exchange: _Exchange | None) -> Answer:
        if exchange is None:
            return Answer(status=0, done_at=time.perf_counter())
        try:
            async with asyncio.timeout(timeout_s):
                found = await asyncio.shield(exchange.answered)
        except TimeoutError:
            found = Answer(status=0, done_at=time.perf_counter())
            if exchange.transport is not None:
                exchange.transport.abort()
        found.sent_at = exchange.sent_at
        found.latency_s = found.done_at - exchange.sent_at
        return found

    answers = await asyncio.gather(*(answer(exchange) for exchange in exchanges))
    return Burst(answers=list(answers), started=started, connect_s=started - opening)


@dataclass(slots=True)
class Burst:
    answers: list[Answer]
    started: float  # time.perf_counter() just before the first request was written
    connect_s: float  # how long opening the connections took, before `started`


def percentile(samples: list[float], q: float) -> float:
    ordered = sorted(samples)
    return ordered[min(len(ordered) - 1, int(q * len(ordered)))] if ordered else float("nan")


def lookup_body(run_id: str, call: str, query: str = "网关超时怎么排查") -> dict[str, str]:
    return {"run_id": run_id, "tool_call_id": call, "query": query}
