"""`lookup-knowledge verify-report` against the service as real processes, token from the env."""

from __future__ import annotations

import json
import os
import subprocess
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest

from process import console_script, free_port, running_service
from stub_pyrag import StubPyrag

pytestmark = pytest.mark.process

LOOKUP_TOKEN = "agent-secret"
LEDGER_TOKEN = "guard-secret"


@pytest.fixture
def stub_pyrag() -> Iterator[StubPyrag]:
    server = StubPyrag.start()
    yield server
    server.shutdown()


def verify_report(
    base: str, path: Path, *args: str, token: str | None
) -> subprocess.CompletedProcess[str]:
    env = {k: v for k, v in os.environ.items() if k in {"PATH", "HOME", "LANG"}}
    env["LOOKUP_KNOWLEDGE_URL"] = base
    if token is not None:
        env["LOOKUP_KNOWLEDGE_TOKEN"] = token
    return subprocess.run(
        [*console_script(), "verify-report", str(path), "--run", "run-42", *args],
        capture_output=True,
        text=True,
        timeout=60,
        env=env,
        check=False,
    )


def write_report(path: Path, document_id: str) -> Path:
    cited = {"tool_call_id": "call_x1", "kind": "NORMAL", "document_id": document_id}
    report = {
        "analyses": [{"id": "a1", "text": "The gateway times out.", "citations": [cited]}],
        "conclusion": {"text": "Raise the timeout.", "based_on": ["a1"]},
        "limitations": ["One lookup only."],
    }
    path.write_text(json.dumps(report, ensure_ascii=False), encoding="utf-8")
    return path


def test_the_command_verifies_a_report_against_a_running_service(
    tmp_path: Path, stub_pyrag: StubPyrag
) -> None:
    port = free_port()
    env = {
        "PYRAG_BASE_URL": stub_pyrag.url,
        "PORT": str(port),
        "LOOKUP_API_TOKENS": LOOKUP_TOKEN,
        "LEDGER_API_TOKENS": LEDGER_TOKEN,
    }
    with running_service(["serve"], cwd=tmp_path, env=env, port=port) as base:
        shown = httpx.post(
            f"{base}/lookup_knowledge",
            json={"run_id": "run-42", "tool_call_id": "call_x1", "query": "网关超时怎么排查"},
            headers={"Authorization": f"Bearer {LOOKUP_TOKEN}"},
            timeout=10,
        ).json()["evidence"][0]
        good = write_report(tmp_path / "good.json", shown["document_id"])
        forged = write_report(tmp_path / "forged.json", "made-up#chunk-1")

        passed = verify_report(base, good, "--json", token=LEDGER_TOKEN)
        refused = verify_report(base, forged, token=LEDGER_TOKEN)
        forbidden = verify_report(base, good, token=LOOKUP_TOKEN)

    assert passed.returncode == 0, passed.stderr
    answer = json.loads(passed.stdout)
    assert answer["ok"] is True
    assert answer["evidence_snapshot"] == [{"tool_call_id": "call_x1", **shown}]
    assert refused.returncode == 1
    assert refused.stdout.startswith("DOCUMENT_NOT_IN_RESULT at $.analyses[0].citations[0]")
    assert forbidden.returncode == 2
    assert "HTTP 403 FORBIDDEN" in forbidden.stderr
