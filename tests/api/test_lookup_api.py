"""The worked example and the HTTP API through the app, py-rag mocked by respx at the boundary.

See docs/pipeline.md#worked-example and docs/http-api.md.
"""

from __future__ import annotations

import json
from typing import Any

import httpx
import pytest
import respx

from builders import WORKED_EXAMPLE, pyrag_body, raw_hit
from pyrag_server import pyrag_server
from support import PYRAG_SEARCH_URL, OpenClient, RecordingAudit

LOOKUP = "/lookup_knowledge"


def request(query: str = "网关超时怎么排查", **extra: Any) -> dict[str, Any]:
    return {"run_id": "run-42", "tool_call_id": "call_x1", "query": query, **extra}


def assert_error(response: httpx.Response, status: int, code: str) -> dict[str, Any]:
    assert response.status_code == status, response.text
    body = response.json()
    assert set(body) == {"error"}
    assert body["error"]["code"] == code
    assert isinstance(body["error"]["message"], str) and body["error"]["message"]
    error: dict[str, Any] = body["error"]
    return error


async def test_the_worked_example_end_to_end(
    open_client: OpenClient, audit: RecordingAudit
) -> None:
    hits = [raw_hit(key, score) for key, score in WORKED_EXAMPLE]
    async with open_client(audit=audit) as client:
        with respx.mock() as mock:
            mock.post(PYRAG_SEARCH_URL).respond(200, json=pyrag_body(hits))
            response = await client.post(LOOKUP, json=request())
    assert response.status_code == 200
    assert response.headers["content-type"] == "application/json"
    body = response.json()
    assert [e["document_id"] for e in body["evidence"]] == [
        "gw#chunk-1",
        "gw#chunk-3",
        "nginx#chunk-2",
        "k8s#chunk-0",
        "lb#chunk-4",
    ]
    assert body["evidence_status"] == "EVIDENCE_FOUND"
    assert body["relevance_level"] == "PRECISE"
    assert body["returned_count"] == 5
    assert body["truncated"] is False
    assert body["tool_call_id"] == "call_x1"
    assert body["query"] == "网关超时怎么排查"
    assert "网关超时怎么排查".encode() in response.content  # non-ASCII sent unescaped
    (row,) = audit.records
    assert (row.candidate_count, row.evidence_block_count, row.returned_count) == (8, 5, 5)
    assert row.top_quality_score == pytest.approx(0.91)
    assert row.success is True and row.relevance_level == "PRECISE"


async def test_no_evidence_from_py_rag_is_a_plain_200(open_client: OpenClient) -> None:
    async with open_client() as client:
        with respx.mock() as mock:
            mock.post(PYRAG_SEARCH_URL).respond(200, json=pyrag_body([]))
            response = await client.post(LOOKUP, json=request())
    assert response.status_code == 200
    assert response.json() == {
        "evidence_status": "NO_EVIDENCE",
        "tool_call_id": "call_x1",
        "query": "网关超时怎么排查",
        "returned_count": 0,
        "truncated": False,
    }


async def test_camel_case_request_fields_and_filters_are_passed_through(
    open_client: OpenClient, audit: RecordingAudit
) -> None:
    async with open_client(audit=audit) as client:
        with respx.mock() as mock:
            route = mock.post(PYRAG_SEARCH_URL).respond(
                200, json=pyrag_body([raw_hit("a#chunk-0")])
            )
            response = await client.post(
                LOOKUP,
                json={
                    "runId": "run-42",
                    "toolCallId": "call_x1",
                    "query": "  redis memory  ",
                    "stepId": "step-3",
                    "filters": {"category": "redis"},
                },
            )
            sent = json.loads(route.calls.last.request.content)
    assert response.status_code == 200
    assert sent["filters"] == {"category": "redis"}
    assert sent["query"] == "redis memory"  # trimmed
    assert audit.records[0].step_id == "step-3"


@pytest.mark.parametrize(
    ("body", "status"),
    [
        ({"tool_call_id": "c", "query": "q"}, 422),
        ({"run_id": "run 42", "tool_call_id": "c", "query": "q"}, 422),
        ({"run_id": "r", "tool_call_id": "c/../x", "query": "q"}, 422),
        ({"run_id": "r" * 129, "tool_call_id": "c", "query": "q"}, 422),
        ({"run_id": "run-1\n", "tool_call_id": "c", "query": "q"}, 422),
        ({"run_id": "r", "tool_call_id": "", "query": "q"}, 422),
        ({"run_id": "r", "tool_call_id": "c", "query": "q", "step_id": "s" * 129}, 422),
        ({"run_id": "r", "tool_call_id": "c", "query": "   "}, 422),
        ({"run_id": "r", "tool_call_id": "c", "query": "q" * 4001}, 422),
        ({"run_id": "r", "tool_call_id": "c", "query": 42}, 422),
        ({"run_id": "r", "tool_call_id": "c", "query": "q", "filters": {"a": 1}}, 422),
        ([1, 2, 3], 422),
    ],
)
async def test_bad_requests_are_invalid_request(
    open_client: OpenClient, body: Any, status: int
) -> None:
    async with open_client() as client, respx.mock(assert_all_called=False) as mock:
        route = mock.post(PYRAG_SEARCH_URL).respond(200, json=pyrag_body([]))
        response = await client.post(LOOKUP, json=body)
        assert not route.called
    assert_error(response, status, "INVALID_REQUEST")


