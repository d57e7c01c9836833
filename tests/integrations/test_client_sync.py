"""The sync `LookupClient` against a served app, and its retry loop on a scripted transport."""

from __future__ import annotations

import json
from collections.abc import Iterator

import httpx
import pytest

from lookup_knowledge.client import (
    ConflictError,
    Forbidden,
    LookupClient,
    NotFound,
    RetryPolicy,
    Unauthorized,
)
from process import Running, free_port, running_service


@pytest.fixture(scope="module")
def service(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Running]:
    port = free_port()
    env = {"PORT": str(port), "LOOKUP_API_TOKENS": "agent", "LEDGER_API_TOKENS": "guard"}
    with running_service(
        ["serve"], cwd=tmp_path_factory.mktemp("sync"), env=env, port=port
    ) as base:
        yield base


@pytest.mark.process
def test_the_sync_client_looks_up_reads_the_ledger_and_types_its_errors(service: Running) -> None:
    with LookupClient(service, token="agent", ledger_token="guard") as lk:
        answer = lk.lookup("磁盘满了怎么办", run_id="run-sync", tool_call_id="c1")
        entry = lk.ledger_entry("run-sync", "c1")
        listing = lk.run_ledger("run-sync")
        with pytest.raises(NotFound):
            lk.ledger_entry("run-sync", "c2")
        with pytest.raises(ConflictError) as conflict:
            lk.lookup("another question", run_id="run-sync", tool_call_id="c1")
    with LookupClient(service) as anonymous, pytest.raises(Unauthorized):
        anonymous.lookup("q", run_id="run-sync", tool_call_id="c3")
    with LookupClient(service, token="guard") as wrong, pytest.raises(Forbidden):
        wrong.lookup("q", run_id="run-sync", tool_call_id="c3")
    assert answer.result.evidence_status == "EVIDENCE_FOUND"
    assert entry.result == answer.result and entry.result_sha256
    assert [e.tool_call_id for e in listing.entries] == ["c1"]
    assert conflict.value.reason == "query_mismatch"


def test_the_sync_client_retries_a_lost_connection_with_the_same_ids() -> None:
    seen: list[bytes] = []
    answers: list[httpx.Response | Exception] = [
        httpx.RemoteProtocolError("server hung up"),
        httpx.Response(
            200,
            content=b'{"evidence_status":"NO_EVIDENCE","tool_call_id":"c9","query":"q",'
            b'"returned_count":0,"truncated":false}',
            headers={"X-Ledger-Replayed": "true"},
        ),
    ]

    def handler(request: httpx.Request) -> httpx.Response:
        seen.append(request.content)
        step = answers.pop(0)
        if isinstance(step, Exception):
            raise step
        return step

    http = httpx.Client(transport=httpx.MockTransport(handler), base_url="http://lk")
    client = LookupClient(http_client=http, retry=RetryPolicy(backoff_s=0.0, jitter=False))
    answer = client.lookup("q", run_id="run-9", tool_call_id="c9")
    assert answer.replayed is True and answer.attempts == 2
    assert (
        json.loads(seen[0])
        == json.loads(seen[1])
        == {
            "run_id": "run-9",
            "tool_call_id": "c9",
            "query": "q",
        }
    )
