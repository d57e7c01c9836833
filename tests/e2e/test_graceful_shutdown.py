"""A clean stop (SIGTERM) lets in-flight lookups finish and flushes the audit queue."""

from __future__ import annotations

import concurrent.futures
import signal
import sqlite3
import time
from pathlib import Path

import httpx
import pytest

from process import free_port, running_service
from stub_pyrag import StubPyrag

pytestmark = pytest.mark.process


def test_sigterm_lets_in_flight_lookups_finish_and_writes_their_audit_rows(
    tmp_path: Path,
) -> None:
    stub = StubPyrag.start(delay_s=1.5)
    port = free_port()
    env = {"PYRAG_BASE_URL": stub.url, "PORT": str(port)}
    try:
        with running_service(["serve"], cwd=tmp_path, env=env, port=port) as base:
            with concurrent.futures.ThreadPoolExecutor(3) as pool:
                pending = [
                    pool.submit(
                        httpx.post,
                        f"{base}/lookup_knowledge",
                        timeout=30,
                        json={
                            "run_id": "run-stop",
                            "tool_call_id": f"call-{i}",
                            "query": "gateway",
                        },
                    )
                    for i in range(3)
                ]
                deadline = time.monotonic() + 10
                while stub.calls < 3 and time.monotonic() < deadline:
                    time.sleep(0.05)
                base.process.send_signal(signal.SIGTERM)
                answers = [future.result() for future in pending]
            # uvicorn re-raises the signal once its graceful shutdown is done
            assert base.process.wait(timeout=30) in (0, -signal.SIGTERM)
    finally:
        stub.shutdown()
    assert [a.status_code for a in answers] == [200, 200, 200]
    with sqlite3.connect(tmp_path / "var" / "audit.db") as db:
        rows = db.execute(
            "SELECT tool_call_id, success FROM tool_invocation WHERE run_id = 'run-stop'"
        ).fetchall()
    assert sorted(rows) == [("call-0", 1), ("call-1", 1), ("call-2", 1)]
