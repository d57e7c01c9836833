"""Drills against a real service process and the real MariaDB: no answered call's audit row is
lost or duplicated, whatever happens to the database or to the process (docs/audit.md#durability).

The service reaches MariaDB through a TCP proxy the test cuts (the database killed: connections
reset and refused) or freezes (the database hung: connections accepted, nothing answered). Each
case drives CALLS lookups, 8 at a time, each with its own ids; a killed or stopped process is
followed by a fresh one on the same spool directory, which answers the rest of the CALLS. Then
every answered call must have exactly one row, no call two, and no row may be unknown. A call
still in flight when the process was killed got no answer: it may have a row or not.

CALLS is 200 by default; LK_AUDIT_DRILL_CALLS overrides it.
"""

from __future__ import annotations

import asyncio
import json
import os
import signal
from collections import Counter
from collections.abc import Callable, Iterator
from contextlib import AbstractContextManager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import httpx
import pytest
from sqlalchemy import Engine, text
from sqlalchemy.engine import URL

from audit_support import TcpProxy, mariadb_database, reader, wait_until
from builders import pyrag_body, raw_hit
from process import Running, free_port, running_service
from stub_pyrag import StubPyrag

pytestmark = [pytest.mark.process, pytest.mark.mysql]

CALLS = int(os.environ.get("LK_AUDIT_DRILL_CALLS", "200"))
CONCURRENCY = 8
RUN = "run-drill"


@dataclass
class Tally:
    """What the agents saw: the HTTP status of each answered call, and calls left unanswered."""

    answered: dict[str, int] = field(default_factory=dict)
    unanswered: set[str] = field(default_factory=set)


@dataclass
class Drill:
    tmp: Path
    database: URL
    proxy: TcpProxy
    stub: StubPyrag
    db: Engine
    tally: Tally = field(default_factory=Tally)
    serial: int = 0

    def service(self) -> AbstractContextManager[Running]:
        port = free_port()
        via = self.database.set(host="127.0.0.1", port=self.proxy.port)
        env = {
            "PORT": str(port),
            "PYRAG_BASE_URL": self.stub.url,
            "AUDIT_DATABASE_URL": via.render_as_string(hide_password=False),
            "AUDIT_SPOOL_DIR": str(self.tmp / "spool"),
            "AUDIT_DB_TIMEOUT_S": "1",
            "AUDIT_WRITER_STUCK_S": "1",
            "LOG_LEVEL": "WARNING",
        }
        return running_service(["serve"], cwd=self.tmp, env=env, port=port)

    def calls(self, count: int, make: Callable[[int], dict[str, Any]] | None = None) -> list[Any]:
        bodies = []
        for _ in range(count):
            self.serial += 1
            n = self.serial
            body = make(n) if make else {"query": "网关超时怎么排查"}
            bodies.append({"run_id": RUN, "tool_call_id": f"call-{n:04d}", **body})
        return bodies

    def drive(
        self, base: str, bodies: list[dict[str, Any]], *, at: int = 0, then: Callable[[], None] = id
    ) -> None:
        """Send the calls; once `at` of them are answered, `then()` (a kill, an outage)."""
        asyncio.run(self._drive(base, bodies, at, then))

    async def _drive(
        self, base: str, bodies: list[dict[str, Any]], at: int, then: Callable[[], None]
    ) -> None:
        gate = asyncio.Semaphore(CONCURRENCY)
        answered = 0
        async with httpx.AsyncClient(base_url=base, timeout=60) as client:

            async def one(body: dict[str, Any]) -> None:
                nonlocal answered
                call = escaped(body["tool_call_id"])
                async with gate:
                    try:
                        response = await client.post(
                            "/lookup_knowledge",
                            content=json.dumps(body, ensure_ascii=True).encode(),
                            headers={"content-type": "application/json"},
                        )
                    except httpx.HTTPError:
                        self.tally.unanswered.add(call)
                        return
                self.tally.answered[call] = response.status_code
                answered += 1
                if answered == at:
                    then()

            await asyncio.gather(*(one(body) for body in bodies))

    def wait_for_rows(self, base: str) -> None:
        """Until the service says nothing waits in its spool any more."""

        def drained() -> bool:
            audit = httpx.get(f"{base}/readyz", timeout=10).json()["checks"]["audit"]
            return bool(audit["status"] == "up" and audit["spool_depth"] == 0)

        wait_until(drained, timeout=90)

    def rows(self) -> list[dict[str, Any]]:
        with self.db.connect() as conn:
            result = conn.execute(
                text(
                    "SELECT tool_call_id, success, error_code, query, retrieval_details "
                    "FROM tool_invocation ORDER BY id"
                )
            )
            return [dict(row._mapping) for row in result]

    def check(self, case: str) -> list[dict[str, Any]]:
        """Every answered call has one row, none has two, no row is unknown; returns the rows."""
        rows = self.rows()
        per_call = Counter(row["tool_call_id"] for row in rows)
        tally = self.tally
        lost = sorted(c for c in tally.answered if per_call[c] == 0)
        duplicated = sorted(c for c, n in per_call.items() if n > 1)
        unknown = sorted(
            c for c in per_call if c not in tally.answered | dict.fromkeys(tally.unanswered)
        )
        in_flight_rows = sum(1 for c in tally.unanswered if per_call[c])
        print(
            f"\n{case}: {len(tally.answered)} answered, {len(tally.unanswered)} unanswered "
            f"({in_flight_rows} of them have a row), {len(rows)} rows: "
            f"{len(lost)} lost, {len(duplicated)} duplicated"
        )
        assert len(tally.answered) == CALLS
        assert (lost, duplicated, unknown) == ([], [], [])
        for row in rows:
            status = tally.answered.get(row["tool_call_id"])
            if status is not None:
                assert row["success"] == (status == 200), row
        return rows


