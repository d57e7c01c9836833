"""Load generators of the side-by-side bench: the same for every server it measures.

* `closed_loop`: `connections` keep-alive clients sending lookups back to back; wrk when it
  is installed (one thread, a Lua script giving each request fresh ids), else a bundled
  asyncio client (drill_support.Connection). Gives throughput and latency percentiles.
* `paced`: an open-loop asyncio client at a fixed offered rate (wrk has no rate limit);
  latency counts from the moment each request was due, so a server that falls behind is
  charged for the queue it builds.

Each request carries a fresh (run_id, tool_call_id), so the service never replays.
"""

from __future__ import annotations

import asyncio
import json
import shutil
import subprocess
import tempfile
import time
import uuid
from dataclasses import dataclass

from drill_support import Connection, lookup_body, percentile

PATH = "/lookup_knowledge"
IDLE_REUSE_S = 2.0  # well under the servers' keep-alive timeout (5 s)
QUERY = "网关超时怎么排查"

_WRK_SCRIPT = """
local counter = 0
request = function()
  counter = counter + 1
  local body = '{"run_id":"RUN","tool_call_id":"c' .. counter .. '","query":"QUERY"}'
  return wrk.format("POST", "PATH", {["Content-Type"] = "application/json"}, body)
end
done = function(summary, latency, requests)
  local e = summary.errors
  io.write(string.format(
    'LK-RESULT {"requests":%d,"duration_us":%d,"non2xx":%d,"errors":%d,'
    .. '"p50_us":%d,"p99_us":%d}\\n',
    summary.requests, summary.duration, e.status, e.connect + e.read + e.write + e.timeout,
    latency:percentile(50), latency:percentile(99)))
end
"""


@dataclass(frozen=True, slots=True)
class Load:
    requests: int
    seconds: float
    failed: int  # non-2xx answers and socket errors
    p50_s: float
    p99_s: float

    @property
    def rate(self) -> float:
        return self.requests / self.seconds if self.seconds else 0.0


def wrk_available() -> bool:
    return shutil.which("wrk") is not None


def closed_loop(
    port: int, *, connections: int, seconds: float, cpu: str | None, use_wrk: bool
) -> Load:
    run_id = f"bench-{uuid.uuid4().hex[:12]}"
    if use_wrk:
        return _wrk(port, run_id, connections=connections, seconds=seconds, cpu=cpu)
    return asyncio.run(_asyncio_closed_loop(port, run_id, connections, seconds))


def _wrk(port: int, run_id: str, *, connections: int, seconds: float, cpu: str | None) -> Load:
    script = _WRK_SCRIPT.replace("RUN", run_id).replace("QUERY", QUERY).replace("PATH", PATH)
    with tempfile.NamedTemporaryFile("w", suffix=".lua", encoding="utf-8") as lua:
        lua.write(script)
        lua.flush()
        args = ["wrk", "-t1", f"-c{connections}", f"-d{max(1, round(seconds))}s"]
        args += ["--timeout", "10s", "-s", lua.name, f"http://127.0.0.1:{port}{PATH}"]
        if cpu is not None and shutil.which("taskset"):
            args = ["taskset", "-c", cpu, *args]
        output = subprocess.run(args, capture_output=True, text=True, check=True).stdout
    line = next(line for line in output.splitlines() if line.startswith("LK-RESULT "))
    data = json.loads(line.removeprefix("LK-RESULT "))
    return Load(
        requests=data["requests"],
        seconds=data["duration_us"] / 1e6,
        failed=data["non2xx"] + data["errors"],
        p50_s=data["p50_us"] / 1e6,
        p99_s=data["p99_us"] / 1e6,
    )


async def _asyncio_closed_loop(port: int, run_id: str, connections: int, seconds: float) -> Load:
    deadline = time.perf_counter() + seconds
    latencies: list[float] = []
    failed = 0
    serial = iter(range(10**9))

    async def worker() -> None:
        nonlocal failed
        connection = Connection(port)
        while time.perf_counter() < deadline:
            answer = await connection.request("POST", PATH, lookup_body(run_id, f"c{next(serial)}"))
            latencies.append(answer.latency_s)
            failed += not 200 <= answer.status < 300
        await connection.close()

    started = time.perf_counter()
    await asyncio.gather(*(worker() for _ in range(connections)))
    elapsed = time.perf_counter() - started
    return Load(
        len(latencies), elapsed, failed, percentile(latencies, 0.5), percentile(latencies, 0.99)
    )


def paced(port: int, *, rate: float, seconds: float) -> Load:
    return asyncio.run(_paced(port, rate, seconds))


async def _paced(port: int, rate: float, seconds: float) -> Load:
    run_id = f"bench-{uuid.uuid4().hex[:12]}"
    idle: list[tuple[Connection, float]] = []  # with when each was last used
    stale: list[Connection] = []  # closed at the end, off the measured path
    latencies: list[float] = []
    failed = 0

    def connection() -> Connection:
        """The most recently used idle connection, unless the server may have let it go."""
        while idle:
            kept, used_at = idle.pop()
            if time.perf_counter() - used_at < IDLE_REUSE_S:
                return kept
            stale.append(kept)
        return Connection(port)

    async def one(serial: int, due: float) -> None:
        nonlocal failed
        kept = connection()
        answer = await kept.request("POST", PATH, lookup_body(run_id, f"p{serial}"))
        latencies.append(answer.done_at - due)
        failed += not 200 <= answer.status < 300
        idle.append((kept, time.perf_counter()))

    count = max(1, int(rate * seconds))
    started = time.perf_counter()
    tasks = []
    for serial in range(count):
        due = started + serial / rate
        delay = due - time.perf_counter()
        if delay > 0:
            await asyncio.sleep(delay)
        tasks.append(asyncio.create_task(one(serial, due)))
    await asyncio.gather(*tasks)
    elapsed = time.perf_counter() - started
    for kept in [*stale, *(kept for kept, _ in idle)]:
        await kept.close()
    return Load(count, elapsed, failed, percentile(latencies, 0.5), percentile(latencies, 0.99))