async def test_a_query_of_exactly_the_maximum_length_is_accepted(open_client: OpenClient) -> None:
    async with open_client() as client, respx.mock() as mock:
        mock.post(PYRAG_SEARCH_URL).respond(200, json=pyrag_body([]))
        response = await client.post(LOOKUP, json=request("q" * 4000))
    assert response.status_code == 200
    assert len(response.json()["query"]) == 500
    assert response.json()["truncated"] is True


async def test_malformed_json_is_invalid_request(open_client: OpenClient) -> None:
    async with open_client() as client:
        response = await client.post(
            LOOKUP, content=b'{"run_id": ', headers={"content-type": "application/json"}
        )
    assert_error(response, 400, "INVALID_REQUEST")


async def test_a_body_over_64_kib_is_refused(open_client: OpenClient) -> None:
    async with open_client() as client:
        response = await client.post(LOOKUP, json=request("q" * (64 * 1024)))
    error = assert_error(response, 413, "PAYLOAD_TOO_LARGE")
    assert error["details"] == {"max_bytes": 65536}


async def test_a_streamed_body_over_64_kib_is_refused(open_client: OpenClient) -> None:
    async def chunks():  # type: ignore[no-untyped-def]
        for _ in range(20):
            yield b"x" * 4096

    async with open_client() as client:
        response = await client.post(
            LOOKUP, content=chunks(), headers={"content-type": "application/json"}
        )
    assert_error(response, 413, "PAYLOAD_TOO_LARGE")


@pytest.mark.parametrize(
    ("upstream", "status", "code"),
    [
        (httpx.Response(500, text="boom"), 502, "UPSTREAM_ERROR"),
        (httpx.Response(200, text="not json"), 502, "UPSTREAM_ERROR"),
        (httpx.Response(200, json={"hits": {"a": 1}}), 502, "UPSTREAM_ERROR"),
        (httpx.ConnectError("refused"), 502, "UPSTREAM_ERROR"),
        (httpx.ConnectTimeout("slow"), 504, "UPSTREAM_TIMEOUT"),
    ],
)
async def test_py_rag_failures_map_to_the_error_tree(
    open_client: OpenClient, audit: RecordingAudit, upstream: Any, status: int, code: str
) -> None:
    async with open_client(audit=audit) as client, respx.mock() as mock:
        route = mock.post(PYRAG_SEARCH_URL)
        if isinstance(upstream, httpx.Response):
            route.mock(return_value=upstream)
        else:
            route.mock(side_effect=upstream)
        response = await client.post(LOOKUP, json=request())
    assert_error(response, status, code)
    (row,) = audit.records
    assert (row.success, row.error_code) == (False, code)


async def test_py_rag_slower_than_the_timeout_is_a_504(open_client: OpenClient) -> None:
    async with (
        pyrag_server(delay_s=3.0) as pyrag,
        open_client(pyrag_base_url=pyrag.url, pyrag_timeout_s=0.2) as client,
    ):
        response = await client.post(LOOKUP, json=request())
    error = assert_error(response, 504, "UPSTREAM_TIMEOUT")
    assert "0.2 s" in error["message"]


async def test_a_failed_call_can_run_again_with_the_same_ids(open_client: OpenClient) -> None:
    async with open_client() as client, respx.mock() as mock:
        route = mock.post(PYRAG_SEARCH_URL)
        route.side_effect = [httpx.Response(500), httpx.Response(200, json=pyrag_body([]))]
        first = await client.post(LOOKUP, json=request())
        second = await client.post(LOOKUP, json=request())
    assert (first.status_code, second.status_code) == (502, 200)


async def test_a_replay_sends_the_stored_bytes_without_asking_py_rag(
    open_client: OpenClient, audit: RecordingAudit
) -> None:
    async with open_client(audit=audit) as client, respx.mock() as mock:
        route = mock.post(PYRAG_SEARCH_URL).respond(200, json=pyrag_body([raw_hit("a#chunk-0")]))
        first = await client.post(LOOKUP, json=request())
        again = await client.post(LOOKUP, json=request())
        other = await client.post(LOOKUP, json=request("another query"))
    assert route.call_count == 1
    assert again.status_code == 200 and again.content == first.content
    assert_error(other, 409, "CONFLICT")
    assert [r.replayed for r in audit.records] == [False, True, False]
    assert audit.records[2].error_code == "CONFLICT"


async def test_unknown_routes_answer_the_error_envelope(open_client: OpenClient) -> None:
    async with open_client() as client:
        response = await client.get("/nope")
    assert_error(response, 404, "NOT_FOUND")


async def test_healthz_answers_without_dependencies(open_client: OpenClient) -> None:
    async with open_client(pyrag_base_url="http://127.0.0.1:1") as client:
        response = await client.get("/healthz")
    assert response.status_code == 200
    assert response.json() == {"status": "ok"}


async def test_py_rag_own_relevance_level_is_ignored_for_grading(open_client: OpenClient) -> None:
    body = pyrag_body(
        [raw_hit("a#chunk-0", 0.3, relevance_level="PRECISE")], relevance_level="PRECISE"
    )
    async with open_client() as client, respx.mock() as mock:
        mock.post(PYRAG_SEARCH_URL).respond(200, json=body)
        response = await client.post(LOOKUP, json=request())
    assert response.json()["evidence_status"] == "EVIDENCE_FOUND"
    assert "relevance_level" not in response.json()  # 0.3 is under REFERENCE_THRESHOLD
