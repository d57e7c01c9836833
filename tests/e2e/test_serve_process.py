"""The packaged console script serves the contract against a local stub py-rag server."""

from __future__ import annotations

import subprocess
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest

from process import console_script, free_port, running_service
from stub_pyrag import StubPyrag

pytestmark = pytest.mark.process


@pytest.fixture
def stub_pyrag() -> Iterator[StubPyrag]:
    server = StubPyrag.start()
    yield server
    server.shutdown()


def test_the_console_script_serves_a_lookup_against_a_stub_py_rag(
    tmp_path: Path, stub_pyrag: StubPyrag
) -> None:
    port = free_port()
    env = {"PYRAG_BASE_URL": stub_pyrag.url, "PORT": str(port)}
    with running_service(["serve"], cwd=tmp_path, env=env, port=port) as base:
        response = httpx.post(
            f"{base}/lookup_knowledge",
            json={"run_id": "run-42", "tool_call_id": "call_x1", "query": "网关超时怎么排查"},
            timeout=10,
        )
        entry = httpx.get(f"{base}/ledger/run-42/call_x1", timeout=10)
    assert response.status_code == 200, response.text
    body = response.json()
    assert body["returned_count"] == 5 and body["relevance_level"] == "PRECISE"
    assert stub_pyrag.requests == [{"query": "网关超时怎么排查", "top_k": 20, "mode": "hybrid"}]
    assert entry.status_code == 200
    assert entry.json()["result"] == body


@pytest.mark.parametrize(
    ("env", "named"),
    [
        ({"PYRAG_TIMEOUT_S": "-1"}, "PYRAG_TIMEOUT_S"),
        ({"PRECISE_THRESHOLD": "0.2"}, "REFERENCE_THRESHOLD"),
        ({"PYRAG_BASE_URL": "pyrag:8000"}, "PYRAG_BASE_URL"),
        ({"WORKERS": "2"}, "REDIS_URL"),  # the in-process ledger lives in one process
    ],
)
def test_serve_refuses_an_invalid_configuration_with_a_clear_message(
    tmp_path: Path, env: dict[str, str], named: str
) -> None:
    completed = subprocess.run(
        [*console_script(), "serve"],
        cwd=tmp_path,
        capture_output=True,
        text=True,
        timeout=60,
        env={"PATH": "/usr/bin:/bin", **env},
    )
    assert completed.returncode == 2
    assert completed.stderr.startswith("invalid configuration")
    assert named in completed.stderr


def test_serve_with_no_environment_answers_from_the_bundled_knowledge_base(
    tmp_path: Path,
) -> None:
    port = free_port()
    lookups = {
        "call-gw": "网关超时怎么排查",
        "call-redis": "redis memory usage high",
        "call-none": "qwzx plorf vindle",
    }
    with running_service(["serve"], cwd=tmp_path, env={"PORT": str(port)}, port=port) as base:
        answers = {
            call: httpx.post(
                f"{base}/lookup_knowledge",
                timeout=30,
                json={"run_id": "run-embedded", "tool_call_id": call, "query": query},
            ).json()
            for call, query in lookups.items()
        }
    assert answers["call-gw"]["evidence_status"] == "EVIDENCE_FOUND"
    assert answers["call-gw"]["evidence"][0]["source"] == "gateway/gateway-timeout.zh.md"
    assert answers["call-redis"]["evidence_status"] == "EVIDENCE_FOUND"
    assert answers["call-redis"]["evidence"][0]["source"] == "redis/redis-memory.md"
    assert answers["call-none"]["evidence_status"] == "NO_EVIDENCE"
    assert (tmp_path / "var" / "audit.db").exists()  # the embedded SQLite audit default


def test_the_standalone_engine_serves_a_docs_folder_to_the_service(tmp_path: Path) -> None:
    docs = tmp_path / "docs" / "payments"
    docs.mkdir(parents=True)
    (docs / "refunds.md").write_text(
        "# Refund failures\n\n## Diagnosis\n\nWhen refund webhooks time out, check the "
        "payment gateway callback queue and the refund ledger reconciliation job.\n",
        encoding="utf-8",
    )
    engine_port, service_port = free_port(), free_port()
    engine_args = ["pyrag", "serve", "--docs", str(tmp_path / "docs"), "--port", str(engine_port)]
    with running_service(
        engine_args, cwd=tmp_path, env={}, port=engine_port, ready_path="/api/v1/health"
    ) as engine:
        env = {"PYRAG_BASE_URL": engine, "PORT": str(service_port)}
        with running_service(["serve"], cwd=tmp_path, env=env, port=service_port) as base:
            found = httpx.post(
                f"{base}/lookup_knowledge",
                timeout=30,
                json={
                    "run_id": "run-s",
                    "tool_call_id": "c1",
                    "query": "refund webhooks time out",
                    "filters": {"category": "payments"},
                },
            )
            ready = httpx.get(f"{base}/readyz", timeout=30)
    assert found.status_code == 200, found.text
    assert found.json()["evidence"][0]["source"] == "payments/refunds.md"
    assert ready.status_code == 200
    assert ready.json()["checks"]["pyrag"] == {
        **ready.json()["checks"]["pyrag"],
        "status": "up",
        "backend": "remote",
    }