def escaped(text_: str) -> str:
    return text_.encode("utf-8", "backslashreplace").decode("utf-8")


@pytest.fixture
def drill(tmp_path: Path) -> Iterator[Drill]:
    stub = StubPyrag.start(responder=hostile_pyrag)
    with mariadb_database() as database, reader(database) as db:
        proxy = TcpProxy(database.host or "127.0.0.1", database.port or 3306)
        proxy.start()
        try:
            yield Drill(tmp_path, database, proxy, stub, db)
        finally:
            proxy.thaw()
            proxy.stop()
            stub.shutdown()


# --- the database killed or frozen while the service runs ---


@pytest.mark.parametrize("state", ["killed", "frozen"])
def test_the_database_killed_or_frozen_mid_run_loses_and_duplicates_no_row(
    drill: Drill, state: str
) -> None:
    cut, restore = (
        (drill.proxy.stop, drill.proxy.start)
        if state == "killed"
        else (drill.proxy.freeze, drill.proxy.thaw)
    )
    with drill.service() as base:
        drill.drive(base, drill.calls(CALLS // 2), at=CALLS // 8, then=cut)
        assert all(status == 200 for status in drill.tally.answered.values())
        restore()
        drill.drive(base, drill.calls(CALLS - CALLS // 2))
        drill.wait_for_rows(base)
    drill.check(f"database {state} mid-run")


# --- the service stopped or killed, in each state of the database ---


@pytest.mark.parametrize("database", ["up", "killed", "frozen"])
@pytest.mark.parametrize("stop", [signal.SIGKILL, signal.SIGTERM], ids=["SIGKILL", "SIGTERM"])
def test_the_service_stopped_or_killed_in_any_database_state_loses_no_answered_row(
    drill: Drill, stop: signal.Signals, database: str
) -> None:
    with drill.service() as base:
        if database == "killed":
            drill.proxy.stop()
        elif database == "frozen":
            drill.proxy.freeze()
        drill.drive(
            base, drill.calls(CALLS), at=CALLS // 2, then=lambda: base.process.send_signal(stop)
        )
        base.process.wait(timeout=60)
    in_database = len(drill.rows())  # read past the proxy: what the stopped process wrote
    print(f"\n{len(drill.tally.answered)} answered before the {stop.name}, {in_database} rows in")
    if database != "up":  # then every answered row was in the spool only
        assert in_database == 0
    drill.proxy.thaw()
    if database == "killed":
        drill.proxy.start()
    with drill.service() as base:
        drill.drive(base, drill.calls(CALLS - len(drill.tally.answered)))
        drill.wait_for_rows(base)
    drill.check(f"{stop.name} with the database {database}")


# --- hostile input ---

DEEP_TRACE: dict[str, Any] = {"leaf": True}
for _ in range(39):
    DEEP_TRACE = {"down": DEEP_TRACE}
BODIES = {
    "trace-20mb": json.dumps(
        pyrag_body([raw_hit("a#chunk-0")], retrieval_trace={"blob": "x" * 20_000_000})
    ).encode(),
    "trace-3mb": json.dumps(
        pyrag_body([raw_hit("a#chunk-0")], retrieval_trace={"blob": "y" * 3_000_000})
    ).encode(),
    "trace-deep": json.dumps(
        pyrag_body([raw_hit("a#chunk-0")], retrieval_trace=DEEP_TRACE)
    ).encode(),
    "surrogate-hit": json.dumps(
        pyrag_body([raw_hit("a#chunk-0", excerpt="text \ud800 in a hit")]), ensure_ascii=True
    ).encode(),
}


def hostile_pyrag(request: dict[str, Any]) -> tuple[int, bytes]:
    return 200, BODIES.get(
        request["query"], json.dumps(pyrag_body([raw_hit("a#chunk-0")])).encode()
    )


def hostile_call(n: int) -> dict[str, Any]:
    """Ten kinds of call in turn: py-rag bodies too big, deep, large or broken; lone
    surrogates in the query, a filter, the step and the call id; two ordinary calls."""
    kind = n % 10
    if kind < 4:
        return {"query": list(BODIES)[kind]}
    return [
        {"query": "a\ud800b"},
        {"query": "q", "filters": {"category": "gw\udfff"}},
        {"query": "q", "step_id": "step\ud83d"},
        {"query": "q", "tool_call_id": f"call-{n:04d}\udc00"},
        {"query": "网关超时怎么排查"},
        {"query": "redis memory"},
    ][kind - 4]


def test_oversized_deep_and_broken_input_each_leaves_its_row_and_none_is_quarantined(
    drill: Drill,
) -> None:
    with drill.service() as base:
        drill.drive(base, drill.calls(CALLS, hostile_call))
        drill.wait_for_rows(base)
        audit = httpx.get(f"{base}/readyz", timeout=10).json()["checks"]["audit"]
    rows = {row["tool_call_id"]: row for row in drill.check("hostile input")}

    statuses = Counter(drill.tally.answered.values())
    assert statuses == {200: CALLS * 4 // 10, 502: CALLS * 2 // 10, 422: CALLS * 4 // 10}
    assert audit["quarantine_size"] == 0
    by_query = {row["query"]: row for row in rows.values()}
    # Over PYRAG_MAX_BODY_BYTES; and a body py-rag broke with a lone surrogate: both 502.
    assert by_query["trace-20mb"]["error_code"] == "UPSTREAM_ERROR"
    assert by_query["surrogate-hit"]["error_code"] == "UPSTREAM_ERROR"
    for query in ("trace-3mb", "trace-deep"):
        details = json.loads(by_query[query]["retrieval_details"])
        assert details["details_truncated"] is True, query
        assert len(json.dumps(details)) <= 64 * 1024
    assert by_query["a\\ud800b"]["error_code"] == "INVALID_REQUEST"
    assert any(call.endswith("\\udc00") for call in rows)
